# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""The lean hot paths of the Python layer: timer reuse by evx.timed, the
untyped ctypes bindings, and which calls keep the GIL."""

import gc
import textwrap
import threading
import time
import weakref

import pytest

from conftest import run_python
from test_wrap import FakeCupyStream


class Counting:
    """Wraps a bound C function and counts its calls."""

    def __init__(self, fn):
        self.fn = fn
        self.n = 0

    def __call__(self, *args):
        self.n += 1
        return self.fn(*args)


@pytest.fixture
def counted(evx, monkeypatch):
    calls = {}
    for name in ("_tm_create", "_tm_start", "_tm_stop", "_tm_sync"):
        c = Counting(getattr(evx, name))
        monkeypatch.setattr(evx, name, c)
        calls[name] = c
    return calls


def test_timed_steady_state_makes_no_timers(evx, stream, counted):
    for _ in range(3):                       # warm the device's free list
        with evx.timed(stream) as t:
            pass
        t.elapsed_ms
    for name in counted:
        counted[name].n = 0
    for _ in range(20):
        with evx.timed(stream) as t:
            pass
        assert t.elapsed_ms >= 0.0
        assert t.elapsed_ms >= 0.0           # the second read makes no call
    assert counted["_tm_create"].n == 0
    assert counted["_tm_start"].n == 20
    assert counted["_tm_stop"].n == 20
    assert counted["_tm_sync"].n == 20


def test_timed_object_after_its_block(evx, dev, stream, counted):
    cache = evx._timer_cache
    with evx.timed(stream) as t:
        stream.launch_host_func(lambda: time.sleep(0.01))
    first = t.elapsed_ms
    assert first >= 0.0
    for _ in range(3):
        assert t.elapsed_ms == first
    assert counted["_tm_sync"].n == 1
    with pytest.raises(RuntimeError):
        with t:
            pass
    assert t.elapsed_ms == first             # a refused re-entry changes nothing
    # the timer goes back to the device's free list when the object dies
    n = len(cache[dev.device_id])
    del t
    gc.collect()
    assert len(cache[dev.device_id]) == min(n + 1, evx._TIMER_CACHE_MAX)


def test_nested_timed_blocks(evx, stream):
    with evx.timed(stream) as outer:
        stream.launch_host_func(lambda: time.sleep(0.03))
        with evx.timed(stream) as inner:
            stream.launch_host_func(lambda: time.sleep(0.03))
    assert outer.elapsed_ms >= inner.elapsed_ms >= 0.0
    if evx.is_emulation():
        assert inner.elapsed_ms >= 25.0
        assert outer.elapsed_ms >= inner.elapsed_ms + 25.0


def test_timed_read_from_many_threads_at_once(evx, stream, gate):
    with evx.timed(stream) as t:
        g = gate(stream)
    got, errors = [], []

    def read():
        try:
            got.append(t.elapsed_ms)
        except Exception as e:       # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=read) for _ in range(4)]
    for th in threads:
        th.start()
    time.sleep(0.02)
    g.open()
    for th in threads:
        th.join(10)
    assert not errors and len(got) == 4 and len(set(got)) == 1
    # the timer went back to the free list once, not once per reader
    del t
    gc.collect()
    for lst in evx._timer_cache.values():
        assert len({id(x) for x in lst}) == len(lst)


def test_timed_on_a_closed_stream_raises(evx, dev):
    s = dev.create_stream()
    s.close()
    cache = evx._timer_cache.setdefault(dev.device_id, [])
    n = len(cache)
    t = evx.timed(s)
    with pytest.raises(evx.CudaError) as ei:
        with t:
            pass
    assert ei.value.status == evx.Status.ERROR_INVALID_HANDLE
    with pytest.raises(RuntimeError):
        t.elapsed_ms
    assert len(cache) == max(n, 1)           # the timer was given back


def test_stream_closed_inside_the_block(evx, dev):
    s = dev.create_stream()
    with pytest.raises(evx.CudaError) as ei:
        with evx.timed(s) as t:
            s.close()
    assert ei.value.status == evx.Status.ERROR_INVALID_HANDLE
    with pytest.raises(RuntimeError, match="stop mark failed"):
        t.elapsed_ms


def test_timed_keeps_its_stream_alive(evx, dev):
    with evx.timed(dev.create_stream()) as t:
        gc.collect()
    assert t.elapsed_ms >= 0.0


def test_timed_releases_a_borrowed_stream_at_the_end(evx, stream):
    obj = FakeCupyStream(stream.native)
    ref = weakref.ref(obj)
    with evx.timed(obj) as t:
        pass
    del obj
    gc.collect()
    assert ref() is None                     # t still alive, the object is not
    assert t.elapsed_ms >= 0.0


def test_hot_bindings_leave_capi_typed(evx):
    typed = evx.capi.evx_device_create_event
    assert typed.argtypes is not None and len(typed.argtypes) == 3
    assert evx._ev_create is not typed and evx._ev_create.argtypes is None
    assert evx.capi.evx_event_record.argtypes is not None


class FakeHandle:
    def __init__(self, h):
        self._h = h


@pytest.mark.parametrize("bad", [12345, "text", b"bytes"])
def test_untyped_calls_refuse_foreign_handles(evx, dev, stream, bad):
    e = dev.create_event()
    with pytest.raises(evx.CudaError) as ei:
        e.record(FakeHandle(bad))
    assert ei.value.status == evx.Status.ERROR_INVALID_HANDLE
    with pytest.raises(evx.CudaError) as ei:
        stream.record(FakeHandle(bad))
    assert ei.value.status == evx.Status.ERROR_INVALID_HANDLE
    e.record(stream)
    stream.sync()
    with pytest.raises(evx.CudaError) as ei:
        e - FakeHandle(bad)
    assert ei.value.status == evx.Status.ERROR_INVALID_HANDLE
    e.close()


def test_closed_objects_through_untyped_calls(evx, dev, stream):
    e = dev.create_event()
    e.close()
    for call in (lambda: e.record(stream), e.sync, lambda: e.is_done,
                 lambda: stream.wait(e)):
        with pytest.raises(evx.CudaError) as ei:
            call()
        assert ei.value.status == evx.Status.ERROR_INVALID_HANDLE
    s = dev.create_stream()
    s.close()
    for call in (s.sync, lambda: s.is_done, lambda: dev.create_event().record(s)):
        with pytest.raises(evx.CudaError) as ei:
            call()
        assert ei.value.status == evx.Status.ERROR_INVALID_HANDLE


def test_event_creation_keeps_the_gil_after_the_first():
    code = textwrap.dedent("""
        import ctypes, evx
        d = evx.Device(0)
        assert d._mk is evx._ev_create           # first: releases the GIL
        try:
            d.create_event(ipc=True)             # refused: stays on it
        except evx.CudaError:
            pass
        assert d._mk is evx._ev_create
        e = d.create_event()
        assert d._mk is evx._ev_create_gil
        assert isinstance(evx._gil_lib, ctypes.PyDLL)
        e.close()
        print("ok")
    """)
    r = run_python(code, env={"EVX_PYTHON_RELEASE_GIL": "0"})
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_only_calls_that_never_wait_keep_the_gil(evx):
    import ctypes
    keeps = ctypes._FUNCFLAG_PYTHONAPI
    holding = ("_ev_query", "_ev_elapsed", "_st_query", "_ev_create_gil",
               "_ev_destroy")
    releasing = ("_ev_create", "_ev_record", "_ev_sync", "_st_wait",
                 "_st_sync", "_st_destroy", "_st_create", "_st_launch",
                 "_tm_create", "_tm_destroy", "_tm_start", "_tm_stop",
                 "_tm_sync", "_pool_acquire", "_pool_release")
    for name in releasing:
        assert not getattr(evx, name)._flags_ & keeps, name
    held = evx._gil_lib is not evx._lib
    for name in holding:
        assert bool(getattr(evx, name)._flags_ & keeps) == held, name


def test_gil_holding_calls_with_host_functions_running(evx, dev):
    # Host functions need the GIL; the GIL-holding calls (create, destroy,
    # queries, elapsed) must never wait on them, from any thread.
    errors = []
    hits = []

    def work(k):
        try:
            s = dev.create_stream()
            for i in range(100):
                s.launch_host_func(lambda: hits.append(1))
                with evx.timed(s) as t:
                    e = s.record()
                    e.is_done
                    s.is_done
                    dev.create_event(timing=(i % 2 == 0)).close()
                assert t.elapsed_ms >= 0.0
                e.sync()
                e.close()
            s.sync()
            s.close()
        except Exception as exc:     # noqa: BLE001 - reported below
            errors.append(exc)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert not any(th.is_alive() for th in threads), "deadlock"
    assert not errors, errors
    assert len(hits) == 400
