"""The one QEMU runner: every guest of the workbench boots through here.

Two kinds of boot share the machine, the kernel command line, the timeout
and the reading of the result (booted? kernel splat? timed out? finished?):

  boot()       the host's root file system, read-only over virtio-9p, with
               guest/init.sh as pid 1 running one job in the host's
               working directory (./fastreap run, check, bench, census);
  boot_disk()  a root file system on a virtio disk with its own init,
               whose job reports on a second serial port (lib/deb.py).

  runs/<stamp>-<label>-<pid>/   one directory per boot: qemu.cmd,
                                console.log, qemu.log, run-info.json, and
                                for boot() the job, its output and out/
"""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import build
from common import CACHE, GUEST_DIR, REPO, Error, ensure_packages, say
from variants import variant_name

# Runner exit statuses of its own; any other status is the command's.
EXIT_SETUP = 2        # bad input or a broken environment: a one-line error
EXIT_NO_BOOT = 123    # the kernel never reached the guest's init
EXIT_TIMEOUT = 124    # the command ran past --timeout (as timeout(1))
EXIT_SPLAT = 125      # the kernel log shows a warning, bug or lockup
# What a status of the runner's own says, in a one-line reason.
EXIT_REASONS = {EXIT_NO_BOOT: "kernel did not boot",
                EXIT_TIMEOUT: "guest timed out",
                EXIT_SPLAT: "kernel splat"}

# What counts as a kernel splat in the console log or dmesg.
SPLAT = re.compile(
    r"WARNING:|BUG:|Oops|general protection fault|Kernel panic"
    r"|possible circular locking|possible recursive locking"
    r"|inconsistent lock state|suspicious RCU usage|INFO: lockdep"
    r"|UBSAN:|soft lockup|hard LOCKUP|rcu: INFO: .* stall"
    r"|detected stall|blocked for more than|list_add corruption"
    r"|list_del corruption|ODEBUG:|stack-protector|Stack corruption")

# The guest's scratch tmpfs mounts, which hide whatever the host keeps
# there.  guest/init.sh reads this list from the kernel command line
# (fastreap.scratch=), so it is written only here.
GUEST_SCRATCH = ("/tmp", "/run", "/var/tmp", "/var/log")
# The guest mounts its own proc, sysfs and devtmpfs (and /dev/shm) here.
GUEST_PSEUDO = ("/proc", "/sys", "/dev")
GUEST_INIT = GUEST_DIR / "init.sh"
INIT_STARTED = re.compile("fastreap-guest: init started")


# --- the paths a guest can see -----------------------------------------------

def _under(path, top):
    return path == Path(top) or Path(top) in path.parents


def refuse_unmountable(what, path):
    """Error unless the guest can mount PATH (the WHAT) at its own path."""
    if "\n" in str(path):
        raise Error(f"the {what} {str(path)!r} has a newline in its "
                    "name, which the guest cannot mount")
    for top in GUEST_PSEUDO:
        if _under(path, top):
            raise Error(f"the {what} {path} is under {top}, which the "
                        "guest replaces with its own; use another")


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
        refuse_unmountable(what, path)
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
    # It is mounted over whatever the guest has at its path: it must not
    # be, or contain, a directory the guest mounts itself.
    refuse_unmountable("run directory", rundir)
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


def accelerator(probe_image=None):
    """'kvm' only where a KVM guest really boots; else multi-threaded TCG.

    /dev/kvm can exist while KVM guests hang after "Booting from ROM", so
    boot PROBE_IMAGE once with a short timeout and remember the answer
    until the host reboots; without an image to probe with, only a
    remembered answer gives KVM.  FASTREAP_ACCEL=kvm|tcg overrides the
    probe.
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
    if probe_image is None:
        return "tcg"
    say("probing KVM (a guest that hangs is given 20 s)")
    rc = boot(probe_image, ["true"], accel="kvm", smp=1, mem="512M",
              timeout=20, rundir=None, echo=False)
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


# --- the machine, its command line, and reading what happened ----------------

def kernel_cmdline(*own):
    """The command line of every guest kernel, then the boot's OWN words."""
    return " ".join([
        "console=ttyS0", "panic=-1", "mitigations=off",
        # Under TCG on a busy host the IO-APIC timer check can miss its
        # ticks and panic the boot ("IO-APIC + timer doesn't work!").
        "no_timer_check",
        # TCG on a loaded 2-core host can stall a vCPU for tens of seconds
        # (a debug kernel boots ~10x slower): wider lockup and RCU stall
        # windows than the defaults of 20 s and 21 s keep emulation hiccups
        # from reading as kernel bugs, while a real lockup still shows.
        "watchdog_thresh=60", "rcupdate.rcu_cpu_stall_timeout=120",
        *own])


def qemu_argv(kernel, cmdline, rundir, accel, smp, mem, icount=False,
              cpu="max", serials=(), devices=()):
    """QEMU's argv: a PC with no default devices, the console on the first
    serial port (RUNDIR/console.log), then SERIALS (files), then DEVICES."""
    if accel == "kvm":
        machine = ["-accel", "kvm", "-cpu", "host"]
    elif icount:
        # Single-threaded TCG counting instructions: guest time is exact and
        # repeatable, so variants compare without host noise.
        machine = ["-accel", "tcg", "-icount", "shift=0,sleep=off",
                   "-cpu", cpu]
    else:
        machine = ["-accel", "tcg,thread=multi", "-cpu", cpu]
    return [qemu_binary(), "-M", "pc", *machine, "-smp", str(smp), "-m", mem,
            "-nodefaults", "-no-user-config", "-display", "none",
            "-no-reboot", "-serial", f"file:{rundir / 'console.log'}",
            *[arg for path in serials for arg in ("-serial", f"file:{path}")],
            "-kernel", str(kernel), "-append", cmdline, *devices,
            *shlex.split(os.environ.get("FASTREAP_QEMU_EXTRA", ""))]


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


def launch(argv, rundir, timeout, echo_file=None):
    """Run QEMU until it exits or TIMEOUT seconds pass (then kill it),
    copying ECHO_FILE to our output as it grows.  Returns (timed out?,
    seconds).  QEMU's own messages go to RUNDIR/qemu.log."""
    (rundir / "qemu.cmd").write_text(shlex.join(argv) + "\n")
    t0 = time.time()
    with open(rundir / "qemu.log", "wb") as qemu_log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                stdout=qemu_log, stderr=subprocess.STDOUT)
    tail = open(echo_file, "rb") if echo_file is not None else None
    timed_out = False
    try:
        while True:
            try:
                proc.wait(timeout=0.2)
                finished = True
            except subprocess.TimeoutExpired:
                finished = False
            chunk = tail.read() if tail else b""
            if chunk:
                sys.stdout.buffer.write(chunk)
                sys.stdout.flush()
            if finished:
                break
            if time.time() - t0 > timeout:
                timed_out = True
                proc.kill()
                proc.wait()
                break
    finally:
        if tail:
            tail.close()
    return timed_out, time.time() - t0


def read_text(path):
    return path.read_text(errors="replace") if path.exists() else ""


def classify(rundir, booted_by, timed_out, timeout, finished, job_status):
    """The runner's status of a boot that is over, and a one-line reason
    ("" when the status is the job's own).

    Read in this order: no sign of BOOTED_BY (a regex) on the console is
    a failure to boot; then any splat in the console log or the guest's
    dmesg.txt; then the timeout; then a job that did not FINISH, which
    means the guest stopped under it.  Splat lines go to splats.txt, and
    are returned third.
    """
    console = read_text(rundir / "console.log")
    splats = [line for line in (console + "\n" + read_text(
        rundir / "dmesg.txt")).splitlines() if SPLAT.search(line)]
    if splats:
        (rundir / "splats.txt").write_text("\n".join(splats) + "\n")
    where = f"(console log: {rundir / 'console.log'})"
    if not booted_by.search(console):
        qemu_out = read_text(rundir / "qemu.log").strip()
        why = (splats[0].strip() if splats else
               qemu_out.splitlines()[-1] if qemu_out else
               f"no '{booted_by.pattern}' on the console")
        return (EXIT_NO_BOOT, f"the kernel did not boot: {why[:160]} {where}",
                splats)
    if splats:
        return (EXIT_SPLAT, f"kernel splat: {splats[0].strip()[:160]} "
                f"{where}", splats)
    if timed_out:
        return (EXIT_TIMEOUT, f"timeout: the command ran past {timeout}s "
                f"{where}", splats)
    if not finished:
        return (EXIT_SPLAT, "the guest stopped before the command finished "
                f"{where}", splats)
    return job_status, "", splats


def write_info(rundir, info):
    (rundir / "run-info.json").write_text(json.dumps(info, indent=1))


# --- boots of the host's root over 9p ----------------------------------------

def write_job(rundir, cmd, env, cwd):
    lines = ["# written by fastreap's runner; run by guest/init.sh",
             f"cd {shlex.quote(str(cwd))} || exit 127"]
    for k, v in env.items():
        lines.append(f"export {k}={shlex.quote(str(v))}")
    lines.append("exec " + " ".join(shlex.quote(c) for c in cmd))
    (rundir / "job.sh").write_text("\n".join(lines) + "\n")


def qemu_opt(value):
    """VALUE inside a QEMU -fsdev option list: commas are doubled."""
    return str(value).replace(",", ",,")


def ninep_share(name, path, tag, readonly):
    """The -fsdev and -device of one virtio-9p share of PATH."""
    return ["-fsdev", f"local,id={name},path={qemu_opt(path)},"
            + ("readonly=on," if readonly else "")
            + "security_model=none,multidevs=remap",
            "-device", f"virtio-9p-pci,fsdev={name},mount_tag={tag}"]


def ninep_cmdline():
    # The kernel command line splits at spaces, so the only host path on
    # it is init's, quoted: the guest finds the run directory by its mount
    # tag and reads the other paths there, see write_guest_mounts().
    return kernel_cmdline(
        "loglevel=5", "log_buf_len=8M",
        "root=/dev/root", "rootfstype=9p",
        "rootflags=trans=virtio,version=9p2000.L,msize=512000,cache=loose",
        "ro", f'init="{GUEST_INIT}"',
        "nokaslr", "tsc=reliable", "no_hash_pointers",
        "fastreap.scratch=" + ",".join(GUEST_SCRATCH))


def ninep_devices(rundir, shares):
    return [*ninep_share("root", "/", "/dev/root", readonly=True),
            *ninep_share("run", rundir, "fastreap-run", readonly=False),
            *[arg for i, path in enumerate(shares) for arg in ninep_share(
                f"share{i}", path, f"fastreap-share{i}", readonly=True)]]


def write_guest_mounts(rundir, shares):
    """What guest/init.sh mounts: 'TAG PATH' lines, then the run directory.

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
    argv = qemu_argv(Path(img) / "bzImage", ninep_cmdline(), rundir, accel,
                     smp, mem, icount, cpu=tcg_cpu_model(img),
                     devices=ninep_devices(rundir, shares))
    (rundir / "output").touch()
    timed_out, seconds = launch(argv, rundir, timeout,
                                echo_file=rundir / "output" if echo else None)
    status_file = rundir / "status"
    finished = status_file.exists()
    rc, reason, splats = classify(
        rundir, INIT_STARTED, timed_out, timeout, finished,
        int(status_file.read_text().strip() or 255) if finished else None)
    if reason and echo:
        say(reason)
    # guest/init.sh did not run the job: a share it could not mount.  A
    # command of the user's may exit with EXIT_SETUP's 2 itself, so this
    # is told by the console, not by the status.
    unmounted = re.search(r"fastreap-guest: cannot mount:(.*)",
                          read_text(rundir / "console.log"))
    setup_failed = unmounted and not splats
    if setup_failed:
        rc = EXIT_SETUP
    write_info(rundir, {"accel": accel, "icount": icount, "smp": smp,
                        "mem": mem, "seconds": round(seconds, 1),
                        "image": str(img), "status": rc})
    if setup_failed:
        raise Error(f"the guest could not mount{unmounted.group(1)} "
                    f"(console log: {rundir / 'console.log'})")
    if own_rundir:
        shutil.rmtree(rundir, ignore_errors=True)
    return rc


# --- boots of a root file system on a disk -----------------------------------

def boot_disk(rundir, kernel, drive, params, booted_by, done_mark,
              initrd=None, smp=2, mem="2G", timeout=1800, info=None):
    """Boot KERNEL with DRIVE (a qcow2 file) as its root, /dev/vda, and
    PARAMS on its command line; the guest's own init runs a job that writes
    to the second serial port (RUNDIR/results.log) and ends with DONE_MARK.
    BOOTED_BY (a regex) on the console shows that init started.  Returns
    (the runner's status, the results without carriage returns, seconds).
    """
    accel = accelerator()
    results_log = rundir / "results.log"
    devices = ["-drive", f"file={drive},if=virtio,format=qcow2",
               "-device", "virtio-rng-pci"]
    if initrd is not None:
        devices += ["-initrd", str(initrd)]
    argv = qemu_argv(kernel, kernel_cmdline("root=/dev/vda", "rw", *params),
                     rundir, accel, smp, mem, serials=[results_log],
                     devices=devices)
    timed_out, seconds = launch(argv, rundir, timeout)
    results = read_text(results_log).replace("\r", "")
    rc, _, _ = classify(rundir, booted_by, timed_out, timeout,
                        done_mark in results, 0)
    write_info(rundir, {**(info or {}), "accel": accel, "smp": smp,
                        "mem": mem, "seconds": round(seconds, 1),
                        "status": rc, "kernel": str(kernel)})
    return rc, results, seconds


# --- a variant's kernel, built if need be ------------------------------------

def run(variant, cmd, flavor="fast", smp=2, mem="2G", timeout=600,
        icount=False, rundir=None, echo=True, cwd=None):
    """Build if needed, boot VARIANT in QEMU and run CMD in CWD (default:
    the current directory); see boot()."""
    preflight(cwd, rundir)
    img = build.build(variant, flavor)
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
