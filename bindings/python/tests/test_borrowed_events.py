# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Event.wrap and the calls that take another framework's event directly
(Stream.wait, Event.elapsed_since, evx.aio.wait), and what evx events offer
other frameworks (__cuda_event__, .ptr, .wait(stream)). torch, CuPy and
cuda.core are not needed: stand-ins with the attributes each framework's
event has hold CUevents made with the raw driver (tests/gpu/ uses the real
frameworks)."""

import asyncio
import ctypes
import gc
import weakref

import pytest

import rawdriver


class FakeTorchDevice:
    def __init__(self, index):
        self.index = index


class FakeTorchEvent:                      # torch.cuda.Event
    def __init__(self, addr, device=0):
        self.cuda_event = addr
        self.device = None if device is None else FakeTorchDevice(device)


class FakeCupyEvent:                       # cupy.cuda.Event
    def __init__(self, addr):
        self.ptr = addr


class FakeCUevent:                         # cuda.bindings.driver.CUevent
    def __init__(self, addr):
        self._addr = addr

    def __int__(self):
        return self._addr


class FakeCoreDevice:
    def __init__(self, device_id):
        self.device_id = device_id


class FakeCoreEvent:                       # cuda.core Event
    def __init__(self, addr, device=0):
        self.handle = FakeCUevent(addr)
        self.device = FakeCoreDevice(device)


class FakeProtocolEvent:                   # docs/protocols.md, version 0
    def __init__(self, addr, device=0, reply=None):
        self._reply = (0, addr, device) if reply is None else reply

    def __cuda_event__(self):
        return self._reply


class FakeTorchStream:                     # torch.cuda.Stream
    def __init__(self, addr):
        self.cuda_stream = addr


FORMS = {
    "protocol": FakeProtocolEvent,
    "torch": FakeTorchEvent,
    "cupy": FakeCupyEvent,
    "cuda.core": FakeCoreEvent,
}


class Raw:
    """CUevents of device 0's primary context, made and destroyed with the
    raw driver, as a framework makes its own. It holds its own retain of
    the primary context until close(): released after each event, the
    context (and the events made in it) would be destroyed whenever evx
    held no retain of its own, as a real driver does."""

    def __init__(self, evx):
        self.cu = rawdriver.open_driver(evx)
        self.made = []
        self.ctx = ctypes.c_void_p()
        assert self.cu.cuDevicePrimaryCtxRetain(ctypes.byref(self.ctx), 0) == 0

    def _current(self):
        prev = ctypes.c_void_p()
        assert self.cu.cuCtxGetCurrent(ctypes.byref(prev)) == 0
        assert self.cu.cuCtxSetCurrent(self.ctx) == 0
        return prev

    def _restore(self, prev):
        assert self.cu.cuCtxSetCurrent(prev) == 0

    def event(self, flags=0):
        prev = self._current()
        try:
            ev = ctypes.c_void_p()
            assert self.cu.cuEventCreate(ctypes.byref(ev), flags) == 0
        finally:
            self._restore(prev)
        self.made.append(ev.value)
        return ev.value

    def record(self, ev, stream):
        assert self.cu.cuEventRecord(ev, stream.native) == 0

    def query(self, ev):
        return self.cu.cuEventQuery(ev)

    def close(self):
        for ev in self.made:
            assert self.cu.cuEventDestroy_v2(ev) == 0
        assert self.cu.cuDevicePrimaryCtxRelease_v2(0) == 0


@pytest.fixture
def raw(evx):
    r = Raw(evx)
    yield r
    r.close()


def wrapped_and_done(evx, form, raw, stream):
    """An evx event borrowing a raw event through ``form``, with the raw
    event recorded on ``stream``, which has completed."""
    addr = raw.event()
    obj = FORMS[form](addr)
    if form == "cupy":
        # A CuPy event names no device: the current context's is taken, as
        # CuPy's own calls take it (CuPy keeps its device's context current).
        prev = raw._current()
        try:
            e = evx.Event.wrap(obj)
        finally:
            raw._restore(prev)
    else:
        e = evx.Event.wrap(obj)
    raw.record(addr, stream)
    stream.sync()
    return addr, obj, e


@pytest.mark.parametrize("form", sorted(FORMS))
def test_wrap_each_form(evx, raw, stream, form):
    addr, obj, e = wrapped_and_done(evx, form, raw, stream)
    assert e.is_owned is False
    assert e.native == addr and e.ptr == addr
    assert e.device == evx.Device(0)
    assert e.is_done
    e.sync()
    e.record(stream)                 # evx records the borrowed event too
    stream.sync()
    assert e.is_done
    ref = weakref.ref(obj)
    del obj
    gc.collect()
    assert ref() is not None, "the borrow keeps the object alive"
    e.close()
    gc.collect()
    assert ref() is None, "closing the borrow drops the object"
    assert raw.query(addr) == 0, "evx never destroys a borrowed driver event"


def test_wrap_an_address_needs_the_device(evx, raw, stream):
    addr = raw.event()
    with pytest.raises(ValueError, match=r"Event\.wrap: device= is needed with a raw event "
                                         r"address \(0x[0-9a-f]+\): the driver cannot tell"):
        evx.Event.wrap(addr)
    for obj in (addr, ctypes.c_void_p(addr)):
        e = evx.Event.wrap(obj, device=0)
        assert e.native == addr and e.is_owned is False
        e.record(stream)
        e.sync()
        e.close()
    e = evx.Event.wrap(addr, device=evx.Device(0))
    assert e.device == evx.Device(0)
    e.close()


def test_wrap_reads_the_current_device(evx, raw, stream):
    # A torch.cuda.Event that names no device (and a CuPy event) take the
    # device of the calling thread's current context.
    addr = raw.event()
    prev = raw._current()
    try:
        e = evx.Event.wrap(FakeTorchEvent(addr, device=None))
        assert e.device == evx.Device(0)
        e.close()
    finally:
        raw._restore(prev)
    # With no context current (set so here: on a GPU the thread may still
    # have one from an earlier test or framework), the wrap is refused.
    prev = ctypes.c_void_p()
    assert raw.cu.cuCtxGetCurrent(ctypes.byref(prev)) == 0
    assert raw.cu.cuCtxSetCurrent(None) == 0
    try:
        with pytest.raises(evx.CudaError, match="EVX_DEVICE_CURRENT was given, but no context"):
            evx.Event.wrap(FakeCupyEvent(addr))
    finally:
        assert raw.cu.cuCtxSetCurrent(prev) == 0


def test_own_events_are_owned(evx, dev, stream):
    e = dev.create_event()
    assert e.is_owned is True
    assert e.__cuda_event__() == (0, e.native, 0)
    assert e.ptr == e.native
    e.close()


def test_borrowed_flags_are_unknown(evx, raw):
    e = evx.Event.wrap(FakeCupyEvent(raw.event()), device=0)
    with pytest.raises(evx.CudaError, match="is borrowed") as ei:
        e.flags
    assert ei.value.status == evx.Status.ERROR_NOT_SUPPORTED
    e.close()


def test_refusals_name_the_call_and_value(evx, raw, dev, stream):
    addr = raw.event()
    fence = dev.create_fence()
    cases = [
        (FakeTorchEvent(0), ValueError,
         r"Event\.wrap: the FakeTorchEvent has no CUDA event yet \(cuda_event is 0\).*"
         r"record it first"),
        (FakeProtocolEvent(addr, reply=(1, addr, 0)), ValueError,
         r"speaks protocol version 1; evx knows version 0"),
        (FakeProtocolEvent(addr, reply=(0, addr)), TypeError,
         r"returned \(0, \d+\), not a \(version, handle, device_ordinal\) tuple"),
        (FakeProtocolEvent(addr, reply=(0, "x", 0)), TypeError, r"its items must be ints"),
        (FakeProtocolEvent(addr, reply=(0, addr, -1)), ValueError, r"names device -1"),
        (FakeProtocolEvent(0), ValueError, r"Event\.wrap: 0 is not an event address "
                                           r"\(FakeProtocolEvent gave it\)"),
        (stream, TypeError, r"Event\.wrap: Stream is a stream, not an event"),
        (FakeTorchStream(stream.native), TypeError, r"FakeTorchStream is a stream"),
        ("text", TypeError, r"Event\.wrap: cannot read a CUDA event from str"),
        (True, TypeError, r"Event\.wrap: a bool \(True\) is not an event"),
        (fence, TypeError, r"Event\.wrap: an evx\.Fence is not an event"),
    ]
    for obj, exc, pattern in cases:
        with pytest.raises(exc, match=pattern):
            evx.Event.wrap(obj)
    # Closed here, not left to the collector, so that no later test runs
    # this fence's destroy at a point of the collector's choosing.
    fence.close()
    with pytest.raises(ValueError, match=r"device=1 was given, but the FakeCoreEvent is of "
                                         r"device 0"):
        evx.Event.wrap(FakeCoreEvent(addr), device=1)
    with pytest.raises(evx.CudaError) as ei:
        evx.Event.wrap(addr, device=7)
    assert ei.value.status == evx.Status.ERROR_INVALID_DEVICE


def test_failed_wrap_keeps_no_reference(evx, raw):
    from evx import _native
    before = dict(_native.held)
    obj = FakeProtocolEvent(raw.event(), device=7)
    with pytest.raises(evx.CudaError):
        evx.Event.wrap(obj)
    assert _native.held == before


def test_stream_wait_takes_a_foreign_event(evx, raw, dev, gate):
    a, b = dev.create_stream(), dev.create_stream()
    addr = raw.event()
    g = gate(a)
    raw.record(addr, a)                      # pending behind the gate
    for form in sorted(FORMS):
        b.wait(FORMS[form](addr))
    after = b.record()
    assert not after.is_done, "b waits for the foreign event"
    g.open()
    after.sync()
    assert raw.query(addr) == 0
    with pytest.raises(TypeError, match=r"Stream\.wait\(\) needs an evx\.Event.*not int"):
        b.wait(addr)                          # an address names no device
    a.close()
    b.close()


def test_elapsed_since_a_foreign_event(evx, raw, stream):
    start = raw.event()
    raw.record(start, stream)
    end = stream.record()
    end.sync()
    for form in sorted(FORMS):
        assert end.elapsed_since(FORMS[form](start)) >= 0.0
    untimed = raw.event(flags=2)             # CU_EVENT_DISABLE_TIMING
    raw.record(untimed, stream)
    stream.sync()
    with pytest.raises(evx.CudaError, match=r"may have been created without timing") as ei:
        end.elapsed_since(FakeCupyEvent(untimed))
    assert ei.value.status == evx.Status.ERROR_INVALID_HANDLE


def test_aio_wait_takes_a_foreign_event(evx, raw, dev, gate):
    s = dev.create_stream()
    addr = raw.event()
    g = gate(s)
    raw.record(addr, s)

    async def main():
        fut = evx.aio.wait(FakeTorchEvent(addr))
        await asyncio.sleep(0.05)
        assert not fut.done(), "the watch waits for the foreign event's record"
        g.open()
        await asyncio.wait_for(fut, 10)

    import evx.aio  # noqa: F401 (a submodule the package does not import)
    asyncio.run(main())
    s.sync()
    s.close()


def test_their_streams_wait_for_evx_events(evx, dev, gate):
    # torch's Stream.wait_event(e) calls e.wait(stream); CuPy's reads e.ptr.
    a, b = dev.create_stream(), dev.create_stream()
    g = gate(a)
    e = a.record()
    for target in (FakeTorchStream(b.native), b):
        e.wait(target)
    after = b.record()
    assert not after.is_done
    g.open()
    after.sync()
    with pytest.raises(TypeError, match=r"Event\.wait: cannot read a CUDA stream from str"):
        e.wait("text")
    e.close()
    with pytest.raises(evx.CudaError, match=r"Event\.wait: the event is closed"):
        e.wait(FakeTorchStream(b.native))
    a.close()
    b.close()


def test_evx_event_round_trips_through_the_protocol(evx, dev, stream):
    own = stream.record()
    stream.sync()
    borrowed = evx.Event.wrap(own)           # through own.__cuda_event__()
    assert borrowed.is_owned is False and borrowed.native == own.native
    assert borrowed.elapsed_since(own) == 0.0
    borrowed.close()
    assert own.is_done                       # the owner's event lives on
    own.close()
