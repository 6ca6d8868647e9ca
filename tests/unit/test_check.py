"""./fastreap check always ends with its summary: a group that raises
is counted as failed and the run goes on; one that cannot run is listed
as not run; the exit status says whether anything failed."""

import argparse

import pytest

import check
import groups
import harness
from groups import Group


def fake_check(monkeypatch, table):
    monkeypatch.setattr(check, "GROUPS", table)
    monkeypatch.setattr(check, "ensure_packages", lambda *a, **k: None)
    monkeypatch.setattr(check, "variant_patch_dir", lambda v: None)
    monkeypatch.setattr(check, "source_version", lambda: "6.12-test")
    monkeypatch.setattr(check.build, "build", lambda v, f, **k: f"/img/{v}")
    boots = [("stock", "fast", list(table))]
    monkeypatch.setattr(check.plan, "plan", lambda a, v, g: (boots, 1.0))
    monkeypatch.setattr(check.plan, "selectable", lambda: list(table))
    return argparse.Namespace(variants="stock", groups=",".join(table),
                              plan=False)


def passes(tally, variant, flavor):
    tally.add(variant, flavor, "first", "a test", "pass")
    tally.kernel_log(variant, flavor, "first", None, "console.log")


def raises(tally, variant, flavor):
    tally.add(variant, flavor, "boom", "before the error", "pass")
    raise RuntimeError("simulated breakage")


def cannot(tally, variant, flavor):
    raise harness.NotRun("no such source here")


def last(tally, variant, flavor):
    tally.add(variant, flavor, "last", "still runs", "pass")


def test_a_group_that_raises_still_gives_the_summary(monkeypatch, capsys):
    table = {"first": Group(passes), "boom": Group(raises),
             "absent": Group(cannot), "last": Group(last)}
    a = fake_check(monkeypatch, table)
    rc = check.main(a)
    out = capsys.readouterr().out
    lines = out.strip().splitlines()
    assert rc == 1
    assert lines[-1] == "3 passed, 1 failed, 0 skipped"
    assert "RuntimeError: simulated breakage" in out
    assert "last on stock" in out                  # the run went on
    assert lines[-3:-1] == ["not run (1):",
                            "  stock/fast absent: no such source here"]
    row = [l for l in lines if l.startswith("stock      fast   boom")]
    assert row and row[0].split()[3:] == ["1", "1", "0"]
    assert "  stock/fast first: clean" in lines


def test_all_passed_exits_zero(monkeypatch, capsys):
    a = fake_check(monkeypatch, {"first": Group(passes)})
    assert check.main(a) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == (
        "1 passed, 0 failed, 0 skipped")


def test_a_kernel_that_does_not_build_fails_and_its_groups_do_not_run(
        monkeypatch, capsys):
    a = fake_check(monkeypatch, {"first": Group(passes)})

    def broken(v, f, **k):
        raise check.Error("build of stock/fast failed: oops")
    monkeypatch.setattr(check.build, "build", broken)
    assert check.main(a) == 1
    out = capsys.readouterr().out
    assert "not run (1):\n  stock/fast first: its kernel did not build" in out


def test_summary_orders_host_first_and_lists_boots(capsys):
    tally = harness.Tally()
    tally.add("fastreap", "fast", "wait", "w", "pass")
    tally.add("host", "-", "unit", "u", "pass")
    tally.kernel_log("fastreap", "fast", "wait", None, "c")
    assert harness.summary(tally, ["stock", "fastreap"], ["unit", "wait"]) \
        == 0
    lines = capsys.readouterr().out.splitlines()
    table = [l.split()[:3] for l in lines if l.startswith(("host",
                                                           "fastreap "))]
    assert table == [["host", "-", "unit"], ["fastreap", "fast", "wait"]]
    assert "kernel log, one line per boot (1 of 1 clean; not counted as " \
        "tests):" in lines


def test_stress_lists_a_missing_stressor_as_not_run(monkeypatch):
    tally = harness.Tally()
    ran = {}

    class Listed:
        stdout = "fork vfork clone zombie wait ptrace sigchld"   # no kill
    monkeypatch.setattr(groups.subprocess, "run", lambda *a, **k: Listed)
    monkeypatch.setattr(groups, "compile_c", lambda src: "/bin/proctree")
    monkeypatch.setattr(groups, "run_group",
                        lambda t, v, f, g, tests, **k: ran.update(
                            tests=[n for n, _ in tests]))
    groups.group_stress(tally, "stock", "fast")
    assert "stress-ng-kill" not in ran["tests"]
    assert len(ran["tests"]) == 1 + 7
    assert tally.not_run == [("stock", "fast", "stress",
                              "stress-ng-kill: this stress-ng has no 'kill' "
                              "stressor")]


def test_ltp_without_a_source_is_not_run(monkeypatch, tmp_path):
    import ltp
    monkeypatch.setattr(ltp, "_no_source", None)

    def no_source():
        raise harness.NotRun("no LTP source: offline")
    monkeypatch.setattr(ltp, "build", no_source)
    with pytest.raises(harness.NotRun, match="offline"):
        ltp.group(harness.Tally(), "stock", "fast")
    # the next variant is not tried again
    monkeypatch.setattr(ltp, "build", lambda: pytest.fail("tried again"))
    with pytest.raises(harness.NotRun, match="offline"):
        ltp.group(harness.Tally(), "fastreap", "fast")
