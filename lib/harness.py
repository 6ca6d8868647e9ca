"""The test harness: guest programs built, a group of them run in one
boot, their results counted, and the summary that ends every check.

A group is a set of programs run in one guest boot.  Each program's
output is kept in the run directory; results are counted from its TAP
lines when it prints any ("ok N" / "not ok N", "# SKIP"), else from its
exit status.  A kernel splat, a timeout or a failed boot fails the boot's
kernel log, which the summary reports as one line per boot; a clean log
is not counted as a test.
"""

import re
import shlex
import subprocess
import time
import traceback
from pathlib import Path

import runner
from common import REPO, Error, cached_file, digest, first_line
from variants import stock_tree, variant_name


class NotRun(Exception):
    """A group, or a part of one, that cannot run on this machine (no
    source, no package, no stressor): listed as "not run" with its reason,
    neither passed nor failed."""


# --- building the guest programs ---------------------------------------------

def compile_c(src, flags=(), name=None):
    """Static binary for SRC, cached by content; guests see it read-only."""
    src = Path(src)
    include = stock_tree() / "tools" / "testing" / "selftests"
    deps = [src] + sorted(src.parent.glob("*.h"))
    # Headers of other directories included by relative path (tests/jobctl
    # uses tests/wait/wait_util.h): part of the key too.
    for dep in list(deps):
        for inc in re.findall(r'^#include "(\.\./[^"]+)"',
                              dep.read_text(errors="replace"), re.M):
            other = (dep.parent / inc).resolve()
            if other.exists() and other not in deps:
                deps.append(other)
    key = digest(*[d.read_bytes() for d in deps], *flags)

    def gcc(out):
        cmd = ["gcc", "-static", "-O2", "-g", "-Wall", "-Wextra", "-pthread",
               f"-I{include}", *flags, str(src), "-o", str(out)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise Error(f"cannot compile {src.relative_to(REPO)}: "
                        f"{first_line(r.stderr)}")
    return cached_file(key, name or src.stem, gcc)


# --- counting ----------------------------------------------------------------

def short_name(variant):
    """One name per variant, whether it was given as a name or a path (a
    row of the host's own tests is "host", which is no variant)."""
    return variant_name(variant) if "/" in variant else variant


class Tally:
    """Every result of a check, the kernel log of every boot, and what
    could not run."""

    def __init__(self):
        self.rows = []          # (variant, flavor, group, test, result, why)
        self.boots = []         # (variant, flavor, group, "clean" or why)
        self.not_run = []       # (variant, flavor, group, reason)

    def add(self, variant, flavor, group, test, result, why="",
            quiet_skip=False):
        variant = short_name(variant)
        self.rows.append((variant, flavor, group, test, result, why))
        mark = {"pass": "ok", "fail": "FAIL", "skip": "skip"}[result]
        if result == "fail" or (result == "skip" and not quiet_skip):
            print(f"  {mark:4} {variant}/{flavor} {group}: {test}"
                  + (f"  ({why})" if why else ""), flush=True)

    def kernel_log(self, variant, flavor, group, failure, where):
        """One boot's kernel log: FAILURE (a splat, a failed boot, a
        timeout) is a failure of the group; None, a clean log, is a line
        of the summary, not a pass."""
        variant = short_name(variant)
        if failure:
            why = f"{failure}; see {where}"
            self.add(variant, flavor, group, "kernel log", "fail", why)
            self.boots.append((variant, flavor, group, why))
        else:
            self.boots.append((variant, flavor, group, "clean"))

    def skip_group(self, variant, flavor, group, reason):
        variant = short_name(variant)
        self.not_run.append((variant, flavor, group, reason))
        print(f"  not run {variant}/{flavor} {group}: {reason}", flush=True)

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


def judge_tap(name, status, text, log):
    """A program's results: its TAP lines, each "NAME: test", and a result
    of its own for what they do not say (a timeout, a failing status with
    no failed test, a program with no TAP at all).  Exit status 4 with no
    TAP is kselftest's skip."""
    results = [(f"{name}: {test}", result, why)
               for test, result, why in count_tap(text)]
    if status == 124:
        results.append((name, "fail", "timed out"))
    elif status == 4 and not results:
        results.append((name, "skip", "exit status 4"))
    elif status != 0 and not any(r[1] == "fail" for r in results):
        results.append((name, "fail", f"exit status {status}; log {log}"))
    elif not results:
        results.append((name, "pass", ""))
    return results


# --- running a group in a guest ----------------------------------------------

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
              quiet_skips=False, judge=judge_tap, about=""):
    """Boot once and run TESTS [(name, argv)]; tally every result, as
    JUDGE(name, exit status, log text, log path) reads it.  With
    QUIET_SKIPS the tests' own skips are counted but not printed one by
    one (their reasons stay in the programs' logs)."""
    spec, variant = variant, variant_name(variant)
    print(f"[{time.strftime('%H:%M:%S')}] {group} on {variant}/{flavor}: "
          f"{len(tests)} program(s){about}", flush=True)
    rundir = runner.new_rundir(f"check-{group}-{variant}-{flavor}")
    rc = runner.run(spec, ["sh", "-c", guest_script(tests, per_test_timeout)],
                    flavor=flavor, smp=smp, mem=mem, timeout=timeout,
                    rundir=rundir, echo=False, icount=icount)
    out = rundir / "out"
    for name, _ in tests:
        log, rcf = out / f"{name}.log", out / f"{name}.rc"
        if not rcf.exists():
            tally.add(variant, flavor, group, name, "fail",
                      f"did not run to the end (runner status {rc})")
            continue
        status = int(rcf.read_text().strip() or 255)
        text = log.read_text(errors="replace") if log.exists() else ""
        for test, result, why in judge(name, status, text, log):
            tally.add(variant, flavor, group, test, result, why,
                      quiet_skip=quiet_skips)
    tally.kernel_log(variant, flavor, group, runner.EXIT_REASONS.get(rc),
                     f"{rundir}/console.log")
    return rc


def run_guarded(tally, variant, flavor, group, run):
    """RUN(); a group that cannot run is listed as not run, and one that
    raises is counted as failed with its error, so the check goes on to
    the next group and always ends with its summary."""
    try:
        run()
    except NotRun as e:
        tally.skip_group(variant, flavor, group, str(e))
    except Exception as e:          # noqa: BLE001 - any error, reported
        where = traceback.extract_tb(e.__traceback__)[-1]
        tally.add(variant, flavor, group, "the group ran to its end", "fail",
                  f"{type(e).__name__}: {e} ({Path(where.filename).name}:"
                  f"{where.lineno})")


# --- the summary -------------------------------------------------------------

def summary(tally, variants, groups, footer=""):
    """Print the per-group table, one kernel-log line per boot, FOOTER,
    what did not run and why, and last 'N passed, N failed, N skipped'.
    Returns the exit status: 1 when anything failed."""
    print()
    print(f"{'variant':10} {'flavor':6} {'group':10} passed failed skipped")
    order = ["host"] + list(variants)
    keys = sorted({r[:3] for r in tally.rows},
                  key=lambda k: (order.index(k[0]) if k[0] in order else 99,
                                 k[1], groups.index(k[2])
                                 if k[2] in groups else 99))
    for v, f, g in keys:
        counts = [tally.count(result, variant=v, flavor=f, group=g)
                  for result in ("pass", "fail", "skip")]
        print(f"{v:10} {f:6} {g:10} {counts[0]:6} {counts[1]:6} "
              f"{counts[2]:7}")
    if tally.boots:
        clean = sum(1 for b in tally.boots if b[3] == "clean")
        print(f"kernel log, one line per boot ({clean} of "
              f"{len(tally.boots)} clean; not counted as tests):")
        for v, f, g, log in tally.boots:
            print(f"  {v}/{f} {g}: {log}")
    if footer:
        print(footer)
    if tally.not_run:
        print(f"not run ({len(tally.not_run)}):")
        for v, f, g, reason in tally.not_run:
            print(f"  {v}/{f} {g}: {reason}")
    passed, failed = tally.count("pass"), tally.count("fail")
    print(f"{passed} passed, {failed} failed, {tally.count('skip')} skipped",
          flush=True)
    return 1 if failed else 0
