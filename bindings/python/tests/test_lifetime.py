# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Objects closed by the garbage collector, twice, or at interpreter exit
never crash."""

import gc
import textwrap
import weakref

from conftest import run_python


def test_gc_destroys_events_and_streams(evx, dev):
    for _ in range(200):
        s = dev.create_stream()
        e = s.record()
        del s, e
    gc.collect()
    # a reference cycle holding objects
    class Holder:
        pass
    h = Holder()
    h.self = h
    h.stream = dev.create_stream()
    h.event = h.stream.record()
    h.pool = evx.EventPool(dev, 2)
    h.tl = evx.Timeline(dev, 4)
    ref = weakref.ref(h)
    del h
    gc.collect()
    assert ref() is None


def test_close_then_gc(evx, dev):
    e = dev.create_event()
    s = dev.create_stream()
    e.close()
    s.close()
    e.close()
    s.close()
    del e, s
    gc.collect()


def test_event_outlives_its_stream(evx, dev):
    s = dev.create_stream()
    e = s.record()
    s.close()
    e.sync()
    assert e.is_done


def test_pool_closed_before_its_events(evx, dev):
    pool = evx.EventPool(dev, 4)
    events = [pool.acquire() for _ in range(3)]
    pool.close()
    s = dev.create_stream()
    for e in events:
        e.record(s)
    s.sync()
    del events
    gc.collect()
    s.close()


def test_interpreter_exit_with_live_objects():
    code = textwrap.dedent("""
        import threading, evx
        d = evx.Device(0)
        s = d.create_stream()
        keep = [s.record() for _ in range(10)]
        pool = evx.EventPool(d, 4, prewarm=2)
        ev = pool.acquire()
        tl = evx.Timeline(d, 8)
        tl.mark(s)
        with evx.timed(s) as t:
            pass
        borrowed = evx.Stream.wrap(s)
        class Cycle:
            pass
        c = Cycle(); c.c = c; c.ev = d.create_event(); c.st = d.create_stream()
        gate = threading.Event()
        s.launch_host_func(lambda: gate.wait(0.2))
        s.launch_host_func(lambda: None)
        evx.some_module_global = d.create_event()
        print("ok")
    """)
    r = run_python(code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"
    assert "Traceback" not in r.stderr, r.stderr


def test_exit_without_closing_after_errors():
    code = textwrap.dedent("""
        import evx
        d = evx.Device(0)
        e = d.create_event()
        try:
            e - e
        except evx.CudaError:
            pass
        e.close()
        import sys
        sys.exit(3)
    """)
    r = run_python(code)
    assert r.returncode == 3, r.stderr
    assert "Traceback" not in r.stderr, r.stderr
