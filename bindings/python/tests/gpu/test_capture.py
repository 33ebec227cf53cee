# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""evx inside a CUDA graph that PyTorch captures (issue 10, item 2), on a
real GPU.

Run on the GPU machine (`scripts/gpu-check.sh interop` runs this folder):

    cd build/bindings/python && PYTHONPATH=$PWD python3 -m pytest -rs ../../../bindings/python/tests/gpu

Skipped, with the reason, without PyTorch and a GPU, and on the host
emulation (it does not model stream capture: docs/conformance.md).
"""

import threading

from gpu_only import torch_and_evx_on_gpu

torch, evx = torch_and_evx_on_gpu(
    "to capture on", "which does not model stream capture; unset EVX_DRIVER")

REPLAYS = 4


def test_external_records_inside_torch_cuda_graph_time_each_replay():
    # Two evx events recorded as external event-record nodes of a graph that
    # torch.cuda.graph captures around a kernel; each replay records them
    # again, so evx times each replay, and the kernel's result shows the
    # graph ran once per replay.
    dev = evx.Device(torch.cuda.current_device())
    side = torch.cuda.Stream()
    x = torch.zeros(1 << 22, device="cuda")
    start, end = dev.create_event(), dev.create_event()
    s = evx.Stream.wrap(side)             # torch.cuda.graph captures on `side`
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        start.record(s, external=True)
        x.add_(1.0)
        end.record(s, external=True)
    torch.cuda.synchronize()
    assert x.sum().item() == 0.0          # capture does not run the work
    times = []
    for i in range(REPLAYS):
        graph.replay()
        end.sync()
        assert end.is_done
        times.append(end - start)
        torch.cuda.synchronize()
        assert x[0].item() == float(i + 1)
    assert all(t >= 0.0 for t in times), times
    graph.reset()


def test_evx_on_another_thread_leaves_a_global_capture_valid():
    # torch.cuda.graph captures in global mode by default: evx's calls on
    # another thread during the capture (create, record on its own stream,
    # destroy, pools, timers; no synchronize or query, which the driver
    # prohibits then from any thread) must not invalidate it: the capture
    # ends (torch raises if it was invalidated) and the graph replays. The
    # other thread's work is waited for once the capture has ended.
    dev = evx.Device(torch.cuda.current_device())
    side = torch.cuda.Stream()
    x = torch.zeros(1024, device="cuda")
    errors, kept = [], []
    began, finished = threading.Event(), threading.Event()

    def other_thread():
        try:
            began.wait(10)
            s = dev.create_stream()
            pool = dev.create_event_pool(8, prewarm=4)
            for i in range(50):
                e = dev.create_event()
                e.record(s)
                if i % 2:
                    e.close()                 # destroyed with its record pending
                else:
                    kept.append(e)
                p = pool.acquire()
                p.record(s)
                pool.release(p)               # released while pending
                with evx.timed(s) as t:
                    pass
                kept.append(t)
            kept.extend([pool, s])
        except Exception as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            finished.set()

    th = threading.Thread(target=other_thread)
    th.start()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        began.set()
        for _ in range(20):
            x.add_(1.0)
        assert finished.wait(60), "the other thread did not finish during the capture"
    th.join(60)
    assert not errors, errors
    graph.replay()
    torch.cuda.synchronize()
    assert x[0].item() == 20.0
    graph.reset()
    # Now the other thread's work is waited for, outside any capture.
    for obj in kept:
        if isinstance(obj, evx.timed):
            assert obj.elapsed_ms >= 0.0
        elif isinstance(obj, evx.Event):
            obj.sync()
            obj.close()
    for obj in kept:
        if isinstance(obj, (evx.EventPool, evx.Stream)):
            obj.close()
