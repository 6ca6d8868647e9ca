"""lib/ has no import circle: a module's imports of other lib/ modules
form a graph without cycles (read from the source, not by importing)."""

import ast
from pathlib import Path

LIB = Path(__file__).resolve().parents[2] / "lib"


def graph():
    mods = {p.stem: p for p in LIB.glob("*.py")}
    edges = {}
    for name, path in mods.items():
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name in mods}
            elif isinstance(node, ast.ImportFrom) and node.module in mods:
                deps.add(node.module)
        edges[name] = deps
    return edges


def test_no_import_circle():
    edges, state, cycles = graph(), {}, []

    def visit(node, path):
        state[node] = "open"
        for dep in sorted(edges[node]):
            if state.get(dep) == "open":
                cycles.append(path[path.index(dep):] + [dep])
            elif dep not in state:
                visit(dep, path + [dep])
        state[node] = "done"
    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    assert cycles == []


def test_the_runner_and_harness_sit_below_the_groups():
    edges = graph()
    for low in ("common", "flavors", "variants", "build", "runner",
                "harness"):
        assert not edges[low] & {"groups", "plan", "check"}, low
