"""The kernel flavors: one entry each, read by the build (config
fragments), the planner (which boots, how many minutes), the groups
(timeouts, stress seconds) and ./fastreap's options.  A new flavor is one
entry in FLAVORS; its --no-/--stock-/--with- options follow from it.
"""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Flavor:
    name: str
    about: str
    # config/ files merged on tinyconfig, in this order; they are part of
    # the image key, so their order and bytes decide the cached image.
    fragments: tuple
    # A cold build on 2 cores (README, "Time budget").
    build_minutes: float
    # The groups that boot this flavor, and the wall minutes of one boot
    # of each on a cached kernel with the programs built.
    minutes: dict
    # "always": every run; "default": unless --no-NAME; "opt-in": only
    # with --with-NAME or --groups NAME, and then all its groups run.
    runs: str = "default"
    # Whether stock boots it too without --stock-NAME.  Stock's semantics
    # are the oracle and come from its fast kernel; a checker flavor on
    # stock only shows that Debian's tree has no splat.
    on_stock: bool = False
    # Seconds of proctree_stress and of each stress-ng stressor.
    stress_seconds: tuple = (60, 20)
    # (boot, per-program) timeouts of the groups whose programs run long
    # (tests/wait, tests/jobctl), where the flavor is much slower than fast.
    long_program_timeouts: dict = field(default_factory=dict)
    # Whether its kernel builds in the background, niced, while the fast
    # groups run (their guest leaves about one of two cores idle).
    builds_beside_tests: bool = True


FLAVORS = {flavor.name: flavor for flavor in (
    Flavor(
        "fast", "the small test kernel every group boots",
        fragments=("fast.config",), build_minutes=8, runs="always",
        on_stock=True, builds_beside_tests=False,
        # Wall time of stock/fast on the shared 2-core machine while other
        # jobs ran (load average 7-9; the guest got about one core), a
        # little rounded up.  stress is a fixed wall time (stress_seconds);
        # jobctl's fuzzer, 48 seeds, took 7.6 minutes at load average 15,
        # its default is now 16 seeds; ltp: 96 LTP programs, 2.7 and 3.0
        # minutes at load average 6; cpython: 7 test modules, 2.8 minutes
        # on each kernel beside two other guests.
        minutes={"smoke": 0.3, "runner": 1.7, "wait": 2.3, "jobctl": 2.0,
                 "selftests": 3.3, "scaling": 1.0, "kmod": 0.4,
                 "stress": 3.8, "ltp": 3.0, "cpython": 3.0}),
    Flavor(
        "debug", "lockdep, KASAN, list and object debugging: the stress "
        "programs, to catch splats in the patched code",
        fragments=("fast.config", "debug.config"), build_minutes=15,
        # Its checkers report a bad lock order or access the first time a
        # path is taken, and the budget of a cold CI run has no room for
        # more: the stressors run half as long, while proctree_stress,
        # which targets the paths the series changes, keeps its minute.
        stress_seconds=(60, 10),
        # 140 s of programs and a slow boot took 4.1 minutes at load 3-5.
        minutes={"stress": 4.2}),
    Flavor(
        "rt", "PREEMPT_RT with the debug checkers: tests/wait, "
        "tests/jobctl and the stress programs where spinlock_t sleeps "
        "and write_lock_irq() leaves interrupts on",
        fragments=("fast.config", "debug.config", "rt.config"),
        # Opt-in: its kernel took 17 minutes to build, cold, alone.
        build_minutes=17, runs="opt-in", stress_seconds=(60, 10),
        # wait took 8.5 minutes beside a kernel build, jobctl 14.4 alone
        # (most of it its fuzzer's 16 seeds), stress 3.3.
        minutes={"wait": 8.5, "jobctl": 15.0, "stress": 3.5},
        # The same programs run several times slower than on fast
        # (sleeping locks, lockdep and KASAN under TCG): jobctl_fuzz's 16
        # seeds took 13 minutes here alone, past the 10 a program gets
        # on fast and debug.  The flavor is opt-in, so it gets the time,
        # not fewer seeds.
        long_program_timeouts={"timeout": 3600,
                               "per_test_timeout": 1800}),
    Flavor(
        "kcsan", "the data-race detector, KCSAN (it excludes KASAN, so "
        "it is not in debug): tests/wait, tests/jobctl and the stress "
        "programs, failing on any race report",
        fragments=("fast.config", "kcsan.config"),
        # Opt-in, like rt: a cold CI run has no room for another kernel.
        # Its times are rt's until a run measures them.
        build_minutes=17, runs="opt-in", stress_seconds=(60, 10),
        minutes={"wait": 8.5, "jobctl": 15.0, "stress": 3.5},
        long_program_timeouts={"timeout": 3600,
                               "per_test_timeout": 1800}),
)}
