#!/usr/bin/env python3
# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""The GPU table of docs/performance.md, "The floor on the GPU: before and
after": evx minus the raw driver, and evx over raw, for each hot call, of
two trees measured in one run, from the outputs that run left.

    bench/floor_table.py --ab BENCH_AB.txt --fence-before F [F ...]
                         --fence-after F [F ...] [--pybench PYBENCH.txt]

--ab: bench/ab_compare.py's output (evx-bench of both trees, alternating).
--fence-before/--fence-after: evx-fence-bench outputs of each tree (run
alternately; the median of each side's runs is taken). --pybench:
bench/py_bench.py's output of the after tree (evx.timed against
cuda.core's paired region; py_bench has no before side). Prints a
Markdown table; the goals are the issue's ("The floor, counted").
"""
import argparse
import re
import statistics
import sys

# (label, evx-bench row or fence pair, goal text, goal test on (diff, ratio))
AB_ROWS = [
    ("query of a done event", "query_done", "+5 ns", lambda d, r: d <= 5),
    ("synchronize of a done event", "synchronize_done", "+5 ns", lambda d, r: d <= 5),
    ("elapsed time", "elapsed_time", "+5 ns", lambda d, r: d <= 5),
    ("stream wait event", "stream_wait_event", "+5 ns", lambda d, r: d <= 5),
    ("record", "record", "+5 ns", lambda d, r: d <= 5),
    ("timer (start, stop, synchronize)", "timer", "1.000x", lambda d, r: r <= 1.0),
    ("host function that can fail", "host_func", "+100 ns", lambda d, r: d <= 100),
    ("its failing path", "host_func_error", "1.2x", lambda d, r: r <= 1.2),
    ("create + destroy, bulk", "create_destroy_default_bulk", "1.0x", lambda d, r: r <= 1.0),
    ("create + destroy, bulk, timing off", "create_destroy_notiming_bulk", "1.0x",
     lambda d, r: r <= 1.0),
]
FENCE_ROWS = [
    ("fence signal", "call_evx_fence_signal", "call_cuStreamWriteValue64", "+10 ns",
     lambda d, r: d <= 10),
    ("fence wait", "call_evx_stream_wait_fence", "call_cuStreamWaitValue64", "+10 ns",
     lambda d, r: d <= 10),
]


def read_ab(path):
    """{row: (evx_before, evx_after, raw_before, raw_after)}"""
    rows = {}
    for line in open(path):
        parts = line.split()
        if len(parts) == 7 and re.match(r"^[a-z_]+$", parts[0]):
            try:
                eb, ea, _, rb, ra, _ = (float(x) for x in parts[1:])
            except ValueError:
                continue
            rows[parts[0]] = (eb, ea, rb, ra)
    return rows


def read_fence(paths):
    """{name: median ns over the files} of the BENCH call_* lines."""
    seen = {}
    for p in paths:
        for line in open(p):
            m = re.match(r"^BENCH (call_\S+) ([0-9.]+) ns", line)
            if m:
                seen.setdefault(m.group(1), []).append(float(m.group(2)))
    return {k: statistics.median(v) for k, v in seen.items()}


def read_timed(path):
    for line in open(path):
        m = re.match(r"^\| evx\.timed / cuda\.core \| ([0-9.]+) \|", line)
        if m:
            return float(m.group(1))
    return None


def cell(evx, raw):
    return "%+.1f ns (%.3fx)" % (evx - raw, evx / raw)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ab", required=True)
    ap.add_argument("--fence-before", nargs="+", required=True)
    ap.add_argument("--fence-after", nargs="+", required=True)
    ap.add_argument("--pybench")
    opt = ap.parse_args()
    ab = read_ab(opt.ab)
    fb, fa = read_fence(opt.fence_before), read_fence(opt.fence_after)
    print("| call | before: evx - raw | after: evx - raw | goal | met |")
    print("|---|---|---|---|---|")
    missing = 0
    for label, row, goal, ok in AB_ROWS:
        if row not in ab:
            print("| %s | not measured | not measured | %s | - |" % (label, goal))
            missing += 1
            continue
        eb, ea, rb, ra = ab[row]
        met = "yes" if ok(ea - ra, ea / ra) else "no"
        print("| %s | %s | %s | %s | %s |" % (label, cell(eb, rb), cell(ea, ra), goal, met))
    for label, evx, raw, goal, ok in FENCE_ROWS:
        if evx not in fb or raw not in fb or evx not in fa or raw not in fa:
            print("| %s | not measured | not measured | %s | - |" % (label, goal))
            missing += 1
            continue
        met = "yes" if ok(fa[evx] - fa[raw], fa[evx] / fa[raw]) else "no"
        print("| %s | %s | %s | %s | %s |" % (label, cell(fb[evx], fb[raw]),
                                              cell(fa[evx], fa[raw]), goal, met))
    if opt.pybench:
        t = read_timed(opt.pybench)
        if t is None:
            print("| Python `evx.timed` / cuda.core's region | 1.0115x (the issue) | "
                  "not measured | below 1.0x | - |")
            missing += 1
        else:
            print("| Python `evx.timed` / cuda.core's region | 1.0115x (the issue) | %.4fx | "
                  "below 1.0x | %s |" % (t, "yes" if t < 1.0 else "no"))
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
