# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""The compiled core (evx._core): that the package runs on it, timer reuse by
evx.timed, foreign and forged handles, and that calls which can wait release
the GIL."""

import contextlib
import ctypes
import gc
import os
import sys
import textwrap
import threading
import time
import weakref

import pytest

from conftest import run_python
from test_wrap import FakeCupyStream


def test_the_package_runs_on_its_compiled_core(evx):
    assert evx.implementation == "cython"
    assert evx._core.__file__.startswith(os.path.dirname(evx.__file__))
    assert issubclass(evx.Event, evx._core.EventCore)
    assert issubclass(evx.Stream, evx._core.StreamCore)
    assert evx.timed is evx._core.timed


def test_a_package_without_its_core_says_how_to_build_it():
    # The source tree's evx/ holds no compiled core: importing it from there
    # is refused with how to build one, not run on a second implementation.
    from conftest import PYROOT
    r = run_python("import evx", env={"PYTHONPATH": PYROOT})
    assert r.returncode != 0
    assert "CoreNotBuiltError" in r.stderr
    assert "evx's compiled core (evx._core) is not in %s" % os.path.join(PYROOT, "evx") \
        in r.stderr
    assert "meson compile" in r.stderr and "pip install ." in r.stderr


# --------------------------------------------------------------------------
# evx.timed: one C timer per block


def timer_alive(evx, handle):
    """Whether a C timer handle is live (evx_timer_elapsed answers other
    than INVALID_HANDLE)."""
    ms = ctypes.c_float()
    st = evx.capi.evx_timer_elapsed(ctypes.c_void_p(handle), ctypes.byref(ms))
    return st != evx.Status.ERROR_INVALID_HANDLE


def test_timed_is_a_c_timer(evx, stream):
    t = evx.timed(stream)
    assert t._timer is None                  # none before the block
    with t:
        h = t._timer
        assert h is not None and timer_alive(evx, h)
    first = t.elapsed_ms
    ms = ctypes.c_float()                    # the C timer answers the same
    assert evx.capi.evx_timer_elapsed(ctypes.c_void_p(h), ctypes.byref(ms)) == 0
    assert ms.value == first
    for _ in range(3):
        assert t.elapsed_ms == first


def test_timed_object_after_its_block(evx, dev, stream):
    with evx.timed(stream) as t:
        stream.launch_host_func(lambda: time.sleep(0.01))
    first = t.elapsed_ms
    assert first >= 0.0
    for _ in range(3):
        assert t.elapsed_ms == first
    with pytest.raises(RuntimeError, match="times one block"):
        with t:
            pass
    assert t.elapsed_ms == first             # a refused re-entry changes nothing
    # the timer is destroyed when the object dies
    h = t._timer
    del t
    gc.collect()
    assert not timer_alive(evx, h)


def test_elapsed_before_the_block_ends(evx, stream):
    t = evx.timed(stream)
    with pytest.raises(RuntimeError, match="once the with-block has ended"):
        t.elapsed_ms
    with t:
        with pytest.raises(RuntimeError, match="once the with-block has ended"):
            t.elapsed_ms
    assert t.elapsed_ms >= 0.0


def test_timed_takes_one_stream(evx, stream):
    with pytest.raises(TypeError):
        evx.timed()
    with pytest.raises(TypeError):
        evx.timed(stream, stream)
    with evx.timed(stream=stream) as t:
        pass
    assert t.elapsed_ms >= 0.0


def test_nested_timed_blocks(evx, stream):
    with evx.timed(stream) as outer:
        stream.launch_host_func(lambda: time.sleep(0.03))
        with evx.timed(stream) as inner:
            stream.launch_host_func(lambda: time.sleep(0.03))
    assert outer.elapsed_ms >= inner.elapsed_ms >= 0.0
    if evx.is_emulation():
        assert inner.elapsed_ms >= 25.0
        assert outer.elapsed_ms >= inner.elapsed_ms + 25.0


def test_timed_through_exit_stack(evx, stream):
    # contextlib calls the methods unbound: type(cm).__enter__(cm)
    with contextlib.ExitStack() as stack:
        t = stack.enter_context(evx.timed(stream))
        with pytest.raises(RuntimeError, match="once the with-block has ended"):
            t.elapsed_ms
    assert t.elapsed_ms >= 0.0
    assert isinstance(t, contextlib.AbstractContextManager)


def test_timed_methods_called_by_hand(evx, stream):
    t = evx.timed(stream)
    assert t.__enter__() is t
    assert t.__exit__(None, None, None) is False
    assert t.elapsed_ms >= 0.0
    u = evx.timed(stream)
    assert evx.timed.__enter__(u) is u
    assert evx.timed.__exit__(u, None, None, None) is False
    assert u.elapsed_ms >= 0.0
    w = evx.timed(stream)
    with pytest.raises(TypeError):
        w.__enter__(1)
    w.__enter__()
    with pytest.raises(TypeError):
        w.__exit__(None, None)
    with pytest.raises(TypeError):
        w.__exit__(None, None, None, exc=None)
    with pytest.raises(RuntimeError):     # the refused calls did not stop it
        w.elapsed_ms
    w.__exit__(None, None, None)
    assert w.elapsed_ms >= 0.0


def test_timed_bound_methods_keep_their_object(evx, dev, stream):
    enter = evx.timed(stream).__enter__
    exit_ = enter.__self__.__exit__
    gc.collect()
    t = enter()                           # the timed object lived on in them
    assert type(t) is evx.timed and exit_.__self__ is t
    assert exit_(None, None, None) is False
    before = sys.getrefcount(t)
    for _ in range(100):                  # binding again takes nothing away
        assert t.__exit__.__self__ is t
    assert sys.getrefcount(t) == before
    # once all names are gone, the object dies and its timer with it
    h = t._timer
    del enter, exit_, t
    gc.collect()
    assert not timer_alive(evx, h)


def test_timed_blocks_leak_nothing(evx, stream):
    def blocks(k):
        for _ in range(k):
            with evx.timed(stream) as t:
                pass
            t.elapsed_ms
    blocks(200)
    gc.collect()
    refs, mem = sys.getrefcount(stream), sys.getallocatedblocks()
    blocks(3000)
    gc.collect()
    assert sys.getrefcount(stream) == refs
    assert sys.getallocatedblocks() - mem < 100     # one per block would be 3000


def test_timed_read_from_many_threads_at_once(evx, dev, stream, gate):
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
    # the timer is destroyed once, not once per reader
    h = t._timer
    del t
    gc.collect()
    assert not timer_alive(evx, h)


def test_timed_on_a_closed_stream_raises(evx, dev):
    s = dev.create_stream()
    s.close()
    t = evx.timed(s)
    with pytest.raises(evx.CudaError) as ei:
        with t:
            pass
    assert ei.value.status == evx.Status.ERROR_INVALID_HANDLE
    with pytest.raises(RuntimeError):
        t.elapsed_ms
    assert t._timer is None                  # no timer kept


def test_stream_closed_inside_the_block(evx, dev):
    s = dev.create_stream()
    with pytest.raises(evx.CudaError) as ei:
        with evx.timed(s) as t:
            s.close()
    assert ei.value.status == evx.Status.ERROR_INVALID_HANDLE
    with pytest.raises(RuntimeError, match="stop mark failed"):
        t.elapsed_ms


def test_a_failed_stop_does_not_hide_the_blocks_exception(evx, dev):
    s = dev.create_stream()
    with pytest.raises(KeyError):
        with evx.timed(s) as t:
            s.close()
            raise KeyError("inside")
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


# --------------------------------------------------------------------------
# Foreign and forged handles


class FakeHandle:
    def __init__(self, h):
        self._h = h


@pytest.mark.parametrize("bad", [12345, "text", ctypes.c_void_p(12345)])
def test_objects_that_are_not_evx_are_refused(evx, dev, stream, bad):
    e = dev.create_event()
    with pytest.raises(TypeError):
        e.record(FakeHandle(bad))
    with pytest.raises(TypeError):
        stream.record(FakeHandle(bad))
    with pytest.raises(TypeError):
        stream.wait(FakeHandle(bad))
    e.record(stream)
    stream.sync()
    with pytest.raises(TypeError):
        e - FakeHandle(bad)
    with pytest.raises(TypeError):
        e.elapsed_since(FakeHandle(bad))
    e.close()


@pytest.mark.parametrize("forged", [12345, 0xDEAD00001234, (1 << 64) - 1])
def test_forged_handles_get_a_status(evx, dev, stream, forged):
    # A handle value that is no evx object reaches the library, which refuses
    # it: never a crash.
    e, s = dev.create_event(), dev.create_stream()
    real_e, real_s = e._h, s._h
    try:
        e._h = ctypes.c_void_p(forged)
        s._h = ctypes.c_void_p(forged)
        for call in (lambda: e.record(stream), lambda: stream.record(e),
                     lambda: dev.create_event().record(s), e.sync, s.sync,
                     lambda: e.is_done, lambda: s.is_done,
                     lambda: stream.wait(e), lambda: s.wait(stream),
                     lambda: e - e):
            with pytest.raises(evx.CudaError) as ei:
                call()
            assert ei.value.status == evx.Status.ERROR_INVALID_HANDLE
            assert ei.value.message
    finally:
        e._h, s._h = real_e, real_s
    e.close()
    s.close()


def test_closed_objects_get_a_status(evx, dev, stream):
    e = dev.create_event()
    e.close()
    assert e.closed and e._h is None and e.handle == 0
    for call in (lambda: e.record(stream), e.sync, lambda: e.is_done,
                 lambda: stream.wait(e), lambda: stream.record(e)):
        with pytest.raises(evx.CudaError) as ei:
            call()
        assert ei.value.status == evx.Status.ERROR_INVALID_HANDLE
    s = dev.create_stream()
    s.close()
    for call in (s.sync, lambda: s.is_done, lambda: dev.create_event().record(s),
                 lambda: s.record(), lambda: s.wait(stream)):
        with pytest.raises(evx.CudaError) as ei:
            call()
        assert ei.value.status == evx.Status.ERROR_INVALID_HANDLE


def test_stream_record_arguments(evx, dev, stream):
    e = dev.create_event()
    assert stream.record(e) is e
    assert stream.record(event=e) is e
    assert isinstance(stream.record(None), evx.Event)
    with pytest.raises(TypeError):
        stream.record(e, e)
    with pytest.raises(TypeError):
        stream.record(evt=e)
    stream.sync()


def test_compiled_handle_attribute(evx, dev):
    e = dev.create_event()
    assert isinstance(e._h, int) and e._h == e.handle
    with pytest.raises(TypeError):
        e._h = "text"
    with pytest.raises(AttributeError):
        del e._h
    with pytest.raises(AttributeError):
        e._dev = 1                           # read-only
    e.close()


# --------------------------------------------------------------------------
# The GIL


def test_gil_holding_calls_with_host_functions_running(evx, dev):
    # Host functions need the GIL; the GIL-holding calls (create, destroy,
    # queries, elapsed) must never wait on them, and the waiting ones
    # (record, synchronize, timed) must release it, from any thread.
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


def test_a_sync_behind_a_python_host_function_releases_the_gil(evx, dev):
    # If sync kept the GIL, the host function (which needs it) could never
    # run: a deadlock, caught by the subprocess's timeout.
    code = textwrap.dedent("""
        import time, evx
        d = evx.Device(0); s = d.create_stream()
        s.launch_host_func(lambda: time.sleep(0.05))
        e = s.record(); e.sync()
        s.launch_host_func(lambda: time.sleep(0.05))
        with evx.timed(s) as t:
            s.launch_host_func(lambda: time.sleep(0.05))
        assert t.elapsed_ms >= 0.0
        s.launch_host_func(lambda: time.sleep(0.05))
        s.sync()
        print("ok", evx.implementation)
    """)
    r = run_python(code, timeout=30)
    assert r.returncode == 0 and r.stdout.startswith("ok"), r.stderr
