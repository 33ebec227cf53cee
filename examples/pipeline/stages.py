# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""The two stages of the pipeline, each a process, and the three ways they
hand a buffer over.

The producer fills slot ``i % N`` of a ring of N buffers with buffer i; the
consumer copies it to its own device and checks it. Before overwriting a
slot the producer must know the consumer is done with it; before reading
one the consumer must know the producer is done with it. How they know:

- ``fence``: two interprocess evx fences. The producer's stream waits
  ``consumed >= i - N + 1``, fills, signals ``ready = i + 1``; the
  consumer's stream waits ``ready >= i + 1``, copies, signals
  ``consumed = i + 1``. Every wait may be queued before its signal, so both
  hosts queue the whole run at once: no message, no host wait.
- ``event``: a ring of N interprocess events each way, opened once (as
  Ray's tensor transport and LMCache's event backend do). A stream can only
  wait for an event's record once it has been made, so each record is
  followed by a message (a multiprocessing queue) and the peer's host waits
  for the message before it queues its stream's wait.
- ``host``: the host blocks on an event after each buffer and then sends
  the message (as sglang's and vLLM's connectors do).

Each stage keeps an evx timeline: a range per buffer ("fill i", "consume
i") and anchors before and after the run, so that its marks have times on
the host's clock, which both processes share (evx.trace).
"""

import os
import resource
import time
import traceback

import backends

QUEUE_TIMEOUT_S = 300.0
ANCHORS = 3  # at the start and at the end of each stage's run


def _get(q, what):
    try:
        return q.get(timeout=QUEUE_TIMEOUT_S)
    except Exception as e:
        raise RuntimeError("no %s from the other stage in %.0f s: did it fail? (its error "
                           "is reported by the parent)" % (what, QUEUE_TIMEOUT_S)) from e


def collect(procs, results, what, timeout_s=600.0):
    """Starts the processes, gathers one report from each and ends them;
    raises RuntimeError with every failed process's traceback. A failed
    process ends the others at once: they may wait for it forever."""
    for p in procs:
        p.start()
    reps = []
    try:
        for _ in procs:
            reps.append(results.get(timeout=timeout_s))
            if "error" in reps[-1]:
                break
    finally:
        failed = [r for r in reps if "error" in r]
        for p in procs:
            p.join(5 if failed else 60)
            if p.is_alive():
                p.kill()
                p.join()
    if failed:
        raise RuntimeError("%s: a process failed:\n%s" % (what, "\n".join(
            "--- %s\n%s" % (r["role"], r["error"]) for r in failed)))
    for p in procs:
        if p.exitcode != 0:
            raise RuntimeError("%s: a process exited with %s" % (what, p.exitcode))
    return reps


def _cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime, r.ru_stime


def _finish(cfg, role, be, lane, tl, t0, cpu0, extra):
    """After the loop: waits for the stream, anchors again, reads the
    marks on the host's clock, writes the trace; the stage's report."""
    import evx.trace
    # The end is awaited by a blocking-sync event, which sleeps: a
    # spinning synchronize would charge the whole run to the CPU of a
    # stage that queued everything at once (the fences').
    done = be.evx.Device(lane.device).create_event(timing=False, blocking_sync=True)
    done.record(lane.evx)
    done.sync()
    be.sync(lane)
    wall = time.perf_counter() - t0
    cpu1 = _cpu()
    _anchor(tl, lane)
    marks = tl.marks()
    anchors = [dict(a._asdict(), ts=marks[a.number].ms * 1000.0) for a in tl.anchors()]
    clock = evx.trace.HostClock(anchors)
    ends = {}
    for m in marks:
        if m.kind in ("begin", "end"):
            ends.setdefault(m.kind, {})[int(m.label.split()[1])] = m.ms
    path = os.path.join(cfg["trace_dir"], "%s-%s.json" % (cfg["tag"], role))
    tl.to_trace(path, title="%s (device %d, pid %d)" % (role, lane.device, os.getpid()))
    n = cfg["buffers"]
    rep = {"role": role, "pid": os.getpid(), "device": lane.device,
           "device_name": be.describe(), "wall_s": wall,
           "cpu_user_s": cpu1[0] - cpu0[0], "cpu_sys_s": cpu1[1] - cpu0[1],
           "begin_host_us": [clock(ends["begin"][i] * 1000.0) for i in range(n)],
           "end_host_us": [clock(ends["end"][i] * 1000.0) for i in range(n)],
           "end_device_ms": [ends["end"][i] for i in range(n)],
           "clock_uncertainty_us": clock.uncertainty_us, "trace": path}
    rep.update(extra)
    return rep


def _start(cfg, be, lane):
    tl = be.evx.Device(lane.device).create_timeline(2 * cfg["buffers"] + 2 * ANCHORS + 2)
    be.sync(lane)
    _anchor(tl, lane)
    return tl, time.perf_counter(), _cpu()


def _anchor(tl, lane, times=ANCHORS):
    """A few anchors in a row: evx.trace uses the narrowest."""
    for _ in range(times):
        tl.anchor(lane.evx)


# --- the producer ---------------------------------------------------------

def producer(cfg, fwd, back, results):
    try:
        results.put(_producer(cfg, fwd, back))
    except BaseException:
        results.put({"role": "producer", "error": traceback.format_exc()})


def _producer(cfg, fwd, back):
    be = backends.make(cfg["backend"], cfg["producer_device"])
    lane = be.lane()
    n_slots, method = cfg["slots"], cfg["method"]
    ring = be.alloc_ring(n_slots, cfg["size"])
    setup = {"ring": be.share(ring)}
    keep = []
    if method == "fence":
        dev = be.evx.Device(lane.device)
        keep = [dev.create_fence(interprocess=True), dev.create_fence(interprocess=True)]
        setup["fences"] = [f.ipc_handle for f in keep]
    elif method == "event":
        keep = [be.ipc_event() for _ in range(n_slots)]
        setup["events"] = [be.event_handle(e) for e in keep]
    fwd.put(setup)
    hello = _get(back, "hello")
    tl, t0, cpu0 = _start(cfg, be, lane)
    if method == "fence":
        _produce_fence(cfg, be, lane, ring, tl, *keep)
    elif method == "event":
        theirs = [be.open_event(h, cfg["consumer_device"]) for h in hello["events"]]
        _produce_event(cfg, be, lane, ring, tl, keep, theirs, fwd, back)
    else:
        _produce_host(cfg, be, lane, ring, tl, fwd, back)
    rep = _finish(cfg, "producer", be, lane, tl, t0, cpu0, {})
    while _get(back, "the consumer's end") != "done":
        pass   # the messages of the last N buffers
    if hasattr(ring, "unlink"):
        ring.unlink()
    return rep


def _fill(cfg, be, lane, ring, tl, i):
    tl.mark(lane.evx, "fill %d" % i, "begin")
    be.fill(lane, ring, i % cfg["slots"], i, cfg.get("fill_delay_s", 0.0))
    tl.mark(lane.evx, "fill %d" % i, "end")


def _produce_fence(cfg, be, lane, ring, tl, ready, consumed):
    n = cfg["slots"]
    for i in range(cfg["buffers"]):
        if i >= n:
            lane.evx.wait(consumed, i - n + 1)
        _fill(cfg, be, lane, ring, tl, i)
        ready.signal(lane.evx, i + 1)


def _produce_event(cfg, be, lane, ring, tl, ready, consumed, fwd, back):
    n = cfg["slots"]
    for i in range(cfg["buffers"]):
        if i >= n:
            j = _get(back, "consumed %d" % (i - n))
            assert j == i - n, (j, i - n)
            be.wait_event(lane, consumed[i % n])
        _fill(cfg, be, lane, ring, tl, i)
        be.record(ready[i % n], lane)
        fwd.put(i)


def _produce_host(cfg, be, lane, ring, tl, fwd, back):
    n = cfg["slots"]
    for i in range(cfg["buffers"]):
        if i >= n:
            j = _get(back, "consumed %d" % (i - n))
            assert j == i - n, (j, i - n)
        _fill(cfg, be, lane, ring, tl, i)
        be.host_sync(lane)
        fwd.put(i)


# --- the consumer ---------------------------------------------------------

def consumer(cfg, fwd, back, results):
    try:
        results.put(_consumer(cfg, fwd, back))
    except BaseException:
        results.put({"role": "consumer", "error": traceback.format_exc()})
        back.put("done")   # frees a producer waiting for the end


def _consumer(cfg, fwd, back):
    be = backends.make(cfg["backend"], cfg["consumer_device"])
    lane = be.lane()
    method = cfg["method"]
    setup = _get(fwd, "setup")
    ring = be.open_ring(setup["ring"])
    dst = be.local_buffer(cfg["size"])
    hello, keep = {}, []
    if method == "fence":
        dev = be.evx.Device(lane.device)
        keep = [dev.open_ipc_fence(h) for h in setup["fences"]]
    elif method == "event":
        theirs = [be.open_event(h, cfg["producer_device"]) for h in setup["events"]]
        keep = [be.ipc_event() for _ in range(cfg["slots"])]
        hello["events"] = [be.event_handle(e) for e in keep]
    tl, t0, cpu0 = _start(cfg, be, lane)
    back.put(hello)
    if method == "fence":
        _consume_fence(cfg, be, lane, ring, dst, tl, *keep)
    elif method == "event":
        _consume_event(cfg, be, lane, ring, dst, tl, theirs, keep, fwd, back)
    else:
        _consume_host(cfg, be, lane, ring, dst, tl, fwd, back)
    rep = _finish(cfg, "consumer", be, lane, tl, t0, cpu0,
                  {"errors": be.errors(), "error_samples": be.error_samples()})
    # Drop the producer's memory before telling it that it may free it.
    ring = dst = setup = None
    back.put("done")
    return rep


def _consume(cfg, be, lane, ring, dst, tl, i):
    tl.mark(lane.evx, "consume %d" % i, "begin")
    be.consume(lane, ring, i % cfg["slots"], i, dst)
    tl.mark(lane.evx, "consume %d" % i, "end")


def _consume_fence(cfg, be, lane, ring, dst, tl, ready, consumed):
    for i in range(cfg["buffers"]):
        lane.evx.wait(ready, i + 1)
        _consume(cfg, be, lane, ring, dst, tl, i)
        consumed.signal(lane.evx, i + 1)


def _consume_event(cfg, be, lane, ring, dst, tl, ready, consumed, fwd, back):
    n = cfg["slots"]
    for i in range(cfg["buffers"]):
        j = _get(fwd, "ready %d" % i)
        assert j == i, (j, i)
        be.wait_event(lane, ready[i % n])
        _consume(cfg, be, lane, ring, dst, tl, i)
        be.record(consumed[i % n], lane)
        back.put(i)


def _consume_host(cfg, be, lane, ring, dst, tl, fwd, back):
    for i in range(cfg["buffers"]):
        j = _get(fwd, "ready %d" % i)
        assert j == i, (j, i)
        _consume(cfg, be, lane, ring, dst, tl, i)
        be.host_sync(lane)
        back.put(i)
