"""./fastreap deb: the kernel a Debian user would install, and a real
Debian 12 system booted on it with systemd as pid 1.

  deb/<source version>/<variant>-<key>/   finished linux-image .debs
  deb/build/<variant>/obj                 the O= build directory (and the
                                          .debs dpkg-buildpackage leaves in
                                          deb/build/<variant>/)
  deb/src/<variant>                       a patched variant's own source
                                          tree: a `git clone --shared` of
                                          the stock tree plus its patches
                                          (never the developer's worktree)
  deb/rootfs/base-<key>.tar               bookworm + systemd, by mmdebstrap
  deb/disks/<variant>-<key>/              that, the .deb installed with
                                          dpkg -i, as a raw ext4 disk

The kernel is configured from Debian's own config (linux-config-6.12),
trimmed with `make localmodconfig` against config/deb-modules.lsmod, then
config/deb.config on top; docs/deb.md says what differs and why.  Every
directory above that holds a result appears by rename() when it is
complete, keyed like the kernel images: by source version, variant,
configs, patches and this recipe.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import build
import runner
from common import (CACHE, GUEST_DIR, REPO, Error, Lock, check_disk, digest,
                    ensure_packages, last_line, say)
from variants import (git, patches_hash, source_dir,
                      source_version, stock_tree, variant_name,
                      variant_patch_dir, variant_patches)

DEB_RECIPE = "1"
CONFIG_PACKAGE = "linux-config-6.12"
DEBIAN_CONFIG = Path("/usr/src/linux-config-6.12/config.amd64_none_amd64.xz")
FRAGMENT = REPO / "config" / "deb.config"
MODULES = REPO / "config" / "deb-modules.lsmod"
DEB_PACKAGES = ["dpkg-dev", "debhelper", "kmod", "xz-utils", "rsync", CONFIG_PACKAGE]
IMAGE_PACKAGES = ["mmdebstrap", "e2fsprogs", "qemu-utils"]
DEFAULT_VARIANTS = ("stock", "fastreap")
# At most this many compile jobs, whatever the machine: it is shared.
MAX_JOBS = 3


def deb_root():
    return CACHE / "deb"


def debian_config():
    ensure_packages("build", extra=DEB_PACKAGES)
    if not DEBIAN_CONFIG.exists():
        raise Error(f"{DEBIAN_CONFIG} is missing; reinstall {CONFIG_PACKAGE}")
    return subprocess.run(["xz", "-dc", str(DEBIAN_CONFIG)], check=True,
                          capture_output=True).stdout


def localversion(variant):
    """The kernel release's suffix: 6.12.118-fastreap-<variant>."""
    name = re.sub(r"[^a-z0-9]+", "", variant_name(variant).lower())
    return f"-fastreap-{name or 'x'}"


def deb_key(variant):
    return digest(DEB_RECIPE, source_version(),
                  variant_name(variant), debian_config(),
                  FRAGMENT.read_bytes(), MODULES.read_bytes(),
                  localversion(variant), patches_hash(variant))


def deb_dir(variant):
    return (deb_root() / source_dir().name
            / f"{variant_name(variant)}-{deb_key(variant)}")


def cached_deb(variant):
    d = deb_dir(variant)
    return d if (d / "build-info.json").exists() else None


def image_deb(d):
    """The linux-image .deb in a finished deb directory."""
    info = json.loads((d / "build-info.json").read_text())
    return d / info["image_deb"]


def deb_source(variant):
    """A source tree for VARIANT that nobody else edits.

    stock is the workbench's stock tree itself, read-only here (the build
    is O= elsewhere); a patched variant gets its own clone of it, so the
    developer's worktree (variant_tree()) is never touched.
    """
    stock = stock_tree()
    name = variant_name(variant)
    if name == "stock":
        return stock
    tree = deb_root() / "src" / name
    state_file = tree / ".fastreap-applied"
    want = patches_hash(variant)
    if state_file.exists() and json.loads(
            state_file.read_text()).get("patches") == want:
        return tree
    if not (tree / ".git").exists():
        shutil.rmtree(tree, ignore_errors=True)
        tree.parent.mkdir(parents=True, exist_ok=True)
        say(f"cloning the stock tree into {tree}")
        r = subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout",
                            str(stock), str(tree)], capture_output=True,
                           text=True)
        if r.returncode != 0:
            raise Error(f"git clone of {stock} failed: "
                        + last_line(r.stderr))
    git(tree, "fetch", "-q", "--tags", str(stock))
    # Make stock + patches as a commit in a scratch index, then check it
    # out: git rewrites only the files that differ from what the tree has
    # now, so a new revision of the series that touches kernel/exit.c
    # alone rebuilds little more than kernel/exit.o in the O= directory.
    state_file.unlink(missing_ok=True)
    index = tree / ".git" / "fastreap-index"
    index.unlink(missing_ok=True)
    scratch_index = dict(os.environ, GIT_INDEX_FILE=str(index))

    def git_index(*args):
        return git(tree, *args, env=scratch_index)

    git_index("read-tree", "stock")
    for patch in variant_patches(variant):
        try:
            git_index("apply", "--cached", str(patch))
        except Error:
            raise Error(f"patch does not apply to {name}: {patch.name}")
    commit = git_index("commit-tree", git_index("write-tree"), "-p", "stock",
                       "-m", f"stock + patches/{name} ({want})")
    index.unlink(missing_ok=True)
    git(tree, "checkout", "-q", "-f", "-B", name, commit)
    state_file.write_text(json.dumps({"patches": want}))
    return tree


def build_env():
    return build.build_env(DEBEMAIL="fastreap <fastreap@localhost>",
                           DEBFULLNAME="fastreap")


def jobs():
    return min(MAX_JOBS, (os.cpu_count() or 1) + 1)


def make(src, obj, *targets, log=None, label=None):
    """nice -n 19 make in SRC with O=OBJ; into LOG with progress if given."""
    cmd = ["nice", "-n", "19", "make", "-C", str(src), f"O={obj}",
           "CC=ccache gcc", f"-j{jobs()}", "LOCALVERSION=", *targets]
    if log is None:
        r = subprocess.run(cmd, env=build_env(), capture_output=True,
                           text=True, stdin=subprocess.DEVNULL)
        if r.returncode != 0:
            raise Error(f"make {' '.join(targets)} failed: "
                        + last_line(r.stderr or r.stdout))
        return 0
    return build.make_with_progress(cmd, build_env(), log, label)


def fragment_lines(variant):
    return build.config_lines(FRAGMENT.read_text()) + [f'CONFIG_LOCALVERSION="{localversion(variant)}"']


def configure(src, obj, variant):
    """Debian's config, localmodconfig'd, plus config/deb.config.

    Made in a scratch O= directory and copied into OBJ only if it differs
    from what OBJ has, so that a new revision of the patches does not touch
    .config and make rebuilds only what the patches change.
    """
    stamp = obj / ".fastreap-config"
    want = deb_key(variant)
    if stamp.exists() and stamp.read_text() == want:
        return
    scratch = obj.with_name(obj.name + ".config-scratch")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    (scratch / ".config").write_bytes(debian_config())
    make(src, scratch, "olddefconfig")
    # localmodconfig asks about nothing after olddefconfig; LSMOD names a
    # file in lsmod's format (first column: module name).
    cmd = ["make", "-C", str(src), f"O={scratch}", f"LSMOD={MODULES}",
           "localmodconfig"]
    r = subprocess.run(cmd, env=build_env(), capture_output=True, text=True,
                       input="\n" * 200)
    if r.returncode != 0:
        raise Error("make localmodconfig failed: "
                    + last_line(r.stderr))
    frag = fragment_lines(variant)
    with open(scratch / ".config", "a") as cfg:
        cfg.write("\n# config/deb.config\n" + "\n".join(frag) + "\n")
    make(src, scratch, "olddefconfig")
    config = (scratch / ".config").read_bytes()
    lines = set(config.decode().splitlines())
    lost = [l for l in frag if l not in lines]
    if lost:
        raise Error("config/deb.config lines not satisfied after "
                    "olddefconfig: " + " ".join(lost))
    obj.mkdir(parents=True, exist_ok=True)
    old = obj / ".config"
    if not old.exists() or old.read_bytes() != config:
        old.write_bytes(config)
    shutil.rmtree(scratch, ignore_errors=True)
    stamp.write_text(want)


def build_deb(variant):
    """Return the directory of VARIANT's .debs, building them if needed."""
    name = variant_name(variant)      # unknown variants fail here
    done = cached_deb(variant)
    if done:
        return done
    ensure_packages("build", extra=DEB_PACKAGES)
    bdir = deb_root() / "build" / name
    with Lock(deb_root() / f".build-{name}.lock"):
        done = cached_deb(variant)
        if done:
            return done
        check_disk(deb_root(), 6)
        # keyed now: the patches may change while we build
        dest = deb_dir(variant)
        src = deb_source(variant)
        obj = bdir / "obj"
        for old in bdir.glob("*.deb"):
            old.unlink()
        t0 = time.time()
        configure(src, obj, variant)
        say(f"building {name}'s .debs in {obj} (make bindeb-pkg, nice 19, "
            f"-j{jobs()}; log: {bdir / 'build.log'})")
        # No linux-headers package: nothing here builds external modules.
        rc = make(src, obj, "bindeb-pkg",
                  "DPKG_FLAGS=-Ppkg.linux.nokernelheaders",
                  log=bdir / "build.log", label=f"{name} .deb")
        if rc != 0:
            text = (bdir / "build.log").read_text(errors="replace")
            errs = [l for l in text.splitlines()
                    if "error" in l.lower() and "Werror" not in l]
            raise Error(f"{name} .deb build failed: "
                        + (errs[0].strip()[:160] if errs else f"status {rc}")
                        + f" (log: {bdir / 'build.log'})")
        release = (obj / "include/config/kernel.release").read_text().strip()
        debs = sorted(bdir.glob("*.deb"))
        images = [d for d in debs if d.name.startswith(
            f"linux-image-{release}_")]
        if not images:
            raise Error(f"{name}: bindeb-pkg left no linux-image "
                        f"package in {bdir}")
        tmp = dest.with_name(f".{dest.name}.tmp-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for d in debs:
            shutil.move(str(d), tmp / d.name)
        shutil.copy(obj / ".config", tmp / "config")
        diff = subprocess.run([str(src / "scripts/diffconfig"),
                               "/dev/stdin", str(obj / ".config")],
                              input=debian_config(), capture_output=True)
        (tmp / "config.diff").write_bytes(diff.stdout)
        info = {"variant": name, "kernelrelease": release,
                "source_version": source_version(),
                "image_deb": images[0].name,
                "debs": [d.name for d in debs],
                "build_seconds": round(time.time() - t0),
                "built": time.strftime("%Y-%m-%d %H:%M:%S")}
        (tmp / "build-info.json").write_text(json.dumps(info, indent=1))
        shutil.rmtree(dest, ignore_errors=True)
        os.rename(tmp, dest)
        say(f"{name}: .debs built in {info['build_seconds'] / 60:.1f} min")
        return dest


def main(args):
    variants = args.variants or list(DEFAULT_VARIANTS)
    for v in variants:
        variant_patch_dir(v)      # unknown variants fail early
    if args.churn is not None and args.churn < 0 or args.children < 0:
        raise Error("--churn and --children take a count >= 0")
    for v in variants:
        d = build_deb(v)
        print(image_deb(d), flush=True)
    if not (args.boot or args.churn is not None):
        return 0
    failed = 0
    for v in variants:
        job = "boot" if args.churn is None else "churn"
        rc, rundir, results, seconds = boot_systemd(
            v, job=job, churn=args.churn or 0, children=args.children,
            timeout=args.timeout, echo=True)
        bad = [l for l in results.splitlines() if l.startswith("not ok")]
        print(f"{variant_name(v)}: {'pass' if rc == 0 and not bad else 'FAIL'}"
              f" (status {rc}, {len(bad)} failed, {seconds:.0f} s wall; "
              f"run directory {rundir})", flush=True)
        failed += rc != 0 or bool(bad)
    return 1 if failed else 0


# --- a bookworm system on a disk ---------------------------------------------

SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
# systemd as pid 1 and what a small real system has besides: udev, dbus,
# procps (ps, pgrep) and kmod (modprobe, for the kernel's module requests).
ROOTFS_INCLUDE = ["systemd-sysv", "udev", "dbus", "procps", "kmod"]
ROOTFS_HOOKS = [
    'echo fastreap-guest > "$1/etc/hostname"',
    'echo "/dev/vda / ext4 rw,errors=remount-ro 0 1" > "$1/etc/fstab"',
    'chroot "$1" passwd -d root',
]
DISK_SIZE = "3G"
GUEST_JOB = GUEST_DIR / "systemd-job.sh"
GUEST_UNIT = """[Unit]
Description=fastreap test job (results on the second serial port)
After=multi-user.target

[Service]
# exec, not oneshot: the job itself waits for the boot to finish
# (systemctl is-system-running --wait), which a oneshot in the boot
# transaction would hold up for ever.
Type=exec
ExecStart=/usr/local/sbin/fastreap-job
StandardInput=null
StandardOutput=file:/dev/ttyS1
StandardError=inherit
TimeoutStartSec=infinity

[Install]
WantedBy=multi-user.target
"""


def rootfs_key():
    return digest(DEB_RECIPE, SUITE, MIRROR, *ROOTFS_INCLUDE, *ROOTFS_HOOKS)


def base_rootfs():
    """bookworm with systemd, as a tarball made once by mmdebstrap."""
    tar = deb_root() / "rootfs" / f"base-{rootfs_key()}.tar"
    if tar.exists():
        return tar
    ensure_packages("build", extra=IMAGE_PACKAGES)
    if os.geteuid() != 0:
        raise Error("building the bookworm image needs root (mmdebstrap "
                    "--mode=root, chroot and dpkg -i)")
    with Lock(deb_root() / ".rootfs.lock"):
        if tar.exists():
            return tar
        tar.parent.mkdir(parents=True, exist_ok=True)
        tmp = tar.with_name(f".{tar.name}.tmp-{os.getpid()}")
        log = tar.with_suffix(".log")
        say(f"building a {SUITE} image with mmdebstrap (log: {log})")
        t0 = time.time()
        cmd = ["nice", "-n", "19", "mmdebstrap", "--mode=root",
               "--variant=apt", "--format=tar",
               "--include=" + ",".join(ROOTFS_INCLUDE),
               *[f"--customize-hook={h}" for h in ROOTFS_HOOKS],
               SUITE, str(tmp), MIRROR]
        with open(log, "w") as out:
            r = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL)
        if r.returncode != 0:
            tmp.unlink(missing_ok=True)
            last = (log.read_text(errors="replace").strip().splitlines()
                    or ["?"])[-1]
            raise Error(f"mmdebstrap failed: {last[:160]} (log: {log})")
        os.rename(tmp, tar)
        say(f"{SUITE} image built in {time.time() - t0:.0f}s: {tar}")
    return tar


def guest_job_text():
    """The guest's job script, with the host's splat pattern in it."""
    pattern = runner.SPLAT.pattern.replace("'", "")
    return GUEST_JOB.read_text().replace("@SPLAT@", pattern)


def disk_key(variant):
    return digest(DEB_RECIPE, rootfs_key(), deb_key(variant), DISK_SIZE,
                  guest_job_text(), GUEST_UNIT)


def disk_dir(variant):
    return (deb_root() / "disks"
            / f"{variant_name(variant)}-{disk_key(variant)}")


def cached_disk(variant):
    d = disk_dir(variant)
    return d if (d / "disk-info.json").exists() else None


def build_disk(variant):
    """A raw ext4 disk: the base image plus VARIANT's linux-image .deb,
    installed with dpkg -i in a chroot, and the test job; next to it the
    installed kernel (vmlinuz), which QEMU boots directly."""
    done = cached_disk(variant)
    if done:
        return done
    debs = build_deb(variant)
    base = base_rootfs()
    name = variant_name(variant)
    with Lock(deb_root() / f".disk-{name}.lock"):
        done = cached_disk(variant)
        if done:
            return done
        dest = disk_dir(variant)
        tmp = dest.with_name(f".{dest.name}.tmp-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        root = tmp / "root"
        root.mkdir(parents=True)
        t0 = time.time()
        subprocess.run(["tar", "-xpf", str(base), "-C", str(root),
                        "--numeric-owner"], check=True)
        deb = image_deb(debs)
        shutil.copy(deb, root / "tmp" / deb.name)
        r = subprocess.run(["chroot", str(root), "dpkg", "-i",
                            f"/tmp/{deb.name}"], capture_output=True,
                           text=True, env=dict(os.environ,
                                               DEBIAN_FRONTEND="noninteractive",
                                               PATH="/usr/sbin:/usr/bin:"
                                               "/sbin:/bin"))
        (tmp / "dpkg.log").write_text(r.stdout + r.stderr)
        if r.returncode != 0:
            raise Error(f"dpkg -i {deb.name} in the image failed: "
                        + last_line(r.stderr)
                        + f" (log: {tmp / 'dpkg.log'})")
        (root / "tmp" / deb.name).unlink()
        job = root / "usr/local/sbin/fastreap-job"
        job.parent.mkdir(parents=True, exist_ok=True)
        job.write_text(guest_job_text())
        job.chmod(0o755)
        unit = root / "etc/systemd/system/fastreap-job.service"
        unit.write_text(GUEST_UNIT)
        wants = root / "etc/systemd/system/multi-user.target.wants"
        wants.mkdir(parents=True, exist_ok=True)
        (wants / "fastreap-job.service").symlink_to(
            "/etc/systemd/system/fastreap-job.service")
        release = json.loads((debs / "build-info.json").read_text())[
            "kernelrelease"]
        vmlinuz = root / "boot" / f"vmlinuz-{release}"
        if not vmlinuz.exists():
            raise Error(f"dpkg -i {deb.name} installed no {vmlinuz.name}")
        shutil.copy(vmlinuz, tmp / "vmlinuz")
        r = subprocess.run(["mke2fs", "-q", "-t", "ext4", "-L", "root",
                            "-d", str(root), str(tmp / "disk.raw"),
                            DISK_SIZE], capture_output=True, text=True)
        if r.returncode != 0:
            raise Error("mke2fs -d failed: "
                        + last_line(r.stderr))
        shutil.rmtree(root)
        info = {"variant": name, "kernelrelease": release, "deb": deb.name,
                "rootfs": base.name, "seconds": round(time.time() - t0)}
        (tmp / "disk-info.json").write_text(json.dumps(info, indent=1))
        shutil.rmtree(dest, ignore_errors=True)
        os.rename(tmp, dest)
        say(f"{name}: disk image made in {info['seconds']}s: {dest}")
        return dest


# The Debian guest's own init is systemd: this on the console shows that it
# started, and the job (guest/systemd-job.sh) ends its TAP with DONE.
SYSTEMD_STARTED = re.compile(r"systemd\[1\]: .*|Welcome to .*Debian")
JOB_DONE = "# fastreap-job done"


def boot_systemd(variant, job="boot", churn=3000, children=2000, smp=2,
                 mem="2G", timeout=1800, echo=False):
    """Boot VARIANT's Debian system from its disk, with systemd as pid 1.

    The job (guest/systemd-job.sh, started by fastreap-job.service)
    writes TAP lines to the second serial port and powers off.  Returns
    (status, run directory, TAP text, seconds); status is 0, or the
    runner's 123 (no systemd), 124 (timeout) or 125 (kernel splat on the
    console, or the job cut short).
    """
    return boot_disk(build_disk(variant), variant_name(variant),
                     job, churn, children, smp, mem, timeout, echo)


def boot_disk(disk, name, job="boot", churn=3000, children=2000, smp=2,
              mem="2G", timeout=1800, echo=False):
    """Boot DISK (a build_disk() directory: disk.raw, vmlinuz and, if
    present, initrd.img) through the runner; see boot_systemd()."""
    rundir = runner.new_rundir(f"systemd-{name}-{job}")
    # The guest writes to a copy-on-write overlay, never to the cached disk.
    overlay = rundir / "disk.qcow2"
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw",
                    "-b", str(disk / "disk.raw"), str(overlay)], check=True)
    initrd = disk / "initrd.img"
    rc, results, seconds = runner.boot_disk(
        rundir, disk / "vmlinuz", overlay,
        [f"fastreap.job={job}", f"fastreap.churn={churn}",
         f"fastreap.children={children}"],
        SYSTEMD_STARTED, JOB_DONE,
        initrd=initrd if initrd.exists() else None, smp=smp, mem=mem,
        timeout=timeout, info={"variant": name, "job": job,
                               "disk": str(disk)})
    if echo:
        sys.stdout.write(results)
    # The overlay is the guest's whole disk; it is not needed afterwards.
    overlay.unlink(missing_ok=True)
    return rc, rundir, results, seconds


# --- the check group's numbers -----------------------------------------------

CHURN = 2000            # systemd-run transient services
CHILDREN = 2000         # children of each holder service
CHURN_TIMEOUT = 3600    # seconds for the whole boot
# Minutes, for the plan: a cold .deb build on 2 cores, and one boot of the
# systemd group.  Under TCG on the shared machine a transient service took
# 0.34 s of guest time at load 7 (300 in 103 s) and 0.8 s at load 15-20
# (2,000 in 1,594 s; the whole boot with 2 x 2,000 children, 35 minutes
# wall); README, "The kernel a Debian user would install".  The build was
# not seen to finish: ~3,500 objects at 15-40 a minute under nice 19.
BUILD_MINUTES = 90
GROUP_MINUTES = 35
