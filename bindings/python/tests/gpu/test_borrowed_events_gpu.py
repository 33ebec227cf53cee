# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Borrowed events with real PyTorch, CuPy and cuda.core events, both ways:
evx waits on, times and awaits theirs (Event.wrap, Stream.wait,
Event.elapsed_since, evx.aio.wait), and their streams wait on evx's
(torch ``Stream.wait_event(e)``, CuPy ``Stream.wait_event(e)``; cuda.core's
``Stream.wait`` takes only its own events and streams, so ``e.wait(stream)``
does it there).

Run on the GPU machine with the real driver (EVX_DRIVER unset), by
``scripts/gpu-check.sh interop`` (named apart from the emulation's
bindings/python/tests/test_borrowed_events.py: pytest imports both in one
run). Pending GPU work is torch.cuda._sleep
(a kernel that spins for a number of clock cycles) queued on each
framework's stream; every module-level test is skipped, with the reason,
without PyTorch on a GPU, and each framework's tests without it.
"""

import asyncio
import gc

import pytest

from gpu_only import cuda_core_or_skip, cupy_or_skip, torch_and_evx_on_gpu

torch, evx = torch_and_evx_on_gpu(
    "for real framework events", "not a GPU driver; unset EVX_DRIVER to test them")

import evx.aio  # noqa: E402 (after the gate: evx is the package under test)

SPIN = 200_000_000          # cycles: about 0.1 s on current GPUs


def _cupy():
    return cupy_or_skip()


def _cuda_core():
    cc = cuda_core_or_skip()
    return cc.Device, cc.EventOptions


def spin_on(native_stream):
    """Queues SPIN cycles of GPU work on a stream of any framework."""
    with torch.cuda.stream(torch.cuda.ExternalStream(native_stream)):
        torch.cuda._sleep(SPIN)


def agree(x_ms, y_ms):
    return abs(x_ms - y_ms) <= max(0.02 * y_ms, 0.005)


# --------------------------------------------------------------------------
# PyTorch


def test_torch_event_unrecorded_is_refused():
    with pytest.raises(ValueError, match="record it first"):
        evx.Event.wrap(torch.cuda.Event())


def test_evx_waits_times_and_awaits_a_torch_event():
    ts = torch.cuda.Stream()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record(ts)
    spin_on(ts.cuda_stream)
    end.record(ts)
    e = evx.Event.wrap(end)
    assert e.is_owned is False and e.native == end.cuda_event
    assert e.device is evx.Device(torch.cuda.current_device())
    es = e.device.create_stream()
    es.wait(end)                                   # directly, borrowed for the call
    after = es.record()
    assert not after.is_done, "the evx stream waits for torch's spin"

    async def main():
        await asyncio.wait_for(evx.aio.wait(end), 30)
    asyncio.run(main())
    assert end.query()
    after.sync()
    ms = e.elapsed_since(start)
    assert ms > 0.0 and agree(ms, start.elapsed_time(end))
    del end
    gc.collect()
    assert e.is_done, "the borrow keeps torch's event alive"
    e.close()
    es.close()


def test_torch_stream_waits_for_an_evx_event():
    ta, tb = torch.cuda.Stream(), torch.cuda.Stream()
    n = 1 << 24
    x = torch.full((n,), 1.0, device="cuda")
    y = torch.zeros(n, device="cuda")
    y.sum()                    # loads the kernels first: lazy loading blocks the
    torch.cuda.synchronize()   # host for longer than the spin lasts
    ea = evx.Stream.wrap(ta)
    spin_on(ta.cuda_stream)
    with torch.cuda.stream(ta):
        y.copy_(x)
    done = ea.record()                             # an evx event
    tb.wait_event(done)                            # torch calls done.wait(tb)
    with torch.cuda.stream(tb):
        total = y.sum()
        marker = torch.cuda.Event()
        marker.record(tb)
    assert not marker.query(), "torch's stream waits for the evx event"
    tb.synchronize()
    assert float(total) == float(n)
    ea.close()


# --------------------------------------------------------------------------
# CuPy


def test_evx_waits_times_and_awaits_a_cupy_event():
    cp = _cupy()
    cs = cp.cuda.Stream(non_blocking=True)
    with cp.cuda.Device(0):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record(cs)
        spin_on(cs.ptr)
        end.record(cs)
        es = evx.Device(0).create_stream()
        es.wait(end)                               # .ptr; the stream's device
        after = es.record()
        assert not after.is_done, "the evx stream waits for CuPy's spin"

        async def main():
            await asyncio.wait_for(evx.aio.wait(end), 30)
        asyncio.run(main())
        assert end.done
        after.sync()
        e = evx.Event.wrap(end)                    # CuPy's context is current
        assert e.device is evx.Device(0) and e.native == end.ptr
        ms = e.elapsed_since(start)
        assert ms > 0.0 and agree(ms, cp.cuda.get_elapsed_time(start, end))
        e.close()
        es.close()


def test_cupy_stream_waits_for_an_evx_event():
    cp = _cupy()
    with cp.cuda.Device(0):
        ca, cb = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
        ea = evx.Stream.wrap(ca)
        spin_on(ca.ptr)
        done = ea.record()
        cb.wait_event(done)                        # CuPy reads done.ptr
        marker = cp.cuda.Event()
        marker.record(cb)
        assert not marker.done, "CuPy's stream waits for the evx event"
        cb.synchronize()
        assert done.is_done
        ea.close()


# --------------------------------------------------------------------------
# cuda.core


def test_evx_waits_and_times_a_cuda_core_event():
    Device, EventOptions = _cuda_core()
    d = Device(0)
    d.set_current()
    s = d.create_stream()
    try:  # cuda.core renamed enable_timing to timing_enabled
        opts = EventOptions(timing_enabled=True)
    except TypeError:
        opts = EventOptions(enable_timing=True)
    start = s.record(options=opts)
    spin_on(int(s.handle))
    end = s.record(options=opts)
    e = evx.Event.wrap(end)                        # .handle, .device.device_id
    assert e.native == int(end.handle) and e.device is evx.Device(0)
    es = evx.Device(0).create_stream()
    es.wait(end)
    after = es.record()
    assert not after.is_done, "the evx stream waits for cuda.core's spin"
    after.sync()
    ms = e.elapsed_since(start)
    assert ms > 0.0 and agree(ms, end - start)
    e.close()
    es.close()
    s.close()


def test_cuda_core_stream_waits_for_an_evx_event():
    # cuda.core's Stream.wait takes its own Event or a stream
    # (__cuda_stream__), not __cuda_event__: the evx event's wait() makes
    # the cuda.core stream wait (borrowing it for the call).
    Device, _ = _cuda_core()
    d = Device(0)
    d.set_current()
    a, b = d.create_stream(), d.create_stream()
    spin_on(int(a.handle))
    done = evx.Stream.wrap(a).record()
    done.wait(b)
    marker = b.record()
    assert not marker.is_done, "cuda.core's stream waits for the evx event"
    marker.sync()
    assert done.is_done
    a.close()
    b.close()


def test_evx_event_through_the_protocol():
    es = evx.Device(0).create_stream()
    spin_on(es.native)
    own = es.record()
    version, handle, device = own.__cuda_event__()
    assert (version, handle, device) == (0, own.native, 0)
    borrowed = evx.Event.wrap(own)
    assert borrowed.is_owned is False and not borrowed.is_done
    borrowed.sync()
    assert own.is_done
    borrowed.close()
    own.close()
    es.close()
