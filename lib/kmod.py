"""The 2007 module-load storm as a test: tests/kmod/storm.c, a module built
against a variant's image, loaded in the guest by tests/kmod/kthreads.c,
which watches init's child list while it runs (TAP).  The kmod group of
./fastreap check and ./fastreap census both run it.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import build
from common import CACHE, REPO, Error, digest
from harness import compile_c

KMOD_SRC = REPO / "tests" / "kmod"
GUEST_SRC = KMOD_SRC / "kthreads.c"
# Module parameters for the storm: k rounds of one kthread per online CPU,
# k stop_machine() calls, threads held 100 ms so the sampler can see them.
STORM_PARAMS = ["rounds=5", "stop_rounds=5", "hold_ms=100"]


def guest_binary():
    """tests/kmod/kthreads.c as a static binary, cached by content."""
    return compile_c(GUEST_SRC)


def build_module(variant="stock", flavor="fast", src=None):
    """Build the storm module for VARIANT's image; return the .ko path.

    SRC (default tests/kmod) is copied to a scratch directory in the cache,
    keyed by the image and the sources, and built there against the image's
    kernel build directory (make -C <build_dir> M=<scratch> modules), so
    nothing is written to the repository or to /tmp.
    """
    src = Path(src or KMOD_SRC)
    img = build.build(variant, flavor)
    info = json.loads((img / "build-info.json").read_text())
    bdir = Path(info["build_dir"])
    files = sorted(p for p in src.iterdir()
                   if p.name == "Makefile" or p.suffix in (".c", ".h")
                   and p.name != GUEST_SRC.name)
    key = digest(img.name, *[f.name.encode() + b"\0" + f.read_bytes()
                             for f in files])
    kdir = CACHE / "kmod" / key
    ko = kdir / "storm.ko"
    if ko.exists():
        return ko
    config = bdir / ".config"
    if not config.exists() or \
            config.read_bytes() != (img / "config").read_bytes():
        raise Error(f"{bdir} no longer matches {img.name} (its .config "
                    "changed); rebuild the image: ./fastreap build "
                    f"--flavor {flavor} {variant}")
    if not (bdir / "Module.symvers").exists():
        raise Error(f"{bdir} has no Module.symvers (modules not built)")
    tmp = kdir.with_name(f"{key}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for f in files:
        shutil.copy2(f, tmp / f.name)
    r = subprocess.run(["make", "-C", str(bdir), f"M={tmp}", "modules"],
                       capture_output=True, text=True)
    (tmp / "build.log").write_text(r.stdout + r.stderr)
    if r.returncode != 0 or not (tmp / "storm.ko").exists():
        errs = [l for l in (r.stdout + r.stderr).splitlines()
                if "error" in l.lower()] or (r.stderr or "?").splitlines()
        raise Error(f"building the storm module failed: {errs[0][:200]} "
                    f"(log: {tmp}/build.log)")
    shutil.rmtree(kdir, ignore_errors=True)
    os.rename(tmp, kdir)
    return ko


def storm_test_argv(variant="stock", flavor="fast", src=None,
                    params=STORM_PARAMS):
    """The guest command of the storm TAP test."""
    return [str(guest_binary()), "test",
            str(build_module(variant, flavor, src)), *params]
