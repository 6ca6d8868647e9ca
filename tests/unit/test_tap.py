"""Counting results: TAP lines, exit statuses, LTP's statuses."""

import harness
import ltp


def test_count_tap_reads_pass_fail_skip_and_todo():
    text = "\n".join([
        "TAP version 13", "1..5",
        "ok 1 - first",
        "not ok 2 - second # broken here",
        "ok 3 third # SKIP no such feature",
        "not ok 4 - fourth # TODO later",
        "# ok 5 - a comment, not a result",
        "    ok 1 - an indented subtest is not top-level",
        "ok 5 - last",
    ])
    assert harness.count_tap(text) == [
        ("first", "pass", ""),
        ("second # broken here", "fail", ""),
        ("third", "skip", "no such feature"),
        ("fourth", "fail", "later"),
        ("last", "pass", ""),
    ]


def test_count_tap_of_nothing_is_nothing():
    assert harness.count_tap("") == []
    assert harness.count_tap("hello\nworld\n") == []


def test_judge_tap_prefixes_the_program_name():
    got = harness.judge_tap("prog", 0, "ok 1 - a\nok 2 - b\n", "log")
    assert got == [("prog: a", "pass", ""), ("prog: b", "pass", "")]


def test_judge_tap_without_tap_uses_the_status():
    assert harness.judge_tap("p", 0, "", "log") == [("p", "pass", "")]
    assert harness.judge_tap("p", 4, "", "log") == [
        ("p", "skip", "exit status 4")]
    assert harness.judge_tap("p", 3, "", "L") == [
        ("p", "fail", "exit status 3; log L")]


def test_judge_tap_timeout_fails_even_after_passes():
    got = harness.judge_tap("p", 124, "ok 1 - a\n", "log")
    assert got == [("p: a", "pass", ""), ("p", "fail", "timed out")]


def test_judge_tap_failing_status_with_all_passed_adds_a_failure():
    got = harness.judge_tap("p", 1, "ok 1 - a\n", "L")
    assert got[-1] == ("p", "fail", "exit status 1; log L")


def test_judge_tap_failing_status_with_a_failed_test_adds_nothing():
    got = harness.judge_tap("p", 1, "ok 1 - a\nnot ok 2 - b\n", "L")
    assert got == [("p: a", "pass", ""), ("p: b", "fail", "")]


def test_judge_tap_status_4_with_tap_is_not_a_skip():
    got = harness.judge_tap("p", 4, "ok 1 - a\n", "L")
    assert got[-1] == ("p", "fail", "exit status 4; log L")


def test_ltp_statuses():
    assert ltp.judge("t", 0, "", "L") == [("t", "pass", "")]
    tconf = "foo.c:12: TCONF: no pidfd here\n"
    assert ltp.judge("t", 32, tconf, "L") == [
        ("t", "skip", "TCONF: no pidfd here")]
    assert ltp.judge("t", 124, "", "L") == [
        ("t", "fail", "timed out; log L")]
    assert ltp.judge("t", 1, "", "L") == [
        ("t", "fail", "exit status 1; log L")]


def test_tally_counts_by_group_and_skips_a_clean_kernel_log():
    tally = harness.Tally()
    tally.add("stock", "fast", "wait", "a", "pass")
    tally.add("stock", "fast", "wait", "b", "fail", "why")
    tally.add("stock", "fast", "ltp", "c", "skip", "why")
    tally.kernel_log("stock", "fast", "wait", None, "console.log")
    assert tally.count("pass") == 1
    assert tally.count("fail", group="wait") == 1
    assert tally.count("skip", variant="stock", group="ltp") == 1
    assert tally.boots == [("stock", "fast", "wait", "clean")]


def test_a_bad_kernel_log_is_a_failure():
    tally = harness.Tally()
    tally.kernel_log("stock", "fast", "wait", "kernel splat", "c.log")
    assert tally.count("fail") == 1
    assert tally.boots == [("stock", "fast", "wait",
                            "kernel splat; see c.log")]
