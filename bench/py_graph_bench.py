#!/usr/bin/env python3
# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Timing inside a CUDA graph (docs/graphs.md): a captured step of three
kernels between four marks of an evx.Timeline (before, between, after),
replayed REPLAYS times, its per-replay intervals read with the same calls
as outside a graph.

Two tables, all medians over the replays, in one process:

1. the three phases: the same step run outside a graph (the same evx
   Timeline calls, reset per step), inside the graph (evx marks), and inside
   the graph with ``torch.cuda.Event(enable_timing=True, external=True)``
   doing the same (PyTorch's way: four external events, elapsed_time after
   each replay), with the ratios in/out and evx/torch;
2. the replay: a graph of the same three kernels with no marks, with the
   four evx marks, and with the four torch external events, replayed
   alternately, each replay timed outside the graph by an evx timer on the
   replay stream (device time) and by the host clock (launch + wait); the
   cost a mark adds is (marked - plain) / 4.

Backends:

- ``torch`` (the default where PyTorch with CUDA imports): the kernels are
  ``torch.cuda._sleep(cycles)`` (or small matmuls, ``--kernel matmul``),
  captured with ``torch.cuda.graph`` (its default capture mode, global,
  unless ``--capture-mode``) and replayed with ``g.replay()``, the
  evx stream a wrap of the capture stream (``evx.Stream.wrap``).
- ``driver``: no PyTorch. The capture is made with the raw driver calls evx
  opened (ctypes, as docs/graphs.md's C example), the "kernels" are host
  functions that sleep (graph host nodes), the torch column is "n/a". This
  is what runs on the host emulation, which has no kernels:

    python3 bench/py_graph_bench.py                      # GPU, PyTorch
    EVX_DRIVER=host python3 bench/py_graph_bench.py --backend driver --replays 5

On the emulation the figures are those of host threads and sleeps, not of a
GPU: the smoke run checks that every row is produced, never a figure.
"""

import argparse
import ctypes
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def _find_evx():
    """Puts build/bindings/python on the path, unless an evx is importable."""
    import importlib.util
    if importlib.util.find_spec("evx") is None:
        sys.path.insert(0, os.path.join(os.path.dirname(HERE), "build", "bindings", "python"))


_find_evx()
# The driver's calls evx does not wrap, shared with the graph tests.
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "bindings", "python", "tests"))

import evx  # noqa: E402
import rawdriver  # noqa: E402

PHASES = ("kernel 1", "kernel 2", "kernel 3")
MARKS = 4
THREAD_LOCAL = rawdriver.CAPTURE_THREAD_LOCAL
HOSTFN = rawdriver.HOSTFN


class TorchBackend:
    """Kernels of PyTorch, captured with torch.cuda.graph."""

    name = "torch"

    def __init__(self, args):
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("torch.cuda.is_available() is False")
        self.torch = torch
        torch.cuda.init()
        self.side = torch.cuda.Stream()
        # wrapped once, outside any capture: torch.cuda.graph captures on it
        self.evx_side = evx.Stream.wrap(self.side)
        self.mode = args.capture_mode
        if args.kernel == "sleep":
            cycles = args.cycles
            self.kernels = [lambda c=c: torch.cuda._sleep(c) for c in cycles]
        else:
            n = args.matmul
            a = [torch.randn(n, n, device="cuda") for _ in range(3)]
            self.kernels = [lambda x=x: x @ x for x in a]
        self.kernel_desc = (f"torch.cuda._sleep({', '.join(map(str, args.cycles))} cycles)"
                            if args.kernel == "sleep" else f"{args.matmul}x{args.matmul} matmuls")
        # warm up (cuBLAS handles, lazy modules) before any capture
        with torch.cuda.stream(self.side):
            for k in self.kernels:
                k()
        self.side.synchronize()
        self.torch_events_reason = None
        try:
            torch.cuda.Event(enable_timing=True, external=True)
        except TypeError as e:  # an older PyTorch
            self.torch_events_reason = f"torch.cuda.Event(external=True): {e}"

    def eager_stream(self):
        return self.side

    def evx_stream(self, s):
        return self.evx_side if s is self.side else evx.Stream.wrap(s)

    def run_step(self, s, mark):
        """The step on torch stream ``s``; mark(i) before, between, after."""
        with self.torch.cuda.stream(s):
            mark(0)
            for i, k in enumerate(self.kernels):
                k()
                mark(i + 1)

    def capture(self, mark):
        """A graph of the step, mark(i) called inside the capture."""
        g = self.torch.cuda.CUDAGraph()
        with self.torch.cuda.graph(g, stream=self.side, capture_error_mode=self.mode):
            s = self.side  # the capture stream (torch's current one here)
            mark_s = (lambda i: mark(i, s)) if mark else (lambda i: None)
            mark_s(0)
            for i, k in enumerate(self.kernels):
                k()
                mark_s(i + 1)
        return g

    def replay(self, g):
        with self.torch.cuda.stream(self.side):
            g.replay()

    def torch_event_graph(self):
        ev = [self.torch.cuda.Event(enable_timing=True, external=True) for _ in range(MARKS)]
        g = self.capture(lambda i, s: ev[i].record(s))
        return g, ev

    def torch_event_intervals(self, ev):
        ev[-1].synchronize()
        return [ev[i].elapsed_time(ev[i + 1]) for i in range(MARKS - 1)]

    def destroy(self, g):
        # the graph before the marks' events (the timeline's, torch's)
        self.side.synchronize()
        g.reset()

    def close(self):
        self.side.synchronize()
        self.evx_side.close()


class DriverBackend:
    """Host functions that sleep, captured with the driver evx opened."""

    name = "driver"

    def __init__(self, args):
        self.cu = rawdriver.open_driver(evx)
        self.prev = ctypes.c_void_p()
        self._cu("cuCtxGetCurrent", ctypes.byref(self.prev))
        ctx = ctypes.c_void_p()
        self._cu("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), 0)
        self._cu("cuCtxSetCurrent", ctx)  # cuGraphInstantiate needs one
        libc = ctypes.CDLL(None)
        self.kernels_us = args.sleep_us
        self.fns = [HOSTFN(lambda _d, us=us: libc.usleep(us)) for us in args.sleep_us]
        self.kernel_desc = ("host functions sleeping "
                            f"{', '.join(str(u) for u in args.sleep_us)} us")
        self.stream = evx.Device(0).create_stream()
        self.torch_events_reason = "--backend driver: no PyTorch"

    def _cu(self, name, *a):
        r = getattr(self.cu, name)(*a)
        if r != 0:
            raise RuntimeError(f"{name} returned CUresult {r}")

    def eager_stream(self):
        return self.stream

    def evx_stream(self, s):
        return s

    def run_step(self, s, mark):
        mark(0)
        for i, fn in enumerate(self.fns):
            self._cu("cuLaunchHostFunc", s.native, fn, None)
            mark(i + 1)

    def capture(self, mark):
        s = self.stream
        self._cu("cuStreamBeginCapture_v2", s.native, THREAD_LOCAL)
        try:
            self.run_step(s, (lambda i: mark(i, s)) if mark else (lambda i: None))
        finally:
            graph = ctypes.c_void_p()
            self._cu("cuStreamEndCapture", s.native, ctypes.byref(graph))
        exec_ = ctypes.c_void_p()
        self._cu("cuGraphInstantiateWithFlags", ctypes.byref(exec_), graph, 0)
        return (graph, exec_)

    def replay(self, g):
        self._cu("cuGraphLaunch", g[1], self.stream.native)

    def destroy(self, g):
        self.stream.sync()
        self._cu("cuGraphExecDestroy", g[1])
        self._cu("cuGraphDestroy", g[0])

    def close(self):
        self.stream.sync()
        self.stream.close()
        self._cu("cuCtxSetCurrent", self.prev)
        self._cu("cuDevicePrimaryCtxRelease_v2", 0)


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def fmt(x, unit=""):
    return "n/a" if x is None or x != x else f"{x:.4g}{unit}"


def ratio(a, b):
    return "n/a" if a is None or b is None or a != a or b != b or b == 0 else f"{a / b:.3f}"


def marker(backend, tl):
    """mark(i, s) for a capture: marks ``tl`` on the capture stream ``s``
    (through the backend's evx.Stream of it, made outside the capture)."""
    def mark(i, s):
        tl.mark(backend.evx_stream(s))
    return mark


def phases(backend, replays):
    """Per-phase medians (ms): outside the graph, evx in it, torch in it."""
    dev = evx.Device(0)
    out = [[] for _ in PHASES]
    in_evx = [[] for _ in PHASES]
    in_torch = [[] for _ in PHASES]

    # outside a graph: the same marks, the same calls, the timeline reset per step
    tl = evx.Timeline(dev, MARKS)
    raw = backend.eager_stream()
    es = backend.evx_stream(raw)
    for _ in range(replays):
        tl.reset()
        backend.run_step(raw, lambda i: tl.mark(es))
        for k, v in enumerate(tl.intervals()):
            out[k].append(v)
    tl.close()

    # inside the graph: the marks are nodes of it, read after each replay
    tlg = evx.Timeline(dev, MARKS)
    g = backend.capture(marker(backend, tlg))
    for _ in range(replays):
        backend.replay(g)
        for k, v in enumerate(tlg.intervals()):
            in_evx[k].append(v)
    backend.destroy(g)
    tlg.close()

    if backend.torch_events_reason is None:
        g, ev = backend.torch_event_graph()
        for _ in range(replays):
            backend.replay(g)
            for k, v in enumerate(backend.torch_event_intervals(ev)):
                in_torch[k].append(v)
        backend.destroy(g)
        del ev
    n = [len(x) for x in out + in_evx]
    if min(n) != replays:
        raise RuntimeError(f"expected {replays} intervals per phase, got {n}")
    return ([med(x) for x in out], [med(x) for x in in_evx],
            [med(x) if x else None for x in in_torch])


def replay_cost(backend, replays):
    """Medians of a replay's device time (evx timer around it, outside the
    graph) and host time (launch + wait), for the graphs with no marks, with
    four evx marks, with four torch external events; replayed alternately."""
    dev = evx.Device(0)
    tl = evx.Timeline(dev, MARKS)
    graphs = {"no marks": backend.capture(None),
              "4 evx marks": backend.capture(marker(backend, tl))}
    torch_events = None  # referenced until their graph is destroyed
    if backend.torch_events_reason is None:
        graphs["4 torch events"], torch_events = backend.torch_event_graph()
    rs = backend.evx_stream(backend.eager_stream())
    dev_ms = {k: [] for k in graphs}
    host_us = {k: [] for k in graphs}
    for g in graphs.values():  # one warm-up replay each
        backend.replay(g)
    rs.sync()
    for _ in range(replays):
        for name, g in graphs.items():
            t0 = time.perf_counter_ns()
            with evx.timed(rs) as t:
                backend.replay(g)
            rs.sync()
            host_us[name].append((time.perf_counter_ns() - t0) / 1e3)
            dev_ms[name].append(t.elapsed_ms)
    for g in graphs.values():
        backend.destroy(g)
    del torch_events
    tl.close()
    return {k: med(v) for k, v in dev_ms.items()}, {k: med(v) for k, v in host_us.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", choices=("auto", "torch", "driver"), default="auto",
                    help="auto: torch if PyTorch with CUDA imports, else driver")
    ap.add_argument("--replays", type=int, default=100)
    ap.add_argument("--kernel", choices=("sleep", "matmul"), default="sleep")
    ap.add_argument("--cycles", type=int, nargs=3, default=[200000, 400000, 100000],
                    help="torch.cuda._sleep cycles of the three kernels")
    ap.add_argument("--capture-mode", choices=("global", "thread_local", "relaxed"),
                    default="global", help="torch.cuda.graph's capture_error_mode")
    ap.add_argument("--matmul", type=int, default=1024, help="--kernel matmul: n of n x n")
    ap.add_argument("--sleep-us", type=int, nargs=3, default=[2000, 4000, 1000],
                    help="--backend driver: the host functions' sleeps (us)")
    args = ap.parse_args()
    if args.replays < 1:
        ap.error(f"--replays must be at least 1, got {args.replays}")

    backend = None
    if args.backend in ("auto", "torch"):
        try:
            backend = TorchBackend(args)
        except Exception as e:  # no torch, no CUDA: say so
            if args.backend == "torch":
                print(f"py_graph_bench: the torch backend cannot start: {e!r}")
                return 1
            print(f"PyTorch with CUDA is not usable ({e!r}): --backend driver")
    if backend is None:
        backend = DriverBackend(args)

    print(f"evx {evx.__version__} from {os.path.dirname(evx.__file__)}; "
          f"driver {evx.driver_path()}")
    print(f"backend {backend.name}: {backend.kernel_desc}; {args.replays} replays; "
          "medians")
    if backend.torch_events_reason is not None:
        print(f"torch column n/a: {backend.torch_events_reason}")
    try:
        out, in_evx, in_torch = phases(backend, args.replays)
        dev_ms, host_us = replay_cost(backend, args.replays)
    finally:
        backend.close()

    print()
    print("| phase | outside graph, evx (ms) | in graph, evx (ms) "
          "| in graph, torch external (ms) | in/out (evx) | evx/torch (in graph) |")
    print("|---|---|---|---|---|---|")
    for k, name in enumerate(PHASES):
        print(f"| {name} | {fmt(out[k])} | {fmt(in_evx[k])} | {fmt(in_torch[k])} "
              f"| {ratio(in_evx[k], out[k])} | {ratio(in_evx[k], in_torch[k])} |")
    print()
    base_dev, base_host = dev_ms["no marks"], host_us["no marks"]
    print("| replay | device time (ms) | ratio | added per mark (us) "
          "| host launch+wait (us) | ratio |")
    print("|---|---|---|---|---|---|")
    for name in ("no marks", "4 evx marks", "4 torch events"):
        if name not in dev_ms:
            print(f"| {name} | n/a | n/a | n/a | n/a | n/a |")
            continue
        per_mark = ("" if name == "no marks"
                    else f"{(dev_ms[name] - base_dev) * 1e3 / MARKS:+.2f}")
        print(f"| {name} | {fmt(dev_ms[name])} | {ratio(dev_ms[name], base_dev)} | {per_mark} "
              f"| {fmt(host_us[name])} | {ratio(host_us[name], base_host)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
