"""./fastreap check: every test, on every variant, ending 'N passed, N
failed, N skipped'.

The plan (lib/plan.py) says which boots to make; this builds the fast
kernels, runs the host's groups, then every group on every variant in the
table's order, while the other flavors' kernels build in the background,
then those flavors' groups.  Whatever a group does, raising included, the
run goes on and ends with the summary (harness.summary()).
"""

import concurrent.futures
import resource
import time

import build
import plan
from common import Error, ensure_packages
from flavors import FLAVORS
from groups import GROUPS
from harness import Tally, run_guarded, summary
from variants import source_version, variant_name, variant_patch_dir

PACKAGES = ["stress-ng", "strace", "gnuplot-nox", "python3-pytest"]


def add_options(p):
    """check's options that follow from the tables: --groups, --no-NAME
    for each flavor that runs by default, --stock-NAME for each that stock
    does not boot, --with-NAME for each opt-in flavor or group."""
    opt_in = [g for g in plan.selectable()
              if g not in GROUPS or GROUPS[g].opt_in]
    p.add_argument("--groups", default=None,
                   help="comma-separated test groups: "
                        + ", ".join(g for g in plan.selectable()
                                    if g not in opt_in)
                        + ", and the opt-in " + " and ".join(opt_in)
                        + " (default: all but the opt-in ones)")
    for f in FLAVORS.values():
        if f.runs == "default":
            p.add_argument(f"--no-{f.name}", action="store_true",
                           help=f"skip the {f.name} flavor ({f.about})")
        if not f.on_stock:
            p.add_argument(f"--stock-{f.name}", action="store_true",
                           help=f"boot stock on the {f.name} flavor too "
                                "(default: patched variants only)")
        if f.runs == "opt-in":
            p.add_argument(f"--with-{f.name}", action="store_true",
                           help=f"add the opt-in {f.name} flavor: {f.about} "
                                f"(--flavor {f.name}; not in the default "
                                "run: it does not fit CI's budget)")
    for name, g in GROUPS.items():
        if g.opt_in:
            p.add_argument(f"--with-{name}", action="store_true",
                           help=f"add the opt-in {name} group: "
                                f"{g.about} (not in the default run: it "
                                "does not fit CI's budget)")


def chosen_groups(args):
    groups = args.groups.split(",") if args.groups else \
        [g for g in GROUPS if not GROUPS[g].opt_in]
    for name in plan.selectable():
        if getattr(args, f"with_{name}", False) and name not in groups:
            groups.append(name)
    for g in groups:
        if g not in plan.selectable():
            raise Error(f"unknown test group '{g}' (known: "
                        + ", ".join(plan.selectable()) + ")")
    return groups


def cpu_seconds():
    """User and system time of this process and its finished children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def timed(tally, variant, flavor, group):
    """Run one group, guarded.  Wall and CPU time per group, to keep the
    flavors' minutes honest: wall time grows with whatever else runs on
    the machine, CPU time (QEMU's and the compilers') much less."""
    t1, cpu1 = time.time(), cpu_seconds()
    run_guarded(tally, variant, flavor, group,
                lambda: GROUPS[group].run(tally, variant, flavor))
    who = variant if variant == plan.HOST[0] else variant_name(variant)
    where = "" if flavor in ("fast", plan.HOST[1]) else f"/{flavor}"
    print(f"[{time.strftime('%H:%M:%S')}] {group} on {who}{where}: "
          f"{(time.time() - t1) / 60:.1f} min wall, "
          f"{(cpu_seconds() - cpu1) / 60:.1f} CPU-min", flush=True)


def kernel_ready(tally, variant, flavor, groups, get):
    """GET() the kernel image; when it fails, the build's failure is
    counted and the boots that needed it are listed as not run."""
    name = variant_name(variant)
    try:
        img = get()
    except Error as e:
        tally.add(name, flavor, "build", f"kernel {name}/{flavor}", "fail",
                  str(e))
        for g in groups:
            tally.skip_group(name, flavor, g, "its kernel did not build")
        return False
    print(f"[{time.strftime('%H:%M:%S')}] kernel {name}/{flavor}: {img}",
          flush=True)
    return True


def main(args):
    ensure_packages("build", "run", extra=PACKAGES)
    variants = [v for v in args.variants.split(",") if v]
    groups = chosen_groups(args)
    t0 = time.time()
    for v in variants:
        variant_patch_dir(v)      # unknown variants fail early
    boots, expected = plan.plan(args, variants, groups)
    if args.plan:
        return 0
    tally = Tally()
    for v, flavor, gs in boots:
        if v == plan.HOST[0]:
            for g in gs:
                timed(tally, v, flavor, g)
    first = [(v, f, gs) for v, f, gs in boots if v != plan.HOST[0]
             and not (f in FLAVORS and FLAVORS[f].builds_beside_tests)]
    later = [(v, f, gs) for v, f, gs in boots
             if f in FLAVORS and FLAVORS[f].builds_beside_tests]
    ready = set()
    for v, flavor, gs in first:
        if flavor not in FLAVORS or kernel_ready(
                tally, v, flavor, gs, lambda: build.build(v, flavor)):
            ready.add((v, flavor))
    # The other flavors' kernels build in the background, niced, while the
    # fast groups run: their guest leaves about one of two cores idle, and
    # a cold debug build takes 15 minutes of both.  (The build's CPU time
    # shows in the group during which it ends.)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        builds = [pool.submit(build.build, v, f, background=True)
                  for v, f, _ in later]
        for g in groups:
            for v, flavor, gs in first:
                if g in gs and (v, flavor) in ready:
                    timed(tally, v, flavor, g)
        for (v, flavor, gs), job in zip(later, builds):
            if kernel_ready(tally, v, flavor, gs, job.result):
                for g in gs:
                    timed(tally, v, flavor, g)
    return summary(tally, [variant_name(v) for v in variants], groups,
                   footer=f"source {source_version()}, "
                   f"{time.time() - t0:.0f}s wall (plan: "
                   f"~{expected * 60:.0f}s)")
