#!/usr/bin/env python3
# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Per-call cost of event work from Python: evx (its Pythonic layer, its raw
ctypes functions, and evx.timed) against ctypes straight into the driver,
cuda.bindings, cuda.core, CuPy and PyTorch, all in one process.

For each call the figure is the median over REPS repetitions of N calls
(N/4 for the timed region) in ns per call, as
bench/anchors/py_frameworks.py measures them, except that the repetitions are interleaved:
each repetition runs every column's case once, so that the machine's drift
over the run does not favour one column (the timed region moved by 200 ns
between columns run one after the other). The table gives each figure's ratio to
ctypes straight into the driver (the bare cost of reaching it from Python).
All columns record on one driver stream, each through its own wrapper of it
(see STREAM; --own-streams gives each its own). After the table, the timed
region is compared paired: evx against each framework in adjacent blocks,
the order alternating, with the median ratio and its 95 % interval.

    python3 bench/py_bench.py
    EVX_DRIVER=host python3 bench/py_bench.py --n 2000 --reps 3

evx is the package on PYTHONPATH (an installed one, or a build tree's
BUILD/bindings/python), else the one meson built in build/bindings/python;
the top of the output names the package and the library it loaded.

The ctypes column calls the driver evx itself opened (evx.driver_path():
libcuda.so.1 on a GPU, the host emulation with EVX_DRIVER=host), so the
ratios mean the same on both. A framework that cannot be imported or fails
to start gets "n/a" in its column, with the reason below the table.
"""

import argparse
import ctypes
import os
import platform
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

def _find_evx():
    """Puts build/bindings/python (the package with its compiled core, as
    meson builds it) on the path, unless an evx is importable already."""
    import importlib.util
    if importlib.util.find_spec("evx") is None:
        sys.path.insert(0, os.path.join(os.path.dirname(HERE), "build", "bindings", "python"))


_find_evx()

CALLS = ("create+destroy", "record", "query (done)", "timed region")

# The driver stream (CUstream address) every column records on, each through
# its own wrapper of it; None with --own-streams: each column makes its own.
# One stream by default because which hardware queue a stream lands on moves
# the timed region by itself: on the H200, cuda.core's region on one of its
# own streams against another of its own streams, paired in one process, read
# 0.9985 to 1.0138 in eleven processes, more than the differences between
# the frameworks.
STREAM = None
REGION_DIV = 4


def paired_ratios(fa, fb, pairs, k):
    """time(fa(k)) / time(fb(k)) for `pairs` pairs of adjacent blocks, the
    order alternating from pair to pair so that neither side always goes
    first; sorted."""
    ratios = []
    for i in range(pairs):
        t = {}
        for name, f in (("a", fa), ("b", fb)) if i % 2 == 0 else (("b", fb), ("a", fa)):
            t0 = time.perf_counter_ns()
            f(k)
            t[name] = time.perf_counter_ns() - t0
        ratios.append(t["a"] / t["b"])
    ratios.sort()
    return ratios


def median_interval(ratios):
    """The median of sorted ratios and a 95 % confidence interval of it, from
    the ranks (as a sign test gives it)."""
    n = len(ratios)
    half = 0.98 * n ** 0.5          # 1.96 sigma of the rank
    lo = ratios[max(0, int(n / 2 - half))]
    hi = ratios[min(n - 1, int(n / 2 + half + 1))]
    return statistics.median(ratios), lo, hi


class Bench:
    """Cases are registered per column, then measured round-robin: each
    repetition runs every case once, in column order, so that a drift of the
    machine over the run (clocks, other load) spreads over all columns
    instead of landing on whichever ran last."""

    def __init__(self, n, reps):
        self.n = n
        self.reps = reps
        self.results = {}      # (column, call) -> ns
        self.notes = []        # (column, text)
        self.columns = []
        self.cases = []        # (column, call, fn, n)

    def run(self, column, setup):
        self.columns.append(column)
        try:
            cases = setup()
        except Exception as e:      # the framework is absent or cannot start
            self.notes.append((column, "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")))
            print("  %-24s n/a (%s)" % (column, self.notes[-1][1]), flush=True)
            return
        for call in CALLS:
            fn = cases.get(call)
            if fn is None:
                continue
            n = self.n // REGION_DIV if call == "timed region" else self.n
            try:
                fn(max(1, n // 10))    # warm-up, and a first check that it runs
            except Exception as e:
                self.notes.append((column, "%s failed: %s: %s" % (call, type(e).__name__, e)))
                print("  %-24s %-16s failed: %s" % (column, call, e), flush=True)
                continue
            self.cases.append((column, call, fn, n))

    def measure_all(self):
        times = {(col, call): [] for col, call, _, _ in self.cases}
        failed = set()
        for _ in range(self.reps):
            for col, call, fn, n in self.cases:
                if (col, call) in failed:
                    continue
                try:
                    t0 = time.perf_counter_ns()
                    fn(n)
                    times[(col, call)].append((time.perf_counter_ns() - t0) / n)
                except Exception as e:
                    failed.add((col, call))
                    self.notes.append((col, "%s failed: %s: %s" % (call, type(e).__name__, e)))
        for col, call, _, _ in self.cases:
            ts = times[(col, call)]
            if (col, call) in failed or not ts:
                continue
            ns = statistics.median(ts)
            self.results[(col, call)] = ns
            print("  %-24s %-16s %10.1f ns/call (min %.1f, max %.1f)"
                  % (col, call, ns, min(ts), max(ts)), flush=True)

    def paired(self, call, pairs, k):
        """Each evx column against each other column on one call, in adjacent
        blocks of k calls (the order alternating from pair to pair), so that
        both sides of a pair see the same machine. Gives the median of the
        pairs' ratios, a 95 % confidence interval of that median (from the
        ranks, as a sign test gives it), and how often evx was faster."""
        fns = {col: fn for col, c, fn, _ in self.cases if c == call}
        ours = [c for c in ("evx", "evx.timed") if c in fns]
        theirs = [c for c in self.columns if c in fns and c not in ours
                  and not c.startswith(("ctypes", "evx"))]
        lines = []
        for a in ours:
            for b in theirs:
                ratios = paired_ratios(fns[a], fns[b], pairs, k)
                med, lo, hi = median_interval(ratios)
                faster = sum(r < 1.0 for r in ratios) / pairs
                lines.append("| %s / %s | %.4f | %.4f to %.4f | %.0f %% |"
                             % (a, b, med, lo, hi, 100 * faster))
        return lines

    def table(self, base):
        lines = ["| call | " + " | ".join(self.columns) + " |",
                 "|---|" + "---|" * len(self.columns)]
        for call in CALLS:
            cells = []
            b = self.results.get((base, call))
            for col in self.columns:
                v = self.results.get((col, call))
                if v is None:
                    cells.append("n/a")
                elif b is None:
                    cells.append("%.0f" % v)
                else:
                    cells.append("%.0f (%.2fx)" % (v, v / b))
            lines.append("| %s | %s |" % (call, " | ".join(cells)))
        return "\n".join(lines)


# --------------------------------------------------------------------------
# The columns


def ctypes_driver(path):
    """ctypes straight into the driver library evx opened."""
    def setup():
        cu = ctypes.CDLL(path)

        def sym(*names):
            for n in names:
                if hasattr(cu, n):
                    return getattr(cu, n)
            raise AttributeError("%s exports none of %s" % (path, names))

        def ck(r):
            if r != 0:
                raise RuntimeError("driver error %d" % r)
        ck(sym("cuInit")(0))
        dev = ctypes.c_int()
        ck(sym("cuDeviceGet")(ctypes.byref(dev), 0))
        ctx = ctypes.c_void_p()
        ck(sym("cuDevicePrimaryCtxRetain")(ctypes.byref(ctx), dev))
        ck(sym("cuCtxSetCurrent")(ctx))
        s = ctypes.c_void_p(STREAM)
        if STREAM is None:
            ck(sym("cuStreamCreate")(ctypes.byref(s), 1))
        create = sym("cuEventCreate")
        destroy = sym("cuEventDestroy_v2", "cuEventDestroy")
        rec = sym("cuEventRecord")
        q = sym("cuEventQuery")
        sync = sym("cuEventSynchronize")
        el = sym("cuEventElapsedTime_v2", "cuEventElapsedTime")
        ssync = sym("cuStreamSynchronize")
        for f in (rec, q, sync, el, create, destroy, ssync):
            f.restype = ctypes.c_int
        rec.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        q.argtypes = [ctypes.c_void_p]
        sync.argtypes = [ctypes.c_void_p]
        destroy.argtypes = [ctypes.c_void_p]
        ssync.argtypes = [ctypes.c_void_p]
        el.argtypes = [ctypes.POINTER(ctypes.c_float), ctypes.c_void_p, ctypes.c_void_p]
        a, b = ctypes.c_void_p(), ctypes.c_void_p()
        ck(create(ctypes.byref(a), 0))
        ck(create(ctypes.byref(b), 0))
        ms = ctypes.c_float()
        pms = ctypes.byref(ms)
        rec(a, s); rec(b, s); ck(ssync(s))

        def c_create(n):
            e = ctypes.c_void_p()
            pe = ctypes.byref(e)
            for _ in range(n):
                create(pe, 0); destroy(e)

        def c_record(n):
            for _ in range(n):
                rec(a, s)
            ssync(s)

        def c_query(n):
            for _ in range(n):
                q(a)

        def c_region(n):
            for _ in range(n):
                rec(a, s); rec(b, s); sync(b); el(pms, a, b)
        return {"create+destroy": c_create, "record": c_record,
                "query (done)": c_query, "timed region": c_region}
    return setup


def evx_layer(evx):
    def setup():
        dev = evx.Device(0)
        s = dev.create_stream() if STREAM is None else evx.Stream.wrap(STREAM)
        a, b = dev.create_event(), dev.create_event()
        a.record(s); b.record(s); s.sync()

        def create(n):
            for _ in range(n):
                dev.create_event().close()

        def record(n):
            for _ in range(n):
                a.record(s)
            s.sync()

        def query(n):
            for _ in range(n):
                a.is_done

        def region(n):
            for _ in range(n):
                a.record(s); b.record(s); b.sync(); b - a
        return {"create+destroy": create, "record": record,
                "query (done)": query, "timed region": region}
    return setup


def evx_timed(evx):
    def setup():
        s = evx.Device(0).create_stream() if STREAM is None else evx.Stream.wrap(STREAM)
        timed = evx.timed

        def region(n):
            for _ in range(n):
                with timed(s) as t:
                    pass
                t.elapsed_ms
        return {"timed region": region}
    return setup


def evx_capi(evx):
    """evx's own ctypes functions, without the Pythonic layer."""
    def setup():
        c = evx.capi
        create, destroy = c.evx_device_create_event, c.evx_event_destroy
        rec, q, sync, el = (c.evx_event_record, c.evx_event_query,
                            c.evx_event_synchronize, c.evx_event_elapsed_time)
        s = ctypes.c_void_p()
        if STREAM is None:
            assert c.evx_device_create_stream(0, 1, 0, ctypes.byref(s)) == 0
        else:
            assert c.evx_stream_wrap_external(0, STREAM, ctypes.byref(s)) == 0
        a, b = ctypes.c_void_p(), ctypes.c_void_p()
        assert create(0, 0, ctypes.byref(a)) == 0 and create(0, 0, ctypes.byref(b)) == 0
        ms = ctypes.c_float()
        pms = ctypes.byref(ms)
        rec(a, s); rec(b, s); c.evx_stream_synchronize(s)

        def c_create(n):
            e = ctypes.c_void_p()
            pe = ctypes.byref(e)
            for _ in range(n):
                create(0, 0, pe); destroy(e)

        def c_record(n):
            for _ in range(n):
                rec(a, s)
            c.evx_stream_synchronize(s)

        def c_query(n):
            for _ in range(n):
                q(a)

        def c_region(n):
            for _ in range(n):
                rec(a, s); rec(b, s); sync(b); el(pms, a, b)
        return {"create+destroy": c_create, "record": c_record,
                "query (done)": c_query, "timed region": c_region}
    return setup


def cuda_bindings():
    from cuda.bindings import driver as d

    def ck(r):
        err = r[0] if isinstance(r, tuple) else r
        if int(err) != 0:
            raise RuntimeError("cuda.bindings: %s" % (err,))
        return r
    ck(d.cuInit(0))
    _, dev = ck(d.cuDeviceGet(0))
    _, ctx = ck(d.cuDevicePrimaryCtxRetain(dev))
    ck(d.cuCtxSetCurrent(ctx))
    _, s = ck(d.cuStreamCreate(1)) if STREAM is None else (0, d.CUstream(STREAM))
    _, a = ck(d.cuEventCreate(0))
    _, b = ck(d.cuEventCreate(0))
    d.cuEventRecord(a, s); d.cuEventRecord(b, s); d.cuStreamSynchronize(s)

    def create(n):
        for _ in range(n):
            _, e = d.cuEventCreate(0); d.cuEventDestroy(e)

    def record(n):
        for _ in range(n):
            d.cuEventRecord(a, s)
        d.cuStreamSynchronize(s)

    def query(n):
        for _ in range(n):
            d.cuEventQuery(a)

    def region(n):
        for _ in range(n):
            d.cuEventRecord(a, s); d.cuEventRecord(b, s); d.cuEventSynchronize(b)
            d.cuEventElapsedTime(a, b)
    return {"create+destroy": create, "record": record, "query (done)": query,
            "timed region": region}


def cuda_core_open(stream=None):
    """cuda.core's device 0 (made current), a stream (``stream``, a driver
    stream address, or a new one) and timing-event options, across its
    versions: (the device, the stream, the options)."""
    try:
        from cuda.core import Device, EventOptions, Stream
    except ImportError:
        from cuda.core.experimental import Device, EventOptions, Stream
    dev = Device(0)
    dev.set_current()
    s = dev.create_stream() if stream is None else Stream.from_handle(stream)
    try:
        opt = EventOptions(timing_enabled=True)     # cuda.core 1.x
    except TypeError:
        opt = EventOptions(enable_timing=True)      # 0.x
    return dev, s, opt


def cuda_core():
    dev, s, opt = cuda_core_open(STREAM)
    a = s.record(options=opt)
    b = s.record(options=opt)
    s.sync()
    cases = {}
    if hasattr(dev, "create_event"):
        def create(n):
            for _ in range(n):
                dev.create_event(opt).close()
        cases["create+destroy"] = create

    def record(n):
        for _ in range(n):
            s.record(a)
        s.sync()

    def query(n):
        for _ in range(n):
            a.is_done

    def region(n):
        for _ in range(n):
            s.record(a); s.record(b); b.sync(); b - a
    cases.update({"record": record, "query (done)": query, "timed region": region})
    return cases


def cupy_():
    import cupy as cp
    s = cp.cuda.Stream(non_blocking=True) if STREAM is None else cp.cuda.ExternalStream(STREAM)
    a, b = cp.cuda.Event(), cp.cuda.Event()
    a.record(s); b.record(s); s.synchronize()

    def create(n):
        for _ in range(n):
            cp.cuda.Event()

    def record(n):
        for _ in range(n):
            a.record(s)
        s.synchronize()

    def query(n):
        for _ in range(n):
            a.done

    def region(n):
        for _ in range(n):
            a.record(s); b.record(s); b.synchronize(); cp.cuda.get_elapsed_time(a, b)
    return {"create+destroy": create, "record": record, "query (done)": query,
            "timed region": region}


def torch_():
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError("torch.cuda.is_available() is False")
    s = torch.cuda.Stream() if STREAM is None else torch.cuda.ExternalStream(STREAM)
    a = torch.cuda.Event(enable_timing=True)
    b = torch.cuda.Event(enable_timing=True)
    a.record(s); b.record(s); s.synchronize()

    def create(n):     # torch creates the CUDA event lazily, on first record
        for _ in range(n):
            torch.cuda.Event(enable_timing=True).record(s)

    def record(n):
        for _ in range(n):
            a.record(s)
        s.synchronize()

    def query(n):
        for _ in range(n):
            a.query()

    def region(n):
        for _ in range(n):
            a.record(s); b.record(s); b.synchronize(); a.elapsed_time(b)
    return {"create+destroy": create, "record": record, "query (done)": query,
            "timed region": region}


def version_of(mod):
    try:
        m = __import__(mod, fromlist=["_"])
        return getattr(m, "__version__", "?")
    except Exception:
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20000, help="calls per repetition (default 20000)")
    ap.add_argument("--reps", type=int, default=9, help="repetitions (default 9)")
    ap.add_argument("--pairs", type=int, default=301,
                    help="pairs of blocks for the paired timed-region comparison "
                         "(default 301; 0 skips it)")
    ap.add_argument("--own-streams", action="store_true",
                    help="each column records on a stream of its own making instead "
                         "of all on one (see STREAM)")
    args = ap.parse_args()

    import evx
    drv = evx.driver_path()
    print("# evx Python per-call benchmark")
    print("python %s, %s; evx %s (%s)" % (platform.python_version(), platform.machine(),
                                        evx.library_version(), evx.library_path))
    print("evx's Python package: %s (compiled core %s)" % (
        os.path.dirname(evx.__file__), os.path.basename(evx._core.__file__)))
    print("driver: %s%s, version %d; %d device(s)" % (
        drv, " (host emulation)" if evx.is_emulation() else "", evx.driver_version(),
        evx.device_count()))
    for m in ("cuda.bindings", "cuda.core", "cupy", "torch"):
        v = version_of(m)
        print("%s: %s" % (m, v if v is not None else "not installed"))
    print("median of %d interleaved reps of %d calls (%d for the timed region), ns per call\n"
          % (args.reps, args.n, args.n // REGION_DIV), flush=True)

    global STREAM
    if not args.own_streams:
        shared = evx.Device(0).create_stream()
        STREAM = shared.native
    print("streams: %s\n" % ("each column its own" if args.own_streams else
          "one, made by evx (non-blocking, priority 0), each column through "
          "its own wrapper of it"), flush=True)

    b = Bench(args.n, args.reps)
    base = "ctypes -> host emulation" if evx.is_emulation() else "ctypes -> libcuda"
    b.run(base, ctypes_driver(drv))
    b.run("evx", evx_layer(evx))
    b.run("evx.timed", evx_timed(evx))
    b.run("evx capi (ctypes)", evx_capi(evx))
    b.run("cuda.bindings", cuda_bindings)
    b.run("cuda.core", cuda_core)
    b.run("CuPy", cupy_)
    b.run("PyTorch", torch_)
    b.measure_all()

    print()
    print(b.table(base))
    print()
    print("Ratios are to %s (%s)." % (base, drv))
    print("PyTorch's create+destroy includes the first record (torch creates "
          "events lazily). evx.timed's timed region is one `with evx.timed(s)` "
          "block and one elapsed_ms read.")
    for col, note in b.notes:
        print("- %s: n/a: %s" % (col, note))
    if args.pairs > 0:
        k = max(1, args.n // REGION_DIV // 25)
        print("\nTimed region, paired: %d pairs of adjacent blocks of %d regions, "
              "the order alternating; ratio of times (< 1: evx faster)\n" % (args.pairs, k))
        print("| evx / other | median ratio | 95 % interval of the median | pairs evx faster |")
        print("|---|---|---|---|")
        for line in b.paired("timed region", args.pairs, k):
            print(line, flush=True)
    if (base, "record") not in b.results:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
