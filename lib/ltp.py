"""The ltp test group: the Linux Test Project's own tests of the wait family
and its neighbours (fork, exit, kill, ptrace, process groups, pidfds), an
independent conformance check written by others.

The source, in this order: $FASTREAP_LTP_SRC (a checkout, copied), a
`git fetch` of COMMIT from GitHub, the same from the local mirror MIRROR.
With none of them the group reports one skip per variant, with the
reason, and no failure.  It is built in the
cache, never in the repository:

  ltp/<key>/src       the source tree, configured with LDFLAGS=-static
  ltp/<key>/build.log the whole build's output
  ltp/<key>/install   `make install` of lib/ and DIRS (testcases/bin/)

keyed by the commit, DIRS and RECIPE; install/ appears by rename() when
complete.  Guests mount a tmpfs on /tmp, so the binaries run from the
cache, with TMPDIR=/tmp.  A test passes with exit status 0; 32 (TCONF) is a
skip, its reason the test's TCONF line; any other status fails.
"""

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import workbench
from workbench import CACHE, Error, say

URL = "https://github.com/linux-test-project/ltp"
COMMIT = "695827725f4fc14fe583043127e0335c29bbd52d"
MIRROR = Path("/work/.mirror/linux-test-project+ltp/repo")
# testcases/kernel/syscalls/<dir>: what runs is every runtest/syscalls
# entry whose program one of these builds, with its arguments from there.
DIRS = ["wait", "wait4", "waitpid", "waitid", "ptrace", "setpgid",
        "setpgrp", "setsid", "getpgid", "getsid", "kill", "exit",
        "exit_group", "fork", "vfork", "clone", "clone3", "pidfd_open",
        "pidfd_send_signal"]
PACKAGES = ["autoconf", "automake", "m4", "pkg-config", "make", "git"]
RECIPE = "1"
# Tests that fail or cannot finish on *stock* in this guest: skipped on
# every variant, with the reason (the oracle is stock).  Tests that LTP
# itself skips (TCONF) need no entry: they report their own reason.
SKIPS = {}
# Extra environment per test.  fork13 forks until its runtime (600 s) is
# over looking for an immediately reused pid: 30 s of it under TCG.
TEST_ENV = {"fork13": ["LTP_RUNTIME_MUL=0.05"]}
# LTP's own per-test timeout (30 s plus the runtime) times this: a loaded
# TCG guest is many times slower than the machines LTP is tuned for.
TIMEOUT_MUL = 4
BUILD_MINUTES = 2                # cold: fetch, configure, lib, DIRS: 1.6


def _git(*args, cwd=None, timeout=600):
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


def source():
    """(key, how): where the source comes from, or raise Error(reason)."""
    own = os.environ.get("FASTREAP_LTP_SRC")
    if own:
        path = Path(own).resolve()
        if not (path / "runtest" / "syscalls").exists():
            raise Error(f"FASTREAP_LTP_SRC={own} is not an LTP checkout")
        head = _git("rev-parse", "HEAD", cwd=path)
        commit = head.stdout.strip() if head.returncode == 0 else "none"
        return workbench.digest(path, commit, *DIRS, RECIPE), ("copy", path)
    return workbench.digest(COMMIT, *DIRS, RECIPE), ("git", None)


def fetch_source(how, dest, log):
    """Put the source tree at DEST; raise Error(reason) when nothing works."""
    kind, path = how
    if kind == "copy":
        shutil.copytree(path, dest, symlinks=True)
        return f"{path} (FASTREAP_LTP_SRC)"
    reasons = []
    for origin in (URL, str(MIRROR)):
        if origin == str(MIRROR) and not MIRROR.exists():
            reasons.append(f"no mirror at {MIRROR}")
            continue
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        steps = [["init", "-q"], ["fetch", "-q", "--depth", "1", origin,
                                  COMMIT],
                 ["checkout", "-q", "FETCH_HEAD"]]
        for step in steps:
            try:
                # a network that drops packets must not eat CI's budget
                r = _git(*step, cwd=dest,
                         timeout=120 if origin == URL else 600)
            except subprocess.TimeoutExpired:
                r = None
            if r is None or r.returncode != 0:
                why = (r.stderr.strip().splitlines() or ["?"])[-1] if r \
                    else "timed out"
                log.write(f"git {' '.join(step)}: {why}\n")
                reasons.append(f"{origin}: {why}")
                break
        else:
            return f"{origin} at {COMMIT[:12]}"
    shutil.rmtree(dest, ignore_errors=True)
    raise Error("no LTP source: " + "; ".join(reasons))


def cached():
    """The install directory if built, else None."""
    try:
        key, _ = source()
    except Error:
        return None
    inst = CACHE / "ltp" / key / "install"
    return inst if (inst / "testcases" / "bin").is_dir() else None


def build():
    """Build LTP's lib and DIRS statically; return the install directory.

    Raises Error with the reason when there is no source; a failed build
    of one directory leaves its tests out (listed in install/missing)."""
    key, how = source()
    top = CACHE / "ltp" / key
    inst = top / "install"
    if (inst / "testcases" / "bin").is_dir():
        return inst
    with workbench.Lock(top / ".lock"):
        if (inst / "testcases" / "bin").is_dir():
            return inst
        workbench.ensure_packages(extra=PACKAGES)
        return _build(how, top, inst)


def _build(how, top, inst):
    src, log_path = top / "src", top / "build.log"
    t0 = time.time()
    with open(log_path, "w") as log:
        if not (src / "configure.ac").exists():
            shutil.rmtree(src, ignore_errors=True)
            say(f"LTP source: {fetch_source(how, src, log)}")
        say(f"building LTP lib and {len(DIRS)} syscall test directories "
            f"(log: {log_path})")
        tmp = Path(f"{inst}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        make = ["nice", "-n", "10", "make", "-j2"]
        steps = [make[:-1] + ["autotools"],
                 ["nice", "-n", "10", "./configure", f"--prefix={tmp}",
                  "LDFLAGS=-static"],
                 make + ["-C", "lib"]]
        for step in steps:
            log.write(f"$ {' '.join(step)}\n")
            log.flush()
            r = subprocess.run(step, cwd=src, stdout=log,
                               stderr=subprocess.STDOUT)
            if r.returncode != 0:
                raise Error(f"building LTP failed at '{' '.join(step[3:])}'"
                            f" (log: {log_path})")
        missing = []
        for d in DIRS:
            sub = f"testcases/kernel/syscalls/{d}"
            log.write(f"$ make -C {sub} install\n")
            log.flush()
            # two runs: "all install" in one -j2 make races
            for target in ("all", "install"):
                r = subprocess.run(make + ["-C", sub, target], cwd=src,
                                   stdout=log, stderr=subprocess.STDOUT)
                if r.returncode != 0:
                    missing.append(d)
                    break
        (tmp / "testcases" / "bin").mkdir(parents=True, exist_ok=True)
        shutil.copy(src / "runtest" / "syscalls", tmp / "runtest-syscalls")
        (tmp / "missing").write_text("".join(f"{d}\n" for d in missing))
    os.rename(tmp, inst)
    say(f"LTP built in {(time.time() - t0) / 60:.1f} min"
        + (f"; did not build: {' '.join(missing)}" if missing else ""))
    return inst


def tests(inst):
    """[(name, argv)] from runtest/syscalls for the programs DIRS built, and
    [(name, why)] for the entries of DIRS that are not there."""
    bindir = inst / "testcases" / "bin"
    have = {p.name for p in bindir.iterdir()}
    src = inst.parent / "src" / "testcases" / "kernel" / "syscalls"
    ours = {p.name for d in DIRS if (src / d).is_dir()
            for p in (src / d).iterdir()
            if p.is_file() and os.access(p, os.X_OK)}
    missing = (inst / "missing").read_text().split()
    for d in missing:
        ours |= {p.stem for p in (src / d).glob("*.c")}
    run, left = [], []
    env = ["env", f"LTPROOT={inst}", "TMPDIR=/tmp",
           f"PATH={bindir}:/usr/sbin:/usr/bin:/sbin:/bin",
           f"LTP_TIMEOUT_MUL={TIMEOUT_MUL}"]
    for line in (inst / "runtest-syscalls").read_text().splitlines():
        words = line.split()
        if not words or words[0].startswith("#") or len(words) < 2:
            continue
        name, argv = words[0], words[1:]
        if argv[0] not in ours:
            continue
        if argv[0] not in have:
            left.append((name, "did not build at this LTP commit"))
        else:
            run.append((name, env + TEST_ENV.get(name, [])
                        + [str(bindir / argv[0])] + argv[1:]))
    return run, left


def why_skipped(text):
    """The first TCONF line of an LTP log, without its source location,
    or the kernel config option it asked for."""
    config = re.search(r"Constraint '([^']+)' not satisfied", text)
    if config:
        return f"TCONF: needs {config.group(1)}"
    for line in text.splitlines():
        if "TCONF" in line:
            why = line.split("TCONF", 1)[1].lstrip(" :")
            return "TCONF: " + re.sub(r"^[\w.]+\.c:\d+: ", "", why)
    return "TCONF"


_no_source = None


def group(tally, variant):
    """Build (once), boot VARIANT once and run every test; tally them."""
    import check
    global _no_source
    name = workbench.variant_name(variant)
    try:
        if _no_source:              # tried for the previous variant
            raise Error(_no_source)
        inst = build()
    except Error as e:
        if str(e).startswith(("no LTP source", "FASTREAP_LTP_SRC")):
            _no_source = str(e)
            tally.add(name, "fast", "ltp", "LTP source", "skip", str(e))
        else:
            tally.add(name, "fast", "ltp", "LTP build", "fail", str(e))
        return
    run, left = tests(inst)
    for tname, why in left:
        tally.add(name, "fast", "ltp", tname, "skip", why)
    chosen = []
    for tname, argv in run:
        if tname in SKIPS:
            tally.add(name, "fast", "ltp", tname, "skip", SKIPS[tname])
        else:
            chosen.append((tname, argv))
    print(f"[{time.strftime('%H:%M:%S')}] ltp on {name}/fast: "
          f"{len(chosen)} program(s), LTP {inst.parent.name}", flush=True)
    rundir = workbench.new_rundir(f"check-ltp-{name}-fast")
    rc = workbench.run(variant, ["sh", "-c", check.guest_script(chosen, 300)],
                       timeout=2400, rundir=rundir, echo=False)
    out = rundir / "out"
    for tname, _ in chosen:
        log, rcf = out / f"{tname}.log", out / f"{tname}.rc"
        if not rcf.exists():
            tally.add(name, "fast", "ltp", tname, "fail",
                      f"did not run to the end (runner status {rc})")
            continue
        status = int(rcf.read_text().strip() or 255)
        text = log.read_text(errors="replace") if log.exists() else ""
        if status == 0:
            tally.add(name, "fast", "ltp", tname, "pass")
        elif status == 32:
            tally.add(name, "fast", "ltp", tname, "skip", why_skipped(text))
        elif status == 124:
            tally.add(name, "fast", "ltp", tname, "fail",
                      f"timed out; log {log}")
        else:
            tally.add(name, "fast", "ltp", tname, "fail",
                      f"exit status {status}; log {log}")
    if rc in (workbench.EXIT_SPLAT, workbench.EXIT_NO_BOOT,
              workbench.EXIT_TIMEOUT):
        what = {workbench.EXIT_SPLAT: "kernel splat",
                workbench.EXIT_NO_BOOT: "kernel did not boot",
                workbench.EXIT_TIMEOUT: "guest timed out"}[rc]
        tally.add(name, "fast", "ltp", "kernel log", "fail",
                  f"{what}; see {rundir}/console.log")
    else:
        tally.add(name, "fast", "ltp", "kernel log clean", "pass")
