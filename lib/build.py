"""Kernel builds: tinyconfig plus the flavor's config/ fragments, built
out of tree in the variant's worktree with ccache.

  <source version>/trees/*/.build-<flavor>           build directories
  <source version>/images/<variant>-<flavor>-<key>/  finished kernels

An image directory appears only by rename() once a build has finished, so
an interrupted build is never reused.  The key hashes everything that
decides the image: source version, variant, flavor, config fragments and
patches.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time

from common import (CACHE, REPO, SOURCE_PACKAGE, Error, Lock, check_disk,
                    digest, ensure_packages, last_line, say)
from flavors import FLAVORS
from variants import (patches_hash, source_dir, source_version, variant_name,
                      variant_patches, variant_tree)

# Bump when the build recipe below changes in a way that changes the image.
RECIPE = "1"


def fragments(flavor):
    """The flavor's config fragments, in merge order."""
    if flavor not in FLAVORS:
        raise Error(f"unknown flavor '{flavor}' (known: "
                    f"{', '.join(FLAVORS)})")
    return [REPO / "config" / name for name in FLAVORS[flavor].fragments]


def build_env(**extra):
    """make's environment: ccache shared between trees, and a build user
    and host that do not depend on the machine."""
    return dict(os.environ, CCACHE_BASEDIR=str(CACHE), CCACHE_NOHASHDIR="1",
                KBUILD_BUILD_USER="fastreap", KBUILD_BUILD_HOST="fastreap",
                **extra)


# What a config fragment sets: "CONFIG_X=..." and "# CONFIG_X is not set".
CONFIG_LINE = re.compile(r"CONFIG_\w+=|# CONFIG_\w+ is not set")


def config_lines(text):
    return [line for line in text.splitlines() if CONFIG_LINE.match(line)]


def image_key(variant, flavor):
    return digest(RECIPE, source_version(), variant_name(variant), flavor,
                  *[f.read_bytes() for f in fragments(flavor)],
                  patches_hash(variant))


def image_dir(variant, flavor):
    return (source_dir() / "images"
            / f"{variant_name(variant)}-{flavor}-{image_key(variant, flavor)}")


def cached_image(variant, flavor):
    img = image_dir(variant, flavor)
    return img if (img / "bzImage").exists() else None


def build(variant, flavor="fast", background=False):
    """Return the image directory for VARIANT/FLAVOR, building if needed.

    BACKGROUND: the build runs beside tests, so it is niced and shows no
    progress line.
    """
    img = cached_image(variant, flavor)
    if img:
        return img
    ensure_packages("build")
    tree = variant_tree(variant)
    name = variant_name(variant)
    with Lock(tree / f".build-{flavor}.lock"):
        img = cached_image(variant, flavor)
        if img:
            return img
        check_disk(tree, 3)
        bdir = tree / f".build-{flavor}"
        bdir.mkdir(exist_ok=True)
        configure(tree, bdir, flavor)
        log = bdir / "build.log"
        jobs = str((os.cpu_count() or 1) + 1)
        env = build_env()
        cmd = ["make", "-C", str(tree), f"O={bdir.name}", "CC=ccache gcc",
               f"-j{jobs}", "bzImage", "modules"]
        if background:
            cmd = ["nice", "-n", "10"] + cmd
        t0 = time.time()
        rc = make_with_progress(cmd, env, log, f"{name}/{flavor}",
                                progress=not background)
        if rc != 0:
            text = log.read_text(errors="replace")
            if "No space left on device" in text:
                raise Error(f"build of {name}/{flavor} failed: no space left "
                            f"on device (log: {log})")
            errs = [l for l in text.splitlines() if "error" in l.lower()]
            last = (errs or text.splitlines() or ["?"])[-1].strip()
            raise Error(f"build of {name}/{flavor} failed: {last[:200]} "
                        f"(log: {log})")
        release = subprocess.run(
            ["make", "-s", "-C", str(tree), f"O={bdir.name}",
             "kernelrelease"], capture_output=True, text=True).stdout.strip()
        dest = image_dir(variant, flavor)
        tmp = dest.with_name(dest.name + f".tmp-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        try:
            shutil.copy2(bdir / "arch/x86/boot/bzImage", tmp / "bzImage")
            shutil.copy2(bdir / ".config", tmp / "config")
            info = {"source_package": SOURCE_PACKAGE,
                    "source_version": source_version(),
                    "variant": name, "flavor": flavor,
                    "key": image_key(variant, flavor),
                    "kernelrelease": release,
                    "patches": [p.name for p in variant_patches(variant)],
                    "tree": str(tree), "build_dir": str(bdir),
                    "build_seconds": round(time.time() - t0),
                    "built": time.strftime("%Y-%m-%dT%H:%M:%S")}
            (tmp / "build-info.json").write_text(json.dumps(info, indent=1))
            os.rename(tmp, dest)
        except OSError as e:
            shutil.rmtree(tmp, ignore_errors=True)
            raise Error(f"cannot store the image in {dest}: {e.strerror}")
        say(f"built {name}/{flavor} ({release}) in {time.time() - t0:.0f}s")
        return dest


def configure(tree, bdir, flavor):
    """tinyconfig + config/ fragments; every fragment line must stick."""
    frags = fragments(flavor)
    want = digest(*[f.read_bytes() for f in frags])
    stamp = bdir / ".fastreap-config"
    if stamp.exists() and stamp.read_text() == want and \
            (bdir / ".config").exists():
        return
    make = ["make", "-s", "-C", str(tree), f"O={bdir.name}"]
    steps = [make + ["tinyconfig"],
             [str(tree / "scripts/kconfig/merge_config.sh"), "-m", "-O",
              str(bdir), str(bdir / ".config"), *map(str, frags)],
             make + ["olddefconfig"]]
    for step in steps:
        r = subprocess.run(step, capture_output=True, text=True, cwd=tree)
        if r.returncode != 0:
            raise Error(f"configuring {bdir} failed: {last_line(r.stderr)}")
    config = set((bdir / ".config").read_text().splitlines())
    lost = []
    for frag in frags:
        lost += [line for line in config_lines(frag.read_text())
                 if line not in config]
    if lost:
        raise Error(f"config fragment lines not satisfied (missing "
                    f"dependencies?): {' '.join(lost)}")
    stamp.write_text(want)


def make_with_progress(cmd, env, log, label, progress=True):
    """Run make into LOG, showing a one-line progress count if PROGRESS."""
    tty = sys.stderr.isatty()
    t0 = last = time.time()
    done = 0
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True,
                                env=env, errors="replace")
        for line in proc.stdout:
            out.write(line)
            if line.startswith(("  CC", "  AS", "  LD", "  AR")):
                done += 1
            now = time.time()
            if progress and now - last >= (2 if tty else 30):
                last = now
                msg = (f"building {label}: {done} steps, "
                       f"{int(now - t0) // 60}m{int(now - t0) % 60:02d}s")
                print(("\r" + msg) if tty else f"fastreap: {msg}",
                      end="" if tty else "\n", file=sys.stderr, flush=True)
        rc = proc.wait()
    if progress and tty:
        print(file=sys.stderr)
    return rc
