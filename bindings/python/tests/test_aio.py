# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""evx.aio: awaiting events and streams on asyncio and uvloop, the
concurrent.futures form, cancellation, 10,000 concurrent awaits with no
threads made, and bad input."""

import asyncio
import concurrent.futures
import gc
import os
import threading
import time

import pytest

try:
    import uvloop
except ImportError:          # scripts/setup.sh installs it
    uvloop = None

LOOPS = ["asyncio", "uvloop"]


def new_loop(kind):
    if kind == "uvloop":
        if uvloop is None:
            pytest.skip("uvloop is not installed (scripts/setup.sh installs it)")
        return uvloop.new_event_loop()
    return asyncio.new_event_loop()


def run(kind, coro_fn, *args):
    loop = new_loop(kind)
    errors = []
    loop.set_exception_handler(lambda l, ctx: errors.append(ctx))
    try:
        return loop.run_until_complete(coro_fn(*args))
    finally:
        loop.close()
        assert errors == [], errors


def os_threads():
    return len(os.listdir("/proc/self/task"))


@pytest.fixture
def aio(evx):
    import evx.aio as mod
    return mod


@pytest.mark.parametrize("kind", LOOPS)
def test_never_recorded_completes_at_once(kind, evx, aio, dev):
    async def main():
        ev = dev.create_event()
        fut = aio.wait(ev)
        assert isinstance(fut, asyncio.Future)
        assert await asyncio.wait_for(fut, 5) is None
        assert await asyncio.wait_for(ev.wait_async(), 5) is None
    run(kind, main)


@pytest.mark.parametrize("kind", LOOPS)
def test_pending_until_the_work_completes(kind, evx, aio, dev, stream, gate):
    async def main():
        g = gate(stream)
        ev = stream.record()
        fut = aio.wait(ev)
        sync = stream.synchronize_async()
        await asyncio.sleep(0.05)
        assert not fut.done() and not sync.done()
        assert not ev.is_done
        g.open()
        await asyncio.wait_for(fut, 5)
        await asyncio.wait_for(sync, 5)
        assert ev.is_done and stream.is_done
    run(kind, main)


@pytest.mark.parametrize("kind", LOOPS)
def test_await_event(kind, evx, aio, dev, stream, gate):
    """``await ev`` is ``await ev.wait_async()``: a never-recorded event
    resumes at once, a recorded one when its work completes, and the
    watch is made when the await starts."""
    async def main():
        assert await dev.create_event() is None
        g = gate(stream)
        ev = stream.record()
        task = asyncio.ensure_future(ev)     # an awaitable, so a task
        await asyncio.sleep(0.05)
        assert not task.done()
        other = asyncio.ensure_future(asyncio.wait_for(ev, 5))
        await asyncio.sleep(0.01)
        idle = dev.create_stream()
        ev.record(idle)                      # after both awaits started
        idle.sync()
        idle.close()
        await asyncio.sleep(0.05)
        assert not task.done() and not other.done()
        g.open()
        assert await asyncio.wait_for(task, 5) is None
        assert await other is None
        closed = dev.create_event()
        closed.close()
        with pytest.raises(evx.CudaError) as e:
            await closed
        assert e.value.status == evx.Status.ERROR_INVALID_HANDLE
        assert aio._notifiers[asyncio.get_running_loop()].futures == {}
    run(kind, main)


@pytest.mark.parametrize("kind", LOOPS)
def test_await_raises_a_failed_host_function(kind, evx, aio, dev, stream):
    """A host function that raised before the event's record fails the
    await with CudaError chained to its exception, once; an event recorded
    before it, and the awaits after, complete."""
    class Bad(Exception):
        pass

    def boom():
        raise Bad("raised inside a host function on purpose")

    async def main():
        before = stream.record()
        stream.launch_host_func(boom, name="load_shard")
        after = stream.record()
        assert await asyncio.wait_for(before.wait_async(), 5) is None
        with pytest.raises(evx.CudaError) as e:
            await asyncio.wait_for(after.wait_async(), 5)
        assert isinstance(e.value.__cause__, Bad)
        assert "load_shard" in e.value.message
        assert "evx_notifier_read_checked" in e.value.message
        # reported once: to the await, not again to the next waits
        assert await asyncio.wait_for(after.wait_async(), 5) is None
        stream.sync()
        # a waiting call first: it reports, the await then completes
        stream.launch_host_func(boom, name="load_shard")
        again = stream.record()
        with pytest.raises(evx.CudaError) as e:
            again.sync()
        assert isinstance(e.value.__cause__, Bad)
        assert await asyncio.wait_for(again.wait_async(), 5) is None
        assert aio._notifiers[asyncio.get_running_loop()].futures == {}
    run(kind, main)


@pytest.mark.parametrize("kind", LOOPS)
def test_watch_captures_the_record_at_call_time(kind, evx, aio, dev, stream, gate):
    idle = dev.create_stream()

    async def main():
        g = gate(stream)
        ev = stream.record()
        fut = aio.wait(ev)           # the watch is made here
        ev.record(idle)              # re-recorded on an idle stream
        idle.sync()
        assert ev.is_done
        ev.close()                   # closing it is allowed too
        await asyncio.sleep(0.05)
        assert not fut.done()
        g.open()
        await asyncio.wait_for(fut, 5)
    try:
        run(kind, main)
    finally:
        idle.close()


@pytest.mark.parametrize("kind", LOOPS)
def test_cancellation_is_safe(kind, evx, aio, dev, stream, gate):
    async def main():
        g = gate(stream)
        ev = stream.record()
        task = asyncio.ensure_future(aio.wait(ev))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # a timeout cancels the same way
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(aio.wait(ev), 0.02)
        g.open()
        stream.sync()
        # the cancelled watches' tokens arrive and are dropped; later waits
        # on the same loop work
        await asyncio.sleep(0.05)
        await asyncio.wait_for(aio.wait(stream.record()), 5)
        n = aio._notifiers[asyncio.get_running_loop()]
        assert n.futures == {}
    run(kind, main)


@pytest.mark.parametrize("kind", LOOPS)
def test_ten_thousand_concurrent_awaits_no_threads(kind, evx, aio, dev, stream, gate):
    N = 10000

    async def main():
        g = gate(stream)
        g.entered.wait(5)
        await aio.wait(dev.create_event())      # the loop's notifier exists
        before, py_before = os_threads(), threading.active_count()
        events = [dev.create_event(timing=False) for _ in range(N)]
        for e in events:
            e.record(stream)
        cpu0 = time.process_time()
        futs = [aio.wait(e) for e in events]
        during = os_threads()
        await asyncio.sleep(0.02)
        assert not any(f.done() for f in futs)
        g.open()
        await asyncio.wait_for(asyncio.gather(*futs), 60)
        cpu = time.process_time() - cpu0
        after = os_threads()
        # no thread per await: at most the notifier's internal streams of
        # this device (each one runs on a worker thread in the emulation)
        # and its pump thread, made when more than 32 watches of a device
        # are in flight (docs/async.md)
        cap = evx._capi.EVX_NOTIFIER_DEFAULT_STREAMS + 1
        assert during - before <= cap, (before, during)
        assert after - before <= cap, (before, after)
        assert threading.active_count() == py_before
        for e in events:
            e.close()
        return cpu
    cpu = run(kind, main)
    print("%s: %d awaits, %.1f us CPU per await (host emulation)"
          % (kind, N, cpu / N * 1e6))


def test_one_notifier_per_loop_released_with_the_loop(evx, aio, dev):
    async def main():
        loop = asyncio.get_running_loop()
        await aio.wait(dev.create_event())
        n = aio._notifiers[loop]
        await aio.wait(dev.create_event())
        assert aio._notifiers[loop] is n
        return n.h.value, n.fd

    loop1 = asyncio.new_event_loop()
    h1, fd1 = loop1.run_until_complete(main())
    loop2 = asyncio.new_event_loop()
    h2, fd2 = loop2.run_until_complete(main())
    assert h1 != h2
    loop1.close()
    del loop1
    gc.collect()
    # the first loop's notifier is destroyed: its handle is dead
    import ctypes
    fd = ctypes.c_int()
    st = evx.capi.evx_notifier_get_fd(h1, ctypes.byref(fd))
    assert st == evx.Status.ERROR_INVALID_HANDLE
    assert evx.capi.evx_notifier_get_fd(h2, ctypes.byref(fd)) == 0
    loop2.close()


def test_concurrent_future(evx, aio, dev, stream, gate):
    g = gate(stream)
    ev = stream.record()
    fut = aio.future(ev)
    assert isinstance(fut, concurrent.futures.Future)
    assert not fut.done()
    cancelled = aio.future(ev)
    assert cancelled.cancel()
    g.open()
    assert fut.result(5) is None
    assert cancelled.cancelled()
    # many at once, from several threads, no thread per future
    before = os_threads()
    events = [dev.create_event(timing=False) for _ in range(500)]
    g2 = gate(stream)
    for e in events:
        e.record(stream)
    futs = []
    lock = threading.Lock()

    def submit(part):
        got = [aio.future(e) for e in part]
        with lock:
            futs.extend(got)
    threads = [threading.Thread(target=submit, args=(events[i::4],)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(futs) == 500 and not any(f.done() for f in futs)
    g2.open()
    for f in futs:
        assert f.result(10) is None
    assert os_threads() - before <= evx._capi.EVX_NOTIFIER_DEFAULT_STREAMS
    assert evx._hostfn.pending == {}


def test_wrap_future_into_a_loop(evx, aio, dev, stream):
    async def main():
        ev = stream.record()
        await asyncio.wait_for(asyncio.wrap_future(aio.future(ev)), 5)
    run("asyncio", main)


def test_bad_input(evx, aio, dev, stream):
    with pytest.raises(RuntimeError, match=r"evx\.aio\.wait\(\) needs a running event loop"):
        aio.wait(dev.create_event())
    with pytest.raises(RuntimeError, match=r"synchronize\(\) needs a running"):
        aio.synchronize(stream)

    async def main():
        with pytest.raises(TypeError, match=r"evx\.aio\.wait\(\) needs an evx\.Event, not int"):
            aio.wait(123)
        with pytest.raises(TypeError, match=r"needs an evx\.Stream, not Event"):
            aio.synchronize(dev.create_event())
        ev = dev.create_event()
        ev.close()
        with pytest.raises(evx.CudaError) as e:
            aio.wait(ev)
        assert e.value.status == evx.Status.ERROR_INVALID_HANDLE
        assert "evx_notifier_watch" in e.value.message
        s = dev.create_stream()
        s.close()
        with pytest.raises(evx.CudaError) as e:
            aio.synchronize(s)
        assert e.value.status == evx.Status.ERROR_INVALID_HANDLE
        # nothing was left behind by the failures
        n = aio._notifiers[asyncio.get_running_loop()]
        assert n.futures == {}
    run("asyncio", main)
    with pytest.raises(TypeError, match=r"evx\.aio\.future\(\) needs an evx\.Event, not str"):
        aio.future("event")
    ev = dev.create_event()
    ev.close()
    with pytest.raises(evx.CudaError) as e:
        aio.future(ev)
    assert "evx_notifier_watch_callback" in e.value.message
    assert evx._hostfn.pending == {}


def test_future_reports_a_failing_host_function(evx, aio, dev, stream):
    """evx.aio.future fails with the CudaError of a host function that raised
    before the event's record, its exception chained; once."""
    def boom():
        raise KeyError("shard-0007 on purpose")
    before = stream.record()
    stream.launch_host_func(boom, name="load_shard")
    after = stream.record()
    assert aio.future(before).result(10) is None
    fut = aio.future(after)
    with pytest.raises(evx.CudaError) as ei:
        fut.result(10)
    err = ei.value
    assert err.status == evx.Status.ERROR_UNKNOWN
    assert isinstance(err.__cause__, KeyError) and "on purpose" in str(err.__cause__)
    assert "evx.aio.future" in err.message and "load_shard" in err.message
    assert aio.future(after).result(10) is None   # reported once
    stream.sync()
    assert evx._hostfn.pending == {} and not evx._hostfn.failed
