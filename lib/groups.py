"""The test groups of ./fastreap check, and GROUPS, their one table.

Each group function takes (tally, variant, flavor) and boots the variant's
kernel of that flavor once (run_group()), or raises NotRun with the reason
it cannot run here.  Which flavors a group boots is the flavor table's
say (lib/flavors.py); which variants, and whether it is opt-in, GROUPS'.
"""

import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

import cpython
import deb
import kmod
import ltp
import runner
from common import CACHE, REPO, Error, Lock, digest, say
from flavors import FLAVORS
from harness import NotRun, compile_c, count_tap, run_group
from variants import source_version, stock_tree, variant_name, variant_tree

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
SCALING_SOURCE = "tools/testing/selftests/wait/wait_scaling.c"
UNIT_TESTS = REPO / "tests" / "unit"
# Debian's pytest, whatever python3 is first on PATH.
PYTEST = ["/usr/bin/python3", "-m", "pytest"]


# --- the host's own tests ----------------------------------------------------

def group_unit(tally, variant, flavor):
    """The workbench's own logic (tests/unit): host-only, seconds, one
    result per test function, read from pytest's JUnit XML."""
    with tempfile.TemporaryDirectory(prefix="fastreap-unit-") as tmp:
        report = Path(tmp) / "report.xml"
        r = subprocess.run(
            [*PYTEST, "-q", "-p", "no:cacheprovider", f"--junitxml={report}",
             str(UNIT_TESTS)], cwd=REPO, capture_output=True, text=True,
            env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
        if not report.exists():
            raise Error("pytest wrote no report: "
                        + (r.stdout + r.stderr).strip()[-300:])
        cases = ElementTree.parse(report).getroot().iter("testcase")
        for case in cases:
            module = case.get("classname").removeprefix("tests.unit.")
            name = f"{module}.{case.get('name')}"
            bad = case.find("failure")
            if bad is None:
                bad = case.find("error")
            skipped = case.find("skipped")
            if bad is not None:
                tally.add(variant, flavor, "unit", name, "fail",
                          (bad.get("message") or "")[:200])
            elif skipped is not None:
                tally.add(variant, flavor, "unit", name, "skip",
                          skipped.get("message") or "")
            else:
                tally.add(variant, flavor, "unit", name, "pass")
    if r.returncode not in (0, 1):      # 1: a test failed, counted above
        sys.stdout.write(r.stdout[-2000:])
        raise Error(f"pytest exited with status {r.returncode}")


# --- groups of the project's own test programs -------------------------------

def programs(directory):
    """[(name, [binary])] of every tests/DIRECTORY/*.c."""
    return [(src.stem, [compile_c(src)])
            for src in sorted((REPO / "tests" / directory).glob("*.c"))]


def group_smoke(tally, variant, flavor):
    run_group(tally, variant, flavor, "smoke",
              [("forkwait", [compile_c(REPO / "tests/smoke/forkwait.c")])])


def group_runner(tally, variant, flavor):
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
             (["sleep", "1000"], {"timeout": 40}, runner.EXIT_TIMEOUT)]
    for argv, kw, want in cases:
        rc = runner.run(variant, argv, flavor=flavor, echo=False, **kw)
        name = f"run -- {' '.join(argv)} exits {want}"
        tally.add(variant, flavor, "runner", name,
                  "pass" if rc == want else "fail",
                  "" if rc == want else f"got {rc}")
    with tempfile.TemporaryDirectory(dir="/tmp",
                                     prefix="fastreap-cwd-") as cwd:
        cwd = os.path.realpath(cwd)         # what pwd prints in the guest
        marker = f"host file {os.getpid()}"
        Path(cwd, "marker").write_text(marker + "\n")
        rundir = runner.new_rundir(f"check-runner-{variant}")
        rc = runner.run(variant, ["sh", "-c", 'pwd; cat marker'],
                        flavor=flavor, echo=False, cwd=cwd, rundir=rundir)
        got = (rundir / "output").read_text(errors="replace").split("\n")
        ok = rc == 0 and got[:2] == [cwd, marker]
        tally.add(variant, flavor, "runner",
                  "run in a working directory under /tmp sees it",
                  "pass" if ok else "fail",
                  "" if ok else f"status {rc}, output {got[:2]}")


def group_wait(tally, variant, flavor):
    run_group(tally, variant, flavor, "wait", programs("wait"), mem="2G",
              **FLAVORS[flavor].long_program_timeouts)


def group_jobctl(tally, variant, flavor):
    """Job control: orphaned process groups, SIGHUP/SIGCONT at exit, the
    tty's EIO, and a differential fuzzer against a model read from /proc
    (tests/jobctl)."""
    run_group(tally, variant, flavor, "jobctl", programs("jobctl"),
              mem="2G", **FLAVORS[flavor].long_program_timeouts)


# --- the kernel's own selftests ----------------------------------------------

def selftests_dir():
    return CACHE / "selftests" / digest(source_version(), *SELFTEST_TARGETS)


def selftests():
    """The tree's own process-lifetime selftests, installed once."""
    dest = selftests_dir()
    if (dest / "run_kselftest.sh").exists():
        return dest
    with Lock(dest.with_suffix(".lock")):
        if (dest / "run_kselftest.sh").exists():
            return dest
        return build_selftests(dest)


def build_selftests(dest):
    """selftests(), under its lock: one build of them at a time."""
    stock = stock_tree()
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


def group_selftests(tally, variant, flavor):
    dest = selftests()
    listed = (dest / "kselftest-list.txt").read_text().split()
    tests = []
    for target in SELFTEST_TARGETS:
        chosen = []
        for entry in listed:
            if not entry.startswith(target + ":"):
                continue
            if entry in SELFTEST_SKIPS:
                tally.add(variant, flavor, "selftests", entry, "skip",
                          SELFTEST_SKIPS[entry])
            else:
                chosen += ["-t", entry]
        # Some tests write next to themselves: run a writable copy.
        # TCG is slow: give every selftest 5 minutes, not 45 seconds.
        script = (f"rm -rf /tmp/ks && cp -a {dest} /tmp/ks && "
                  f"exec /tmp/ks/run_kselftest.sh -o 300 "
                  + " ".join(chosen))
        tests.append((target, ["sh", "-c", script]))
    run_group(tally, variant, flavor, "selftests", tests, timeout=3000,
              per_test_timeout=1200)


def group_scaling(tally, variant, flavor):
    """The series' own selftest: wait() costs the same beside 10 and 2,000
    children with nothing to report to it.  Its source comes with the
    series (tools/testing/selftests/wait/), so a variant without it has
    nothing to run.  Under -icount on one vCPU the ratios repeat; stock
    fails 7 of its 10 cases (x22 to x2,220 natively on 6.18)."""
    src = variant_tree(variant) / SCALING_SOURCE
    if not src.exists():
        raise NotRun(f"the variant's tree has no {SCALING_SOURCE}")
    run_group(tally, variant, flavor, "scaling",
              [("wait_scaling", [compile_c(src)])], smp=1, icount=True)


# --- the 2007 storm, stress, and tests written by others ---------------------

def group_kmod(tally, variant, flavor):
    """The 2007 module-load storm, replayed by a test module in the guest."""
    run_group(tally, variant, flavor, "kmod",
              [("storm", kmod.storm_test_argv(variant, flavor))], smp=4,
              timeout=600)


def group_stress(tally, variant, flavor):
    """proctree_stress and stress-ng's process stressors for a fixed wall
    time each (the flavor's stress_seconds)."""
    src = REPO / "tests/stress/proctree_stress.c"
    proctree, stressor = FLAVORS[flavor].stress_seconds
    tests = []
    if src.exists():
        tests.append(("proctree_stress",
                      [compile_c(src), "--seconds", str(proctree)]))
    else:
        tally.skip_group(variant, flavor, "stress",
                         f"proctree_stress: no {src.relative_to(REPO)}")
    have = subprocess.run(["stress-ng", "--stressors"], capture_output=True,
                          text=True).stdout.split()
    for s in STRESS_NG_STRESSORS:
        if s not in have:
            tally.skip_group(variant, flavor, "stress",
                             f"stress-ng-{s}: this stress-ng has no '{s}' "
                             "stressor")
            continue
        tests.append((f"stress-ng-{s}", [
            "stress-ng", f"--{s}", "2", "--timeout", f"{stressor}s",
            "--temp-path", "/tmp", "--metrics-brief"]))
    run_group(tally, variant, flavor, "stress", tests, timeout=1800,
              mem="3G")


def group_systemd(tally, variant, flavor):
    """The kernel a Debian user would install (./fastreap deb), booted
    from a bookworm disk with systemd as pid 1: the boot reaches
    'running' (or 'degraded', failed units listed), then a few thousand
    systemd-run transient services run beside services holding N
    children, with no kernel splat.  Opt-in (--with-systemd or --groups
    systemd): two Debian kernel builds do not fit CI's budget."""
    name = variant_name(variant)
    print(f"[{time.strftime('%H:%M:%S')}] systemd on {name}/{flavor}: "
          f"{deb.CHURN} transient services, {deb.CHILDREN} children",
          flush=True)
    rc, rundir, results, seconds = deb.boot_systemd(
        variant, job="churn", churn=deb.CHURN, children=deb.CHILDREN,
        timeout=deb.CHURN_TIMEOUT)
    for line in results.splitlines():
        if line.startswith("# ") and ("boot-to-running" in line
                                      or "churn:" in line
                                      or "Startup finished" in line):
            print(f"  {name}/{flavor}: {line[2:]}", flush=True)
    found = count_tap(results)
    for tname, result, why in found:
        tally.add(name, flavor, "systemd", tname, result, why)
    failure = None
    if rc != 0 or not found:
        failure = {runner.EXIT_SPLAT: "kernel splat or job cut short",
                   runner.EXIT_NO_BOOT: "systemd did not start",
                   runner.EXIT_TIMEOUT: "guest timed out"}.get(
                       rc, f"status {rc}")
    tally.kernel_log(name, flavor, "systemd", failure,
                     f"{rundir}/console.log")
    print(f"  {name}/{flavor}: guest ran {seconds:.0f} s wall "
          f"(run directory {rundir})", flush=True)


# --- the table ---------------------------------------------------------------

@dataclass(frozen=True)
class Group:
    run: object                 # run(tally, variant, flavor)
    # Which variants: "all", "stock" (the runner's contract is checked
    # on stock) or "patched" (the series' own selftest).
    variants: str = "all"
    # "guest": booted on every flavor whose table entry lists it; "host":
    # once, on the host, before any kernel is built; "deb": the Debian
    # kernel of lib/deb.py, on its own disk.
    where: str = "guest"
    # Only when asked for (--groups NAME, --with-NAME): they build
    # kernels that CI's budget has no room for.
    opt_in: bool = False
    # The minutes of a host or deb group (a guest group's are the
    # flavor's).
    minutes: float = 0
    # What an opt-in group adds, for its --with-NAME option.
    about: str = ""


# In the order they run and are summed up.
GROUPS = {
    "unit": Group(group_unit, where="host", minutes=0.2),
    "smoke": Group(group_smoke),
    "runner": Group(group_runner, variants="stock"),
    "wait": Group(group_wait),
    "jobctl": Group(group_jobctl),
    "selftests": Group(group_selftests),
    "scaling": Group(group_scaling, variants="patched"),
    "kmod": Group(group_kmod),
    "stress": Group(group_stress),
    "systemd": Group(group_systemd, where="deb", opt_in=True,
                     minutes=deb.GROUP_MINUTES,
                     about="Debian-config kernels (./fastreap deb) booting "
                     "bookworm with systemd, plus a churn test"),
    "ltp": Group(ltp.group),
    "cpython": Group(cpython.group),
}


def runs_on(group, variant):
    """Whether GROUP runs on VARIANT at all."""
    stock = variant_name(variant) == "stock"
    return {"all": True, "stock": stock,
            "patched": not stock}[GROUPS[group].variants]
