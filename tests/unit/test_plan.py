"""The plan: which boots a check makes, from the group and flavor tables."""

import argparse

import pytest

import check
import groups
import plan
from flavors import FLAVORS


def args(**kw):
    ns = argparse.Namespace(groups=None, plan=True)
    for f in FLAVORS.values():
        setattr(ns, f"no_{f.name}", False)
        setattr(ns, f"stock_{f.name}", False)
        setattr(ns, f"with_{f.name}", False)
    for name in groups.GROUPS:
        setattr(ns, f"with_{name}", False)
    for k, v in kw.items():
        setattr(ns, k, v)
    return ns


def boots(**kw):
    a = args(**kw)
    return plan.boots(a, ["stock", "fastreap"], check.chosen_groups(a))


def test_default_plan():
    fast = [g for g in groups.GROUPS if g in FLAVORS["fast"].minutes]
    assert boots() == [
        ("host", "-", ["unit"]),
        ("stock", "fast", [g for g in fast if g != "scaling"]),
        ("fastreap", "fast", [g for g in fast if g != "runner"]),
        ("fastreap", "debug", ["stress"]),
    ]


def test_no_debug_and_stock_debug():
    assert ("fastreap", "debug", ["stress"]) not in boots(no_debug=True)
    assert ("stock", "debug", ["stress"]) in boots(stock_debug=True)


def test_opt_in_flavor_runs_all_its_groups_on_patched_variants():
    got = boots(with_rt=True)
    assert ("fastreap", "rt", ["wait", "jobctl", "stress"]) in got
    assert not any(v == "stock" and f == "rt" for v, f, _ in got)
    assert boots(groups="rt") == [("fastreap", "rt",
                                   ["wait", "jobctl", "stress"])]


def test_opt_in_group_boots_the_debian_kernel():
    got = boots(with_systemd=True)
    assert ("stock", "deb", ["systemd"]) in got
    assert ("fastreap", "deb", ["systemd"]) in got
    assert not any("systemd" in gs for v, f, gs in got if f != "deb")


def test_chosen_groups():
    assert "systemd" not in check.chosen_groups(args())
    assert check.chosen_groups(args(groups="smoke", with_rt=True)) == [
        "smoke", "rt"]
    with pytest.raises(check.Error, match="unknown test group 'nope'"):
        check.chosen_groups(args(groups="nope"))


def test_the_tables_agree():
    for flavor in FLAVORS.values():
        for g in flavor.minutes:
            assert groups.GROUPS[g].where == "guest", (flavor.name, g)
    for name, g in groups.GROUPS.items():
        if g.where == "guest":
            assert any(name in f.minutes for f in FLAVORS.values()), name
        else:
            assert g.minutes > 0, name
    assert FLAVORS["fast"].runs == "always"


def test_every_boot_has_its_minutes():
    for v, f, gs in boots(with_rt=True, with_systemd=True,
                          stock_debug=True):
        assert plan.boot_minutes(f, gs) > 0


def test_the_options_come_from_the_tables():
    p = argparse.ArgumentParser()
    check.add_options(p)
    a = p.parse_args(["--no-debug", "--stock-rt", "--with-rt",
                      "--with-systemd", "--groups", "smoke"])
    assert (a.no_debug, a.stock_rt, a.with_rt, a.with_systemd) == (
        True, True, True, True)
    assert check.chosen_groups(a) == ["smoke", "systemd", "rt"]
    with pytest.raises(SystemExit):
        p.parse_args(["--no-fast"])         # fast always runs
