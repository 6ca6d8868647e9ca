"""./fastreap bench --render: a run's tables and plots again from its CSV
and JSON, with no boot."""

import json
import shutil
from types import SimpleNamespace

import pytest

import bench

# Every plot is gnuplot's; make check installs gnuplot-nox.
pytestmark = pytest.mark.skipif(not shutil.which("gnuplot"),
                                reason="no gnuplot")

ROWS = [  # variant, scenario, N, ns per op (two samples each)
    ("stock", "empty", 0, 470), ("stock", "empty", 0, 466),
    ("stock", "empty", 10000, 590000), ("stock", "empty", 10000, 591000),
    ("fastreap", "empty", 0, 466), ("fastreap", "empty", 0, 468),
    ("fastreap", "empty", 10000, 474), ("fastreap", "empty", 10000, 476),
    ("stock", "forkwait", 0, 171000), ("fastreap", "forkwait", 0, 171100),
]


def write_run(tmp_path):
    csv_path = tmp_path / "bench-test.csv"
    lines = ["variant,clock,round,scenario,N,M,total_ns,ns_per_op,extra"]
    lines += [f"{v},icount,0,{s},{n},1,{ns},{ns}," for v, s, n, ns in ROWS]
    csv_path.write_text("\n".join(lines) + "\n")
    csv_path.with_suffix(".json").write_text(json.dumps({
        "date": "today", "source": "linux-source-6.12 test",
        "host": "test", "clock_text": "icount", "kernels": {},
        "repeats": 2, "smp": 1}))
    return csv_path


def test_render_tables_from_the_medians(tmp_path):
    csv_path = write_run(tmp_path)
    a = SimpleNamespace(render=str(csv_path), repeats=3, smp=1,
                        clock="icount")
    assert bench.render(a) == 0
    md = csv_path.with_suffix(".md").read_text()
    # medians: stock 468 and 590,500; fastreap 467 and 475
    assert "| stock | 468 | 590,500 | 1261.75 | 1.00 |" in md
    assert "| fastreap | 467 | 475 | 1.02 | 1243.16 |" in md
    # forkwait has N = 0 alone: a row, but no curve and no summary bar
    assert "| fastreap | 171,100 | - |" in md
    assert "bench-test-forkwait.png" not in md


def test_render_draws_the_summary_and_the_curves(tmp_path):
    csv_path = write_run(tmp_path)
    a = SimpleNamespace(render=str(csv_path), repeats=3, smp=1,
                        clock="icount")
    bench.render(a)
    assert (tmp_path / "bench-test-summary.png").stat().st_size > 1000
    assert (tmp_path / "bench-test-empty.png").stat().st_size > 1000
    assert "bench-test-summary.png" in csv_path.with_suffix(".md").read_text()
    assert not list(tmp_path.glob("*.dat"))
