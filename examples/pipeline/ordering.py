# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""The ordering test, in LMCache's shape: several producer streams, several
consumer processes, no consumer reading a buffer before its signal.

One producer process with P streams feeds C consumer processes; consumer c
has its own ring of N buffers and two fences (ready_c, consumed_c). Buffer
j of ring c is filled on producer stream (j + c) % P, so each ring's
signals come from every stream in turn. A queued signal must run after the
one before it (docs/fences.md: a stream memory write is a plain store), so
the stream that fills buffer j waits ``ready_c >= j`` between its fill and
its signal of ``j + 1``: the fills of different streams overlap, the
signals run in order. Consumer c's stream waits ``ready_c >= j + 1``, then
checks buffer j: its stamp (written last by the fill) and its data must be
j. The whole run is queued before anything completes; the only host waits
are at the end.

``skip_wait=True`` leaves out the consumers' waits (with the fills delayed):
the negative control, which must find errors, so the check can fail.
"""

import time
import traceback

import backends
from stages import _get, collect


def _producer(cfg, setups, back, results):
    try:
        be = backends.make(cfg["backend"], cfg["producer_device"])
        lanes = [be.lane() for _ in range(cfg["producers"])]
        dev = be.evx.Device(cfg["producer_device"])
        rings, fences = [], []
        for q in setups:
            ring = be.alloc_ring(cfg["slots"], cfg["size"])
            pair = (dev.create_fence(interprocess=True), dev.create_fence(interprocess=True))
            rings.append(ring)
            fences.append(pair)
            q.put({"ring": be.share(ring), "fences": [f.ipc_handle for f in pair]})
        for _ in setups:
            _get(back, "a consumer's hello")
        _queue_all(cfg, be, lanes, rings, fences)
        for lane in lanes:
            be.sync(lane)
        for _ in setups:
            _get(back, "a consumer's end")
        for ring in rings:
            if hasattr(ring, "unlink"):
                ring.unlink()
        results.put({"role": "producer"})
    except BaseException:
        results.put({"role": "producer", "error": traceback.format_exc()})


def _queue_all(cfg, be, lanes, rings, fences):
    n, p = cfg["slots"], len(lanes)
    for j in range(cfg["items"]):
        for c, (ring, (ready, consumed)) in enumerate(zip(rings, fences)):
            lane = lanes[(j + c) % p]
            if j >= n:
                lane.evx.wait(consumed, j - n + 1)
            be.fill(lane, ring, j % n, j, cfg["fill_delay_s"])
            if j > 0:
                lane.evx.wait(ready, j)     # the signal of j runs first
            ready.signal(lane.evx, j + 1)


def _consumer(cfg, c, setup_q, back, results):
    try:
        be = backends.make(cfg["backend"], cfg["consumer_device"])
        lane = be.lane()
        setup = _get(setup_q, "setup")
        ring = be.open_ring(setup["ring"])
        dev = be.evx.Device(cfg["consumer_device"])
        ready, consumed = [dev.open_ipc_fence(h) for h in setup["fences"]]
        dst = be.local_buffer(cfg["size"])
        back.put(("hello", c))
        n = cfg["slots"]
        for j in range(cfg["items"]):
            if not cfg["skip_wait"]:
                lane.evx.wait(ready, j + 1)
            be.consume(lane, ring, j % n, j, dst)
            consumed.signal(lane.evx, j + 1)
        be.sync(lane)
        results.put({"role": "consumer %d" % c, "errors": be.errors(),
                     "error_samples": be.error_samples()})
    except BaseException:
        results.put({"role": "consumer %d" % c, "error": traceback.format_exc()})
    finally:
        back.put(("done", c))


def run(ctx, backend, devices, out=None, producers=4, consumers=4, items=100, slots=4,
        size=None, skip_wait=False, fill_delay_s=0.0):
    """Runs the test; returns its counts. Raises RuntimeError if a process
    failed."""
    if size is None:
        size = 4096 if backend == "host" else 1 << 20
    cfg = {"backend": backend, "producer_device": devices[0], "consumer_device": devices[1],
           "producers": producers, "items": items, "slots": slots, "size": size,
           "skip_wait": skip_wait, "fill_delay_s": fill_delay_s}
    setups = [ctx.Queue() for _ in range(consumers)]
    back, results = ctx.Queue(), ctx.Queue()
    procs = [ctx.Process(target=_producer, args=(cfg, setups, back, results))]
    procs += [ctx.Process(target=_consumer, args=(cfg, c, setups[c], back, results))
              for c in range(consumers)]
    t0 = time.perf_counter()
    reps = collect(procs, results, "ordering test")
    errors = sum(r.get("errors", 0) for r in reps)
    res = {"producers": producers, "consumers": consumers, "items": items, "slots": slots,
           "size": size, "skip_wait": skip_wait, "errors": errors,
           "error_samples": [s for r in reps for s in r.get("error_samples", [])][:8],
           "seconds": time.perf_counter() - t0}
    print("ordering test: %d producer streams, %d consumers, %d buffers each%s: %d read "
          "before their signal" % (producers, consumers, items,
                                   " (no waits: the negative control)" if skip_wait else "",
                                   errors), flush=True)
    return res
