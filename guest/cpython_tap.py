#!/usr/bin/python3
"""Run CPython test modules in a guest, one TAP line per test.

    cpython_tap.py [--skip TEST_ID=REASON ...] test.test_wait3 [...]

Runs with the guest's own /usr/bin/python3 (the host's, shared read-only)
on its `test` package (Debian: libpython3.X-testsuite), through unittest
rather than regrtest, so that every test method is a result of its own:
"ok N - test.test_x.Class.test_y", "not ok N - ..." after the traceback
as "# " lines, "ok N - ... # SKIP reason".  A failing subtest fails its
test.  A test named by --skip is reported skipped with REASON without
running (those that fail on stock too in these guests).  Exit status 1
when anything failed.
"""

import sys
import traceback
import unittest


class TapResult(unittest.TestResult):
    def __init__(self):
        super().__init__()
        self.buffer = True      # a test's own prints stay out of the TAP
        self.tap = sys.stdout   # sys.stdout is the buffer during a test
        self.number = 0
        self.failed_ids = set()

    def _line(self, ok, test, directive=""):
        self.number += 1
        name = test.id().replace("\n", " ")
        print(f"{'ok' if ok else 'not ok'} {self.number} - {name}"
              + (f" # {directive}" if directive else ""), file=self.tap,
              flush=True)

    def _diag(self, test, err):
        text = "".join(traceback.format_exception(*err))
        for line in (f"{test.id()}:\n" + text).splitlines():
            print(f"# {line}", file=self.tap, flush=True)

    def addSuccess(self, test):
        super().addSuccess(test)
        if test.id() not in self.failed_ids:    # its subtests passed
            self._line(True, test)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._diag(test, err)
        self._line(False, test)

    def addError(self, test, err):
        super().addError(test, err)
        self._diag(test, err)
        self._line(False, test)

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None and test.id() not in self.failed_ids:
            self.failed_ids.add(test.id())
            self._diag(subtest, err)
            self._line(False, test)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._line(True, test, "SKIP " + " ".join(str(reason).split()))

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._line(True, test)

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._line(False, test)


def tests_of(suite):
    for test in suite:
        if isinstance(test, unittest.TestSuite):
            yield from tests_of(test)
        else:
            yield test


def main(argv):
    skips, names = {}, []
    while argv:
        arg = argv.pop(0)
        if arg == "--skip" and argv and "=" in argv[0]:
            test_id, reason = argv.pop(0).split("=", 1)
            skips[test_id] = reason
        elif arg.startswith("-"):
            names = []
            break
        else:
            names.append(arg)
    if not names:
        print(f"usage: {sys.argv[0]} [--skip TEST_ID=REASON ...] "
              "test.MODULE...", file=sys.stderr)
        return 2
    suite = unittest.defaultTestLoader.loadTestsFromNames(names)
    for test in tests_of(suite):
        if test.id() in skips:
            method = getattr(test, test._testMethodName)
            setattr(test, test._testMethodName,
                    unittest.skip(skips[test.id()])(method))
    result = TapResult()
    suite.run(result)
    print(f"1..{result.number}", flush=True)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
