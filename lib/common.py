"""What every part of the workbench shares: where the repository and the
cache are, the one-line Error, content keys, file locks, cached files and
Debian packages.  It imports no other module of lib/.
"""

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GUEST_DIR = REPO / "guest"
# Absolute and without symlinks: guests see the cache at this very path
# (see runner.guest_shares()), and ccache's CCACHE_BASEDIR must match the
# physical working directory of the compiler.
CACHE = Path(os.environ.get("FASTREAP_CACHE",
                            Path.home() / ".cache" / "fastreap")).resolve()
SOURCE_PACKAGE = "linux-source-6.12"

PACKAGES = {
    "build": [SOURCE_PACKAGE, "build-essential", "bc", "bison", "flex",
              "libelf-dev", "libssl-dev", "cpio", "ccache", "git",
              "python3", "xz-utils", "dwarves", "libcap-dev"],
    "run": ["qemu-system-x86", "util-linux"],
}


class Error(Exception):
    """A failure the user can act on: printed as one line, exit status 2."""


def say(msg):
    print(f"fastreap: {msg}", file=sys.stderr, flush=True)


def digest(*parts):
    h = hashlib.sha256()
    for part in parts:
        h.update(part if isinstance(part, bytes) else str(part).encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def first_line(text, default="?"):
    """The first non-empty line of a tool's message, for a one-line Error."""
    return (text.strip().splitlines() or [default])[0]


def last_line(text, default="?"):
    """The last non-empty line of a tool's message (where make and apt-get
    say what went wrong)."""
    return (text.strip().splitlines() or [default])[-1]


class Lock:
    """An flock()ed file, so parallel fastreap commands share a tree safely."""

    def __init__(self, path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.file = open(path, "w")

    def __enter__(self):
        try:
            fcntl.flock(self.file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"waiting for {self.file.name} (another fastreap is busy)")
            fcntl.flock(self.file, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.file, fcntl.LOCK_UN)
        self.file.close()


def cached_file(key, name, write):
    """CACHE/bin/KEY/NAME, made once by WRITE(path) if it is not there.

    WRITE fills a temporary of this process's own, which is then renamed
    into place: two fastreap commands that make the same file at once
    each write their own, and neither can leave a torn one behind.
    """
    out = CACHE / "bin" / key / name
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f"{name}.tmp-{os.getpid()}")
    try:
        write(tmp)
        os.rename(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out


def check_disk(path, gib):
    path.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(path).free / 2**30
    if free < gib:
        raise Error(f"only {free:.1f} GiB free under {path}; "
                    f"a kernel build needs {gib} GiB")


# --- packages --------------------------------------------------------------

def missing_packages(names):
    missing = []
    for name in names:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", name],
                           capture_output=True, text=True)
        if "install ok installed" not in r.stdout:
            missing.append(name)
    return missing


_apt_updated = False


def ensure_packages(*groups, extra=()):
    """Install what is missing with apt-get, or say exactly what to run."""
    global _apt_updated
    names = [n for g in groups for n in PACKAGES[g]] + list(extra)
    missing = missing_packages(names)
    if not missing:
        return
    if os.geteuid() != 0:
        raise Error("missing packages: %s (run: sudo apt-get install %s)"
                    % (" ".join(missing), " ".join(missing)))
    say("installing " + " ".join(missing))
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if not _apt_updated:
        subprocess.run(["apt-get", "update", "-qq"], env=env)
        _apt_updated = True
    r = subprocess.run(["apt-get", "install", "-y", "-qq", *missing],
                       env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise Error(f"apt-get install {' '.join(missing)} failed: "
                    f"{last_line(r.stderr)}")
