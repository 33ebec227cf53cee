# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Timelines and timed blocks on a stream captured into a CUDA graph
(docs/graphs.md): the marks are nodes of the graph, read after each launch.
The capture and the graph are made with the driver evx opened (the host
emulation or libcuda), as a framework would make them."""

import ctypes

import pytest

import rawdriver

RELAXED = rawdriver.CAPTURE_RELAXED
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

    def begin(self, stream):
        assert self.cu.cuStreamBeginCapture_v2(stream.native, RELAXED) == 0

    def end(self, stream):
        g = ctypes.c_void_p()
        assert self.cu.cuStreamEndCapture(stream.native, ctypes.byref(g)) == 0
        assert g.value
        return g

    def instantiate(self, graph):
        x = ctypes.c_void_p()
        assert self.cu.cuGraphInstantiateWithFlags(ctypes.byref(x), graph, 0) == 0
        return x

    def launch(self, exec_, stream):
        assert self.cu.cuGraphLaunch(exec_, stream.native) == 0


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
