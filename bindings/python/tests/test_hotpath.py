# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""The hot core (evx._speedups or evx._pycore): how the package picks it,
timer reuse by evx.timed, foreign and forged handles, and which calls keep
the GIL.

bindings/run_tests.sh runs this whole suite twice, once on each core. The
tests here that look inside one core say which in their skip reason; the
others hold for both."""

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


def test_the_core_is_the_one_asked_for(evx):
    setting = os.environ.get("EVX_SPEEDUPS", "")
    assert evx.implementation in ("speedups", "ctypes")
    assert evx.implementation == evx._core.IMPLEMENTATION
    if setting == "0":
        assert evx.implementation == "ctypes"
        assert evx.speedups_error == "EVX_SPEEDUPS=0"
    elif setting:
        assert evx.implementation == "speedups" and evx.speedups_error is None
    assert issubclass(evx.Event, evx._core.EventCore)
    assert issubclass(evx.Stream, evx._core.StreamCore)
    assert evx.timed is evx._core.timed


def test_an_explicit_core_that_cannot_load_is_an_error(tmp_path):
    r = run_python("import evx", env={"EVX_SPEEDUPS": str(tmp_path)})
    assert r.returncode != 0
    assert "EVX_SPEEDUPS=%s: no _speedups" % tmp_path in r.stderr


def test_no_compiled_core_next_to_the_package_falls_back_to_ctypes():
    # The source tree holds no built _speedups, so with EVX_SPEEDUPS unset the
    # package runs on ctypes and says why.
    env = dict(os.environ)
    env.pop("EVX_SPEEDUPS", None)
    code = textwrap.dedent("""
        import os, evx
        here = os.path.dirname(evx.__file__)
        built = [n for n in os.listdir(here) if n.startswith("_speedups.")
                 and not n.endswith(".c")]
        if built:
            assert evx.implementation == "speedups", evx.speedups_error
        else:
            assert evx.implementation == "ctypes"
            assert "_speedups" in evx.speedups_error, evx.speedups_error
        d = evx.Device(0); s = d.create_stream(); e = s.record(); e.sync()
        print("ok")
    """)
    import subprocess
    import sys
    from conftest import INSTALLED, PYROOT
    if not INSTALLED:
        env["PYTHONPATH"] = PYROOT
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


# --------------------------------------------------------------------------
# evx.timed and its timer cache


def idle_timers(evx, dev):
    return evx._core.timer_cache_info()[1].get(dev.device_id, 0)


def test_timed_steady_state_makes_no_timers(evx, stream):
    for _ in range(3):                       # warm the device's cache
        with evx.timed(stream) as t:
            pass
        t.elapsed_ms
    del t
    made, _ = evx._core.timer_cache_info()
    for _ in range(20):
        with evx.timed(stream) as t:
            pass
        assert t.elapsed_ms >= 0.0
        assert t.elapsed_ms >= 0.0
    assert evx._core.timer_cache_info()[0] == made


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
    # the timer goes back to the device's cache when the object dies
    n = idle_timers(evx, dev)
    del t
    gc.collect()
    assert idle_timers(evx, dev) == min(n + 1, evx._core.TIMER_CACHE_MAX)


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
    # once all names are gone, the object dies and its timer goes back
    n = idle_timers(evx, dev)
    del enter, exit_, t
    gc.collect()
    assert idle_timers(evx, dev) == min(n + 1, evx._core.TIMER_CACHE_MAX)


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


@pytest.mark.skipif(os.environ.get("EVX_SPEEDUPS", "") in ("", "0"),
                    reason="the compiled core's slots (the ctypes core's are functions)")
def test_timed_slots_refuse_other_objects(evx):
    with pytest.raises(TypeError, match="needs an evx.timed object"):
        evx.timed.__enter__(object())
    with pytest.raises(TypeError, match="needs an evx.timed object"):
        evx.timed.__exit__()
    with pytest.raises(TypeError, match="binds to evx.timed objects only"):
        evx.timed.__exit__.__get__(object(), type(object()))
    assert "__enter__" in repr(evx.timed.__enter__)


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
    # the timer goes back to the cache once, not once per reader
    n = idle_timers(evx, dev)
    del t
    gc.collect()
    assert idle_timers(evx, dev) == min(n + 1, evx._core.TIMER_CACHE_MAX)


def test_timed_on_a_closed_stream_raises(evx, dev):
    s = dev.create_stream()
    s.close()
    with evx.timed(dev.create_stream()) as warm:     # the cache holds one
        pass
    del warm
    n = idle_timers(evx, dev)
    t = evx.timed(s)
    with pytest.raises(evx.CudaError) as ei:
        with t:
            pass
    assert ei.value.status == evx.Status.ERROR_INVALID_HANDLE
    with pytest.raises(RuntimeError):
        t.elapsed_ms
    assert idle_timers(evx, dev) == n        # the timer was given back


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


def test_clear_timers_empties_the_cache(evx, dev, stream):
    with evx.timed(stream) as t:
        pass
    t.elapsed_ms
    del t
    assert idle_timers(evx, dev) >= 1
    evx._core.clear_timers()
    assert idle_timers(evx, dev) == 0
    with evx.timed(stream) as t:             # and timing still works
        pass
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


@pytest.mark.skipif(os.environ.get("EVX_SPEEDUPS", "") in ("", "0"),
                    reason="the compiled core's handle attribute (run with "
                           "EVX_SPEEDUPS=BUILD/bindings/python)")
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


ctypes_only = pytest.mark.skipif(
    os.environ.get("EVX_SPEEDUPS", "") not in ("0",),
    reason="looks inside the ctypes core (run with EVX_SPEEDUPS=0)")


@ctypes_only
def test_ctypes_core_binds_hot_calls_untyped(evx):
    pc = evx._pycore
    typed = evx.capi.evx_device_create_event
    assert typed.argtypes is not None and len(typed.argtypes) == 3
    assert pc._ev_create is not typed and pc._ev_create.argtypes is None
    assert evx.capi.evx_event_record.argtypes is not None


@ctypes_only
def test_ctypes_core_makes_no_second_call_for_a_read_time(evx, stream, monkeypatch):
    calls = []
    real = evx._pycore._tm_sync
    monkeypatch.setattr(evx._pycore, "_tm_sync",
                        lambda *a: calls.append(1) or real(*a))
    with evx.timed(stream) as t:
        pass
    for _ in range(3):
        assert t.elapsed_ms >= 0.0
    assert len(calls) == 1


@ctypes_only
def test_ctypes_core_event_creation_keeps_the_gil_after_the_first():
    code = textwrap.dedent("""
        import ctypes, evx
        pc = evx._pycore
        d = evx.Device(0)
        assert 0 not in pc._warm                 # first: releases the GIL
        try:
            d.create_event(ipc=True)             # refused: stays so
        except evx.CudaError:
            pass
        assert 0 not in pc._warm
        e = d.create_event()
        assert 0 in pc._warm
        assert isinstance(evx._gil_lib, ctypes.PyDLL)
        e.close()
        print("ok")
    """)
    r = run_python(code, env={"EVX_PYTHON_RELEASE_GIL": "0", "EVX_SPEEDUPS": "0"})
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


@ctypes_only
def test_ctypes_core_only_calls_that_never_wait_keep_the_gil(evx):
    keeps = ctypes._FUNCFLAG_PYTHONAPI
    pc = evx._pycore
    holding = ("_ev_query", "_ev_elapsed", "_st_query", "_ev_create_gil",
               "_ev_destroy")
    releasing = ("_ev_create", "_ev_record", "_ev_sync", "_st_wait",
                 "_st_sync", "_st_destroy", "_tm_create", "_tm_destroy",
                 "_tm_start", "_tm_stop", "_tm_sync")
    for name in releasing:
        assert not getattr(pc, name)._flags_ & keeps, name
    held = evx._gil_lib is not evx._lib
    for name in holding:
        assert bool(getattr(pc, name)._flags_ & keeps) == held, name
