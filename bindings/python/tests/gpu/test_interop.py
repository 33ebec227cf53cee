# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Interop with PyTorch, CuPy and cuda.core on a real GPU.

Run on the GPU machine with the real driver (EVX_DRIVER unset):

    EVX_LIBRARY=build/src/libevx.so.0 python3 -m pytest bindings/python/tests/gpu -v -rs

Every test is skipped, with the reason, unless torch.cuda.is_available()
(and the framework it needs imports), and unless evx opened a GPU driver.
"""

import ctypes
import gc
import weakref

import pytest

from gpu_only import cuda_core_or_skip, cupy_or_skip, torch_and_evx_on_gpu

torch, evx = torch_and_evx_on_gpu(
    "to test interop on", "not a GPU driver; unset EVX_DRIVER to test interop on the GPU")


def _cupy():
    return cupy_or_skip()


def _cuda_core():
    cc = cuda_core_or_skip()
    return cc.Device, cc.Stream


@pytest.fixture(scope="module")
def mats():
    torch.manual_seed(0)
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    for _ in range(2):           # warm up cuBLAS
        a @ b
    torch.cuda.synchronize()
    return a, b


def agree(x_ms, y_ms):
    return abs(x_ms - y_ms) <= max(0.02 * y_ms, 0.005)


def test_matmul_timing_matches_torch_events(mats):
    a, b = mats
    ts = torch.cuda.current_stream()
    es = evx.Stream.wrap(ts)            # through __cuda_stream__ or .cuda_stream
    assert es.native == ts.cuda_stream
    dev = evx.Device(torch.cuda.current_device())
    e0, e1 = dev.create_event(), dev.create_event()
    t0 = torch.cuda.Event(enable_timing=True)
    t1 = torch.cuda.Event(enable_timing=True)
    results = []
    for _ in range(3):
        e0.record(es)
        t0.record(ts)
        for _ in range(5):
            a @ b
        t1.record(ts)
        e1.record(es)
        e1.sync()
        results.append((e1 - e0, t0.elapsed_time(t1)))
    for evx_ms, torch_ms in results:
        assert torch_ms > 1.0, "the matmuls should take milliseconds"
        assert agree(evx_ms, torch_ms), results
    es.close()


def test_timed_on_a_torch_stream(mats):
    a, b = mats
    ts = torch.cuda.Stream()
    t0 = torch.cuda.Event(enable_timing=True)
    t1 = torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(ts):
        with evx.timed(ts) as t:
            t0.record(ts)
            for _ in range(5):
                a @ b
            t1.record(ts)
    ms = t.elapsed_ms
    assert agree(ms, t0.elapsed_time(t1)), (ms, t0.elapsed_time(t1))


def test_wrap_keeps_the_torch_stream_alive():
    ts = torch.cuda.Stream()
    ref = weakref.ref(ts)
    es = evx.Stream.wrap(ts)
    del ts
    gc.collect()
    assert ref() is not None
    es.record().sync()
    es.close()
    gc.collect()
    assert ref() is None


def test_evx_stream_handed_to_torch(mats):
    a, b = mats
    es = evx.Device(0).create_stream()
    ts = torch.cuda.ExternalStream(es.native)
    assert ts.cuda_stream == es.native
    with torch.cuda.stream(ts):
        c = a @ b
    done = es.record()
    done.sync()
    torch.cuda.synchronize()
    assert torch.equal(c, a @ b)
    es.close()


def test_evx_stream_handed_to_torch_by_protocol():
    es = evx.Device(0).create_stream()
    try:
        ts = torch.cuda.ExternalStream(es)
    except (TypeError, RuntimeError) as e:
        es.close()
        pytest.skip("torch %s does not accept a __cuda_stream__ object in "
                    "ExternalStream: %s" % (torch.__version__, e))
    assert ts.cuda_stream == es.native
    es.close()


def test_wrap_cupy_stream():
    cp = _cupy()
    cs = cp.cuda.Stream(non_blocking=True)
    es = evx.Stream.wrap(cs)
    assert es.native == cs.ptr
    with cs:
        x = cp.arange(1 << 20, dtype=cp.float32) * 2
    ev = es.record()
    ev.sync()
    assert float(x[-1]) == float((1 << 20) - 1) * 2
    es.close()
    # the .ptr form alone (CuPy before the stream protocol)
    class PtrOnly:
        ptr = cs.ptr
    es2 = evx.Stream.wrap(PtrOnly())
    assert es2.native == cs.ptr
    es2.close()


def test_wrap_cupy_default_streams_with_no_device():
    # CuPy's current stream is its null stream unless the user made another
    # (device_id -1: it names no device); evx takes the device as CuPy does,
    # from the thread's current context. The last GPU, so that it is not
    # the default ordinal 0 on a machine of several.
    cp = _cupy()
    last = cp.cuda.runtime.getDeviceCount() - 1
    with cp.cuda.Device(last):
        x = cp.arange(1 << 20, dtype=cp.float32)    # CuPy's context is current
        for obj in (cp.cuda.get_current_stream(), cp.cuda.Stream.null):
            es = evx.Stream.wrap(obj)
            assert es.native == obj.ptr
            assert es.device is evx.Device(last)
            with evx.timed(obj) as t:
                y = (x * 2).sum()
            assert t.elapsed_ms > 0.0
            assert float(y) == float(x.sum()) * 2
            es.record().sync()
            es.close()


def test_wrap_torch_default_stream_and_raw_zero():
    last = torch.cuda.device_count() - 1
    with torch.cuda.device(last):
        torch.zeros(1, device="cuda")            # torch's context is current
        ts = torch.cuda.default_stream()
        es = evx.Stream.wrap(ts)                 # torch's object names it
        assert es.device is evx.Device(last)
        es.record().sync()
        es.close()
        es = evx.Stream.wrap(0)                  # the current context names it
        assert es.device is evx.Device(last)
        es.record().sync()
        es.close()


def test_wrap_cuda_core_default_stream():
    Device, _ = _cuda_core()
    d = Device(0)
    d.set_current()
    es = evx.Stream.wrap(d.default_stream)
    assert es.device is evx.Device(0)
    es.record().sync()
    es.close()


def test_wrap_cuda_core_stream():
    Device, _ = _cuda_core()
    d = Device(0)
    d.set_current()
    s = d.create_stream()
    es = evx.Stream.wrap(s)             # __cuda_stream__
    assert es.native == int(s.handle)
    es.record().sync()
    es.close()
    es = evx.Stream.wrap(int(s.handle))
    es.record().sync()
    es.close()
    s.close()


def test_evx_stream_handed_to_cuda_core():
    Device, Stream = _cuda_core()
    d = Device(0)
    d.set_current()
    es = evx.Device(0).create_stream()
    s1 = Stream.from_handle(es.native)
    assert int(s1.handle) == es.native
    s2 = d.create_stream(es)            # an object with __cuda_stream__
    assert int(s2.handle) == es.native
    e = s2.record()
    e.sync()
    es.close()


def test_cross_framework_ordering():
    """Slow work on a torch stream; an evx event recorded there; a CuPy
    stream made to wait for it through evx; then a CuPy op on the torch
    result. The result must be exact: without the wait, CuPy would read the
    buffer before torch has written it."""
    cp = _cupy()
    n = 1 << 24
    ts = torch.cuda.Stream()
    cs = cp.cuda.Stream(non_blocking=True)
    x = torch.full((n,), 1.0, device="cuda", dtype=torch.float32)
    y = torch.zeros(n, device="cuda", dtype=torch.float32)
    torch.cuda.synchronize()
    with torch.cuda.stream(ts):
        if hasattr(torch.cuda, "_sleep"):
            torch.cuda._sleep(200_000_000)        # ~0.1 s of spinning
        z = x
        for _ in range(40):
            z = z * 1.0 + 0.0
        y.copy_(z * 3.0)
    ev = evx.Stream.wrap(ts).record(evx.Device(0).create_event(timing=False))
    ecs = evx.Stream.wrap(cs)
    ecs.wait(ev)
    # Read y's memory directly (no __cuda_array_interface__ sync), on cs.
    mem = cp.cuda.UnownedMemory(y.data_ptr(), n * 4, y)
    arr = cp.ndarray((n,), dtype=cp.float32, memptr=cp.cuda.MemoryPointer(mem, 0))
    with cs:
        out = arr * 2.0
    cs.synchronize()
    assert bool((out == 6.0).all()), "CuPy read the torch buffer before it was written"
    ecs.close()


def test_native_event_is_a_cuevent():
    # cuEventQuery through libcuda on evx's CUevent agrees with evx.
    cu = ctypes.CDLL("libcuda.so.1")
    cu.cuEventQuery.argtypes = [ctypes.c_void_p]
    cu.cuEventQuery.restype = ctypes.c_int
    es = evx.Device(0).create_stream()
    ev = es.record()
    ev.sync()
    assert cu.cuEventQuery(ev.native) == 0
    es.close()
