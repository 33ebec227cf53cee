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
        with pytest.raises(evx.CudaError) as ei:
            evx.Stream.wrap(addr)            # a default stream needs a device
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
    # without a hint, a default stream is refused
    with pytest.raises(evx.CudaError):
        evx.Stream.wrap(FakeTorchStream(0))
