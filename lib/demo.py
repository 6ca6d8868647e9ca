"""./fastreap demo: the 2007 story, replayed on each variant side by side.

A pid-1-like reaper holds N long-lived children.  Two moments of its life
are timed, at N = 0 and at N = LONG_LIVED:

- burst: BURST children (one per CPU of a big machine's module load) exit
  at once, and the reaper collects them with a tini-like loop; timed until
  every zombie is gone.  Moving exiting children to the head of the list,
  as the 2007 patch does, is enough here.
- poll: the call that ends every reaping loop (tini, dumb-init, catatonit,
  bash): one waitpid(-1, WNOHANG) that finds nothing to reap.  The 2007
  patch leaves it walking every child.

bench/reenact.c does both in the guest; this boots each variant once and
prints them in one table.  Timings are guest time under -icount (one
instruction per nanosecond), so they repeat from boot to boot.
"""

import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import workbench
from harness import compile_c
from workbench import REPO

BURST = 512            # "CPUs" whose helper threads exit at once
LONG_LIVED = 10000     # init's long-lived children
POLLS = 100            # empty polls timed per repeat
REPEATS = 3
# reenact's output lines: scenario -> (row label, unit, ns per unit)
ROWS = {"reenact": (f"a burst of {BURST} exits, all reaped", "ms", 1e6),
        "poll": ("the final WNOHANG poll, one call", "us", 1e3)}


def reenact(variant, binary, sizes):
    """Median ns per scenario and N: {(scenario, N): ns}.  The burst is
    timed whole, the poll per call."""
    script = "; ".join(f"{binary} -n {n} -m {BURST} -r {REPEATS} "
                       f"-p {POLLS}" for n in sizes)
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
        if parts[0] in ROWS and len(parts) >= 5:
            column = 3 if parts[0] == "reenact" else 4
            samples.setdefault((parts[0], int(parts[1])), []).append(
                int(parts[column]))
    return {k: statistics.median(v) for k, v in samples.items()}


def table(rows, variants):
    """Both scenarios, the variants side by side: N = 0, N = LONG_LIVED
    and their ratio."""
    out = [f"{'':22}" + "".join(f"{v:>12}" for v in variants)]
    for scenario, (label, unit, scale) in ROWS.items():
        out.append(label)
        for name, n in (("N=0", 0), (f"N={LONG_LIVED}", LONG_LIVED),
                        (f"N={LONG_LIVED} / N=0", None)):
            cells = []
            for v in variants:
                base = rows[v].get((scenario, 0))
                big = rows[v].get((scenario, LONG_LIVED))
                if base is None or big is None:
                    cells.append("?")
                elif n is None:
                    r = big / base
                    cells.append(f"{r:.{0 if r >= 100 else 1}f}x")
                else:
                    x = rows[v][(scenario, n)] / scale
                    cells.append(f"{x:.{1 if x >= 100 else 2}f} {unit}")
            out.append(f"  {name:20}" + "".join(f"{c:>12}" for c in cells))
    return "\n".join(out)


def main(args):
    variants = (args.variants.split(",") if args.variants else
                [v for v in ("stock", "seed", "fastreap")
                 if v in workbench.known_variants()])
    t0 = time.time()
    workbench.ensure_packages("build", "run")
    binary = compile_c(REPO / "bench" / "reenact.c")
    for v in variants:
        print(f"kernel {v}: {workbench.build(v, 'fast')}", flush=True)
    # The guests boot side by side, one per host CPU: -icount with
    # sleep=off makes guest time count instructions, whatever else the
    # host runs, and a warm demo then takes about one boot per CPU.
    jobs = min(len(variants), os.cpu_count() or 1)
    print(f"booting {', '.join(variants)}, {jobs} at a time ...",
          flush=True)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        rows = dict(zip(variants, pool.map(
            lambda v: reenact(v, binary, (0, LONG_LIVED)), variants)))
    print()
    print(f"A reaper holds N long-lived children.  {BURST} more exit at "
          f"once: time until\nevery zombie is reaped.  Then its loop's "
          f"last call, waitpid(-1, WNOHANG),\nfinds nothing (beside the N "
          f"and its main child): time of one call.\nGuest time, TCG "
          f"-icount, median of {REPEATS}.\n")
    print(table(rows, variants))
    print(f"\nsource {workbench.source_version()}; "
          f"{time.time() - t0:.0f}s wall. Plots: docs/results.md")
    return 0
