#!/usr/bin/env python3
# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Before/after comparison of two evx-bench binaries in one go.

Runs the "before" and the "after" evx-bench alternately (AB, BA, AB, ...,
so a drift of the machine falls on both sides alike), reads their BENCH
lines, and prints per row the median over the rounds of each side's evx
ns per call, the after-minus-before difference, and the same for the raw
driver call of each run (which is the same code on both sides: its drift
says how far the machine itself moved).

    bench/ab_compare.py [--rounds N] BEFORE_BUILD AFTER_BUILD [-- BENCH_ARGS]
    bench/ab_compare.py --base-rev REV [--base-build DIR] AFTER_BUILD ...
    bench/ab_compare.py --base-src DIR [--base-build DIR] AFTER_BUILD ...

A build is a meson build folder holding bench/evx-bench. --base-rev builds
git revision REV of this repository (git archive, release build, only
evx-bench and the emulation) in --base-build (default /tmp/evx-ab-base) and
uses it as BEFORE; --base-src does the same with a source tree already
unpacked (for a machine whose copy of the tree has no .git). The driver is whatever EVX_DRIVER selects: unset for the
real one, EVX_DRIVER=host for the emulation (then the figures are CPU
timings of the emulation, not GPU figures). Exit status: nonzero if a run
failed. No threshold is judged here: the reader compares the figures with
the +-2 ns the project asks of hot calls.
"""
import argparse
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def unpack_rev(rev, build):
    src = build + ".src"
    subprocess.run(["rm", "-rf", src], check=True)
    os.makedirs(src)
    archive = subprocess.run(["git", "-C", ROOT, "archive", rev], check=True,
                             stdout=subprocess.PIPE).stdout
    subprocess.run(["tar", "-x", "-C", src], input=archive, check=True)
    return src


def build_src(src, build):
    subprocess.run(["rm", "-rf", build], check=True)
    setup = ["meson", "setup", build, src, "--buildtype=release", "-Dwerror=false",
             "-Ddocs=disabled"]
    toolkit = os.environ.get("EVX_TOOLKIT_INCLUDE")
    if toolkit:
        setup.append("-Dtoolkit_include=" + toolkit)
    subprocess.run(setup, check=True, stdout=subprocess.DEVNULL)
    targets = ["evx-bench"]
    if os.environ.get("EVX_DRIVER") == "host":
        targets.append("evx-host")
    subprocess.run(["meson", "compile", "-C", build] + targets, check=True,
                   stdout=subprocess.DEVNULL)


def run_once(build, args):
    exe = os.path.join(build, "bench", "evx-bench")
    p = subprocess.run([exe] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    if p.returncode != 0:
        sys.stdout.write(p.stdout[-4000:])
        raise SystemExit("%s exited with status %d" % (exe, p.returncode))
    rows = {}
    for line in p.stdout.splitlines():
        if line.startswith("DRIVER ") and "driver" not in rows:
            rows["driver"] = line
        if not line.startswith("BENCH "):
            continue
        parts = line.split()
        fields = dict(f.split("=", 1) for f in parts[2:])
        rows[parts[1]] = (float(fields["raw_ns"]), float(fields["evx_ns"]))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--base-rev")
    ap.add_argument("--base-src")
    ap.add_argument("--base-build", default="/tmp/evx-ab-base")
    ap.add_argument("builds", nargs="+")
    argv = sys.argv[1:]
    bench_args = []
    if "--" in argv:
        i = argv.index("--")
        argv, bench_args = argv[:i], argv[i + 1:]
    opt = ap.parse_args(argv)
    if opt.base_rev or opt.base_src:
        if len(opt.builds) != 1 or (opt.base_rev and opt.base_src):
            ap.error("with --base-rev or --base-src, give only the AFTER build")
        src = opt.base_src or unpack_rev(opt.base_rev, opt.base_build)
        build_src(os.path.abspath(src), opt.base_build)
        before, after = opt.base_build, opt.builds[0]
    elif len(opt.builds) == 2:
        before, after = opt.builds
    else:
        ap.error("give BEFORE_BUILD AFTER_BUILD, or --base-rev REV AFTER_BUILD")
    if opt.rounds < 1:
        ap.error("--rounds must be 1 or more")

    runs = {"before": [], "after": []}
    for r in range(opt.rounds):
        order = [("before", before), ("after", after)]
        if r % 2:
            order.reverse()
        for side, build in order:
            runs[side].append(run_once(build, bench_args))
    print("before: %s\nafter:  %s\n%s" % (before, after, runs["after"][0].get("driver", "")))
    print("medians over %d alternating rounds of each evx-bench (ns per call)" % opt.rounds)
    print("%-30s %10s %10s %8s   %10s %10s %8s" % (
        "row", "evx before", "evx after", "diff", "raw before", "raw after", "diff"))
    for row in [k for k in runs["before"][0] if k != "driver"]:
        def med(side, i):
            return statistics.median(run[row][i] for run in runs[side] if row in run)
        eb, ea, rb, ra = med("before", 1), med("after", 1), med("before", 0), med("after", 0)
        print("%-30s %10.1f %10.1f %+8.1f   %10.1f %10.1f %+8.1f" % (
            row, eb, ea, ea - eb, rb, ra, ra - rb))
    return 0


if __name__ == "__main__":
    sys.exit(main())
