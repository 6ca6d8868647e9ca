"""./fastreap bench: the cost of wait() against the number of children.

Boots each variant, runs bench/reapbench.c for every scenario and size N
inside the guest, and writes, under --out (default results/):

  bench-<stamp>.csv          every sample
  bench-<stamp>.md           medians, variant(N)/variant(0), stock/variant
  bench-<stamp>-<scenario>.png   ns per operation against N, log-log

Besides reapbench's own scenarios, tini, dumb-init, catatonit and strace run
Debian's binaries of those programs around reapbench (CLIENTS below).

Rounds interleave the variants (stock, seed, fastreap, stock, ...), so slow
drift of the host hits all of them alike.  The default clock is guest time
under TCG -icount (one instruction per nanosecond): it counts instructions,
so it repeats to 1-2% from boot to boot, where real-time TCG can vary 2x.
--clock wall measures real time under multi-threaded TCG instead; the host
wall time of every boot is recorded either way.
"""

import argparse
import csv
import json
import shlex
import statistics
import subprocess
import time
from pathlib import Path

import workbench
from harness import compile_c
from workbench import REPO, Error

# Real programs, Debian's binaries run unmodified in the guest, with
# reapbench as their workload: scenario -> (package, command line before
# reapbench, reapbench scenario, arguments after it).  The inits are pid 1
# of a new pid namespace and reap what reapbench orphans; strace attaches
# to reapbench and its N children and follows its jobs; bash, with job
# control on, runs commands beside the N, which reapbench made before it
# exec()ed bash.  Their M is their workload's.  bench/README.md.
NEW_PIDNS = ["unshare", "--fork", "--pid", "--mount-proc"]
CLIENTS = {
    "tini": ("tini", [*NEW_PIDNS, "tini", "--"], "orphans", []),
    "dumb-init": ("dumb-init", [*NEW_PIDNS, "dumb-init"], "orphans", []),
    "catatonit": ("catatonit", [*NEW_PIDNS, "catatonit", "--"], "orphans",
                  []),
    "strace": ("strace", [], "spawn",
               ["--", "strace", "-f", "-q", "-o", "/dev/null"]),
    "bash": ("bash", [], "shell", ["--", "bash"]),
}
# Every other scenario, its family, its M and whether it runs at every N
# or at N = 0 only, comes from the binary: reapbench -l (scenarios()).
SIZES = [0, 1000, 10000, 100000]
QUICK = {"sizes": [0, 1000], "scenarios": ["burst", "empty", "forkwait"],
         "rounds": 1, "repeats": 1}
# Guest memory: about 32 KiB per cheap child plus the base system.  The
# 3x margin also covers the 2N children of thread-nothread-both* and
# pgrp-both*.
KIB_PER_CHILD = 32


def compile_reapbench():
    """reapbench.c #includes its families from bench/scenarios/, which
    compile_c() does not look into (it keys a binary on its source and the
    headers beside it): their digest goes into the key as a define."""
    families = sorted((REPO / "bench" / "scenarios").iterdir())
    digest = workbench.digest(*[f.read_bytes() for f in families])
    return compile_c(REPO / "bench" / "reapbench.c",
                     flags=(f"-DREAPBENCH_FAMILIES={digest}",))


def guest_mem(max_n):
    mib = 1024 + max_n * KIB_PER_CHILD * 3 // 1024
    return f"{max(2048, (mib + 1023) // 1024 * 1024)}M"


def parse_args(argv):
    p = argparse.ArgumentParser(prog="fastreap bench",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="a few minutes: N in {0, 1000}; burst, empty, "
                        "forkwait; one round")
    p.add_argument("--variants", default=None,
                   help="comma-separated (default: stock,seed,fastreap)")
    p.add_argument("--scenarios", default=None,
                   help="comma-separated (default: all; `reapbench -l` "
                        "lists reapbench's, and the clients are "
                        + ",".join(CLIENTS) + ")")
    p.add_argument("--sizes", default=None,
                   help="comma-separated N (default: 0,1000,10000,100000)")
    p.add_argument("--rounds", type=int, default=None,
                   help="boots per variant, interleaved (default: 2)")
    p.add_argument("--repeats", type=int, default=None,
                   help="samples per boot (default: 3)")
    p.add_argument("--clock", choices=("icount", "wall"), default="icount")
    p.add_argument("--smp", type=int, default=None,
                   help="guest CPUs (default: 1 with --clock icount, where "
                        "a second vCPU only adds round-robin jitter; 2 "
                        "with --clock wall)")
    p.add_argument("--out", default=str(REPO / "results"))
    p.add_argument("--render", metavar="CSV",
                   help="redraw the table and plots of an earlier run "
                        "from its CSV (and the JSON beside it); no boots")
    a = p.parse_args(argv)
    pick = (lambda v, key, default: v if v is not None else
            (QUICK[key] if a.quick else default))
    a.variants = (a.variants.split(",") if a.variants else
                  [v for v in ("stock", "seed", "fastreap")
                   if v in workbench.known_variants()])
    a.scenarios = pick(a.scenarios and a.scenarios.split(","), "scenarios",
                       None)
    a.sizes = pick(a.sizes and [int(n) for n in a.sizes.split(",")],
                   "sizes", SIZES)
    a.rounds = pick(a.rounds, "rounds", 2)
    if a.smp is None:
        a.smp = 1 if a.clock == "icount" else 2
    a.repeats = pick(a.repeats, "repeats", 3)
    for v in a.variants:
        workbench.variant_patch_dir(v)
    if min(a.sizes) < 0 or a.rounds < 1 or a.repeats < 1:
        raise Error("sizes, rounds and repeats must be positive")
    return a


def scenarios(binary):
    """What reapbench -l says, as {name: {family, n, m, kids_per_n, runs,
    help}}, in its order (the binary is static: it runs on the host)."""
    out = subprocess.run([str(binary), "-l"], capture_output=True,
                         text=True, check=True).stdout
    table = {}
    for line in out.splitlines():
        name, family, n, m, kids, runs, text = line.split("\t")
        table[name] = {"family": family, "n": int(n), "m": int(m),
                       "kids_per_n": int(kids), "runs": runs, "help": text}
    return table


def runnable(table):
    """Scenario -> the reapbench scenario it runs: reapbench's own (but
    the clients' workloads and the manual ones), then the clients."""
    mine = {s: s for s, t in table.items() if t["runs"] in ("every-n", "n0")}
    for client, (_, _, workload, _) in CLIENTS.items():
        if table.get(workload, {}).get("runs") != "client":
            raise Error(f"reapbench -l lists no client workload "
                        f"'{workload}' for {client}")
        mine[client] = workload
    return mine


def resolve_scenarios(a, table):
    """Check --scenarios against the binary's list (default: all) and note
    what each runs as a.workload."""
    a.workload = runnable(table)
    a.scenarios = a.scenarios or list(a.workload)
    for s in a.scenarios:
        if s not in a.workload:
            raise Error(f"unknown scenario '{s}' (known: "
                        + ", ".join(a.workload) + ")")
        if table[a.workload[s]]["runs"] == "n0" and 0 not in a.sizes:
            raise Error(f"'{s}' runs at N = 0 only, and --sizes lacks 0")
    a.m = {s: table[a.workload[s]]["m"] for s in a.scenarios}
    a.only_n0 = {s for s in a.scenarios
                 if table[a.workload[s]]["runs"] == "n0"}


def scenario_sizes(a, scenario):
    return [0] if scenario in a.only_n0 else a.sizes


def guest_command(binary, scenario, n, m, repeats):
    args = ["-n", str(n), "-m", str(m), "-r", str(repeats)]
    if scenario not in CLIENTS:
        return [str(binary), scenario, *args]
    _, before, workload, after = CLIENTS[scenario]
    return [*before, str(binary), workload, "--name", scenario, *args,
            *after]


def guest_script(binary, a):
    lines = []
    for scenario in a.scenarios:
        for n in scenario_sizes(a, scenario):
            cmd = guest_command(binary, scenario, n, a.m[scenario],
                                a.repeats)
            lines.append(f"echo '# {scenario} n={n}'; {shlex.join(cmd)} || "
                         f"echo '# FAILED {scenario} n={n} status='$?")
    return "\n".join(lines)


def run_round(variant, binary, a, rnd, writer, info):
    rundir = workbench.new_rundir(f"bench-{variant}")
    t0 = time.time()
    rc = workbench.run(variant, ["sh", "-c", guest_script(binary, a)],
                       smp=a.smp, mem=guest_mem(max(a.sizes)),
                       icount=a.clock == "icount", timeout=4 * 3600,
                       rundir=rundir, echo=False)
    wall = time.time() - t0
    output = (rundir / "output").read_text(errors="replace")
    failed = [l for l in output.splitlines() if l.startswith("# FAILED")]
    if rc != 0 or failed:
        raise Error(f"bench on {variant} failed (status {rc}; "
                    f"{failed[0] if failed else ''}; see {rundir})")
    # The image this boot used: the run must compare the images it started
    # with, though patches/ may change under a long run (others edit them).
    image = Path(json.loads((rundir / "run-info.json").read_text())["image"])
    build = json.loads((image / "build-info.json").read_text())
    name = workbench.variant_name(variant)
    if build["key"] != info["images"][name]["image_key"]:
        raise Error(f"patches of {name} changed during the run (image "
                    f"{info['images'][name]['image_key']} became "
                    f"{build['key']}); start again")
    info.setdefault("kernels", {})[name] = build["kernelrelease"]
    info.setdefault("boots", []).append(
        {"variant": variant, "round": rnd, "host_wall_s": round(wall, 1),
         "rundir": str(rundir)})
    samples = 0
    for line in output.splitlines():
        parts = line.strip().split(",")
        if len(parts) >= 5 and parts[0] in a.workload:
            writer.writerow([workbench.variant_name(variant), a.clock, rnd,
                             *parts[:5],
                             ";".join(parts[5:])])
            samples += 1
    print(f"  {variant} round {rnd}: {samples} samples, {wall:.0f}s host "
          f"wall", flush=True)


def load(csv_path):
    med = {}
    with open(csv_path) as f:
        for row in csv.DictReader(f):
            key = (row["scenario"], row["variant"], int(row["N"]))
            med.setdefault(key, []).append(float(row["ns_per_op"]))
    return {k: statistics.median(v) for k, v in med.items()}


def report(csv_path, a, info):
    med = load(csv_path)
    md = [f"# wait() benchmarks, {info['date']}", "",
          f"- source: {info['source']}; kernels: "
          + ", ".join(f"{v} {k}" for v, k in info["kernels"].items()),
          "- images (variant: image key, patches hash): "
          + ", ".join(f"{v}: {i['image_key']}, {i['patches_hash']}"
                      for v, i in info.get("images", {}).items()),
          f"- machine: {info['host']}; guest: {a.smp} vCPUs, "
          f"{guest_mem(max(a.sizes))} memory",
          f"- clock: {info['clock_text']}",
          "- host wall time per boot (boot, setup and all samples): "
          + ", ".join(f"{b['variant']} {b['host_wall_s']:.0f} s"
                      for b in info.get("boots", [])),
          f"- median of {a.rounds} boots x {a.repeats} samples per variant "
          f"(variants interleaved); ns per operation", ""]
    if summary_plot(csv_path, a, med):
        md += [f"![N={max(a.sizes)} over N=0, per scenario]"
               f"({csv_path.stem}-summary.png)", ""]
    for s in a.scenarios:
        md += [f"## {s}", "",
               "| variant | " + " | ".join(f"N={n}" for n in a.sizes)
               + " | worst N/0 | stock/variant at max N |",
               "|---" * (len(a.sizes) + 3) + "|"]
        # The largest N measured: an everyday path has only N = 0.
        top_n = max((n for n in a.sizes if (s, "stock", n) in med),
                    default=max(a.sizes))
        for v in a.variants:
            vals = [med.get((s, v, n)) for n in a.sizes]
            cells = [f"{x:,.0f}" if x is not None else "-" for x in vals]
            # The smallest N measured is the baseline (pidns has no N=0).
            base = next((x for x in vals if x), None)
            worst = max((x / base for x in vals if x and base), default=None)
            top = med.get((s, "stock", top_n))
            mine = med.get((s, v, top_n))
            md.append(f"| {v} | " + " | ".join(cells)
                      + (f" | {worst:.2f} |" if worst else " | - |")
                      + (f" {top / mine:.2f} |" if top and mine else " - |"))
        md.append("")
        one_n = len({n for (t, _, n) in med if t == s}) == 1
        if one_n and cost_at_n(s, top_n, a.variants, med):
            md += [cost_at_n(s, top_n, a.variants, med), ""]
        if plot(csv_path, s, a, med):
            md += [f"![{s}]({csv_path.stem}-{s}.png)", ""]
    out = csv_path.with_suffix(".md")
    out.write_text("\n".join(md) + "\n")
    return out


def cost_at_n(scenario, n, variants, med):
    """For a scenario measured at one N (an everyday path): each variant's
    cost over stock's, to the 0.1% that an N = 0 budget is stated in."""
    stock = med.get((scenario, "stock", n))
    ratios = [f"{v} {med[(scenario, v, n)] / stock:.3f}" for v in variants
              if v != "stock" and stock and (scenario, v, n) in med]
    return (f"Cost over stock at N = {n}: " + ", ".join(ratios) + "."
            if ratios else "")


def gnuplot(script, data):
    """Run gnuplot on SCRIPT, then remove the data file it read."""
    r = subprocess.run(["gnuplot"], input=script, text=True,
                       capture_output=True)
    data.unlink()
    if r.returncode != 0:
        raise Error(f"gnuplot failed: {r.stderr.strip()[:200]}")


def plot(csv_path, scenario, a, med):
    """ns/op against N, log-log; N=0 is drawn at N=0.3 and labelled 0."""
    if len({n for (s, _, n) in med if s == scenario}) < 2:
        return None     # one N (say --sizes 0): a table, no curve to draw
    data = csv_path.with_name(f"{csv_path.stem}-{scenario}.dat")
    with open(data, "w") as f:
        for v in a.variants:
            f.write(f"# {v}\n")
            for n in a.sizes:
                if (scenario, v, n) in med:
                    f.write(f"{n or 0.3} {med[(scenario, v, n)]}\n")
            f.write("\n\n")
    png = csv_path.with_name(f"{csv_path.stem}-{scenario}.png")
    tics = ", ".join(f'"{n}" {n or 0.3}' for n in a.sizes)
    lines = ", ".join(f"'{data}' index {i} with linespoints lw 2 "
                      f"title '{v}'" for i, v in enumerate(a.variants))
    script = (f"set terminal pngcairo size 800,500\nset output '{png}'\n"
              f"set logscale xy\nset xtics ({tics})\n"
              f"set xrange [0.2:{max(a.sizes) * 2}]\n"
              f"set xlabel 'long-lived children N'\n"
              f"set ylabel 'ns per operation ({a.clock})'\n"
              f"set title '{scenario}: cost per operation against N'\n"
              f"set key left top\nset grid\nplot {lines}\n")
    gnuplot(script, data)
    return png


def summary_plot(csv_path, a, med):
    """One bar per scenario and variant: the cost at the largest N over the
    cost at N = 0, log scale.  Scenarios without both points (an everyday
    path, pidns) are left out."""
    top = max(a.sizes)
    rows = [(s, [med.get((s, v, top), 0) / med[(s, v, 0)]
                 if med.get((s, v, 0)) else 0 for v in a.variants])
            for s in a.scenarios]
    rows = [(s, r) for s, r in rows if all(r)]
    if 0 not in a.sizes or top == 0 or not rows:
        return None
    data = csv_path.with_name(f"{csv_path.stem}-summary.dat")
    data.write_text("".join(f"{s} " + " ".join(f"{x:.4f}" for x in r) + "\n"
                            for s, r in rows))
    png = csv_path.with_name(f"{csv_path.stem}-summary.png")
    bars = ", ".join(f"'{data}' using {i + 2}"
                     + (":xtic(1)" if i == 0 else "") + f" title '{v}'"
                     for i, v in enumerate(a.variants))
    script = (f"set terminal pngcairo size 1200,520\nset output '{png}'\n"
              "set style data histograms\n"
              "set style histogram clustered gap 1\n"
              "set style fill solid 0.85 border -1\nset logscale y\n"
              "set yrange [0.5:*]\nset xtics rotate by -50 font ',8'\n"
              f"set ylabel 'cost at N = {top:,} / cost at N = 0'\n"
              f"set title 'How each scenario grows from N = 0 to "
              f"N = {top:,} idle children ({a.clock}; 1 = flat)'\n"
              f"set key left top\nset grid ytics\nplot {bars}\n")
    gnuplot(script, data)
    return png


def render(a):
    """Table and plots again from a CSV, with the run's own parameters."""
    csv_path = Path(a.render).resolve()
    info = json.loads(csv_path.with_suffix(".json").read_text())
    with open(csv_path) as f:
        rows = list(csv.DictReader(f))
    a.variants = list(dict.fromkeys(r["variant"] for r in rows))
    a.scenarios = list(dict.fromkeys(r["scenario"] for r in rows))
    a.sizes = sorted({int(r["N"]) for r in rows})
    a.rounds = 1 + max(int(r["round"]) for r in rows)
    a.repeats = info.get("repeats", a.repeats)
    a.smp = info.get("smp", a.smp)
    print(report(csv_path, a, info).read_text())
    return 0


def main(args):
    a = parse_args(args.args)
    if a.render:
        return render(a)
    workbench.ensure_packages("build", "run", extra=["gnuplot-nox"] + [
        CLIENTS[s][0] for s in a.scenarios or CLIENTS if s in CLIENTS])
    binary = compile_reapbench()
    resolve_scenarios(a, scenarios(binary))
    out = Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    csv_path = out / f"bench-{stamp}.csv"
    info = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "source": f"{workbench.SOURCE_PACKAGE} "
                      f"{workbench.source_version()}",
            "host": subprocess.run(["uname", "-srm"], capture_output=True,
                                   text=True).stdout.strip()
            + f", {subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()} cores",
            "clock_text": "guest time under TCG -icount shift=0 (1 insn = "
                          "1 ns, single-threaded TCG)" if a.clock == "icount"
            else "guest CLOCK_MONOTONIC under multi-threaded TCG (real "
                 "time; can vary 2x between boots)"}
    # What each image is built from: the patches' hash (sha256 of the
    # series, part of the image key) is taken right after the build, and
    # every boot is checked against the image key.
    info["images"] = {}
    for v in a.variants:
        img = workbench.build(v, "fast")
        print(f"kernel {v}: {img}", flush=True)
        build = json.loads((img / "build-info.json").read_text())
        info["images"][workbench.variant_name(v)] = {
            "image_key": build["key"], "patches": build["patches"],
            "patches_hash": workbench.patches_hash(v)
            if workbench.image_key(v, "fast") == build["key"] else "changed"}
    print(f"bench: {len(a.variants)} variants x {a.rounds} rounds; "
          f"scenarios {','.join(a.scenarios)}; N in {a.sizes}; clock "
          f"{a.clock}", flush=True)
    with open(csv_path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["variant", "clock", "round", "scenario", "N", "M",
                         "total_ns", "ns_per_op", "extra"])
        for rnd in range(a.rounds):
            for v in a.variants:
                run_round(v, binary, a, rnd, writer, info)
                f.flush()
    # Tables and plots name a scratch variant by its directory.
    a.variants = [workbench.variant_name(v) for v in a.variants]
    info["accel"] = "tcg-icount" if a.clock == "icount" else "tcg"
    info.update(repeats=a.repeats, smp=a.smp)
    csv_path.with_suffix(".json").write_text(json.dumps(info, indent=1))
    md = report(csv_path, a, info)
    print(md.read_text())
    print(f"bench: wrote {csv_path}, {md} and plots")
    return 0
