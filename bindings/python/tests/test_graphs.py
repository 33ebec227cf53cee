# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Timelines and timed blocks on a stream captured into a CUDA graph
(docs/graphs.md): the marks are nodes of the graph, read after each launch.
The capture and the graph are made with the driver evx opened (the host
emulation or libcuda), as a framework would make them."""

import ctypes

import pytest

import rawdriver

GLOBAL = rawdriver.CAPTURE_GLOBAL
THREAD_LOCAL = rawdriver.CAPTURE_THREAD_LOCAL
RELAXED = rawdriver.CAPTURE_RELAXED
MODES = {"global": GLOBAL, "thread_local": THREAD_LOCAL, "relaxed": RELAXED}
CAPTURE_ACTIVE = rawdriver.CAPTURE_ACTIVE
NON_BLOCKING = rawdriver.NON_BLOCKING
HOSTFN = rawdriver.HOSTFN


class Graphs:
    """The driver's capture and graph calls, on device 0's primary context
    (made current on entry: cuGraphInstantiate needs one)."""

    def __init__(self, evx):
        self.cu = rawdriver.open_driver(evx)

    def __enter__(self):
        self.prev = ctypes.c_void_p()
        assert self.cu.cuCtxGetCurrent(ctypes.byref(self.prev)) == 0
        ctx = ctypes.c_void_p()
        assert self.cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0
        assert self.cu.cuCtxSetCurrent(ctx) == 0
        return self

    def __exit__(self, *exc):
        assert self.cu.cuCtxSetCurrent(self.prev) == 0
        assert self.cu.cuDevicePrimaryCtxRelease_v2(0) == 0
        return False

    def begin(self, stream, mode=RELAXED):
        assert self.cu.cuStreamBeginCapture_v2(_native(stream), mode) == 0

    def end(self, stream):
        g = ctypes.c_void_p()
        assert self.cu.cuStreamEndCapture(_native(stream), ctypes.byref(g)) == 0
        assert g.value
        return g

    def capture_status(self, stream):
        st = ctypes.c_int(-1)
        assert self.cu.cuStreamIsCapturing(_native(stream), ctypes.byref(st)) == 0
        return st.value

    def raw_stream(self):
        """A non-blocking CUstream made with the driver (as a framework
        makes its own), as an int; destroy it with destroy_raw()."""
        s = ctypes.c_void_p()
        assert self.cu.cuStreamCreate(ctypes.byref(s), NON_BLOCKING) == 0
        return s.value

    def destroy_raw(self, raw):
        assert self.cu.cuStreamSynchronize(raw) == 0
        assert self.cu.cuStreamDestroy_v2(raw) == 0

    def instantiate(self, graph):
        x = ctypes.c_void_p()
        assert self.cu.cuGraphInstantiateWithFlags(ctypes.byref(x), graph, 0) == 0
        return x

    def launch(self, exec_, stream):
        assert self.cu.cuGraphLaunch(exec_, stream.native) == 0


def _native(stream):
    return stream if isinstance(stream, int) else stream.native


_SLEEP_US = [5000]


@HOSTFN
def _sleep_5ms(_data):
    # A sleep run at each launch of the graph (a graph's host node runs many
    # times; evx's launch_host_func is for one run); 5 ms unless a test
    # sets another time for the next launches.
    ctypes.CDLL(None).usleep(_SLEEP_US[0])


def test_timeline_marks_in_a_captured_graph(evx, dev, stream):
    with Graphs(evx) as cu:
        tl = evx.Timeline(dev, 4)
        tl.mark(stream)                      # before the capture
        cu.begin(stream)
        assert tl.mark(stream) == 1          # nodes of the graph
        assert cu.cu.cuLaunchHostFunc(stream.native, _sleep_5ms, None) == 0
        tl.mark(stream)
        graph = cu.end(stream)
        # before any launch: refused, naming the mark
        with pytest.raises(evx.CudaError) as e:
            tl.intervals()
        assert e.value.status == evx.Status.ERROR_ILLEGAL_STATE
        assert "mark 1" in e.value.message and "captured into a graph" in e.value.message
        exec_ = cu.instantiate(graph)
        try:
            for _ in range(3):
                cu.launch(exec_, stream)
                iv = tl.intervals()          # waits for this launch's marks
                assert len(iv) == 2 and iv[1] >= 4.0, iv
        finally:
            stream.record().sync()
            assert cu.cu.cuGraphExecDestroy(exec_) == 0
            assert cu.cu.cuGraphDestroy(graph) == 0
            tl.close()


def test_timed_block_in_a_captured_graph(evx, stream):
    with Graphs(evx) as cu:
        cu.begin(stream)
        with evx.timed(stream) as t:         # both marks are nodes of the graph
            assert cu.cu.cuLaunchHostFunc(stream.native, _sleep_5ms, None) == 0
        graph = cu.end(stream)
        with pytest.raises(evx.CudaError) as e:
            t.elapsed_ms
        assert e.value.status == evx.Status.ERROR_ILLEGAL_STATE
        assert "the start mark" in e.value.message
        exec_ = cu.instantiate(graph)
        try:
            for _ in range(2):
                cu.launch(exec_, stream)
                assert t.elapsed_ms >= 4.0
            _SLEEP_US[0] = 30000
            cu.launch(exec_, stream)
            assert t.elapsed_ms >= 25.0      # this launch's time, read again each time
            # a block outside the graph is read once, as before
            with evx.timed(stream) as u:
                pass
            first = u.elapsed_ms
            cu.launch(exec_, stream)
            assert t.elapsed_ms >= 25.0 and u.elapsed_ms == first
        finally:
            stream.record().sync()
            _SLEEP_US[0] = 5000
            assert cu.cu.cuGraphExecDestroy(exec_) == 0
            assert cu.cu.cuGraphDestroy(graph) == 0


def test_failing_host_function_in_a_captured_graph(evx, dev, stream):
    """Stream.launch_host_func under capture: a host node run at each launch;
    a launch's exception is raised once, chained, by the next wait on the
    device; the graph's destroy releases the callable."""
    import gc
    import weakref

    runs = []

    class Check:
        def __call__(self):
            runs.append(len(runs) + 1)
            if len(runs) == 2:
                raise ValueError("launch 2 fails on purpose")

    check = Check()
    ref = weakref.ref(check)
    other = dev.create_stream()
    with Graphs(evx) as cu:
        cu.begin(stream)
        stream.launch_host_func(check, name="graph_check")
        graph = cu.end(stream)
        del check
        assert runs == []                    # nothing runs at capture
        exec_ = cu.instantiate(graph)
        try:
            cu.launch(exec_, other)
            other.sync()
            cu.launch(exec_, other)
            with pytest.raises(evx.CudaError) as ei:
                other.sync()
            err = ei.value
            assert isinstance(err.__cause__, ValueError)
            assert "on purpose" in str(err.__cause__)
            assert "graph_check" in err.message and "launch of its graph" in err.message
            del ei, err                      # the traceback holds the callable
            stream.sync()                    # reported once
            other.sync()
            cu.launch(exec_, other)
            other.record().sync()
            assert runs == [1, 2, 3]
            gc.collect()
            assert ref() is not None, "the graph keeps its host function"
        finally:
            other.sync()
            assert cu.cu.cuGraphExecDestroy(exec_) == 0
            assert cu.cu.cuGraphDestroy(graph) == 0
    for _ in range(1000):                    # the release may run on a driver thread
        gc.collect()
        if ref() is None:
            break
        import time
        time.sleep(0.01)
    assert ref() is None, "destroying the graph releases the callable"
    assert not evx._hostfn.pending and not evx._hostfn.in_graph
    other.close()


@pytest.mark.parametrize("mode", sorted(MODES))
def test_evx_calls_leave_a_capture_active(evx, dev, stream, mode):
    """In each capture mode, evx's calls on an evx stream being captured
    (marks, a timed block, a host function, records, waits, the getters)
    leave the capture active: it ends with a graph, which replays."""
    runs = []
    with Graphs(evx) as cu:
        tl = evx.Timeline(dev, 4)
        other = dev.create_stream()
        cu.begin(stream, MODES[mode])
        tl.mark(stream)
        with evx.timed(stream) as t:
            assert cu.cu.cuLaunchHostFunc(stream.native, _sleep_5ms, None) == 0
        stream.launch_host_func(lambda: runs.append(1), name="count")
        other.wait(stream.record())          # a fork, joined below
        stream.wait(other.record())
        tl.mark(stream)
        assert (stream.device, stream.priority, stream.owned) == (dev, 0, True)
        assert stream.flags == evx.StreamFlags.NON_BLOCKING   # read when made
        assert cu.capture_status(stream) == CAPTURE_ACTIVE
        graph = cu.end(stream)
        exec_ = cu.instantiate(graph)
        try:
            cu.launch(exec_, stream)
            iv = tl.intervals()
            assert len(iv) == 1 and iv[0] >= 4.0, iv
            assert t.elapsed_ms >= 4.0
            stream.sync()
            assert runs == [1]
        finally:
            stream.record().sync()
            assert cu.cu.cuGraphExecDestroy(exec_) == 0
            assert cu.cu.cuGraphDestroy(graph) == 0
            tl.close()
            other.close()


@pytest.mark.parametrize("mode", sorted(MODES))
def test_wrap_a_foreign_stream_inside_its_capture(evx, dev, mode):
    """The pattern of ``with torch.cuda.graph(g): evx.Stream.wrap(
    torch.cuda.current_stream())``: a stream made with the raw driver,
    wrapped while it is being captured, in each mode. The wrap and the
    calls on it leave the capture active; its flags, which the driver
    would only read by breaking the capture, are refused until it ends."""
    with Graphs(evx) as cu:
        raw = cu.raw_stream()
        tl = evx.Timeline(dev, 4)
        try:
            cu.begin(raw, MODES[mode])
            s = evx.Stream.wrap(raw)             # the device read from the stream
            s0 = evx.Stream.wrap(raw, dev)       # the device given
            assert cu.capture_status(raw) == CAPTURE_ACTIVE
            assert (s.device, s0.device, s.priority, s.owned) == (dev, dev, 0, False)
            with pytest.raises(evx.CudaError) as e:
                s.flags
            assert e.value.status == evx.Status.ERROR_STREAM_CAPTURE_UNSUPPORTED
            assert "cuStreamGetFlags" in e.value.message
            tl.mark(s)
            assert cu.cu.cuLaunchHostFunc(raw, _sleep_5ms, None) == 0
            tl.mark(s0)
            assert cu.capture_status(raw) == CAPTURE_ACTIVE
            graph = cu.end(raw)
            assert s.flags == evx.StreamFlags.NON_BLOCKING    # read now
            exec_ = cu.instantiate(graph)
            try:
                for _ in range(2):
                    assert cu.cu.cuGraphLaunch(exec_, raw) == 0
                    iv = tl.intervals()
                    assert len(iv) == 1 and iv[0] >= 4.0, iv
            finally:
                assert cu.cu.cuStreamSynchronize(raw) == 0
                assert cu.cu.cuGraphExecDestroy(exec_) == 0
                assert cu.cu.cuGraphDestroy(graph) == 0
            s.close()
            s0.close()
        finally:
            tl.close()
            cu.destroy_raw(raw)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_stream_capture_status(evx, dev, stream, mode):
    """Stream.capture_status answers as cuStreamIsCapturing does, in each
    mode: NONE, ACTIVE for the capturing stream and for one joined to its
    capture by a wait, NONE again after the end, INVALIDATED once a call
    broke a capture; reading it leaves the capture active."""
    NONE, ACTIVE = evx.CaptureStatus.NONE, evx.CaptureStatus.ACTIVE
    with Graphs(evx) as cu:
        other = dev.create_stream()
        try:
            assert stream.capture_status is NONE
            cu.begin(stream, MODES[mode])
            assert stream.capture_status is ACTIVE
            assert other.capture_status is NONE
            other.wait(stream.record())          # other joins the capture
            assert other.capture_status is ACTIVE
            stream.wait(other.record())          # and is joined back
            assert cu.capture_status(stream) == CAPTURE_ACTIVE
            graph = cu.end(stream)
            assert cu.cu.cuGraphDestroy(graph) == 0
            assert (stream.capture_status, other.capture_status) == (NONE, NONE)

            cu.begin(stream, MODES[mode])
            with pytest.raises(evx.CudaError):
                stream.sync()                    # the driver ends the capture's use
            assert stream.capture_status is evx.CaptureStatus.INVALIDATED
            g = ctypes.c_void_p()
            assert cu.cu.cuStreamEndCapture(stream.native, ctypes.byref(g)) == \
                evx.Status.ERROR_STREAM_CAPTURE_INVALIDATED
            assert not g.value
            assert stream.capture_status is NONE
        finally:
            other.sync()
            other.close()
    with pytest.raises(evx.CudaError) as e:
        other.capture_status
    assert e.value.status == evx.Status.ERROR_INVALID_HANDLE
    assert "Stream.capture_status" in e.value.message


def test_fence_operations_in_a_captured_graph(evx, dev, stream):
    """A fence's signal and wait on a capturing stream are memory-operation
    nodes of the graph (docs/fences.md, "Stream capture"): nothing runs at
    capture, the value is claimed then, and each launch writes the captured
    value again, even below what the counter has reached since."""
    with Graphs(evx) as cu:
        f = dev.create_fence(initial=1)
        cu.begin(stream, RELAXED)
        stream.wait(f, 1)
        f.signal(stream, 5)
        graph = cu.end(stream)
        assert f.value == 1                      # nothing ran at capture
        with pytest.raises(evx.CudaError) as e:
            f.signal_host(5)                     # claimed by the capture
        assert e.value.status == evx.Status.ERROR_INVALID_VALUE
        exec_ = cu.instantiate(graph)
        try:
            cu.launch(exec_, stream)
            stream.sync()
            assert f.value == 5
            f.signal_host(7)
            cu.launch(exec_, stream)
            stream.sync()
            assert f.value == 5                  # the replay wrote 5 again
        finally:
            stream.sync()
            assert cu.cu.cuGraphExecDestroy(exec_) == 0
            assert cu.cu.cuGraphDestroy(graph) == 0
            f.close()


@pytest.mark.parametrize("mode", ["global", "thread_local", "relaxed"])
def test_torch_cuda_graph_wrap_current_stream(evx, mode):
    """GPU only (scripts/gpu-check.sh interop): exactly
    ``with torch.cuda.graph(g, capture_error_mode=m): s =
    evx.Stream.wrap(torch.cuda.current_stream())`` captures and replays,
    in each mode (torch raises at the end of an invalidated capture)."""
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("torch.cuda.is_available() is False: no GPU to capture on")
    if evx.is_emulation():
        pytest.skip("evx opened the host emulation (EVX_DRIVER=host); torch captures "
                    "on the real driver: unset EVX_DRIVER")
    x = torch.zeros(1 << 20, device="cuda")
    tl = evx.Timeline(torch.cuda.current_device(), 4)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, capture_error_mode=mode):
        s = evx.Stream.wrap(torch.cuda.current_stream())
        tl.mark(s)
        x.add_(1.0)
        tl.mark(s)
    torch.cuda.synchronize()
    assert x.sum().item() == 0.0             # the capture ran nothing
    for i in range(3):
        g.replay()
        assert len(tl.intervals()) == 1
        torch.cuda.synchronize()
        assert x[0].item() == float(i + 1)
    assert s.flags in (evx.StreamFlags.DEFAULT, evx.StreamFlags.NON_BLOCKING)
    g.reset()
    tl.close()
