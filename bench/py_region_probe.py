#!/usr/bin/env python3
# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Where a Python timed region's time goes: a diagnostic beside py_bench.py.

A timed region (record a; record b; synchronize b; elapsed) costs about
7.5 us on the H200, almost all of it the driver's and the GPU's. What the
Python layers add shows only against that, so each question here is a
paired comparison in one process, on one stream (py_bench.py's method:
adjacent blocks, the order alternating, the median ratio and its 95 %
interval), and is answered in ns per region:

1. What releasing the GIL around the two records costs: evx's ctypes
   functions for the region, with the records called through ctypes.CDLL
   (which releases the GIL around each call) against ctypes.PyDLL (which
   keeps it); synchronize and elapsed are the same on both sides.
2. Where Python work counts: cuda.core's region against the same region
   with a fixed piece of Python work (PAD, timed alone below) put in at
   one place. Work done while the GPU has the region's last record in
   hand is hidden; work anywhere else adds its whole cost.
3. For reference, evx.timed and the plain evx calls against cuda.core.

    python3 bench/py_region_probe.py [--pairs 301] [--k 200]

On the emulation (EVX_DRIVER=host) it runs but means nothing; cuda.core
needs a GPU, so questions 2 and 3 are skipped there.
"""

import argparse
import ctypes
import os
import platform
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from py_bench import cuda_core_open, median_interval, paired_ratios  # noqa: E402


def pad_fn(m):
    rng = range(m)

    def pad():
        for _ in rng:
            pass
    return pad


def time_alone(f, n=20000, reps=9):
    """Median ns of one call of f(), over reps loops of n calls."""
    out = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            f()
        out.append((time.perf_counter_ns() - t0) / n)
    out.sort()
    return out[len(out) // 2]


def row(label, fa, fb, pairs, k):
    ratios = paired_ratios(fa, fb, pairs, k)
    med, lo, hi = median_interval(ratios)
    # ns per region of side b, to turn the ratio into ns
    t0 = time.perf_counter_ns()
    fb(k)
    per = (time.perf_counter_ns() - t0) / k
    print("| %s | %.4f | %.4f to %.4f | %+.0f |" % (label, med, lo, hi, (med - 1) * per),
          flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=301, help="pairs of blocks per row (default 301)")
    ap.add_argument("--k", type=int, default=200, help="regions per block (default 200)")
    ap.add_argument("--pad-ns", type=float, default=200.0,
                    help="about how long the inserted Python work takes (default 200 ns)")
    args = ap.parse_args()

    import evx
    from evx import _capi
    print("# where a Python timed region's time goes")
    print("python %s, %s; evx %s (%s); driver %s%s" % (
        platform.python_version(), platform.machine(), evx.library_version(),
        evx.library_path, evx.driver_path(), " (host emulation)" if evx.is_emulation() else ""))
    print("%d pairs of adjacent blocks of %d regions per row; ratio a / b "
          "(< 1: a faster); ns = (ratio - 1) x b's time per region\n" % (args.pairs, args.k))

    dev = evx.Device(0)
    shared = dev.create_stream()
    s = ctypes.c_void_p()
    released = evx.capi
    kept = _capi.Functions(ctypes.PyDLL(evx.library_path))
    assert released.evx_stream_wrap_external(0, shared.native, ctypes.byref(s)) == 0
    a, b = ctypes.c_void_p(), ctypes.c_void_p()
    assert released.evx_device_create_event(0, 0, ctypes.byref(a)) == 0
    assert released.evx_device_create_event(0, 0, ctypes.byref(b)) == 0
    ms = ctypes.c_float()
    pms = ctypes.byref(ms)
    sync, el = released.evx_event_synchronize, released.evx_event_elapsed_time

    def ctypes_region(rec):
        def region(n):
            for _ in range(n):
                rec(a, s); rec(b, s); sync(b); el(pms, a, b)
        return region

    print("## 1. Releasing the GIL around the two records\n")
    print("| a / b | median ratio | 95 % interval | ns per region |")
    print("|---|---|---|---|")
    row("records release the GIL (CDLL) / keep it (PyDLL)",
        ctypes_region(released.evx_event_record), ctypes_region(kept.evx_event_record),
        args.pairs, args.k)

    try:
        _, cs, opt = cuda_core_open(shared.native)
        ca, cb = cs.record(options=opt), cs.record(options=opt)
        cs.sync()
    except Exception as e:                      # no GPU, or no cuda.core
        print("\ncuda.core: n/a (%s: %s); questions 2 and 3 skipped" % (type(e).__name__, e))
        return

    m = 1
    pad = pad_fn(m)
    while time_alone(pad, 2000, 3) < args.pad_ns and m < 1 << 16:
        m *= 2
        pad = pad_fn(m)
    pad_ns = time_alone(pad)
    rec = cs.record

    def core(where):
        def region(n):
            for _ in range(n):
                if where == 0:
                    pad()
                rec(ca)
                if where == 1:
                    pad()
                rec(cb)
                if where == 2:
                    pad()
                cb.sync()
                if where == 3:
                    pad()
                cb - ca
        return region

    print("\n## 2. Where Python work counts: cuda.core's region with PAD put in at one place\n")
    print("PAD: %d empty loop turns, %.0f ns alone (with its call)\n" % (m, pad_ns))
    print("| a / b | median ratio | 95 % interval | ns per region |")
    print("|---|---|---|---|")
    plain = core(-1)
    for where, label in ((0, "before record a"), (1, "between record a and record b"),
                         (2, "between record b and synchronize"),
                         (3, "between synchronize and elapsed")):
        row("PAD %s / none" % label, core(where), plain, args.pairs, args.k)

    print("\n## 3. For reference: evx against cuda.core (as in py_bench.py)\n")
    es = evx.Stream.wrap(shared.native)
    ea, eb = dev.create_event(), dev.create_event()
    timed = evx.timed

    def evx_plain(n):
        for _ in range(n):
            ea.record(es); eb.record(es); eb.sync(); eb - ea

    def evx_timed(n):
        for _ in range(n):
            with timed(es) as t:
                pass
            t.elapsed_ms
    print("| a / b | median ratio | 95 % interval | ns per region |")
    print("|---|---|---|---|")
    row("evx plain calls / cuda.core", evx_plain, plain, args.pairs, args.k)
    row("evx.timed / cuda.core", evx_timed, plain, args.pairs, args.k)
    row("evx.timed / evx plain calls", evx_timed, evx_plain, args.pairs, args.k)


if __name__ == "__main__":
    main()
