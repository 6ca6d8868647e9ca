"""The cpython test group: CPython's own tests of the APIs that programs
reap their children with (os.wait*(), asyncio's child watchers, pty), an
independent conformance check written by others.

They run on the host's /usr/bin/python3, shared read-only with the guest,
from its `test` package: Debian's and Ubuntu's libpython3.X-testsuite,
installed with apt-get when missing.  Where it cannot be installed the
group is listed as not run, with the reason.  Each module is one program
in one guest boot (guest/cpython_tap.py), each test method one result.
"""

import subprocess

from common import GUEST_DIR, Error, cached_file, digest, ensure_packages
from harness import NotRun, run_group

PYTHON = "/usr/bin/python3"
# Each module, and the wait() paths it takes:
#  test_wait3, test_wait4: wait3()/wait4() of any child, with rusage;
#  test_posix, test_os: waitid(), waitpid(), wait status decoding, fork,
#    posix_spawn, pidfd_open;
#  test_pty: pty.fork() and its child's wait;
#  test_asyncio.test_subprocess: asyncio's child watchers, among them
#    FastChildWatcher (a loop of waitpid(-1, WNOHANG)), SafeChildWatcher
#    (waitpid(pid, WNOHANG) per child), threads and pidfds;
#  test_asyncio.test_unix_events: the watchers' SIGCHLD handling.
# test_subprocess and test_signal pass on both kernels too (docs/
# results.md), but they take 3.6 minutes a kernel, and subprocess waits
# for its children by pid, the path the series leaves alone.
MODULES = ["test_wait3", "test_wait4", "test_posix", "test_os", "test_pty",
           "test_asyncio.test_subprocess", "test_asyncio.test_unix_events"]
# Tests that fail on *stock* in this guest: skipped on every variant, with
# the reason (the oracle is stock).
SKIPS = {
    "test.test_asyncio.test_subprocess.SubprocessFastWatcherTests"
    ".test_stdin_broken_pipe":
        "flaky on stock: failed once in two fresh-clone runs on stock and "
        "passed in the other (a race between its write and the child's exit)",
}
# Seconds per module; the longest, test_asyncio.test_subprocess, took 45.
MODULE_TIMEOUT = 600


def testsuite_package():
    r = subprocess.run([PYTHON, "-c", "import sys; print("
                        "'libpython%d.%d-testsuite' % sys.version_info[:2])"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise Error(f"{PYTHON} does not run: {r.stderr.strip()[:120]}")
    return r.stdout.strip()


def tap_runner():
    """guest/cpython_tap.py in the cache, where a guest can read it (a
    clone under /tmp is hidden by the guest's tmpfs)."""
    src = GUEST_DIR / "cpython_tap.py"
    text = src.read_bytes()
    return cached_file(digest(text), src.name,
                       lambda out: out.write_bytes(text))


def group(tally, variant, flavor):
    """Boot VARIANT once and run every module; tally each test."""
    try:
        package = testsuite_package()
        ensure_packages(extra=[package])
    except Error as e:
        raise NotRun(f"no CPython test suite: {e}")
    tap = tap_runner()
    skips = [a for test_id, why in SKIPS.items()
             for a in ("--skip", f"{test_id}={why}")]
    # The loopback interface, for the tests that talk over a local
    # socket, is down in the guest; the tests write where they run, and
    # the guest's only writable place is its /tmp.
    setup = ("ip link set lo up 2>/dev/null; cd /tmp || exit 1; "
             'TMPDIR=/tmp HOME=/tmp exec "$@"')
    tests = [(module, ["sh", "-c", setup, "sh", PYTHON, tap, *skips,
                       f"test.{module}"]) for module in MODULES]
    # About a hundred tests skip themselves on Linux (other platforms,
    # features not built): counted, not listed
    run_group(tally, variant, flavor, "cpython", tests, mem="3G",
              timeout=1800, per_test_timeout=MODULE_TIMEOUT, quiet_skips=True)
