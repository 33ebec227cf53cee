#!/usr/bin/env python3
# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""How much the stream alone moves a timed region, against how much the
framework does: why bench/py_bench.py and evx-bench record every column on
one driver stream.

One process, cuda.core's timed region (record a; record b; b.sync(); b - a)
on its first stream as the reference, paired in adjacent blocks (the order
alternating) with:

  - cuda.core on a second stream of its own making: the stream's share;
  - cuda.core on a stream evx made (a third driver stream);
  - evx.timed and evx's four calls on cuda.core's first stream (the
    framework's share, the stream held equal);
  - evx.timed and evx's four calls on a stream of evx's own.

Prints one line of median ratios (< 1: faster than the reference). Run it a
few times: which hardware queue each new stream lands on changes from
process to process.

    python3 bench/py_stream_effect.py [--pairs 301] [--k 200]
"""

import argparse
import os
import sys

from py_bench import median_interval, paired_ratios   # finds evx as py_bench.py does


def paired(fa, fb, pairs, k):
    """Median of time(fa) / time(fb) over adjacent blocks of k regions."""
    fa(k // 4 + 1)
    fb(k // 4 + 1)
    return median_interval(paired_ratios(fa, fb, pairs, k))[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=301, help="pairs of blocks (default 301)")
    ap.add_argument("--k", type=int, default=200, help="regions per block (default 200)")
    args = ap.parse_args()

    import evx
    try:
        from cuda.core import Device, EventOptions, Stream
    except ImportError:
        from cuda.core.experimental import Device, EventOptions, Stream
    dev = Device(0)
    dev.set_current()
    try:
        opt = EventOptions(timing_enabled=True)
    except TypeError:
        opt = EventOptions(enable_timing=True)

    def core_on(s):
        a = s.record(options=opt)
        b = s.record(options=opt)
        s.sync()

        def region(n):
            for _ in range(n):
                s.record(a); s.record(b); b.sync(); b - a
        return region

    ed = evx.Device(0)
    ea, eb = ed.create_event(), ed.create_event()

    def layer_on(s):
        def region(n):
            for _ in range(n):
                ea.record(s); eb.record(s); eb.sync(); eb - ea
        return region

    def timed_on(s):
        def region(n, timed=evx.timed):
            for _ in range(n):
                with timed(s) as t:
                    pass
                t.elapsed_ms
        return region

    cs, cs2 = dev.create_stream(), dev.create_stream()
    es = ed.create_stream()
    es_on_cs = evx.Stream.wrap(cs)
    ref = core_on(cs)
    cases = [
        ("cuda.core, 2nd stream", core_on(cs2)),
        ("cuda.core, evx's stream", core_on(Stream.from_handle(es.native))),
        ("evx.timed, same stream", timed_on(es_on_cs)),
        ("evx 4 calls, same stream", layer_on(es_on_cs)),
        ("evx.timed, evx's stream", timed_on(es)),
        ("evx 4 calls, evx's stream", layer_on(es)),
    ]
    print("evx %s; ratio to cuda.core on its first stream (%d pairs of %d regions)"
          % (os.path.dirname(evx.__file__), args.pairs, args.k))
    print("  ".join("%s %.4f" % (name, paired(f, ref, args.pairs, args.k))
                    for name, f in cases), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
