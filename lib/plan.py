"""The plan of ./fastreap check: the boots to make, from the one table of
groups (lib/groups.py) and the one table of flavors (lib/flavors.py), the
kernels they need, and the minutes it should take on this machine
(README, "Time budget").  check.py runs exactly these boots.
"""

import os
import re
import time

import build
import deb
import ltp
from common import CACHE, SOURCE_PACKAGE
from flavors import FLAVORS
from groups import GROUPS, runs_on, selftests_dir
from variants import source_dir, variant_name, variant_patches

# Builds are cold: no image and an empty ccache, as measured on a fresh
# 2-core machine (each flavor's build_minutes).  A variant's build after
# stock's of the same flavor reuses stock's objects from ccache: if its
# patches touch a header most of the tree still recompiles (fastreap
# changes include/linux/sched.h: 7 minutes instead of 8), otherwise only
# their files do.
HEADER_REBUILD = 7 / 8
SMALL_REBUILD_MINUTES = 2
UNPACK_MINUTES = 1.5              # linux-source into a git repo: 1.1
SELFTESTS_BUILD_MINUTES = 1       # measured 0.9
BINARIES_MINUTES = 0.5            # the static test programs: 0.5
# The "variant" and "flavor" of the groups that run on the host itself.
HOST = ("host", "-")


def selectable():
    """What --groups takes: every group, and each opt-in flavor's name
    (which runs all of that flavor's groups)."""
    return list(GROUPS) + [f for f in FLAVORS if FLAVORS[f].runs == "opt-in"]


def flavor_wanted(flavor, args, variant, groups):
    """Whether VARIANT boots FLAVOR in this check, by the flavor's entry
    and the options made from it (--no-NAME, --stock-NAME, --with-NAME)."""
    if flavor.runs == "opt-in" and flavor.name not in groups:
        return False
    if flavor.runs == "default" and getattr(args, f"no_{flavor.name}",
                                            False):
        return False
    if variant_name(variant) == "stock" and not flavor.on_stock:
        return getattr(args, f"stock_{flavor.name}", False)
    return True


def boots(args, variants, groups):
    """[(variant, flavor, [group])]: the host's groups first, then per
    variant each flavor it boots, then its Debian kernel ("deb")."""
    host = [g for g in groups if GROUPS.get(g) and GROUPS[g].where == "host"]
    result = [(*HOST, host)] if host else []
    for v in variants:
        for flavor in FLAVORS.values():
            if not flavor_wanted(flavor, args, v, groups):
                continue
            gs = [g for g in GROUPS if g in flavor.minutes
                  and (flavor.runs == "opt-in" or g in groups)
                  and runs_on(g, v)]
            if gs:
                result.append((v, flavor.name, gs))
        gs = [g for g in groups if GROUPS.get(g) and GROUPS[g].where == "deb"
              and runs_on(g, v)]
        if gs:
            result.append((v, "deb", gs))
    return result


def touches_headers(variant):
    """Whether VARIANT's patches change a header (most of the tree then
    recompiles, whatever ccache holds)."""
    for patch in variant_patches(variant):
        for line in patch.read_text(errors="replace").splitlines():
            m = re.match(r"diff --git a/(\S+) ", line)
            if m and m.group(1).endswith(".h"):
                return True
    return False


def minutes_text(minutes):
    return f"{minutes:.1f}" if minutes < 2 else f"{minutes:.0f}"


def boot_minutes(flavor, groups):
    if flavor in FLAVORS:
        return sum(FLAVORS[flavor].minutes[g] for g in groups)
    return sum(GROUPS[g].minutes for g in groups)


def plan(args, variants, groups):
    """The boots to make and the kernels they need, with an estimate.

    Prints which kernels are cached and which must be built, and the
    minutes expected; returns the boots [(variant, flavor, groups)] and
    those minutes.
    """
    todo = boots(args, variants, groups)
    kernels = [(v, f) for v, f, _ in todo if f in FLAVORS]
    built = {f for v, f in kernels if variant_name(v) == "stock"}
    cpus = os.cpu_count() or 1
    scale = 2 / cpus          # builds use every core; guests do not
    build_min = late_build_min = 0.0
    lines = []
    if not (source_dir() / "trees" / "stock" / ".git").exists():
        build_min += UNPACK_MINUTES
        lines.append(f"  unpack {SOURCE_PACKAGE:22} "
                     f"~{minutes_text(UNPACK_MINUTES)} min")
    for v, f in kernels:
        name = f"{variant_name(v)}/{f}"
        if build.cached_image(v, f):
            lines.append(f"  kernel {name:22} cached")
            continue
        flavor = FLAVORS[f]
        if variant_name(v) == "stock" or f not in built:
            minutes = flavor.build_minutes
        elif touches_headers(v):
            minutes = flavor.build_minutes * HEADER_REBUILD
        else:
            minutes = SMALL_REBUILD_MINUTES
        minutes *= scale
        if flavor.builds_beside_tests:
            late_build_min += minutes
        else:
            build_min += minutes
        lines.append(f"  kernel {name:22} to build, "
                     f"~{minutes_text(minutes)} min (cold ccache)"
                     + (", beside the fast tests"
                        if flavor.builds_beside_tests else ""))
    if not (CACHE / "bin").is_dir():
        build_min += BINARIES_MINUTES
        lines.append(f"  {'test programs':29} to build, "
                     f"~{minutes_text(BINARIES_MINUTES)} min")
    if "selftests" in groups:
        if (selftests_dir() / "run_kselftest.sh").exists():
            lines.append(f"  {'in-tree selftests':29} cached")
        else:
            build_min += SELFTESTS_BUILD_MINUTES * scale
            lines.append(f"  {'in-tree selftests':29} to build, "
                         f"~{minutes_text(SELFTESTS_BUILD_MINUTES * scale)} "
                         "min")
    if "ltp" in groups:
        if ltp.cached():
            lines.append(f"  {'LTP tests':29} cached")
        else:
            build_min += ltp.BUILD_MINUTES
            lines.append(f"  {'LTP tests':29} to build, "
                         f"~{minutes_text(ltp.BUILD_MINUTES)} min")
    for v, f, _ in todo:
        if f != "deb":
            continue
        name = variant_name(v)
        if deb.cached_deb(v):
            lines.append(f"  {'deb ' + name:29} cached")
        else:
            minutes = deb.BUILD_MINUTES * scale
            build_min += minutes
            lines.append(f"  {'deb ' + name:29} to build, "
                         f"~{minutes_text(minutes)} min")
    test_min = late_test_min = 0.0
    for v, f, gs in todo:
        minutes = boot_minutes(f, gs)
        if f in FLAVORS and FLAVORS[f].builds_beside_tests:
            late_test_min += minutes
        else:
            test_min += minutes
        who = HOST[0] if v == HOST[0] else f"{variant_name(v)}/{f}"
        lines.append(f"  tests  {who:22} ~{minutes_text(minutes)} min: "
                     f"{', '.join(gs)}")
    # The other flavors' kernels build beside the fast tests, whose guest
    # leaves them about one core (with one core, nothing), and on every
    # core once those tests are done.
    done_beside = test_min * (cpus - 1) / cpus
    beside = test_min + max(0.0, late_build_min - done_beside)
    total = build_min + beside + late_test_min
    print(f"[{time.strftime('%H:%M:%S')}] plan (FASTREAP_CACHE="
          f"{CACHE}):", flush=True)
    print("\n".join(lines))
    print(f"  expected: ~{build_min:.0f} min of builds, then "
          f"~{test_min:.0f} min of fast tests"
          + (f" beside ~{late_build_min:.0f} min of builds"
             if late_build_min else "")
          + (f", then ~{late_test_min:.0f} min of other flavors' tests"
             if late_test_min else "")
          + f" = ~{total:.0f} min on {cpus} core(s); longer while other "
          "jobs share them", flush=True)
    return todo, total
