"""The one runner: how a finished boot is read, and that 9p and disk
boots share the machine and the kernel command line."""

import re

import pytest

import runner

BOOTED = re.compile("init started")


def boot_dir(tmp_path, console, dmesg=None):
    (tmp_path / "console.log").write_text(console)
    if dmesg is not None:
        (tmp_path / "dmesg.txt").write_text(dmesg)
    return tmp_path


@pytest.mark.parametrize("console,dmesg,timed_out,finished,want", [
    ("nothing\n", None, False, False, runner.EXIT_NO_BOOT),
    ("init started\nBUG: oops\n", None, False, True, runner.EXIT_SPLAT),
    ("init started\n", "WARNING: at kernel/exit.c\n", False, True,
     runner.EXIT_SPLAT),
    ("init started\n", None, True, False, runner.EXIT_TIMEOUT),
    ("init started\n", None, False, False, runner.EXIT_SPLAT),
    ("init started\n", "", False, True, 7),
])
def test_classify(tmp_path, console, dmesg, timed_out, finished, want):
    rundir = boot_dir(tmp_path, console, dmesg)
    rc, reason, splats = runner.classify(rundir, BOOTED, timed_out, 60,
                                         finished, 7)
    assert rc == want
    assert bool(reason) == (want != 7)
    assert (rundir / "splats.txt").exists() == bool(splats)


def test_a_splat_before_init_is_a_failure_to_boot_and_says_why(tmp_path):
    rundir = boot_dir(tmp_path, "Kernel panic - not syncing: x\n")
    rc, reason, _ = runner.classify(rundir, BOOTED, False, 60, False, 0)
    assert rc == runner.EXIT_NO_BOOT
    assert "Kernel panic" in reason


def test_both_kinds_of_boot_share_the_command_line():
    common = runner.kernel_cmdline()
    assert runner.ninep_cmdline().startswith(common + " ")
    for word in ("console=ttyS0", "panic=-1", "no_timer_check",
                 "watchdog_thresh=60", "rcupdate.rcu_cpu_stall_timeout=120"):
        assert word in common.split()


def test_qemu_argv(monkeypatch, tmp_path):
    monkeypatch.setattr(runner, "qemu_binary", lambda: "qemu")
    monkeypatch.delenv("FASTREAP_QEMU_EXTRA", raising=False)
    argv = runner.qemu_argv("/k", "ro", tmp_path, "tcg", 2, "2G",
                            serials=[tmp_path / "results.log"],
                            devices=["-device", "virtio-rng-pci"])
    assert argv[argv.index("-accel") + 1] == "tcg,thread=multi"
    serials = [argv[i + 1] for i, a in enumerate(argv) if a == "-serial"]
    assert serials == [f"file:{tmp_path / 'console.log'}",
                       f"file:{tmp_path / 'results.log'}"]
    assert argv[-2:] == ["-device", "virtio-rng-pci"]
    icount = runner.qemu_argv("/k", "ro", tmp_path, "tcg", 1, "2G",
                              icount=True, cpu="max,la57=off")
    assert "shift=0,sleep=off" in icount
    assert icount[icount.index("-cpu") + 1] == "max,la57=off"
    kvm = runner.qemu_argv("/k", "ro", tmp_path, "kvm", 1, "2G")
    assert kvm[kvm.index("-cpu") + 1] == "host"


def test_9p_share_options_double_commas():
    opts = runner.ninep_share("s0", "/tmp/a,b", "tag0", readonly=True)
    assert opts[1] == ("local,id=s0,path=/tmp/a,,b,readonly=on,"
                       "security_model=none,multidevs=remap")
    assert opts[3] == "virtio-9p-pci,fsdev=s0,mount_tag=tag0"


FAKE_QEMU = """#!/bin/sh
# A stand-in for QEMU: writes the console (first -serial file:) and the
# results port (second), as a Debian guest's job would, then exits.
n=0
while [ $# -gt 0 ]; do
    if [ "$1" = -serial ]; then
        n=$((n + 1)); eval "serial$n=\\"${2#file:}\\""
    fi
    shift
done
printf '%s\\n' "$FAKE_CONSOLE" >"$serial1"
printf '%s\\n' "$FAKE_RESULTS" >"$serial2"
exec sleep "${FAKE_SLEEP:-0}"
"""


@pytest.fixture
def fake_qemu(monkeypatch, tmp_path):
    qemu = tmp_path / "qemu"
    qemu.write_text(FAKE_QEMU)
    qemu.chmod(0o755)
    monkeypatch.setattr(runner, "qemu_binary", lambda: str(qemu))
    monkeypatch.setenv("FASTREAP_ACCEL", "tcg")
    monkeypatch.delenv("FASTREAP_QEMU_EXTRA", raising=False)
    rundir = tmp_path / "run"
    rundir.mkdir()
    return rundir


def disk_boot(rundir, timeout=30):
    return runner.boot_disk(rundir, "/vmlinuz", rundir / "disk.qcow2",
                            ["fastreap.job=boot"], re.compile(r"systemd\[1\]"),
                            "# done", timeout=timeout, info={"job": "boot"})


def test_a_disk_boot_that_finishes(fake_qemu, monkeypatch):
    monkeypatch.setenv("FAKE_CONSOLE", "systemd[1]: Started.")
    monkeypatch.setenv("FAKE_RESULTS", "ok 1 - up\r\n# done")
    rc, results, _ = disk_boot(fake_qemu)
    assert rc == 0
    assert results == "ok 1 - up\n# done\n"
    info = (fake_qemu / "run-info.json").read_text()
    assert '"job": "boot"' in info and '"status": 0' in info
    cmd = (fake_qemu / "qemu.cmd").read_text()
    assert "root=/dev/vda rw fastreap.job=boot" in cmd
    assert runner.kernel_cmdline() in cmd


def test_a_disk_boot_cut_short_or_splatted(fake_qemu, monkeypatch):
    monkeypatch.setenv("FAKE_CONSOLE", "systemd[1]: Started.")
    monkeypatch.setenv("FAKE_RESULTS", "ok 1 - up")
    assert disk_boot(fake_qemu)[0] == runner.EXIT_SPLAT
    monkeypatch.setenv("FAKE_CONSOLE", "systemd[1]: x\nBUG: oops")
    monkeypatch.setenv("FAKE_RESULTS", "# done")
    assert disk_boot(fake_qemu)[0] == runner.EXIT_SPLAT
    monkeypatch.setenv("FAKE_CONSOLE", "no init here")
    assert disk_boot(fake_qemu)[0] == runner.EXIT_NO_BOOT


def test_a_disk_boot_past_its_timeout_is_killed(fake_qemu, monkeypatch):
    monkeypatch.setenv("FAKE_CONSOLE", "systemd[1]: Started.")
    monkeypatch.setenv("FAKE_RESULTS", "ok 1 - up")
    monkeypatch.setenv("FAKE_SLEEP", "30")
    rc, _, seconds = disk_boot(fake_qemu, timeout=1)
    assert rc == runner.EXIT_TIMEOUT
    assert seconds < 10
