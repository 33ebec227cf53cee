#!/usr/bin/env python3
# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Reads the pass/fail/skip counts of one test run, for scripts/test.sh.

    test_counts.py meson BUILD_DIR       meson test's BUILD_DIR/meson-logs/testlog.json
    test_counts.py junit FILE LABEL      a pytest --junitxml report
    test_counts.py cargo FILE LABEL      the saved output of cargo test

Prints lines of two kinds:

    show TEXT                            a line for the test log
    row PASSED FAILED SKIPPED LABEL      one suite's counts

A meson test whose output ends its run with a summary line of the form
`NAME: N passed, N failed[, N skipped]` (the conformance suite, the
emulation's self-test) is counted by its cases: one row of its own, and its
summary line is shown. A test that failed (exit status, time-out) although
its summary counts no failure gets one more failure. The other meson tests
count one each, in one row. A missing log prints nothing: the caller counts
the step that should have written it as failed.
"""

import json
import os
import re
import sys
import xml.etree.ElementTree as ET

SUMMARY_RE = re.compile(r"^(.+?): (\d+) passed, (\d+) failed(?:, (\d+) skipped)?\s*$")
CARGO_RE = re.compile(r"^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored;")
OK = ("OK", "EXPECTEDFAIL")
SKIP = ("SKIP",)


def row(passed, failed, skipped, label):
    print("row %d %d %d %s" % (passed, failed, skipped, label))


def meson(build):
    path = os.path.join(build, "meson-logs", "testlog.json")
    if not os.path.exists(path):
        return
    others = [0, 0, 0]
    names = []
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            t = json.loads(line)
            name = t["name"].split(" / ", 1)[-1]
            result = t.get("result", "ERROR")
            summary = None
            for out in (t.get("stdout") or "").splitlines():
                m = SUMMARY_RE.match(out)
                if m:
                    summary = m
            if summary:
                p, fl = int(summary.group(2)), int(summary.group(3))
                s = int(summary.group(4) or 0)
                print("show %s: %s" % (name, summary.group(0).strip()))
                if result not in OK and fl == 0:
                    print("show %s: the test ended %s after its summary line" % (name, result))
                    fl = 1
                row(p, fl, s, "%s cases (%s)" % (name, os.path.basename(os.path.normpath(build))))
                continue
            names.append(name)
            if result in OK:
                others[0] += 1
            elif result in SKIP:
                others[2] += 1
            else:
                others[1] += 1
    if names:
        row(others[0], others[1], others[2], "meson tests (%s): %s" % (
            os.path.basename(os.path.normpath(build)), ", ".join(names)))


def junit(path, label):
    if not os.path.exists(path):
        return
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    total = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for s in suites:
        for k in total:
            total[k] += int(s.get(k, 0))
    failed = total["failures"] + total["errors"]
    row(total["tests"] - failed - total["skipped"], failed, total["skipped"], label)


def cargo(path, label):
    if not os.path.exists(path):
        return
    p = fl = s = 0
    with open(path, errors="replace") as f:
        for line in f:
            m = CARGO_RE.match(line.strip())
            if m:
                p += int(m.group(1))
                fl += int(m.group(2))
                s += int(m.group(3))
    row(p, fl, s, label)


def main(argv):
    if len(argv) == 2 and argv[0] == "meson":
        meson(argv[1])
    elif len(argv) == 3 and argv[0] == "junit":
        junit(argv[1], argv[2])
    elif len(argv) == 3 and argv[0] == "cargo":
        cargo(argv[1], argv[2])
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
