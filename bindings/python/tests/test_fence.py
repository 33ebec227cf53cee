# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Fences from Python (evx.Fence): waits queued before their signals, host
signals and waits with timeouts, the rule that values grow, bad values
refused before C, await in asyncio and uvloop, and an interprocess fence
pickled to a spawned child, by name or through /proc."""

import asyncio
import multiprocessing
import pickle
import threading
import time

import pytest

try:
    import uvloop
except ImportError:          # scripts/setup.sh installs it
    uvloop = None


def test_create_and_read(evx, dev):
    f = dev.create_fence()
    assert f.value == 0 and not f.interprocess and f.device == dev
    g = dev.create_fence(initial=7, interprocess=True)
    assert g.value == 7 and g.interprocess
    assert isinstance(f, evx.Fence) and "device 0" in repr(f)
    f.close()
    f.close()   # a second close does nothing
    assert f.closed and repr(f) == "<evx.Fence closed>"
    with pytest.raises(evx.CudaError) as info:
        f.value
    assert info.value.status == evx.Status.ERROR_INVALID_HANDLE
    assert "Fence.value" in info.value.message and "closed" in info.value.message
    g.close()
    with pytest.raises(TypeError, match="cannot be made directly"):
        evx.Fence()


def test_wait_before_signal_on_two_streams(evx, dev, gate):
    a, b = dev.create_stream(), dev.create_stream()
    f = dev.create_fence()
    seen = []
    b.wait(f, 1)                                   # queued first
    b.launch_host_func(lambda: seen.append(f.value))
    g = gate(a)
    f.signal(a, 1)
    time.sleep(0.1)
    assert seen == [] and f.value == 0
    g.open()
    b.sync()
    assert seen == [1] and f.value == 1
    a.sync()
    for s in (a, b):
        s.close()
    f.close()


def test_host_signal_and_wait_with_timeout(evx, dev):
    f = dev.create_fence(initial=1)
    assert f.wait(1, timeout=0) is True
    assert f.wait(2, timeout=0) is False
    t0 = time.monotonic()
    assert f.wait(2, timeout=0.05) is False
    assert time.monotonic() - t0 >= 0.049
    threading.Timer(0.03, f.signal_host, (2,)).start()
    assert f.wait(2) is True      # no timeout: until the other thread signals
    assert f.value == 2
    f.close()


def test_values_only_grow(evx, dev, stream, gate):
    f = dev.create_fence(initial=10)
    with pytest.raises(evx.CudaError) as info:
        f.signal_host(10)
    assert info.value.status == evx.Status.ERROR_INVALID_VALUE
    assert "value 10 is not above 10" in info.value.message
    g = gate(stream)
    f.signal(stream, 20)
    with pytest.raises(evx.CudaError) as info:
        f.signal(stream, 15)
    assert "value 15 is not above 20" in info.value.message
    with pytest.raises(evx.CudaError) as info:
        f.signal_host(25)           # the queued 20 has not run
    assert info.value.status == evx.Status.ERROR_ILLEGAL_STATE
    g.open()
    assert f.wait(20, timeout=20)
    f.signal_host(25)
    assert f.value == 25
    f.close()


def test_bad_values_refused_before_c(evx, dev, stream):
    f = dev.create_fence()
    top = evx.Fence.MAX_VALUE
    assert top == 2**63 - 1
    for call in (lambda v: dev.create_fence(initial=v), f.signal_host,
                 lambda v: f.signal(stream, v), lambda v: stream.wait(f, v),
                 lambda v: f.wait(v, timeout=0)):
        with pytest.raises(ValueError, match=str(top + 1)):
            call(top + 1)
        with pytest.raises(ValueError, match="-1"):
            call(-1)
        with pytest.raises(TypeError, match="not bool"):
            call(True)
        with pytest.raises(TypeError, match="not float"):
            call(1.5)
    with pytest.raises(ValueError, match="Fence.wait: timeout -1"):
        f.wait(0, timeout=-1)
    with pytest.raises(TypeError, match="Fence.wait: timeout"):
        f.wait(0, timeout="1")
    with pytest.raises(ValueError, match="longer than"):
        f.wait(0, timeout=1e300)
    # An int too large for a float: the same error, not a bare OverflowError.
    with pytest.raises(ValueError, match=r"Fence.wait: timeout 1000+ s is longer than"):
        f.wait(0, timeout=10**400)
    with pytest.raises(ValueError, match="Fence.wait: timeout inf s is longer than"):
        f.wait(0, timeout=float("inf"))
    with pytest.raises(TypeError, match="interprocess must be a bool"):
        dev.create_fence(interprocess="yes")
    with pytest.raises(TypeError, match="stream must be an evx.Stream"):
        f.signal(None, 1)
    f.close()


def test_stream_wait_forms(evx, dev, stream):
    f = dev.create_fence()
    ev = dev.create_event()
    with pytest.raises(TypeError, match="value must be an int, not NoneType"):
        stream.wait(f)
    with pytest.raises(TypeError, match="given only with an evx.Fence"):
        stream.wait(ev, 1)          # external= is keyword-only now
    with pytest.raises(TypeError, match="external= is for events"):
        stream.wait(f, 0, external=True)
    stream.wait(ev, external=False)
    stream.wait(f, 0)
    stream.sync()
    other = evx.Device(1).create_stream() if evx.device_count() > 1 else None
    if other is not None:
        other.wait(f, 0)            # a stream of another device waits too
        f.signal(other, 1)          # and signals
        other.sync()
        assert f.value == 1
        other.close()
    ev.close()
    f.close()


def test_ipc_handle_and_pickle(evx, dev):
    f = dev.create_fence()
    with pytest.raises(evx.CudaError) as info:
        f.ipc_handle
    assert "EVX_FENCE_INTERPROCESS" in info.value.message
    with pytest.raises(TypeError, match="only an interprocess fence"):
        pickle.dumps(f)
    g = dev.create_fence(interprocess=True)
    h = g.ipc_handle
    assert type(h) is bytes and len(h) == evx.Fence.HANDLE_SIZE == 64
    data = pickle.dumps(g)
    assert h in data
    with pytest.raises(evx.CudaError) as info:
        pickle.loads(data)          # in the exporting process: refused
    assert info.value.status == evx.Status.ERROR_INVALID_CONTEXT
    with pytest.raises(ValueError, match="has 63 bytes"):
        dev.open_ipc_fence(bytes(63))
    with pytest.raises(TypeError, match="not a str"):
        dev.open_ipc_fence("x" * 64)
    f.close()
    g.close()


LOOPS = ["asyncio", "uvloop"]


@pytest.mark.parametrize("kind", LOOPS)
def test_await_fence(kind, evx, dev, stream, gate):
    if kind == "uvloop" and uvloop is None:
        pytest.skip("uvloop is not installed (scripts/setup.sh installs it)")
    loop = uvloop.new_event_loop() if kind == "uvloop" else asyncio.new_event_loop()
    f = dev.create_fence()

    async def main():
        await f.wait_async(0)                       # reached: at once
        fut = f.wait_async(2)
        await asyncio.sleep(0.05)
        assert not fut.done()
        f.signal_host(1)
        await asyncio.sleep(0.05)
        assert not fut.done()                       # 1 is not 2
        g = gate(stream)
        f.signal(stream, 2)
        await asyncio.sleep(0.05)
        assert not fut.done()
        g.open()
        await asyncio.wait_for(fut, 20)
        # cancelled while the value has not come: allowed. The notifier's
        # GPU wait for 100 stays queued until the fence reaches 100, and a
        # context-wide synchronization (a framework's module unload at exit)
        # would wait for it: reach 100 before the test ends.
        late = f.wait_async(100)
        late.cancel()
        value = f.value
        f.signal_host(100)
        return value
    try:
        assert loop.run_until_complete(main()) == 2
    finally:
        loop.close()
    stream.sync()
    f.close()


def _child(fence, reports):
    """A spawned process: ``fence`` was unpickled (opened) on the way in.
    Queues a wait for 1 and its own signal of 2 behind it."""
    import evx
    try:
        s = evx.Device(fence.device.device_id).create_stream()
        s.wait(fence, 1)
        fence.signal(s, 2)
        reports.put(("queued", fence.value))
        s.sync()
        reports.put(("done", fence.value))
        s.close()
        fence.close()
    except Exception as e:
        reports.put(("error", repr(e)))


def test_spawned_child_waits_for_the_parent(evx, dev, stream, gate):
    ctx = multiprocessing.get_context("spawn")
    reports = ctx.Queue()
    f = dev.create_fence(interprocess=True)
    # the parent's signal of 1, queued before the child claims 2, held by a gate
    g = gate(stream)
    f.signal(stream, 1)
    child = ctx.Process(target=_child, args=(f, reports))
    child.start()
    try:
        msg = reports.get(timeout=60)
        assert msg == ("queued", 0), msg
        with pytest.raises(Exception):
            reports.get(timeout=0.3)    # its wait holds until the parent's 1 runs
        with pytest.raises(evx.CudaError) as info:
            f.signal_host(2)            # the child queued 2: values grow across processes
        assert "not above 2" in info.value.message
        g.open()
        assert reports.get(timeout=60) == ("done", 2)
        assert f.wait(2, timeout=20) and f.value == 2
    finally:
        g.open()
        child.join(60)
    assert child.exitcode == 0
    stream.sync()
    f.close()


def _fence_object_links():
    """The files of this process's descriptors that are fences' shared
    objects, by descriptor."""
    import os
    links = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            link = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if "evx-fence-" in link:
            links[fd] = link
    return links


def _signal_two(fence, reports):
    """A spawned process: waits on the host for the parent's 1, signals 2."""
    try:
        ok = fence.wait(1, timeout=30)
        fence.signal_host(2)
        reports.put(("done", ok))
        fence.close()
    except Exception as e:
        reports.put(("error", repr(e)))


def test_spawned_child_without_the_name(evx, dev):
    """A child whose /dev/shm lacks the fence's name (as in a container with
    its own /dev/shm) opens it through the parent's /proc/<pid>/fd."""
    import os
    before = _fence_object_links()
    f = dev.create_fence(interprocess=True)
    new = {fd: link for fd, link in _fence_object_links().items() if fd not in before}
    assert len(new) == 1, new
    (link,) = new.values()
    if link.startswith("/dev/shm/"):
        os.unlink(link)
    ctx = multiprocessing.get_context("spawn")
    reports = ctx.Queue()
    child = ctx.Process(target=_signal_two, args=(f, reports))
    child.start()
    try:
        f.signal_host(1)
        assert reports.get(timeout=60) == ("done", True)
        assert f.wait(2, timeout=20) and f.value == 2
    finally:
        if f.value < 2:
            f.signal_host(100)      # frees a child still waiting
        child.join(60)
    assert child.exitcode == 0
    f.close()


def _import_by_fd(conn, reports):
    """A spawned process: receives the fence's descriptor over the pipe
    (multiprocessing.reduction.recv_handle), opens it, signals 3."""
    import os
    from multiprocessing import reduction
    try:
        import evx
        fd = reduction.recv_handle(conn)
        g = evx.Device(0).import_fence_fd(fd)
        os.close(fd)                     # evx keeps its own duplicate
        ok = g.wait(2, timeout=30)
        g.signal_host(3)
        reports.put(("done", ok))
        g.close()
    except Exception as e:
        reports.put(("error", repr(e)))


def test_export_fd_over_a_socket(evx, dev, stream):
    """Fence.export_fd and Device.import_fence_fd with multiprocessing's
    descriptor passing (SCM_RIGHTS over the connection's Unix socket)."""
    import os
    from multiprocessing import reduction
    f = dev.create_fence(interprocess=True)
    fd = f.export_fd()
    assert fd >= 0 and os.get_inheritable(fd) is False
    with pytest.raises(evx.CudaError) as info:
        dev.import_fence_fd(fd)          # this process made it
    assert info.value.status == evx.Status.ERROR_INVALID_CONTEXT
    ctx = multiprocessing.get_context("spawn")
    reports = ctx.Queue()
    parent_end, child_end = ctx.Pipe()
    child = ctx.Process(target=_import_by_fd, args=(child_end, reports))
    child.start()
    try:
        reduction.send_handle(parent_end, fd, child.pid)
        os.close(fd)
        f.signal(stream, 2)
        assert reports.get(timeout=60) == ("done", True)
        assert f.wait(3, timeout=20) and f.value == 3
    finally:
        child.join(60)
    assert child.exitcode == 0
    stream.sync()
    f.close()


def test_import_fd_refusals(evx, dev):
    import os
    with pytest.raises(TypeError):
        dev.import_fence_fd("3")
    with pytest.raises(evx.CudaError):
        dev.import_fence_fd(-1)
    r, w = os.pipe()
    try:
        with pytest.raises(evx.CudaError) as info:
            dev.import_fence_fd(r)
        assert "not a fence's page" in info.value.message
    finally:
        os.close(r)
        os.close(w)
    with pytest.raises(evx.CudaError):
        dev.create_fence().export_fd()   # not interprocess


def test_flush_wait(evx, dev, stream):
    """flush=True is refused, naming the device, where it cannot flush
    remote writes (the emulation, as most H100 systems)."""
    f = dev.create_fence()
    f.stream_wait(stream, 0)
    try:
        f.stream_wait(stream, 1, flush=True)
        f.signal_host(1)
    except evx.CudaError as e:
        assert e.status == evx.Status.ERROR_NOT_SUPPORTED
        assert "CAN_FLUSH_REMOTE_WRITES" in e.message and "device 0" in e.message
    stream.sync()
    f.close()


def test_reclaim_counts(evx, dev, stream):
    """Destroyed fences' memory is freed once what was queued on them ran."""
    for _ in range(100):
        f = dev.create_fence()
        f.signal(stream, 1)
        f.stream_wait(stream, 1)
        f.close()
    stream.sync()
    deadline = time.monotonic() + 20
    pending, kept = evx.Fence.reclaim()
    while pending and time.monotonic() < deadline:
        time.sleep(0.01)
        pending, kept = evx.Fence.reclaim()
    assert pending == 0
