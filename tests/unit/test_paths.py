"""The share and working-directory checks: which host directories a
guest needs shared back over its tmpfs, and which it cannot mount."""

from pathlib import Path

import pytest

import common
import runner


@pytest.fixture
def places(monkeypatch, tmp_path):
    """REPO and CACHE where the guest sees them without a share."""
    monkeypatch.setattr(runner, "REPO", Path("/srv/fastreap"))
    monkeypatch.setattr(runner, "CACHE", Path("/root/.cache/fastreap"))


def test_nothing_to_share_outside_the_scratch_dirs(places):
    assert runner.guest_shares("/srv") == []


def test_a_working_directory_under_tmp_is_shared(places, tmp_path):
    work = tmp_path / "clone"
    work.mkdir()
    assert runner.guest_shares(work) == [work.resolve()]


def test_nested_shares_keep_the_outer_one(places, monkeypatch, tmp_path):
    monkeypatch.setattr(runner, "REPO", tmp_path)
    inner = tmp_path / "sub"
    inner.mkdir()
    assert runner.guest_shares(inner) == [tmp_path.resolve()]


@pytest.mark.parametrize("top", runner.GUEST_SCRATCH)
def test_a_scratch_dir_itself_is_refused(places, top):
    with pytest.raises(common.Error, match="scratch tmpfs"):
        runner.guest_shares(top)


@pytest.mark.parametrize("where", ["/proc/self", "/sys/kernel", "/dev/shm"])
def test_a_directory_the_guest_replaces_is_refused(places, where):
    with pytest.raises(common.Error, match="replaces with its own"):
        runner.guest_shares(where)


def test_a_vanished_working_directory_is_refused(places, monkeypatch):
    def gone():
        raise FileNotFoundError
    monkeypatch.setattr(runner.os, "getcwd", gone)
    with pytest.raises(common.Error, match="no longer exists"):
        runner.guest_shares()


def test_a_newline_in_the_cache_path_is_refused(places, monkeypatch):
    monkeypatch.setattr(runner, "CACHE", Path("/srv/a\nb"))
    with pytest.raises(common.Error, match="newline"):
        runner.guest_shares("/srv")


def test_run_directories(tmp_path):
    assert runner.check_rundir(tmp_path) == tmp_path.resolve()
    with pytest.raises(common.Error, match="replaces with its own"):
        runner.check_rundir("/dev/x")
    with pytest.raises(common.Error, match="would hide the guest's"):
        runner.check_rundir("/")
    with pytest.raises(common.Error, match="would hide the guest's /var/tmp"):
        runner.check_rundir("/var")
    with pytest.raises(common.Error, match="newline"):
        runner.check_rundir(tmp_path / "a\nb")


def test_preflight_checks_both(places, tmp_path):
    runner.preflight("/srv", tmp_path)
    with pytest.raises(common.Error):
        runner.preflight("/srv", "/")


def test_the_scratch_list_has_one_source():
    """guest/init.sh mounts what the kernel command line says."""
    cmdline = runner.ninep_cmdline()
    assert "fastreap.scratch=" + ",".join(runner.GUEST_SCRATCH) in cmdline
    init = runner.GUEST_INIT.read_text()
    assert "fastreap.scratch=" in init
    assert not any(top in init for top in ("/var/tmp", "/var/log"))


def test_the_guest_files_exist():
    assert runner.GUEST_INIT.exists()
    assert (common.GUEST_DIR / "systemd-job.sh").exists()
    assert (common.GUEST_DIR / "cpython_tap.py").exists()
