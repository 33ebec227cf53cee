# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""The Pythonic layer: devices, events, streams."""

import ctypes
import threading
import time

import pytest


def test_module_level(evx):
    assert evx.device_count() >= 1
    assert evx.driver_version() > 0
    assert evx.driver_path()
    assert isinstance(evx.is_emulation(), bool)
    assert evx.library_version() == evx.__version__
    assert evx.library_path


def test_device(evx):
    d = evx.Device(0)
    assert d is evx.Device(0) and d == evx.Device(d)
    assert d.device_id == 0 == int(d) == d.ordinal
    least, greatest = d.stream_priority_range
    assert greatest <= least
    with pytest.raises(TypeError):
        evx.Device("0")
    with pytest.raises(TypeError):
        evx.Device(True)


def test_device_out_of_range(evx):
    n = evx.device_count()
    with pytest.raises(evx.CudaError) as ei:
        evx.Device(n)
    assert ei.value.status == evx.Status.ERROR_INVALID_DEVICE
    assert str(n) in ei.value.message


def test_event_flags_device_handle_native(evx, dev):
    e = dev.create_event()
    assert e.flags == evx.EventFlags.DEFAULT
    assert e.device is dev
    assert isinstance(e.handle, int) and e.handle != 0
    assert isinstance(e.native, int) and e.native != 0
    f = dev.create_event(timing=False, blocking_sync=True)
    assert f.flags == evx.EventFlags.DISABLE_TIMING | evx.EventFlags.BLOCKING_SYNC
    g = dev.create_event(timing=False, ipc=True)
    assert evx.EventFlags.INTERPROCESS in g.flags
    for x in (e, f, g):
        x.close()
    assert e.closed and e.handle == 0


def test_event_cannot_be_constructed_directly(evx):
    with pytest.raises(TypeError):
        evx.Event()
    with pytest.raises(TypeError):
        evx.Stream()


def test_record_sync_is_done_elapsed(evx, dev, stream):
    start = dev.create_event()
    end = dev.create_event()
    assert start.is_done is True           # never recorded counts as done
    start.record(stream)
    end.record(stream)
    end.sync()
    assert start.is_done and end.is_done
    ms = end - start
    assert isinstance(ms, float) and 0.0 <= ms < 1000.0
    assert start - start == 0.0
    assert end.elapsed_since(start) == ms
    assert (start - end) == pytest.approx(-ms, abs=1e-3)


def test_pending_event_reads_as_not_done(evx, dev, stream, gate):
    start = stream.record()
    g = gate(stream)
    end = stream.record()
    assert end.is_done is False
    assert stream.is_done is False
    with pytest.raises(evx.CudaError) as ei:
        end - start
    assert ei.value.status == evx.Status.ERROR_NOT_READY
    g.open()
    end.sync()
    assert end.is_done is True and stream.is_done is True
    assert end - start >= 0.0


def test_is_done_raises_on_errors_instead_of_false(evx, dev):
    e = dev.create_event()
    e.close()
    with pytest.raises(evx.CudaError) as ei:
        e.is_done
    assert ei.value.status == evx.Status.ERROR_INVALID_HANDLE


def test_stream_record_returns_the_event(evx, dev, stream):
    e = stream.record()
    assert isinstance(e, evx.Event)
    assert evx.EventFlags.DISABLE_TIMING not in e.flags
    mine = dev.create_event(timing=False)
    assert stream.record(mine) is mine
    stream.sync()
    assert e.is_done and mine.is_done
    with pytest.raises(TypeError):
        stream.record(42)
    with pytest.raises(TypeError):
        e.record(42)


def test_stream_properties(evx, dev):
    least, greatest = dev.stream_priority_range
    s = dev.create_stream(priority=greatest, non_blocking=False)
    assert s.priority == greatest
    assert s.flags == evx.StreamFlags.DEFAULT
    assert s.device is dev
    assert s.owned is True
    assert s.native != 0 and s.handle != 0
    assert s.__cuda_stream__() == (0, s.native)
    t = dev.create_stream()
    assert t.flags == evx.StreamFlags.NON_BLOCKING and t.priority == 0
    s.close()
    t.close()
    s.close()               # a second close does nothing
    assert s.closed


def test_priority_out_of_range_is_refused(evx, dev):
    least, greatest = dev.stream_priority_range
    for p in (greatest - 100, least + 7):
        with pytest.raises(evx.CudaError) as ei:
            dev.create_stream(priority=p)
        assert ei.value.status == evx.Status.ERROR_INVALID_VALUE
        assert ei.value.message


def test_wait_on_event_and_on_stream(evx, dev, gate):
    a = dev.create_stream()
    b = dev.create_stream()
    g = gate(a)
    b.wait(a)                       # a stream: through a temporary event
    on_b = b.record()
    time.sleep(0.02)
    assert on_b.is_done is False, "b must wait for the work queued on a"
    g.open()
    on_b.sync()
    ev = a.record()
    g2 = gate(a)
    ev2 = a.record()
    b.wait(ev2)                     # an event
    after = b.record()
    time.sleep(0.02)
    assert after.is_done is False
    g2.open()
    after.sync()
    b.wait(b)                       # waiting for itself is a no-op
    with pytest.raises(TypeError):
        b.wait(3)
    for x in (a, b):
        x.sync()
        x.close()


def test_cross_device_use_is_refused(evx):
    if evx.device_count() < 2:
        pytest.skip("needs 2 devices (the host emulation shows 2 with EVX_HOST_DEVICES=2)")
    d0, d1 = evx.Device(0), evx.Device(1)
    s0 = d0.create_stream()
    e1 = d1.create_event()
    with pytest.raises(evx.CudaError) as ei:
        e1.record(s0)
    assert ei.value.status == evx.Status.ERROR_INVALID_HANDLE
    with pytest.raises(evx.CudaError) as ei:
        s0.wait(e1)
    assert ei.value.status == evx.Status.ERROR_INVALID_HANDLE
    s1 = d1.create_stream()
    with pytest.raises(evx.CudaError):
        s0.wait(s1)
    assert s1.device is d1
    s0.close()
    s1.close()


def test_context_managers_close(evx, dev):
    with dev.create_stream() as s, dev.create_event() as e:
        e.record(s)
        s.sync()
    assert s.closed and e.closed
    with pytest.raises(evx.CudaError):
        e.sync()
    with pytest.raises(evx.CudaError):
        s.sync()
    with pytest.raises(evx.CudaError):
        s.native


def test_events_shared_across_threads(evx, dev, stream):
    ev = dev.create_event()
    errors = []

    def work():
        try:
            for _ in range(300):
                ev.record(stream)
                ev.is_done
        except Exception as e:         # reported below
            errors.append(e)
    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stream.sync()
    assert not errors
    assert ev.is_done


def test_trim(dev):
    for _ in range(10):
        dev.create_event().close()
    dev.trim()


def test_raw_capi_is_bound(evx):
    n = ctypes.c_int()
    assert evx.capi.evx_device_count(ctypes.byref(n)) == 0
    assert n.value == evx.device_count()


def test_queries_hold_the_gil_unless_told_not_to(evx):
    assert not evx._core.releases_gil_always()
    from conftest import run_python
    code = ("import evx\n"
            "assert evx._core.releases_gil_always()\n"
            "d = evx.Device(0); s = d.create_stream(); a = s.record(); b = s.record()\n"
            "b.sync(); assert a.is_done and s.is_done and b - a >= 0.0\n"
            "d.create_event().close()\n"
            "print('ok')\n")
    r = run_python(code, env={"EVX_PYTHON_RELEASE_GIL": "1"})
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
