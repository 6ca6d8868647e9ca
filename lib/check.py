"""./fastreap check: every test, on every variant, ending 'N passed, N failed'.

A group is a set of programs run in one guest boot.  Each program's output
is kept in the run directory; results are counted from its TAP lines when it
prints any ("ok N" / "not ok N", "# SKIP"), else from its exit status.  A
kernel splat, a timeout or a failed boot fails the whole boot.
"""

import concurrent.futures
import os
import re
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import workbench
from workbench import REPO, CACHE, Error, say

SELFTEST_TARGETS = ["pidfd", "ptrace", "pid_namespace", "clone3", "exec",
                    "proc"]
# In-tree selftests that fail or cannot finish on *stock* in this guest.
# They are reported as skipped, with the reason, on every variant; the
# oracle is stock, and these say nothing about it.
SELFTEST_SKIPS = {
    "pidfd:pidfd_test": "its pid-recycling case forks ~32k times: longer "
                        "than 5 minutes under TCG",
    "pidfd:pidfd_poll_test": "10,000 fork+poll rounds: longer than 5 "
                             "minutes under TCG",
    "ptrace:vmaccess": "the 'attach' case times out on stock 6.12 (exec vs "
                       "ptrace attach deadlock, still open in 6.12)",
    "clone3:clone3_cap_checkpoint_restore": "cap_set_proc() fails with "
                                            "EPERM on stock in this guest",
    "exec:execveat": "11 of its 51 checks fail on stock with the root file "
                     "system on 9p",
}
STRESS_NG_STRESSORS = ["fork", "vfork", "clone", "zombie", "wait", "ptrace",
                       "sigchld", "kill"]


# --- building the guest programs --------------------------------------------

def compile_c(src, flags=(), name=None):
    """Static binary for SRC, cached by content; guests see it read-only."""
    src = Path(src)
    stock = workbench.stock_tree()
    include = stock / "tools" / "testing" / "selftests"
    deps = [src] + sorted(src.parent.glob("*.h"))
    # Headers of other directories included by relative path (tests/jobctl
    # uses tests/wait/wait_util.h): part of the key too.
    for dep in list(deps):
        for inc in re.findall(r'^#include "(\.\./[^"]+)"',
                              dep.read_text(errors="replace"), re.M):
            other = (dep.parent / inc).resolve()
            if other.exists() and other not in deps:
                deps.append(other)
    key = workbench.digest(*[d.read_bytes() for d in deps], *flags)

    def gcc(out):
        cmd = ["gcc", "-static", "-O2", "-g", "-Wall", "-Wextra", "-pthread",
               f"-I{include}", *flags, str(src), "-o", str(out)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            first = (r.stderr.strip().splitlines() or ["?"])[0]
            raise Error(f"cannot compile {src.relative_to(REPO)}: {first}")
    return workbench.cached_file(key, name or src.stem, gcc)


def selftests_dir():
    return CACHE / "selftests" / workbench.digest(
        workbench.source_version(), *SELFTEST_TARGETS)


def selftests():
    """The tree's own process-lifetime selftests, installed once."""
    dest = selftests_dir()
    if (dest / "run_kselftest.sh").exists():
        return dest
    with workbench.Lock(dest.with_suffix(".lock")):
        if (dest / "run_kselftest.sh").exists():
            return dest
        return build_selftests(dest)


def build_selftests(dest):
    """selftests(), under its lock: one build of them at a time."""
    stock = workbench.stock_tree()
    say("building in-tree selftests: " + " ".join(SELFTEST_TARGETS))
    log = dest.with_suffix(".log")
    dest.parent.mkdir(parents=True, exist_ok=True)
    # Everything goes to an O= directory: a build in the source tree
    # itself would make every O= kernel build refuse the tree as unclean.
    objtree = stock / ".build-selftests"
    with open(log, "w") as out:
        steps = [["make", "-C", str(stock), f"O={objtree.name}",
                  "headers_install"],
                 ["make", "-C", str(stock / "tools/testing/selftests"),
                  f"O={objtree}", "TARGETS=" + " ".join(SELFTEST_TARGETS),
                  "-j" + str(os.cpu_count() or 1), "install",
                  f"INSTALL_PATH={dest}.tmp"]]
        for step in steps:
            r = subprocess.run(step, stdout=out, stderr=subprocess.STDOUT)
            if r.returncode != 0:
                raise Error(f"building selftests failed (log: {log})")
    listed = (Path(f"{dest}.tmp") / "kselftest-list.txt").read_text()
    for target in SELFTEST_TARGETS:
        if f"{target}:" not in listed:
            raise Error(f"selftests for {target} did not build (log: {log})")
    os.rename(f"{dest}.tmp", dest)
    return dest


# --- running a group in a guest ---------------------------------------------

class Tally:
    def __init__(self):
        self.rows = []          # (variant, flavor, group, test, result, why)

    def add(self, variant, flavor, group, test, result, why="",
            quiet_skip=False):
        # one name per variant, whether it was given as a name or a path
        if "/" in variant:
            variant = workbench.variant_name(variant)
        self.rows.append((variant, flavor, group, test, result, why))
        mark = {"pass": "ok", "fail": "FAIL", "skip": "skip"}[result]
        if result == "fail" or (result == "skip" and not quiet_skip):
            print(f"  {mark:4} {variant}/{flavor} {group}: {test}"
                  + (f"  ({why})" if why else ""), flush=True)

    def count(self, result, **match):
        return sum(1 for r in self.rows if r[4] == result and all(
            r[("variant", "flavor", "group").index(k)] == v
            for k, v in match.items()))


TAP_RESULT = re.compile(r"^(not ok|ok) \d+ (?:- )?(.*?)(?:\s+#\s*(SKIP|TODO)"
                        r"\b\s*(.*))?$")


def count_tap(text):
    """Top-level TAP results in TEXT: [(name, result, why)]."""
    results = []
    for line in text.splitlines():
        m = TAP_RESULT.match(line.rstrip())
        if not m:
            continue
        status, name, directive, why = m.groups()
        if directive == "SKIP":
            results.append((name, "skip", why or ""))
        elif status == "ok":
            results.append((name, "pass", ""))
        else:
            results.append((name, "fail", why or ""))
    return results


def guest_script(tests, per_test_timeout):
    """Shell for the guest: run each test, keep its log and exit status."""
    lines = ["set +e", 'o="$FASTREAP_OUT"']
    for name, argv in tests:
        q = shlex.quote(name)
        lines.append(f"echo '== {name}'")
        lines.append(f"timeout -k 5 {per_test_timeout} "
                     + " ".join(shlex.quote(str(a)) for a in argv)
                     + f' >"$o"/{q}.log 2>&1; echo $? >"$o"/{q}.rc')
    return "\n".join(lines)


def run_group(tally, variant, flavor, group, tests, timeout=1200,
              per_test_timeout=600, mem="2G", smp=2, icount=False,
              quiet_skips=False):
    """Boot once and run TESTS [(name, argv)]; tally every result.  With
    QUIET_SKIPS the tests' own skips are counted but not printed one by
    one (their reasons stay in the programs' logs)."""
    spec, variant = variant, workbench.variant_name(variant)
    print(f"[{time.strftime('%H:%M:%S')}] {group} on {variant}/{flavor}: "
          f"{len(tests)} program(s)", flush=True)
    rundir = workbench.new_rundir(f"check-{group}-{variant}-{flavor}")
    script = guest_script(tests, per_test_timeout)
    rc = workbench.run(spec, ["sh", "-c", script], flavor=flavor,
                       smp=smp, mem=mem, timeout=timeout, rundir=rundir,
                       echo=False, icount=icount)
    out = rundir / "out"
    for name, _ in tests:
        log = out / f"{name}.log"
        rcf = out / f"{name}.rc"
        if not rcf.exists():
            tally.add(variant, flavor, group, name, "fail",
                      f"did not run to the end (runner status {rc})")
            continue
        status = int(rcf.read_text().strip() or 255)
        text = log.read_text(errors="replace") if log.exists() else ""
        results = count_tap(text)
        for tname, result, why in results:
            tally.add(variant, flavor, group, f"{name}: {tname}", result, why,
                      quiet_skip=quiet_skips)
        if status == 124:
            tally.add(variant, flavor, group, name, "fail", "timed out")
        elif status == 4 and not results:
            tally.add(variant, flavor, group, name, "skip", "exit status 4")
        elif status != 0 and not any(r[1] == "fail" for r in results):
            tally.add(variant, flavor, group, name, "fail",
                      f"exit status {status}; log {log}")
        elif not results:
            tally.add(variant, flavor, group, name,
                      "pass" if status == 0 else "fail",
                      "" if status == 0 else f"exit status {status}")
    if rc in (workbench.EXIT_SPLAT, workbench.EXIT_NO_BOOT,
              workbench.EXIT_TIMEOUT):
        what = {workbench.EXIT_SPLAT: "kernel splat",
                workbench.EXIT_NO_BOOT: "kernel did not boot",
                workbench.EXIT_TIMEOUT: "guest timed out"}[rc]
        tally.add(variant, flavor, group, "kernel log", "fail",
                  f"{what}; see {rundir}/console.log")
    else:
        tally.add(variant, flavor, group, "kernel log clean", "pass")
    return rc


# --- the groups -------------------------------------------------------------

def group_smoke(tally, variant):
    run_group(tally, variant, "fast", "smoke",
              [("forkwait", [compile_c(REPO / "tests/smoke/forkwait.c")])])


def group_runner(tally, variant):
    """The runner's own contract: statuses pass through, timeouts show,
    and the command runs in the host's working directory even where the
    guest mounts a tmpfs (a clone under /tmp)."""
    # The timeout counts from QEMU's start, and a boot took over 20 s on
    # this 2-core machine while other jobs ran: 40 s, so the case cannot
    # read as "did not boot" (123).
    cases = [(["true"], {}, 0), (["false"], {}, 1),
             (["sh", "-c", "exit 7"], {}, 7),
             # 2 is also the workbench's own status for bad input
             (["sh", "-c", "exit 2"], {}, 2),
             (["sleep", "1000"], {"timeout": 40}, workbench.EXIT_TIMEOUT)]
    for argv, kw, want in cases:
        rc = workbench.run(variant, argv, echo=False, **kw)
        name = f"run -- {' '.join(argv)} exits {want}"
        tally.add(variant, "fast", "runner", name,
                  "pass" if rc == want else "fail",
                  "" if rc == want else f"got {rc}")
    with tempfile.TemporaryDirectory(dir="/tmp",
                                     prefix="fastreap-cwd-") as cwd:
        cwd = os.path.realpath(cwd)         # what pwd prints in the guest
        marker = f"host file {os.getpid()}"
        Path(cwd, "marker").write_text(marker + "\n")
        rundir = workbench.new_rundir(f"check-runner-{variant}")
        rc = workbench.run(variant, ["sh", "-c", 'pwd; cat marker'],
                           echo=False, cwd=cwd, rundir=rundir)
        got = (rundir / "output").read_text(errors="replace").split("\n")
        ok = rc == 0 and got[:2] == [cwd, marker]
        tally.add(variant, "fast", "runner",
                  "run in a working directory under /tmp sees it",
                  "pass" if ok else "fail",
                  "" if ok else f"status {rc}, output {got[:2]}")


# The rt flavor runs the same programs several times slower than fast
# (sleeping locks, lockdep and KASAN under TCG): jobctl_fuzz's 16 seeds
# took 13 minutes there alone, past the 10 a program gets on fast and
# debug.  The group is opt-in, so it gets the time, not fewer seeds.
SLOW_FLAVOR_TIMEOUTS = {"rt": {"timeout": 3600, "per_test_timeout": 1800}}


def group_wait(tally, variant, flavor="fast"):
    tests = [(src.stem, [compile_c(src)])
             for src in sorted((REPO / "tests/wait").glob("*.c"))]
    if tests:
        run_group(tally, variant, flavor, "wait", tests, mem="2G",
                  **SLOW_FLAVOR_TIMEOUTS.get(flavor, {}))


def group_jobctl(tally, variant, flavor="fast"):
    """Job control: orphaned process groups, SIGHUP/SIGCONT at exit, the
    tty's EIO, and a differential fuzzer against a model read from /proc
    (tests/jobctl)."""
    tests = [(src.stem, [compile_c(src)])
             for src in sorted((REPO / "tests/jobctl").glob("*.c"))]
    if tests:
        run_group(tally, variant, flavor, "jobctl", tests, mem="2G",
                  **SLOW_FLAVOR_TIMEOUTS.get(flavor, {}))


def group_selftests(tally, variant):
    dest = selftests()
    listed = (dest / "kselftest-list.txt").read_text().split()
    tests = []
    for target in SELFTEST_TARGETS:
        chosen = []
        for entry in listed:
            if not entry.startswith(target + ":"):
                continue
            if entry in SELFTEST_SKIPS:
                tally.add(variant, "fast", "selftests", entry, "skip",
                          SELFTEST_SKIPS[entry])
            else:
                chosen += ["-t", entry]
        # Some tests write next to themselves: run a writable copy.
        # TCG is slow: give every selftest 5 minutes, not 45 seconds.
        script = (f"rm -rf /tmp/ks && cp -a {dest} /tmp/ks && "
                  f"exec /tmp/ks/run_kselftest.sh -o 300 "
                  + " ".join(chosen))
        tests.append((target, ["sh", "-c", script]))
    run_group(tally, variant, "fast", "selftests", tests, timeout=3000,
              per_test_timeout=1200)


# Seconds of proctree_stress, and of each stress-ng stressor, per flavor.
# The stress programs run for a fixed wall time, so this is most of the
# group's time.  On debug the stressors run half as long: its checkers
# report a bad lock order or access the first time a path is taken, and
# the budget of a cold CI run (README, "Time budget") has no room for
# more; proctree_stress, which targets the paths the series changes, keeps
# its full minute.
STRESS_SECONDS = {"fast": (60, 20), "debug": (60, 10), "rt": (60, 10)}


def group_stress(tally, variant, flavor):
    src = REPO / "tests/stress/proctree_stress.c"
    proctree, stressor = STRESS_SECONDS[flavor]
    tests = []
    if src.exists():
        tests.append(("proctree_stress",
                      [compile_c(src), "--seconds", str(proctree)]))
    have = subprocess.run(["stress-ng", "--stressors"], capture_output=True,
                          text=True).stdout.split()
    for s in STRESS_NG_STRESSORS:
        if s in have:
            tests.append((f"stress-ng-{s}", [
                "stress-ng", f"--{s}", "2", "--timeout", f"{stressor}s",
                "--temp-path", "/tmp", "--metrics-brief"]))
    run_group(tally, variant, flavor, "stress", tests, timeout=1800,
              mem="3G")


def group_scaling(tally, variant):
    """The series' own selftest: wait() costs the same beside 10 and 2,000
    children with nothing to report to it.  Its source comes with the
    series (tools/testing/selftests/wait/), so a variant without it has
    nothing to run.  Under -icount on one vCPU the ratios repeat; stock
    fails 7 of its 10 cases (x22 to x2,220 natively on 6.18)."""
    tree = workbench.variant_tree(variant)
    src = tree / "tools/testing/selftests/wait/wait_scaling.c"
    if not src.exists():
        return
    run_group(tally, variant, "fast", "scaling",
              [("wait_scaling", [compile_c(src)])], smp=1, icount=True)


def group_kmod(tally, variant):
    """The 2007 module-load storm, replayed by a test module in the guest."""
    import census
    run_group(tally, variant, "fast", "kmod",
              [("storm", census.kmod_test_argv(variant))], smp=4,
              timeout=600)


def group_systemd(tally, variant):
    """The kernel a Debian user would install (./fastreap deb), booted
    from a bookworm disk with systemd as pid 1: the boot reaches
    'running' (or 'degraded', failed units listed), then a few thousand
    systemd-run transient services run beside services holding N
    children, with no kernel splat.  Opt-in (--with-systemd or --groups
    systemd): two Debian kernel builds do not fit CI's 90 minutes."""
    import deb
    name = workbench.variant_name(variant)
    print(f"[{time.strftime('%H:%M:%S')}] systemd on {name}/deb: "
          f"{deb.CHURN} transient services, {deb.CHILDREN} children",
          flush=True)
    rc, rundir, results, seconds = deb.boot_systemd(
        variant, job="churn", churn=deb.CHURN, children=deb.CHILDREN,
        timeout=deb.CHURN_TIMEOUT)
    for line in results.splitlines():
        if line.startswith("# ") and ("boot-to-running" in line
                                      or "churn:" in line
                                      or "Startup finished" in line):
            print(f"  {name}/deb: {line[2:]}", flush=True)
    found = count_tap(results)
    for tname, result, why in found:
        tally.add(name, "deb", "systemd", tname, result, why)
    if rc != 0 or not found:
        what = {workbench.EXIT_SPLAT: "kernel splat or job cut short",
                workbench.EXIT_NO_BOOT: "systemd did not start",
                workbench.EXIT_TIMEOUT: "guest timed out"}.get(
                    rc, f"status {rc}")
        tally.add(name, "deb", "systemd", "kernel log", "fail",
                  f"{what}; see {rundir}/console.log")
    else:
        tally.add(name, "deb", "systemd", "kernel log clean", "pass")
    print(f"  {name}/deb: guest ran {seconds:.0f} s wall "
          f"(run directory {rundir})", flush=True)


# What runs on the flavors other than fast, after every fast group (see
# main()): the stress programs on debug, and the opt-in rt group's three
# on rt.  The rt flavor is a PREEMPT_RT kernel with the debug flavor's
# checkers (config/rt.config): there spinlock_t sleeps and
# write_lock_irq() leaves interrupts on, so a lock that the series takes
# without saving interrupts, or an assertion that they are off, is checked
# where the cover letter says it holds.  Opt-in (--with-rt or --groups
# rt): its kernel took 17 minutes to build, cold.
FLAVOR_GROUPS = {"debug": {"stress": group_stress},
                 "rt": {"wait": group_wait, "jobctl": group_jobctl,
                        "stress": group_stress}}


def group_ltp(tally, variant):
    """The Linux Test Project's tests of wait, fork, exit, kill, ptrace,
    process groups, sessions, clone and pidfds: tests written by others
    (lib/ltp.py builds them in the cache)."""
    import ltp
    ltp.group(tally, variant)


def group_cpython(tally, variant):
    """CPython's own tests of os.wait*(), asyncio's child watchers and
    pty: tests written by others, one result per test method
    (lib/cpython.py)."""
    import cpython
    cpython.group(tally, variant)


# The groups on the fast flavor; the debug and rt flavors' runs are in
# FLAVOR_GROUPS.
GROUPS = {
    "smoke": lambda t, v: group_smoke(t, v),
    "runner": lambda t, v: v == "stock" and group_runner(t, v),
    "wait": lambda t, v: group_wait(t, v),
    "jobctl": lambda t, v: group_jobctl(t, v),
    "selftests": lambda t, v: group_selftests(t, v),
    "scaling": lambda t, v: v != "stock" and group_scaling(t, v),
    "kmod": lambda t, v: group_kmod(t, v),
    "stress": lambda t, v: group_stress(t, v, "fast"),
    "systemd": lambda t, v: group_systemd(t, v),
    "ltp": lambda t, v: group_ltp(t, v),
    "cpython": lambda t, v: group_cpython(t, v),
    "rt": None,                 # only on its own flavor, FLAVOR_GROUPS
}
# Groups that run only when asked for (--groups, --with-systemd,
# --with-rt): they build kernels that CI's budget has no room for,
# Debian-config ones (./fastreap deb) or the rt flavor.
OPT_IN_GROUPS = ("systemd", "rt")


# --- the plan and its time budget -------------------------------------------

# Minutes on 2 cores (README, "Time budget").  Builds are cold: no image
# and an empty ccache, as measured on a fresh 2-core machine.  A variant's
# build after stock's of the same flavor reuses stock's objects from
# ccache: if its patches touch a header most of the tree still recompiles
# (fastreap changes include/linux/sched.h: 7 minutes instead of 8),
# otherwise only their files do.
BUILD_MINUTES = {"fast": 8, "debug": 15, "rt": 17}
HEADER_REBUILD = 7 / 8
SMALL_REBUILD_MINUTES = 2
UNPACK_MINUTES = 1.5              # linux-source into a git repo: 1.1
SELFTESTS_BUILD_MINUTES = 1       # measured 0.9
BINARIES_MINUTES = 0.5            # the static test programs: 0.5
# One boot of each group on a cached kernel, programs built: the wall time
# of stock/fast on the shared 2-core machine while other jobs ran (load
# average 7-9; the guest got about one core), a little rounded up.
# Stress is a fixed wall time (STRESS_SECONDS); fastreap/debug stress,
# 140 s of programs and a slow boot, took 4.1 minutes at load average 3-5.
# jobctl: its fuzzer's 48 seeds took 7.6 minutes at load average 15 (three
# guests and two kernel builds); its default is now 16 seeds.
# ltp: 96 LTP programs, 2.7 and 3.0 minutes at load average 6 (lib/ltp.py).
# cpython: CPython's 7 test modules (lib/cpython.py), 2.8 minutes on each
# kernel beside two other guests.
# rt (opt-in): fastreap/rt built in 17 minutes, alone; wait took 8.5
# minutes beside a kernel build, jobctl 14.4 alone (most of it its
# fuzzer's 16 seeds), stress 3.3.
GROUP_MINUTES = {("smoke", "fast"): 0.3, ("runner", "fast"): 1.7,
                 ("wait", "fast"): 2.3, ("selftests", "fast"): 3.3,
                 ("jobctl", "fast"): 2.0,
                 ("scaling", "fast"): 1.0,
                 ("kmod", "fast"): 0.4, ("stress", "fast"): 3.8,
                 ("stress", "debug"): 4.2, ("ltp", "fast"): 3.0,
                 ("cpython", "fast"): 3.0,
                 ("wait", "rt"): 8.5, ("jobctl", "rt"): 15.0,
                 ("stress", "rt"): 3.5}


def wants_debug(args, variant):
    """Whether VARIANT's stress group runs on the debug flavor too.

    The debug flavor (lockdep, KASAN, list and object debugging) exists to
    catch splats in the patched code.  Stock's semantics are the oracle
    and come from its fast kernel; a stock debug kernel would only show
    that Debian's tree has no splat, for 15 minutes of build on 2 cores,
    so it is opt-in (--stock-debug).
    """
    if args.no_debug:
        return False
    return workbench.variant_name(variant) != "stock" or args.stock_debug


def touches_headers(variant):
    """Whether VARIANT's patches change a header (most of the tree then
    recompiles, whatever ccache holds)."""
    for patch in workbench.variant_patches(variant):
        for line in patch.read_text(errors="replace").splitlines():
            m = re.match(r"diff --git a/(\S+) ", line)
            if m and m.group(1).endswith(".h"):
                return True
    return False


def minutes_text(minutes):
    return f"{minutes:.1f}" if minutes < 2 else f"{minutes:.0f}"


def plan(args, variants, groups):
    """The boots to make and the kernels they need, with an estimate.

    Prints which kernels are cached and which must be built, and the
    minutes expected; returns the boots [(variant, flavor, groups)] and
    those minutes.
    """
    boots, kernels = [], []
    for v in variants:
        stock = workbench.variant_name(v) == "stock"
        # the runner's contract is checked on stock, the series' own
        # scaling selftest on the patched variants
        fast = [g for g in groups
                if g != ("scaling" if stock else "runner")
                and g not in OPT_IN_GROUPS]
        debug = [g for g in FLAVOR_GROUPS["debug"] if g in groups] \
            if wants_debug(args, v) else []
        rt = list(FLAVOR_GROUPS["rt"]) if "rt" in groups and not stock \
            else []
        for flavor, gs in (("fast", fast), ("debug", debug), ("rt", rt)):
            if gs:
                boots.append((v, flavor, gs))
                kernels.append((v, flavor))
    built = {f for v, f in kernels if workbench.variant_name(v) == "stock"}
    cpus = os.cpu_count() or 1
    scale = 2 / cpus          # builds use every core; guests do not
    build_min = late_build_min = 0.0
    lines = []
    stock_tree = workbench.source_dir() / "trees" / "stock"
    if not (stock_tree / ".git").exists():
        build_min += UNPACK_MINUTES
        lines.append(f"  unpack {workbench.SOURCE_PACKAGE:22} "
                     f"~{minutes_text(UNPACK_MINUTES)} min")
    for v, f in kernels:
        name = f"{workbench.variant_name(v)}/{f}"
        img = workbench.cached_image(v, f)
        if img:
            lines.append(f"  kernel {name:22} cached")
            continue
        stock = workbench.variant_name(v) == "stock"
        if stock or f not in built:
            minutes = BUILD_MINUTES[f]
        elif touches_headers(v):
            minutes = BUILD_MINUTES[f] * HEADER_REBUILD
        else:
            minutes = SMALL_REBUILD_MINUTES
        minutes *= scale
        if f == "fast":
            build_min += minutes
        else:
            late_build_min += minutes
        lines.append(f"  kernel {name:22} to build, "
                     f"~{minutes_text(minutes)} min (cold ccache)"
                     + ("" if f == "fast" else ", beside the fast tests"))
    if not (CACHE / "bin").is_dir():
        build_min += BINARIES_MINUTES
        lines.append(f"  {'test programs':29} to build, "
                     f"~{minutes_text(BINARIES_MINUTES)} min")
    if "selftests" in groups:
        dest = selftests_dir()
        if (dest / "run_kselftest.sh").exists():
            lines.append(f"  {'in-tree selftests':29} cached")
        else:
            build_min += SELFTESTS_BUILD_MINUTES * scale
            lines.append(f"  {'in-tree selftests':29} to build, "
                         f"~{minutes_text(SELFTESTS_BUILD_MINUTES * scale)} "
                         "min")
    if "ltp" in groups:
        import ltp
        if ltp.cached():
            lines.append(f"  {'LTP tests':29} cached")
        else:
            build_min += ltp.BUILD_MINUTES
            lines.append(f"  {'LTP tests':29} to build, "
                         f"~{minutes_text(ltp.BUILD_MINUTES)} min")
    if "systemd" in groups:
        import deb
        for v in variants:
            name = workbench.variant_name(v)
            if deb.cached_deb(v):
                lines.append(f"  {'deb ' + name:29} cached")
            else:
                minutes = deb.BUILD_MINUTES * scale
                build_min += minutes
                lines.append(f"  {'deb ' + name:29} to build, "
                             f"~{minutes_text(minutes)} min")
    test_min = late_test_min = 0.0
    for v, f, gs in boots:
        minutes = sum(GROUP_MINUTES[(g, f)] for g in gs)
        if f == "fast":
            test_min += minutes
        else:
            late_test_min += minutes
        lines.append(f"  tests  {workbench.variant_name(v) + '/' + f:22} "
                     f"~{minutes_text(minutes)} min: {', '.join(gs)}")
    if "systemd" in groups:
        import deb
        for v in variants:
            test_min += deb.GROUP_MINUTES
            lines.append(f"  tests  {workbench.variant_name(v) + '/deb':22} "
                         f"~{minutes_text(deb.GROUP_MINUTES)} min: systemd")
    # The other flavors' kernels build beside the fast tests, whose guest
    # leaves them about one core (with one core, nothing), and on every
    # core once those tests are done.
    done_beside = test_min * (cpus - 1) / cpus
    beside = test_min + max(0.0, late_build_min - done_beside)
    total = build_min + beside + late_test_min
    print(f"[{time.strftime('%H:%M:%S')}] plan (FASTREAP_CACHE="
          f"{CACHE}):", flush=True)
    print("\n".join(lines))
    print(f"  expected: ~{build_min:.0f} min of builds, then "
          f"~{test_min:.0f} min of fast tests"
          + (f" beside ~{late_build_min:.0f} min of builds"
             if late_build_min else "")
          + (f", then ~{late_test_min:.0f} min of other flavors' tests"
             if late_test_min else "")
          + f" = ~{total:.0f} min on {cpus} core(s); longer while other "
          "jobs share them", flush=True)
    return boots, total


def cpu_seconds():
    """User and system time of this process and its finished children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main(args):
    workbench.ensure_packages("build", "run",
                              extra=["stress-ng", "strace", "gnuplot-nox"])
    variants = [v for v in args.variants.split(",") if v]
    groups = args.groups.split(",") if args.groups else \
        [g for g in GROUPS if g not in OPT_IN_GROUPS]
    if getattr(args, "with_systemd", False) and "systemd" not in groups:
        groups.append("systemd")
    if getattr(args, "with_rt", False) and "rt" not in groups:
        groups.append("rt")
    for g in groups:
        if g not in GROUPS:
            raise Error(f"unknown test group '{g}' (known: "
                        + ", ".join(GROUPS) + ")")
    t0 = time.time()
    for v in variants:
        workbench.variant_patch_dir(v)      # unknown variants fail early
    boots, expected = plan(args, variants, groups)
    if args.plan:
        return 0
    for v, flavor, _ in boots:
        if flavor == "fast":
            img = workbench.build(v, flavor)
            print(f"[{time.strftime('%H:%M:%S')}] kernel "
                  f"{workbench.variant_name(v)}/{flavor}: {img}", flush=True)
    tally = Tally()

    def timed(what, run):
        # Wall and CPU time per group, to keep GROUP_MINUTES honest: wall
        # time grows with whatever else runs on the machine, CPU time
        # (QEMU's and the compilers') much less.
        t1, cpu1 = time.time(), cpu_seconds()
        run()
        print(f"[{time.strftime('%H:%M:%S')}] {what}: "
              f"{(time.time() - t1) / 60:.1f} min wall, "
              f"{(cpu_seconds() - cpu1) / 60:.1f} CPU-min", flush=True)

    # The debug and rt kernels build in the background, niced, while the
    # fast groups run: their guest leaves about one of two cores idle, and
    # a cold debug build takes 15 minutes of both.  (The build's CPU time
    # shows in the group during which it ends.)
    later = [(v, f, gs) for v, f, gs in boots if f != "fast"]
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        builds = [pool.submit(workbench.build, v, f, background=True)
                  for v, f, _ in later]
        for g in groups:
            for v in variants:
                if GROUPS[g] is None:
                    continue
                timed(f"{g} on {workbench.variant_name(v)}",
                      lambda: GROUPS[g](tally, v))
        for (v, flavor, gs), build in zip(later, builds):
            name = workbench.variant_name(v)
            try:
                img = build.result()
            except Error as e:
                tally.add(name, flavor, "build", f"kernel {name}/{flavor}",
                          "fail", str(e))
                continue
            print(f"[{time.strftime('%H:%M:%S')}] kernel {name}/{flavor}: "
                  f"{img}", flush=True)
            for g in gs:
                timed(f"{g} on {name}/{flavor}",
                      lambda: FLAVOR_GROUPS[flavor][g](tally, v, flavor))
    print()
    print(f"{'variant':10} {'flavor':6} {'group':10} passed failed skipped")
    names = [workbench.variant_name(v) for v in variants]
    keys = sorted({(r[0], r[1], r[2]) for r in tally.rows},
                  key=lambda k: (names.index(k[0]), k[1], groups.index(
                      k[2]) if k[2] in groups else 99))
    for v, f, g in keys:
        print(f"{v:10} {f:6} {g:10} {tally.count('pass', variant=v, flavor=f, group=g):6} "
              f"{tally.count('fail', variant=v, flavor=f, group=g):6} "
              f"{tally.count('skip', variant=v, flavor=f, group=g):7}")
    print(f"source {workbench.source_version()}, "
          f"{time.time() - t0:.0f}s wall (plan: ~{expected * 60:.0f}s)")
    passed, failed = tally.count("pass"), tally.count("fail")
    print(f"{passed} passed, {failed} failed, {tally.count('skip')} skipped")
    return 1 if failed else 0
