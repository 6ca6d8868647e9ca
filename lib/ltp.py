"""The ltp test group: the Linux Test Project's own tests of the wait family
and its neighbours (fork, exit, kill, ptrace, process groups, pidfds), an
independent conformance check written by others.

The source, in this order: $FASTREAP_LTP_SRC (a checkout, copied), a
`git fetch` of COMMIT from $FASTREAP_LTP_MIRROR (a clone of LTP on this
machine, for hosts without a network), the same from GitHub.  With none
of them the group is listed as not run, with the reason.  It is built in
the cache, never in the repository:

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

from common import (CACHE, Error, Lock, digest, ensure_packages, last_line,
                    say)
from harness import NotRun, run_group

URL = "https://github.com/linux-test-project/ltp"
COMMIT = "695827725f4fc14fe583043127e0335c29bbd52d"
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
    """(key, how): where the source comes from, or raise NotRun(reason)."""
    own = os.environ.get("FASTREAP_LTP_SRC")
    if own:
        path = Path(own).resolve()
        if not (path / "runtest" / "syscalls").exists():
            raise NotRun(f"FASTREAP_LTP_SRC={own} is not an LTP checkout")
        head = _git("rev-parse", "HEAD", cwd=path)
        commit = head.stdout.strip() if head.returncode == 0 else "none"
        return digest(path, commit, *DIRS, RECIPE), ("copy", path)
    return digest(COMMIT, *DIRS, RECIPE), ("git", None)


def fetch_source(how, dest, log):
    """Put the source tree at DEST; raise NotRun(reason) when nothing
    works."""
    kind, path = how
    if kind == "copy":
        shutil.copytree(path, dest, symlinks=True)
        return f"{path} (FASTREAP_LTP_SRC)"
    reasons = []
    mirror = os.environ.get("FASTREAP_LTP_MIRROR")
    for origin in ([mirror] if mirror else []) + [URL]:
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
                why = last_line(r.stderr) if r \
                    else "timed out"
                log.write(f"git {' '.join(step)}: {why}\n")
                reasons.append(f"{origin}: {why}")
                break
        else:
            return f"{origin} at {COMMIT[:12]}"
    shutil.rmtree(dest, ignore_errors=True)
    raise NotRun("no LTP source: " + "; ".join(reasons)
                 + ("" if mirror else "; no FASTREAP_LTP_MIRROR"))


def cached():
    """The install directory if built, else None."""
    try:
        key, _ = source()
    except NotRun:
        return None
    inst = CACHE / "ltp" / key / "install"
    return inst if (inst / "testcases" / "bin").is_dir() else None


def build():
    """Build LTP's lib and DIRS statically; return the install directory.

    Raises NotRun with the reason when there is no source; a failed build
    of one directory leaves its tests out (listed in install/missing)."""
    key, how = source()
    top = CACHE / "ltp" / key
    inst = top / "install"
    if (inst / "testcases" / "bin").is_dir():
        return inst
    with Lock(top / ".lock"):
        if (inst / "testcases" / "bin").is_dir():
            return inst
        ensure_packages(extra=PACKAGES)
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


def judge(name, status, text, log):
    """An LTP program's one result: exit status 0 passes, 32 (TCONF) is a
    skip with the test's own reason, anything else fails."""
    if status == 0:
        return [(name, "pass", "")]
    if status == 32:
        return [(name, "skip", why_skipped(text))]
    if status == 124:
        return [(name, "fail", f"timed out; log {log}")]
    return [(name, "fail", f"exit status {status}; log {log}")]


_no_source = None


def group(tally, variant, flavor):
    """Build (once), boot VARIANT once and run every test; tally them."""
    global _no_source
    if _no_source:                  # tried for the previous variant
        raise NotRun(_no_source)
    try:
        inst = build()
    except NotRun as e:
        _no_source = str(e)
        raise
    run, left = tests(inst)
    for tname, why in left:
        tally.add(variant, flavor, "ltp", tname, "skip", why)
    chosen = []
    for tname, argv in run:
        if tname in SKIPS:
            tally.add(variant, flavor, "ltp", tname, "skip", SKIPS[tname])
        else:
            chosen.append((tname, argv))
    run_group(tally, variant, flavor, "ltp", chosen, timeout=2400,
              per_test_timeout=300, judge=judge,
              about=f", LTP {inst.parent.name}")
