"""The fastreap workbench: kernel source, variants, builds and the QEMU runner.

Layout of the cache (FASTREAP_CACHE, default ~/.cache/fastreap):

  <source version>/trees/stock        Debian's tree as a git repo, tag "stock"
  <source version>/trees/<variant>    a git worktree: stock + patches/<variant>
  <source version>/trees/*/.build-<flavor>   out-of-tree build directories
  <source version>/images/<variant>-<flavor>-<key>/   finished kernels
  runs/<stamp>-<variant>/             one directory per boot

An image directory appears only by rename() once a build has finished, so an
interrupted build is never reused.  The key hashes everything that decides
the image: source version, variant, flavor, config fragments and patches.
"""

import fcntl
import functools
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Absolute and without symlinks: guests see the cache at this very path
# (see guest_shares()), and ccache's CCACHE_BASEDIR must match the
# physical working directory of the compiler.
CACHE = Path(os.environ.get("FASTREAP_CACHE",
                            Path.home() / ".cache" / "fastreap")).resolve()
SOURCE_PACKAGE = "linux-source-6.12"
SOURCE_TARBALL = Path("/usr/src/linux-source-6.12.tar.xz")
FLAVORS = ("fast", "debug", "rt")
COVER_LETTER = "0000-cover-letter.patch"
# Bump when the build recipe below changes in a way that changes the image.
RECIPE = "1"

PACKAGES = {
    "build": [SOURCE_PACKAGE, "build-essential", "bc", "bison", "flex",
              "libelf-dev", "libssl-dev", "cpio", "ccache", "git",
              "python3", "xz-utils", "dwarves", "libcap-dev"],
    "run": ["qemu-system-x86", "util-linux"],
}

# Runner exit statuses of its own; any other status is the command's.
EXIT_SETUP = 2        # bad input or a broken environment: a one-line error
EXIT_NO_BOOT = 123    # the kernel never reached the guest's init
EXIT_TIMEOUT = 124    # the command ran past --timeout (as timeout(1))
EXIT_SPLAT = 125      # the kernel log shows a warning, bug or lockup

# What counts as a kernel splat in the console log or dmesg.
SPLAT = re.compile(
    r"WARNING:|BUG:|Oops|general protection fault|Kernel panic"
    r"|possible circular locking|possible recursive locking"
    r"|inconsistent lock state|suspicious RCU usage|INFO: lockdep"
    r"|UBSAN:|soft lockup|hard LOCKUP|rcu: INFO: .* stall"
    r"|detected stall|blocked for more than|list_add corruption"
    r"|list_del corruption|ODEBUG:|stack-protector|Stack corruption")


class Error(Exception):
    """A failure the user can act on: printed as one line, exit status 2."""


def say(msg):
    print(f"fastreap: {msg}", file=sys.stderr, flush=True)


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
        last = (r.stderr.strip().splitlines() or ["?"])[-1]
        raise Error(f"apt-get install {' '.join(missing)} failed: {last}")


@functools.cache
def source_version():
    # Every cache key starts here, so a fresh machine installs the kernel
    # source on the first command that needs it; the tools to build it come
    # with the commands that build (build(), stock_tree()).
    ensure_packages(extra=[SOURCE_PACKAGE])
    r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", SOURCE_PACKAGE],
                       capture_output=True, text=True)
    if r.returncode != 0 or not r.stdout:
        raise Error(f"{SOURCE_PACKAGE} is not installed")
    return r.stdout.strip()


def source_dir():
    return CACHE / re.sub(r"[^A-Za-z0-9.+-]", "_", source_version())


# --- trees and variants ----------------------------------------------------

def git(tree, *args, check=True, capture=True):
    env = dict(os.environ, GIT_AUTHOR_NAME="fastreap",
               GIT_AUTHOR_EMAIL="fastreap@localhost",
               GIT_COMMITTER_NAME="fastreap",
               GIT_COMMITTER_EMAIL="fastreap@localhost")
    r = subprocess.run(["git", "-C", str(tree), *args], env=env, text=True,
                       capture_output=capture)
    if check and r.returncode != 0:
        msg = (r.stderr or r.stdout or "").strip().splitlines()
        raise Error(f"git {args[0]} in {tree} failed: "
                    + (msg[0] if msg else f"status {r.returncode}"))
    return r.stdout.strip() if capture else ""


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


def stock_tree():
    """Debian's tree, unpacked once into the cache as a git repository."""
    tree = source_dir() / "trees" / "stock"
    if (tree / ".git").exists() and git(tree, "tag", "-l", "stock"):
        return tree
    ensure_packages("build")
    if not SOURCE_TARBALL.exists():
        raise Error(f"{SOURCE_TARBALL} is missing; reinstall {SOURCE_PACKAGE}")
    with Lock(source_dir() / "unpack.lock"):
        if (tree / ".git").exists() and git(tree, "tag", "-l", "stock"):
            return tree
        check_disk(source_dir().parent, 4)
        tmp = tree.with_name(f".stock.tmp-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        say(f"unpacking {SOURCE_TARBALL} ({source_version()}) into {tree}")
        t0 = time.time()
        subprocess.run(["tar", "-xJf", str(SOURCE_TARBALL), "-C", str(tmp),
                        "--strip-components=1"], check=True)
        say("making it a git repository (tag 'stock')")
        git(tmp, "init", "-q", "-b", "debian")
        # Debian's top-level .gitignore ignores everything: force-add.
        git(tmp, "add", "-f", "-A", ".")
        git(tmp, "commit", "-q", "-m",
            f"{SOURCE_PACKAGE} {source_version()} as shipped by Debian")
        git(tmp, "tag", "stock")
        shutil.rmtree(tree, ignore_errors=True)
        os.rename(tmp, tree)
        say(f"unpacked in {time.time() - t0:.0f}s")
    return tree


def known_variants():
    names = ["stock"]
    pdir = REPO / "patches"
    if pdir.is_dir():
        names += sorted(d.name for d in pdir.iterdir() if d.is_dir())
    return names


def variant_patch_dir(variant):
    """stock has no patches; NAME is patches/NAME/; a path is used as is."""
    if variant == "stock":
        return None
    if "/" in variant:
        pdir = Path(variant).resolve()
    else:
        pdir = REPO / "patches" / variant
    if not pdir.is_dir():
        raise Error(f"unknown variant '{variant}' (known: "
                    + ", ".join(known_variants()) + ")")
    return pdir


def variant_name(variant):
    return "stock" if variant == "stock" else variant_patch_dir(variant).name


def variant_patches(variant):
    pdir = variant_patch_dir(variant)
    if pdir is None:
        return []
    return sorted(p for p in pdir.glob("*.patch") if p.name != COVER_LETTER)


def digest(*parts):
    h = hashlib.sha256()
    for part in parts:
        h.update(part if isinstance(part, bytes) else str(part).encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


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


def patches_hash(variant):
    return digest(*[p.read_bytes() for p in variant_patches(variant)])


def variant_tree(variant):
    """The variant's worktree, at stock + its patches, applied with git am.

    A developer may edit and commit in the worktree and export the commits
    with 'fastreap export'.  Commits or edits that were not exported are
    never thrown away: the tree is then refused with a message instead.
    """
    stock = stock_tree()
    name = variant_name(variant)
    if name == "stock":
        return stock
    tree = stock.parent / name
    state_file = tree / ".fastreap-applied"
    want = patches_hash(variant)
    with Lock(stock.parent / f".{name}.lock"):
        if not (tree / ".git").exists():
            git(stock, "worktree", "prune")
            git(stock, "worktree", "add", "-q", "-f", "-B", name, str(tree),
                "stock")
            state = {"patches": digest(), "head": git(stock, "rev-parse",
                                                      "stock")}
        elif state_file.exists():
            state = json.loads(state_file.read_text())
        else:
            state = {"patches": None, "head": git(stock, "rev-parse",
                                                  "stock")}
        head = git(tree, "rev-parse", "HEAD")
        if state["patches"] == want and head == state["head"]:
            return tree
        if git(tree, "status", "--porcelain", "--untracked-files=no"):
            raise Error(f"{tree} has uncommitted changes; commit and run "
                        f"'./fastreap export {name}', or discard them")
        if head != state["head"]:
            raise Error(f"{tree} has commits not exported to patches/; run "
                        f"'./fastreap export {name}' or "
                        f"'./fastreap tree --reset {name}'")
        apply_patches(tree, name, variant_patches(variant))
        state = {"patches": want, "head": git(tree, "rev-parse", "HEAD")}
        state_file.write_text(json.dumps(state))
        return tree


def apply_patches(tree, name, patches):
    (tree / ".fastreap-applied").unlink(missing_ok=True)
    git(tree, "checkout", "-q", "-B", name, "stock")
    if not patches:
        return
    say(f"applying {len(patches)} patch(es) to {name}")
    r = subprocess.run(["git", "-C", str(tree), "am", "-q", "--3way",
                        *map(str, patches)], capture_output=True, text=True,
                       env=dict(os.environ, GIT_COMMITTER_NAME="fastreap",
                                GIT_COMMITTER_EMAIL="fastreap@localhost"))
    if r.returncode != 0:
        failed = git(tree, "am", "--show-current-patch=diff", check=False)
        subject = re.search(r"^Patch failed at \d+ (.*)$",
                            r.stdout + r.stderr, re.M)
        git(tree, "am", "--abort", check=False)
        git(tree, "checkout", "-q", "-B", name, "stock")
        what = subject.group(1) if subject else (failed[:60] or "?")
        raise Error(f"patch does not apply to {name}: {what}")


def reset_tree(variant):
    tree = stock_tree().parent / variant_name(variant)
    (tree / ".fastreap-applied").unlink(missing_ok=True)
    if (tree / ".git").exists():
        git(tree, "checkout", "-q", "-f", "-B", variant_name(variant),
            "stock")
    return variant_tree(variant)


def export_tree(variant):
    """git format-patch the worktree's commits back into patches/NAME/."""
    name = variant_name(variant)
    tree = stock_tree().parent / name
    if name == "stock" or not (tree / ".git").exists():
        raise Error(f"no worktree for '{name}' (run './fastreap tree {name}')")
    # A path variant is exported back into its own directory.
    pdir = variant_patch_dir(variant) if name != variant \
        else REPO / "patches" / name
    pdir.mkdir(parents=True, exist_ok=True)
    cover = pdir / COVER_LETTER
    keep_cover = cover.read_text() if cover.exists() else None
    for old in pdir.glob("*.patch"):
        old.unlink()
    args = ["format-patch", "-q", "-o", str(pdir), "stock..HEAD"]
    if keep_cover is not None:
        args.insert(1, "--cover-letter")
    git(tree, *args)
    if keep_cover is not None:
        cover.write_text(keep_cover)
    state = {"patches": patches_hash(variant),
             "head": git(tree, "rev-parse", "HEAD")}
    (tree / ".fastreap-applied").write_text(json.dumps(state))
    return sorted(pdir.glob("*.patch"))


# --- builds ----------------------------------------------------------------

def check_disk(path, gib):
    path.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(path).free / 2**30
    if free < gib:
        raise Error(f"only {free:.1f} GiB free under {path}; "
                    f"a kernel build needs {gib} GiB")


def fragments(flavor):
    if flavor not in FLAVORS:
        raise Error(f"unknown flavor '{flavor}' (known: {', '.join(FLAVORS)})")
    frags = [REPO / "config" / "fast.config"]
    if flavor in ("debug", "rt"):
        frags.append(REPO / "config" / "debug.config")
    if flavor == "rt":
        frags.append(REPO / "config" / "rt.config")
    return frags


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
        env = dict(os.environ, CCACHE_BASEDIR=str(CACHE),
                   CCACHE_NOHASHDIR="1", KBUILD_BUILD_USER="fastreap",
                   KBUILD_BUILD_HOST="fastreap")
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
            raise Error(f"configuring {bdir} failed: "
                        + (r.stderr.strip().splitlines() or ["?"])[-1])
    config = set((bdir / ".config").read_text().splitlines())
    lost = []
    for frag in frags:
        for line in frag.read_text().splitlines():
            if re.match(r"CONFIG_\w+=", line) or \
                    re.match(r"# CONFIG_\w+ is not set", line):
                if line not in config:
                    lost.append(line)
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


# --- the runner ------------------------------------------------------------

# lib/guest-init.sh mounts a tmpfs on each of these, which hides whatever
# the host keeps there; keep the two lists in step.
GUEST_SCRATCH = ("/tmp", "/run", "/var/tmp", "/var/log")
# The guest mounts its own proc, sysfs and devtmpfs (and /dev/shm) here.
GUEST_PSEUDO = ("/proc", "/sys", "/dev")


def _under(path, top):
    return path == Path(top) or Path(top) in path.parents


def guest_shares(cwd=None):
    """Host directories the guest needs that its tmpfs mounts would hide.

    The guest runs the command in the host's working directory and runs
    programs from the repository and the cache; any of them under /tmp,
    /run, /var/tmp or /var/log is shared into the guest by its own
    read-only virtio-9p device and mounted at the same path, over the
    tmpfs.  Returns those paths, none inside another; raises Error for a
    directory that cannot be shared this way (a one-line reason).
    """
    try:
        cwd = Path(cwd or os.getcwd()).resolve()
    except FileNotFoundError:
        raise Error("the working directory no longer exists; cd elsewhere")
    wanted = [("working directory", cwd),
              ("repository", REPO), ("cache (FASTREAP_CACHE)", CACHE)]
    shares = []
    for what, path in wanted:
        if "\n" in str(path):
            raise Error(f"the {what} {str(path)!r} has a newline in its "
                        "name, which the guest cannot mount")
        for top in GUEST_PSEUDO:
            if _under(path, top):
                raise Error(f"the {what} {path} is under {top}, which the "
                            "guest replaces with its own; use another")
        for top in GUEST_SCRATCH:
            if path == Path(top):
                raise Error(f"the {what} is {top} itself, which is the "
                            "guest's scratch tmpfs; use a directory below "
                            "it or elsewhere")
            if _under(path, top):
                shares.append(path)
    shares.sort(key=lambda p: len(p.parts))
    outer = []
    for path in shares:
        if not any(_under(path, o) for o in outer):
            outer.append(path)
    return outer


def check_rundir(rundir):
    """A run directory the guest can mount at its own path, else Error."""
    rundir = Path(rundir).resolve()
    if "\n" in str(rundir):
        raise Error(f"the run directory {str(rundir)!r} has a newline in "
                    "its name, which the guest cannot mount")
    # It is mounted over whatever the guest has at its path: it must not
    # be, or contain, a directory the guest mounts itself.
    for top in GUEST_PSEUDO:
        if _under(rundir, top):
            raise Error(f"the run directory {rundir} is under {top}, which "
                        "the guest replaces with its own; use another")
    for top in GUEST_PSEUDO + GUEST_SCRATCH:
        if _under(Path(top), rundir):
            raise Error(f"the run directory {rundir} would hide the guest's "
                        f"{top}; use another")
    return rundir


def preflight(cwd=None, rundir=None):
    """Everything about paths that would stop a boot, before any build.

    Commands that boot guests call this first, so a refusal never comes
    after half an hour of kernel builds.
    """
    guest_shares(cwd)
    if rundir is not None:
        check_rundir(rundir)


def qemu_binary():
    ensure_packages("run")
    qemu = shutil.which("qemu-system-x86_64")
    if not qemu:
        raise Error("qemu-system-x86_64 not found (install qemu-system-x86)")
    return qemu


def accelerator(img):
    """'kvm' only where a KVM guest really boots; else multi-threaded TCG.

    /dev/kvm can exist while KVM guests hang after "Booting from ROM", so
    boot the real kernel once with a short timeout and remember the answer
    until the host reboots.  FASTREAP_ACCEL=kvm|tcg overrides the probe.
    """
    forced = os.environ.get("FASTREAP_ACCEL")
    if forced:
        if forced not in ("kvm", "tcg"):
            raise Error(f"FASTREAP_ACCEL must be kvm or tcg, not '{forced}'")
        return forced
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return "tcg"
    boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    memo = CACHE / f"accel-{boot_id}"
    if memo.exists():
        return memo.read_text().strip()
    say("probing KVM (a guest that hangs is given 20 s)")
    rc = boot(img, ["true"], accel="kvm", smp=1, mem="512M", timeout=20,
              rundir=None, echo=False)
    accel = "kvm" if rc == 0 else "tcg"
    say(f"accelerator: {accel}")
    memo.parent.mkdir(parents=True, exist_ok=True)
    memo.write_text(accel)
    return accel


def new_rundir(label):
    runs = CACHE / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    old = sorted(runs.iterdir())
    for stale in old[:-100]:
        shutil.rmtree(stale, ignore_errors=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    label = re.sub(r"[^\w.+-]", "_", label)     # variants may be paths
    d = runs / f"{stamp}-{label}-{os.getpid()}"
    d.mkdir()
    return d


def write_job(rundir, cmd, env, cwd):
    lines = ["# written by fastreap's runner; run by lib/guest-init.sh",
             f"cd {shlex.quote(str(cwd))} || exit 127"]
    for k, v in env.items():
        lines.append(f"export {k}={shlex.quote(str(v))}")
    lines.append("exec " + " ".join(shlex.quote(c) for c in cmd))
    (rundir / "job.sh").write_text("\n".join(lines) + "\n")


def qemu_command(img, rundir, accel, smp, mem, icount, shares=()):
    qemu = qemu_binary()
    # The kernel command line splits at spaces, so the only host path on
    # it is init's, quoted: the guest finds the run directory by its mount
    # tag and reads the other paths there, see write_guest_mounts().
    cmdline = [
        "console=ttyS0", "loglevel=5", "log_buf_len=8M",
        "root=/dev/root", "rootfstype=9p",
        "rootflags=trans=virtio,version=9p2000.L,msize=512000,cache=loose",
        "ro", f'init="{REPO / "lib" / "guest-init.sh"}"',
        "panic=-1", "mitigations=off", "nokaslr", "tsc=reliable",
        "no_hash_pointers",
        # Under TCG on a busy host the IO-APIC timer check can miss its
        # ticks and panic the boot ("IO-APIC + timer doesn't work!").
        "no_timer_check",
        # TCG on a loaded 2-core host can stall a vCPU for tens of seconds
        # (a debug kernel boots ~10x slower): wider lockup and RCU stall
        # windows than the defaults of 20 s and 21 s keep emulation hiccups
        # from reading as kernel bugs, while a real lockup still shows.
        "watchdog_thresh=60", "rcupdate.rcu_cpu_stall_timeout=120",
    ]
    cpu = tcg_cpu_model(img)
    if accel == "kvm":
        machine = ["-accel", "kvm", "-cpu", "host"]
    elif icount:
        # Single-threaded TCG counting instructions: guest time is exact and
        # repeatable, so variants compare without host noise.
        machine = ["-accel", "tcg", "-icount", "shift=0,sleep=off",
                   "-cpu", cpu]
    else:
        machine = ["-accel", "tcg,thread=multi", "-cpu", cpu]
    return [qemu, "-M", "pc", *machine, "-smp", str(smp), "-m", mem,
            "-nodefaults", "-no-user-config", "-display", "none",
            "-no-reboot", "-serial", f"file:{rundir / 'console.log'}",
            "-kernel", str(img / "bzImage"), "-append", " ".join(cmdline),
            "-fsdev", "local,id=root,path=/,readonly=on,security_model=none,"
            "multidevs=remap",
            "-device", "virtio-9p-pci,fsdev=root,mount_tag=/dev/root",
            "-fsdev", f"local,id=run,path={qemu_opt(rundir)},"
            "security_model=none,multidevs=remap",
            "-device", "virtio-9p-pci,fsdev=run,mount_tag=fastreap-run",
            *[arg for i, path in enumerate(shares) for arg in (
                "-fsdev", f"local,id=share{i},path={qemu_opt(path)},"
                "readonly=on,security_model=none,multidevs=remap",
                "-device", f"virtio-9p-pci,fsdev=share{i},"
                f"mount_tag=fastreap-share{i}")]]


def tcg_cpu_model(img):
    """The -cpu of a TCG guest: 'max' (it has XSAVE), but no LA57 for KASAN.

    Stock 6.12 has a boot race under KASAN with 5-level paging:
    identify_cpu() clears boot_cpu_data's capabilities, X86_FEATURE_LA57
    with them, and re-reads them with interrupts on.  An interrupt in that
    window takes an irq_desc lock in the 5-level direct map (0xff11...),
    and KASAN's address check, which derives its shadow range from
    pgtable_l5_enabled(), sees a 4-level kernel and reports a
    "wild-memory-access" at 0.003 s, before init: it failed one debug
    boot of a CI make check.  Without LA57 the guest runs 4-level paging
    throughout and the window is harmless.
    """
    try:
        config = (Path(img) / "config").read_text()
    except OSError:
        return "max"
    if "\nCONFIG_KASAN=y\n" in config and "\nCONFIG_X86_5LEVEL=y\n" in config:
        return "max,la57=off"
    return "max"


def qemu_opt(value):
    """VALUE inside a QEMU -fsdev option list: commas are doubled."""
    return str(value).replace(",", ",,")


def write_guest_mounts(rundir, shares):
    """What guest-init.sh mounts: 'TAG PATH' lines, then the run directory.

    The shares go first, at their own paths over the tmpfs mounts; the run
    directory last, so it stays writable even inside a shared directory.
    """
    lines = [f"fastreap-share{i} {path}" for i, path in enumerate(shares)]
    (rundir / "mounts").write_text("".join(l + "\n" for l in lines))
    (rundir / "hostpath").write_text(str(rundir))


def boot(img, cmd, accel, smp=2, mem="2G", timeout=600, rundir=None,
         icount=False, env=None, echo=True, cwd=None):
    """Boot IMG, run CMD as the guest's job, return the runner's status."""
    shares = guest_shares(cwd)
    cwd = Path(cwd or os.getcwd()).resolve()
    own_rundir = rundir is None
    if own_rundir:
        rundir = new_rundir("probe")
    rundir = check_rundir(rundir)
    (rundir / "out").mkdir(exist_ok=True)
    env = dict(env or {}, FASTREAP_OUT=rundir / "out")
    write_job(rundir, cmd, env, cwd)
    write_guest_mounts(rundir, shares)
    argv = qemu_command(img, rundir, accel, smp, mem, icount, shares)
    argv += shlex.split(os.environ.get("FASTREAP_QEMU_EXTRA", ""))
    (rundir / "qemu.cmd").write_text(shlex.join(argv) + "\n")
    output = rundir / "output"
    output.touch()
    t0 = time.time()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    timed_out = False
    with open(output, "rb") as tail:
        while True:
            try:
                proc.wait(timeout=0.2)
                finished = True
            except subprocess.TimeoutExpired:
                finished = False
            chunk = tail.read()
            if chunk and echo:
                sys.stdout.buffer.write(chunk)
                sys.stdout.flush()
            if finished:
                break
            if time.time() - t0 > timeout:
                timed_out = True
                proc.kill()
                proc.wait()
                break
    qemu_out = proc.stdout.read().decode(errors="replace").strip()
    (rundir / "qemu.log").write_text(qemu_out)
    console = (rundir / "console.log").read_text(errors="replace") \
        if (rundir / "console.log").exists() else ""
    dmesg = (rundir / "dmesg.txt").read_text(errors="replace") \
        if (rundir / "dmesg.txt").exists() else ""
    status_file = rundir / "status"
    booted = "fastreap-guest: init started" in console
    splats = [l for l in (console + "\n" + dmesg).splitlines()
              if SPLAT.search(l)]
    elapsed = time.time() - t0
    info = {"accel": accel, "icount": icount, "smp": smp, "mem": mem,
            "seconds": round(elapsed, 1), "image": str(img)}
    if splats:
        (rundir / "splats.txt").write_text("\n".join(splats) + "\n")
    if not booted:
        rc = EXIT_NO_BOOT
        if echo:
            why = (splats[0].strip() if splats else
                   qemu_out.splitlines()[-1] if qemu_out else
                   "no 'init started' on the console")
            say(f"the kernel did not boot: {why[:160]} "
                f"(console log: {rundir / 'console.log'})")
    elif splats:
        rc = EXIT_SPLAT
        if echo:
            say(f"kernel splat: {splats[0].strip()[:160]} "
                f"(console log: {rundir / 'console.log'})")
    elif timed_out:
        rc = EXIT_TIMEOUT
        if echo:
            say(f"timeout: the command ran past {timeout}s "
                f"(console log: {rundir / 'console.log'})")
    elif not status_file.exists():
        rc = EXIT_SPLAT
        if echo:
            say(f"the guest stopped before the command finished "
                f"(console log: {rundir / 'console.log'})")
    else:
        rc = int(status_file.read_text().strip() or 255)
    # guest-init.sh did not run the job: a share it could not mount.  A
    # command of the user's may exit with EXIT_SETUP's 2 itself, so this
    # is told by the console, not by the status.
    unmounted = re.search(r"fastreap-guest: cannot mount:(.*)", console)
    setup_failed = unmounted and not splats
    if setup_failed:
        rc = EXIT_SETUP
    info["status"] = rc
    (rundir / "run-info.json").write_text(json.dumps(info, indent=1))
    if setup_failed:
        raise Error(f"the guest could not mount{unmounted.group(1)} "
                    f"(console log: {rundir / 'console.log'})")
    if own_rundir:
        shutil.rmtree(rundir, ignore_errors=True)
    return rc


def run(variant, cmd, flavor="fast", smp=2, mem="2G", timeout=600,
        icount=False, rundir=None, echo=True, cwd=None):
    """Build if needed, boot VARIANT in QEMU and run CMD in CWD (default:
    the current directory); see boot()."""
    preflight(cwd, rundir)
    img = build(variant, flavor)
    accel = accelerator(img)
    if rundir is None:
        rundir = new_rundir(f"{variant_name(variant)}-{flavor}")
    else:
        rundir = Path(rundir).resolve()
        rundir.mkdir(parents=True, exist_ok=True)
    info = json.loads((img / "build-info.json").read_text())
    env = {"FASTREAP_VARIANT": info["variant"], "FASTREAP_FLAVOR": flavor,
           "FASTREAP_KERNEL": info["kernelrelease"],
           "FASTREAP_SOURCE_VERSION": info["source_version"],
           "FASTREAP_ACCEL": "tcg-icount" if icount and accel == "tcg"
           else accel}
    return boot(img, cmd, accel, smp=smp, mem=mem, timeout=timeout,
                rundir=rundir, icount=icount, env=env, echo=echo, cwd=cwd)
