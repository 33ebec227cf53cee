# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Stream.launch_host_func: order, keep-alive, exceptions."""

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


def test_exception_in_host_function_does_not_crash(evx, stream, capfd):
    log = []

    def boom():
        raise ValueError("raised inside a host function on purpose")
    stream.launch_host_func(boom)
    stream.launch_host_func(lambda: log.append("after"))
    stream.sync()
    assert log == ["after"]
    err = capfd.readouterr().err
    assert "raised inside a host function on purpose" in err
    assert "Stream.launch_host_func" in err


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
