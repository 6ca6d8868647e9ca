"""./fastreap demo: the 2007 story, replayed on each variant side by side.

A pid-1-like reaper holds N long-lived children; then a burst of M children
(one per CPU of a big machine's module load) exits at once, and the reaper
collects them with a tini-like loop.  bench/reenact.c does it in the guest;
this boots each variant once, runs it at N = 0 and at N = LONG_LIVED, and
prints the time until every zombie is gone.  Timings are guest time under
-icount (one instruction per nanosecond), so they repeat from boot to boot.
"""

import statistics
import time

import workbench
from harness import compile_c
from workbench import REPO

BURST = 512            # "CPUs" whose helper threads exit at once
LONG_LIVED = 10000     # init's long-lived children
REPEATS = 3


def reenact(variant, binary, sizes):
    """Median reap time in ns of the burst, per N in SIZES."""
    script = "; ".join(f"{binary} -n {n} -m {BURST} -r {REPEATS}"
                       for n in sizes)
    rundir = workbench.new_rundir(f"demo-{variant}")
    # One vCPU: under -icount a second one only adds round-robin jitter.
    rc = workbench.run(variant, ["sh", "-c", script], icount=True, smp=1,
                       mem="3G", timeout=900, rundir=rundir, echo=False)
    if rc != 0:
        raise workbench.Error(f"demo on {variant} failed with status {rc} "
                              f"(see {rundir})")
    samples = {}
    for line in (rundir / "output").read_text().splitlines():
        parts = line.split(",")
        if parts[0] == "reenact" and len(parts) >= 5:
            samples.setdefault(int(parts[1]), []).append(int(parts[3]))
    return {n: statistics.median(v) for n, v in samples.items()}


def main(args):
    variants = (args.variants.split(",") if args.variants else
                [v for v in ("stock", "seed", "fastreap")
                 if v in workbench.known_variants()])
    t0 = time.time()
    workbench.ensure_packages("build", "run")
    binary = compile_c(REPO / "bench" / "reenact.c")
    for v in variants:
        print(f"kernel {v}: {workbench.build(v, 'fast')}", flush=True)
    sizes = (0, LONG_LIVED)
    rows = {}
    for v in variants:
        print(f"booting {v} ...", flush=True)
        rows[v] = reenact(v, binary, sizes)
    print()
    print(f"A reaper holds N long-lived children; {BURST} more exit at "
          "once.\nTime until every zombie is reaped (guest time, "
          "TCG -icount, median of 3):\n")
    print(f"{'variant':10} {'N=0':>10} {f'N={LONG_LIVED}':>12} {'ratio':>8}")
    for v in variants:
        base, big = rows[v].get(0), rows[v].get(LONG_LIVED)
        if base is None or big is None:
            print(f"{v:10} {'?':>10} {'?':>12}")
            continue
        print(f"{v:10} {base / 1e6:8.2f}ms {big / 1e6:10.2f}ms "
              f"{big / base:7.1f}x")
    print(f"\nsource {workbench.source_version()}; "
          f"{time.time() - t0:.0f}s wall. Plots: docs/results.md")
    return 0
