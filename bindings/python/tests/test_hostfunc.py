# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Stream.launch_host_func: order, keep-alive, exceptions that surface."""

import gc
import threading
import weakref

import pytest


def test_host_functions_run_in_stream_order(evx, stream):
    log = []
    for i in range(50):
        stream.launch_host_func(lambda i=i: log.append(i))
    stream.sync()
    assert log == list(range(50))


def test_host_function_orders_with_events(evx, dev, stream, gate):
    log = []
    g = gate(stream)
    stream.launch_host_func(lambda: log.append("host"))
    ev = stream.record()
    assert ev.is_done is False and log == []
    g.open()
    ev.sync()
    assert log == ["host"]


def test_callable_kept_alive_until_it_has_run(evx, stream, gate):
    ran = []

    class Job:
        def __call__(self):
            ran.append(True)
    job = Job()
    ref = weakref.ref(job)
    g = gate(stream)
    stream.launch_host_func(job)
    del job
    gc.collect()
    assert ref() is not None, "the queued callable must stay alive until it runs"
    g.open()
    stream.sync()
    assert ran == [True]
    gc.collect()
    assert ref() is None, "the callable must be released once it has run"


def test_exception_surfaces_at_sync_chained(evx, stream):
    log = []

    def boom():
        raise ValueError("raised inside a host function on purpose")
    stream.launch_host_func(boom)
    stream.launch_host_func(lambda: log.append("after"))
    with pytest.raises(evx.CudaError) as ei:
        stream.sync()
    assert log == ["after"], "work after the failed host function still runs"
    err = ei.value
    assert err.status == evx.Status.ERROR_UNKNOWN
    assert isinstance(err.__cause__, ValueError)
    assert "on purpose" in str(err.__cause__)
    assert "Stream.sync" in err.message and "boom" in err.message
    assert not evx._hostfn.failed, "a reported exception must not be kept"
    stream.sync()                   # reported once


def test_exception_surfaces_at_event_after_it(evx, stream):
    before = stream.record()

    def fail():
        raise KeyError("missing")
    stream.launch_host_func(fail, name="lookup")
    after = stream.record()
    before.sync()                   # recorded before it: not its failure
    with pytest.raises(evx.CudaError) as ei:
        after.sync()
    assert isinstance(ei.value.__cause__, KeyError)
    assert "lookup" in ei.value.message
    stream.sync()
    after.sync()


def test_cuda_error_keeps_its_status_and_timeline_reports(evx, dev, stream):
    tl = dev.create_timeline(4)
    tl.mark(stream)

    def refuse():
        raise evx.CudaError(evx.Status.ERROR_INVALID_VALUE, "bad batch")
    stream.launch_host_func(refuse)
    tl.mark(stream)
    with pytest.raises(evx.CudaError) as ei:
        tl.sync()
    assert ei.value.status == evx.Status.ERROR_INVALID_VALUE
    assert ei.value.__cause__.message == "bad batch"
    tl.sync()
    assert len(tl.intervals()) == 1


def test_exception_reported_by_is_done(evx, stream, gate):
    g = gate(stream)
    stream.launch_host_func(lambda: 1 / 0)
    assert stream.is_done is False
    g.open()
    with pytest.raises(evx.CudaError) as ei:
        for _ in range(10000):
            if stream.is_done:
                break
            threading.Event().wait(0.001)
    assert isinstance(ei.value.__cause__, ZeroDivisionError)
    assert stream.is_done is True


def test_plain_host_function_prints_and_drops(evx, stream, capfd):
    def boom():
        raise ValueError("raised inside a plain host function on purpose")
    stream.launch_host_func(boom, errors=False)
    stream.sync()
    err = capfd.readouterr().err
    assert "raised inside a plain host function on purpose" in err
    assert "Stream.launch_host_func" in err


def test_names_and_options_checked(evx, stream):
    with pytest.raises(TypeError):
        stream.launch_host_func(lambda: None, name=3)
    with pytest.raises(ValueError):
        stream.launch_host_func(lambda: None, name="x" * 128)
    with pytest.raises(ValueError):
        stream.launch_host_func(lambda: None, errors=False, spin=True)
    assert not evx._hostfn.pending, "a refused launch must not keep the callable"
    ran = []
    stream.launch_host_func(lambda: ran.append(1), spin=True)
    stream.sync()
    assert ran == [1]
    assert evx.host_func_sync_mode() in (False, True)
    if evx.is_emulation():
        assert evx.host_func_sync_mode() is False   # a CUDA 13.0 driver by default


def test_host_function_runs_on_another_thread(evx, stream):
    seen = []
    stream.launch_host_func(lambda: seen.append(threading.get_ident()))
    stream.sync()
    assert seen and seen[0] != threading.get_ident()


def test_not_callable_and_closed_stream(evx, dev):
    s = dev.create_stream()
    with pytest.raises(TypeError):
        s.launch_host_func(42)
    s.close()
    fn_ran = []
    with pytest.raises(evx.CudaError) as ei:
        s.launch_host_func(lambda: fn_ran.append(1))
    assert ei.value.status == evx.Status.ERROR_INVALID_HANDLE
    assert not evx._hostfn.pending, "a refused launch must not keep the callable"


def test_stream_closed_with_host_functions_queued(evx, dev, gate):
    s = dev.create_stream()
    done = threading.Event()
    g = gate(s)
    s.launch_host_func(done.set)
    s.close()                       # queued work still completes
    g.open()
    assert done.wait(10)
