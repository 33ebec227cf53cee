# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Stream.wrap: every accepted form, the keep-alive of the wrapped object,
and refusals. torch and cupy are not needed: fakes with the same attributes
stand in for them (tests/gpu/ uses the real ones)."""

import ctypes
import gc
import weakref

import pytest


class FakeTorchStream:
    def __init__(self, addr):
        self.cuda_stream = addr


class FakeCupyStream:
    def __init__(self, addr):
        self.ptr = addr


class FakeProtocolStream:
    def __init__(self, addr, version=0):
        self._addr = addr
        self._v = version

    def __cuda_stream__(self):
        return (self._v, self._addr)


@pytest.fixture
def owner(dev):
    s = dev.create_stream()
    yield s
    s.sync()
    s.close()


def check_borrowed(evx, s, owner):
    assert s.owned is False
    assert s.native == owner.native
    assert s.device == owner.device
    e = s.record()
    e.sync()
    assert e.is_done


@pytest.mark.parametrize("form", ["int", "c_void_p", "protocol", "torch", "cupy", "evx"])
def test_wrap_forms(evx, owner, form):
    addr = owner.native
    obj = {"int": addr, "c_void_p": ctypes.c_void_p(addr),
           "protocol": FakeProtocolStream(addr), "torch": FakeTorchStream(addr),
           "cupy": FakeCupyStream(addr), "evx": owner}[form]
    s = evx.Stream.wrap(obj)
    check_borrowed(evx, s, owner)
    assert s.wrapped is obj
    s.close()
    # the driver stream survives the borrowed handle
    owner.record().sync()


def test_wrap_with_explicit_device(evx, owner, dev):
    s = evx.Stream.wrap(owner.native, device=dev)
    check_borrowed(evx, s, owner)
    s.close()
    s = evx.Stream.wrap(owner.native, device=0)
    assert s.device is dev
    s.close()


def test_wrap_keeps_the_object_alive_until_close(evx, owner):
    obj = FakeCupyStream(owner.native)
    ref = weakref.ref(obj)
    s = evx.Stream.wrap(obj)
    del obj
    gc.collect()
    assert ref() is not None, "the wrapped object must stay alive while wrapped"
    s.record().sync()
    s.close()
    gc.collect()
    assert ref() is None, "close must drop the reference"


def test_wrap_keeps_alive_until_garbage_collected(evx, owner):
    obj = FakeTorchStream(owner.native)
    ref = weakref.ref(obj)
    s = evx.Stream.wrap(obj)
    del obj
    gc.collect()
    assert ref() is not None
    del s
    gc.collect()
    assert ref() is None


def test_default_streams(evx, dev):
    for addr in (evx._capi.EVX_STREAM_LEGACY, evx._capi.EVX_STREAM_PER_THREAD):
        # a default stream needs a device, here none: no context is current
        # (on a GPU another test or framework may have made one current)
        with CurrentContext(evx, None), pytest.raises(evx.CudaError) as ei:
            evx.Stream.wrap(addr)
        assert ei.value.status == evx.Status.ERROR_INVALID_VALUE
        s = evx.Stream.wrap(addr, device=dev)
        assert s.native == addr and s.device is dev
        s.record().sync()
        s.close()


def test_evx_stream_handed_to_others_by_protocol(evx, owner):
    # What cuda.core's Stream.from_handle / Device.create_stream(obj) read.
    version, addr = owner.__cuda_stream__()
    assert version == 0 and addr == owner.native


@pytest.mark.parametrize("bad,exc", [
    ("0x1234", TypeError), (1.5, TypeError), (None, TypeError), (True, TypeError),
    (-1, ValueError), (1 << 64, ValueError),
    (FakeProtocolStream(0, version=1), ValueError),
])
def test_wrap_refusals(evx, bad, exc):
    with pytest.raises(exc):
        evx.Stream.wrap(bad)


def test_bad_protocol_result(evx):
    class Bad:
        def __cuda_stream__(self):
            return 5
    with pytest.raises(TypeError):
        evx.Stream.wrap(Bad())


def test_wrap_wrong_device_is_refused(evx, owner):
    if evx.device_count() < 2:
        pytest.skip("needs 2 devices (the host emulation shows 2 with EVX_HOST_DEVICES=2)")
    with pytest.raises(evx.CudaError) as ei:
        evx.Stream.wrap(owner.native, device=1)
    assert ei.value.status == evx.Status.ERROR_INVALID_VALUE


def test_default_stream_device_read_from_framework_objects(evx, dev):
    import types
    torch_like = FakeTorchStream(0)
    torch_like.device = types.SimpleNamespace(index=0, type="cuda")
    cupy_like = FakeCupyStream(evx._capi.EVX_STREAM_LEGACY)
    cupy_like.device_id = 0
    core_like = FakeProtocolStream(evx._capi.EVX_STREAM_PER_THREAD)
    core_like.device = types.SimpleNamespace(device_id=0)
    for obj in (torch_like, cupy_like, core_like):
        s = evx.Stream.wrap(obj)
        assert s.device is dev
        s.record().sync()
        s.close()
    # without a hint and with no context current, a default stream is refused
    with CurrentContext(evx, None), pytest.raises(evx.CudaError):
        evx.Stream.wrap(FakeTorchStream(0))


class CurrentContext:
    """Makes device ``ordinal``'s primary context current on the calling
    thread (None: no context current), through the driver evx opened (the
    host emulation or libcuda), as CuPy's or PyTorch's first CUDA call on a
    thread does; puts the thread's context back on exit."""

    def __init__(self, evx, ordinal):
        self.cu = ctypes.CDLL(evx.driver_path())
        for name in ("cuCtxGetCurrent", "cuCtxSetCurrent", "cuDeviceGet",
                     "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease_v2"):
            getattr(self.cu, name).restype = ctypes.c_int
        self.cu.cuCtxSetCurrent.argtypes = [ctypes.c_void_p]
        self.ordinal = ordinal
        self.dev = ctypes.c_int(-1)

    def __enter__(self):
        self.prev = ctypes.c_void_p()
        assert self.cu.cuCtxGetCurrent(ctypes.byref(self.prev)) == 0
        ctx = ctypes.c_void_p()
        if self.ordinal is not None:
            assert self.cu.cuDeviceGet(ctypes.byref(self.dev), self.ordinal) == 0
            assert self.cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), self.dev) == 0
        assert self.cu.cuCtxSetCurrent(ctx) == 0
        return self

    def __exit__(self, *exc):
        assert self.cu.cuCtxSetCurrent(self.prev) == 0
        if self.ordinal is not None:
            assert self.cu.cuDevicePrimaryCtxRelease_v2(self.dev) == 0
        return False


def null_streams(evx):
    """Default streams that name no device, as frameworks hand them out: a
    CuPy null stream (device_id -1), a __cuda_stream__ producer with no
    device, and the raw addresses 0, 1, 2."""
    cupy_null = FakeCupyStream(0)
    cupy_null.device_id = -1                 # CuPy's Stream.null
    return [cupy_null, FakeProtocolStream(evx._capi.EVX_STREAM_LEGACY), 0,
            evx._capi.EVX_STREAM_LEGACY, evx._capi.EVX_STREAM_PER_THREAD]


def test_default_stream_device_from_the_current_context(evx):
    # The last device, so that it is not the default ordinal 0 when there
    # are two (the host emulation shows two).
    last = evx.device_count() - 1
    with CurrentContext(evx, last):
        for obj in null_streams(evx):
            s = evx.Stream.wrap(obj)
            assert s.device is evx.Device(last), obj
            assert s.native == evx._native.address(obj)
            s.record().sync()
            s.close()
            with evx.timed(obj) as t:        # timed borrows it the same way
                pass
            assert t.elapsed_ms >= 0.0


def test_default_stream_device_from_the_object_or_argument_first(evx):
    if evx.device_count() < 2:
        pytest.skip("needs 2 devices (the host emulation shows 2 with EVX_HOST_DEVICES=2)")
    torch_like = FakeTorchStream(0)
    import types
    torch_like.device = types.SimpleNamespace(index=0, type="cuda")
    with CurrentContext(evx, 1):
        s = evx.Stream.wrap(torch_like)      # the object says device 0
        assert s.device is evx.Device(0)
        s.close()
        s = evx.Stream.wrap(0, device=0)     # and so does the caller
        assert s.device is evx.Device(0)
        s.close()


def test_default_stream_with_no_device_known_is_refused(evx):
    with CurrentContext(evx, None):
        for obj in null_streams(evx):
            with pytest.raises(evx.CudaError) as ei:
                evx.Stream.wrap(obj)
            assert ei.value.status == evx.Status.ERROR_INVALID_VALUE
            assert ei.value.message.startswith("Stream.wrap: ")
            assert "is a default stream" in ei.value.message
            assert "pass the device ordinal" in ei.value.message


def test_default_stream_device_named_out_of_range_is_refused(evx):
    # The object's device reaches C only once checked, as the caller's does.
    cupy_like = FakeCupyStream(0)
    cupy_like.device_id = 1 << 63
    with pytest.raises(ValueError, match="Stream.wrap: the device FakeCupyStream names "
                                         "9223372036854775808 is outside"):
        evx.Stream.wrap(cupy_like)
