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
