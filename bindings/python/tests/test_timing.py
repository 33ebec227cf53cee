# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""evx.timed, Timeline and EventPool."""

import time

import pytest

from test_wrap import FakeCupyStream


def test_timed_region(evx, stream):
    with evx.timed(stream) as t:
        stream.launch_host_func(lambda: time.sleep(0.02))
    ms = t.elapsed_ms
    assert isinstance(ms, float)
    assert ms >= 0.0
    assert t.elapsed_ms == ms          # read once, cached


def test_timed_synchronizes_lazily(evx, stream, gate):
    with evx.timed(stream) as t:
        g = gate(stream)
    # the stop mark is behind the gate: nothing has waited yet
    assert stream.is_done is False
    g.open()
    assert t.elapsed_ms >= 0.0
    assert stream.is_done


def test_timed_measures_host_time_on_the_emulation(evx, stream):
    if not evx.is_emulation():
        pytest.skip("on a GPU a host function's sleep is not GPU time")
    with evx.timed(stream) as t:
        stream.launch_host_func(lambda: time.sleep(0.05))
    assert 40.0 <= t.elapsed_ms < 5000.0


def test_timed_accepts_wrappable_streams(evx, stream):
    with evx.timed(FakeCupyStream(stream.native)) as t:
        pass
    assert t.elapsed_ms >= 0.0


def test_timed_misuse(evx, stream):
    t = evx.timed(stream)
    with pytest.raises(RuntimeError):
        t.elapsed_ms
    with t:
        with pytest.raises(RuntimeError):
            t.elapsed_ms
    t.elapsed_ms
    with pytest.raises(RuntimeError):
        with t:
            pass


def test_timed_block_raising_still_stops(evx, stream):
    with pytest.raises(KeyError):
        with evx.timed(stream) as t:
            raise KeyError("inside")
    assert t.elapsed_ms >= 0.0


def test_timed_blocks_each_time_their_own_block(evx, stream):
    got = []
    for _ in range(50):
        with evx.timed(stream) as t:     # the previous t dies on rebinding
            pass
        got.append(t.elapsed_ms)
    assert all(ms >= 0.0 for ms in got)


def test_timeline(evx, dev, stream):
    tl = evx.Timeline(dev, 5)
    assert tl.intervals() == []
    for i in range(5):
        assert tl.mark(stream) == i
    with pytest.raises(evx.CudaError) as ei:
        tl.mark(stream)
    assert ei.value.status == evx.Status.ERROR_OUT_OF_MEMORY
    assert len(tl) == tl.count == 5
    iv = tl.intervals()
    assert len(iv) == 4 and all(isinstance(x, float) and x >= 0.0 for x in iv)
    tl.reset()
    assert tl.count == 0
    tl.mark(stream)
    assert tl.intervals() == []
    tl.close()
    tl.close()
    with pytest.raises(evx.CudaError):
        tl.mark(stream)


def test_timeline_intervals_wait_for_pending_marks(evx, dev, stream, gate):
    tl = evx.Timeline(dev, 3)
    tl.mark(stream)
    g = gate(stream)
    tl.mark(stream)
    import threading
    threading.Timer(0.05, g.open).start()
    iv = tl.intervals()          # synchronizes with the last mark
    assert len(iv) == 1 and iv[0] >= 0.0


def test_timeline_bad_capacity(evx, dev):
    with pytest.raises(evx.CudaError) as ei:
        evx.Timeline(dev, 1)
    assert ei.value.status == evx.Status.ERROR_INVALID_VALUE


def test_event_pool(evx, dev, stream):
    with evx.EventPool(dev, 3, prewarm=2) as pool:
        st = pool.stats
        assert (st.capacity, st.idle, st.in_use) == (3, 2, 0)
        evs = [pool.acquire() for _ in range(3)]
        assert pool.stats.in_use == 3
        with pytest.raises(evx.CudaError) as ei:
            pool.acquire()
        assert ei.value.status == evx.Status.ERROR_OUT_OF_MEMORY
        assert pool.stats.exhausted_total == 1
        evs[0].record(stream)
        evs[1].record(stream)
        stream.sync()
        assert evs[1] - evs[0] >= 0.0
        pool.release(evs[0])
        assert evs[0].closed
        evs[1].close()                 # closing returns it to the pool too
        del evs[2]
        import gc
        gc.collect()
        st = pool.stats
        assert st.in_use == 0 and st.acquired_total == 3
        e = pool.acquire()
        assert pool.stats.acquired_total == 4
        pool.release(e)


def test_event_pool_timing_off_and_refusals(evx, dev):
    pool = evx.EventPool(dev, 1, timing=False)
    e = pool.acquire()
    assert evx.EventFlags.DISABLE_TIMING in e.flags
    other = evx.EventPool(dev, 1)
    with pytest.raises(evx.CudaError) as ei:
        other.release(e)
    assert ei.value.status == evx.Status.ERROR_INVALID_VALUE
    assert not e.closed                # refused: it stays live
    pool.release(e)
    with pytest.raises(TypeError):
        pool.release("x")
    with pytest.raises(evx.CudaError) as ei:
        evx.EventPool(dev, 0)
    assert ei.value.status == evx.Status.ERROR_INVALID_VALUE
    with pytest.raises(evx.CudaError):
        evx.EventPool(dev, 2, prewarm=3)
    pool.prewarm(1)
    assert pool.stats.idle == 1


def test_timeline_marks_a_borrowed_stream_first_thing():
    # A fresh process whose first evx calls mark a borrowed stream of the
    # primary context (as a PyTorch program's would): nothing of evx has
    # retained the primary context yet, and the mark must still see that
    # the stream is of it.
    from conftest import run_python
    code = r'''
import ctypes, evx
cu = ctypes.CDLL(evx.driver_path())
cu.cuCtxSetCurrent.argtypes = [ctypes.c_void_p]
cu.cuStreamCreate.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint]
cu.cuStreamDestroy_v2.argtypes = [ctypes.c_void_p]
assert cu.cuInit(0) == 0
ctx, raw = ctypes.c_void_p(), ctypes.c_void_p()
assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0
assert cu.cuCtxSetCurrent(ctx) == 0
assert cu.cuStreamCreate(ctypes.byref(raw), 1) == 0
s = evx.Stream.wrap(raw.value, device=0)
tl = evx.Timeline(evx.Device(0), 4)
tl.mark(s)
tl.mark(s)
s.sync()
assert len(tl.intervals()) == 1
s.close()
tl.close()
assert cu.cuStreamDestroy_v2(raw) == 0
print("ok")
'''
    r = run_python(code)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr
