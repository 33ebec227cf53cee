#!/usr/bin/env python3
# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Awaiting GPU completion from asyncio: evx.aio (the C notifier's eventfd on
the loop) against the two usual workarounds, in one process:

  notifier   ``await evx.aio.wait(ev)``
  thread     a thread per wait, in ``ev.sync()`` (cuEventSynchronize on a
             default event, which spins), handing the result to the loop
             with ``loop.call_soon_threadsafe``
  thread_blocking
             the same with a ``blocking_sync=True`` event: the thread
             sleeps in the driver instead of spinning
  poll       ``while not ev.is_done: await asyncio.sleep(0)``

1. Latency: the stream is held until the benchmark releases it, and the
   event recorded after the hold completes when the hold ends. The latency
   is from the release to the awaiting coroutine running again, median and
   90th percentile over --trials trials per method, the methods interleaved
   trial by trial. Two holds (--hold):
     kernel   a one-thread kernel (PTX, loaded through the driver evx opened)
              spinning on a flag in mapped host memory; the release sets the
              flag. The event completes as after real GPU work. The default
              on a GPU.
     hostfn   a host function blocked on a threading.Event; the release sets
              it, and the host function must take the GIL to return. The
              only hold the host emulation has.
2. CPU while waiting: process CPU time during --hold-ms of waiting before
   the release, as a share of one core (the loop idles for the notifier and
   the thread; it spins for poll).
3. Latency at concurrency (--latency-at N...): N events recorded after one
   hold, all completing at its release, awaited by N coroutines with the
   notifier or a thread each (spinning or blocking); poll is left out:
   it takes a core whatever N is. Per trial the median and the largest
   latency from the release to a coroutine resuming, and the CPU while
   waiting; the medians of those over --latency-trials trials, the methods
   interleaved. A thread per wait is the usual workaround; this shows what
   it costs once there are more waits than one.
4. Short work (--work-us W...): GPU work of W us (the hold kernel, never
   released, ending by its time limit) launched with nothing held and
   awaited at once, so that what each waiter does at its start counts (the
   notifier's pump waking to launch the host function; a thread method's
   hand-off to a warm one-thread pool, loop.run_in_executor), with the
   notifier's callback path besides its tokens ("future":
   asyncio.wrap_future(evx.aio.future(ev))). The time from
   just before the launch to the coroutine resuming, and that less W:
   medians over --trials trials, the methods interleaved.
5. Concurrency: --concurrent awaits of as many pending events on one loop
   with the notifier (the thread method would need a thread each; poll is
   run with the same count for the CPU comparison): the time the calls
   that start the waits take (before the release: a call that blocks shows
   here), wall time from the release to all resumed, OS threads before and
   after, CPU time per await.

    PYTHONPATH=build/bindings/python python3 bench/py_async_bench.py
    EVX_DRIVER=host ... python3 bench/py_async_bench.py --trials 5 --concurrent 200

On the host emulation the figures say nothing about a GPU: a smoke run only.
"""

import argparse
import asyncio
import os
import re
import platform
import importlib.util
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
# build/bindings/python (the package with its compiled core, as meson builds
# it), unless an evx is importable already (PYTHONPATH, an install).
if importlib.util.find_spec("evx") is None:
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "build", "bindings", "python"))

METHODS = ("notifier", "thread", "thread_blocking", "poll")
# Short work also times the notifier's callback path: evx.aio.future (a
# callback watch completing a concurrent.futures.Future) awaited through
# asyncio.wrap_future.
SHORT_METHODS = ("notifier", "future") + METHODS[1:]


def os_threads():
    return len(os.listdir("/proc/self/task"))


def hold_kernel_ptx():
    """The hold kernel's PTX, read from tests/gpu/hold_kernel.h (the C
    header the conformance suite and evx-notify-latency load it from): the
    string literals of its evx_hold_kernel_ptx, joined."""
    header = os.path.join(os.path.dirname(HERE), "tests", "gpu", "hold_kernel.h")
    with open(header) as f:
        text = f.read()
    body = text.split("evx_hold_kernel_ptx[] =", 1)[1].split("#endif", 1)[0]
    literals = re.findall(r'"((?:[^"\\]|\\.)*)"', body)
    return "".join(lit.encode().decode("unicode_escape") for lit in literals).encode()


class KernelHold:
    """A one-thread kernel that spins until a flag in mapped host memory is
    set, launched through the driver library evx opened (ctypes). It ends by
    itself after LIMIT_S seconds, so a benchmark that cannot release it (a
    call that blocks before the release) ends too, and shows the wait."""

    LIMIT_S = 5.0

    def __init__(self, evx):
        import ctypes
        self.ct = ctypes
        self.cu = cu = ctypes.CDLL(evx.driver_path())
        vp, c_int = ctypes.c_void_p, ctypes.c_int
        self.ctx = vp()
        dev = c_int()
        self.check(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
        self.check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(self.ctx), dev),
                   "cuDevicePrimaryCtxRetain")
        self.current()
        mod, self.fn = vp(), vp()
        self.check(cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(hold_kernel_ptx())),
                   "cuModuleLoadData")
        self.check(cu.cuModuleGetFunction(ctypes.byref(self.fn), mod, b"evx_hold"),
                   "cuModuleGetFunction")
        host = vp()
        self.check(cu.cuMemHostAlloc(ctypes.byref(host), ctypes.c_size_t(64), 0x1 | 0x2),
                   "cuMemHostAlloc")   # PORTABLE | DEVICEMAP
        self.flag = ctypes.cast(host, ctypes.POINTER(ctypes.c_uint32))
        self.dflag = ctypes.c_uint64()
        self.check(cu.cuMemHostGetDevicePointer_v2(ctypes.byref(self.dflag), host, 0),
                   "cuMemHostGetDevicePointer")
        self.limit = ctypes.c_uint64(int(self.LIMIT_S * 1e9))
        self.params = (vp * 2)(ctypes.cast(ctypes.byref(self.dflag), vp),
                               ctypes.cast(ctypes.byref(self.limit), vp))

    def check(self, r, what):
        if r:
            raise RuntimeError("%s failed: CUresult %d" % (what, r))

    def current(self):
        self.check(self.cu.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")

    def __call__(self, stream, limit_ns=None):
        self.flag[0] = 0
        self.limit.value = int(self.LIMIT_S * 1e9) if limit_ns is None else limit_ns
        self.current()
        vp = self.ct.c_void_p
        self.check(self.cu.cuLaunchKernel(self.fn, 1, 1, 1, 1, 1, 1, 0, vp(stream.native),
                                          self.params, None), "cuLaunchKernel")
        return self

    def set(self):
        self.flag[0] = 1


HOLD = None   # a KernelHold, or None for the host-function hold


def hold(stream):
    """Holds the stream; returns what releases it (``.set()``)."""
    if HOLD is not None:
        return HOLD(stream)
    gate = threading.Event()
    entered = threading.Event()

    def fn():
        entered.set()
        gate.wait(60)
    stream.launch_host_func(fn)
    entered.wait(10)
    return gate


def work(stream, us):
    """Queues GPU work of about ``us`` microseconds on the stream: the hold
    kernel, never released, ending by its time limit (on the host emulation
    a host function that spins as long)."""
    if HOLD is not None:
        HOLD(stream, int(us * 1e3))
        return

    def fn():
        end = time.perf_counter() + us / 1e6
        while time.perf_counter() < end:
            pass
    stream.launch_host_func(fn)


async def short_trial(method, aio, dev, stream, us, pool):
    """One wait for work of ``us`` microseconds started with no hold: the
    time from just before the launch to the coroutine resuming, in us. The
    thread methods use a warm one-thread pool (loop.run_in_executor), the
    usual form of the workaround, so no thread is started in the trial."""
    loop = asyncio.get_running_loop()
    ev = dev.create_event(timing=False, blocking_sync=method == "thread_blocking")
    await asyncio.sleep(0.001)           # whatever the last trial woke settles
    t0 = time.perf_counter_ns()
    work(stream, us)
    ev.record(stream)
    if method == "notifier":
        await aio.wait(ev)
    elif method == "future":
        await asyncio.wrap_future(aio.future(ev))
    elif method in ("thread", "thread_blocking"):
        await loop.run_in_executor(pool, ev.sync)
    else:
        while not ev.is_done:
            await asyncio.sleep(0)
    total_us = (time.perf_counter_ns() - t0) / 1e3
    ev.close()
    return total_us


def start_wait(method, loop, aio, ev):
    """Starts waiting for ev; returns an awaitable."""
    if method == "notifier":
        return aio.wait(ev)
    if method in ("thread", "thread_blocking"):
        fut = loop.create_future()

        def blocked():
            ev.sync()
            loop.call_soon_threadsafe(fut.set_result, None)
        threading.Thread(target=blocked, daemon=True).start()
        return fut

    async def poll():
        while not ev.is_done:
            await asyncio.sleep(0)
    return asyncio.ensure_future(poll())


async def one_trial(method, aio, dev, stream, hold_s):
    loop = asyncio.get_running_loop()
    gate = hold(stream)
    ev = dev.create_event(timing=False, blocking_sync=method == "thread_blocking")
    ev.record(stream)
    waiter = start_wait(method, loop, aio, ev)
    await asyncio.sleep(0.002)           # the waiter settles
    cpu0, wall0 = time.process_time(), time.perf_counter()
    await asyncio.sleep(hold_s)          # waiting, the work held
    cpu_share = (time.process_time() - cpu0) / (time.perf_counter() - wall0)
    t0 = time.perf_counter_ns()
    gate.set()
    await waiter
    latency_us = (time.perf_counter_ns() - t0) / 1e3
    ev.close()
    return latency_us, cpu_share


async def latency_at(method, aio, dev, stream, n, hold_s):
    """One trial of n awaits completing together: (median latency us,
    largest latency us, CPU share while waiting, smallest latency us)."""
    loop = asyncio.get_running_loop()
    gate = hold(stream)
    events = [dev.create_event(timing=False, blocking_sync=method == "thread_blocking")
              for _ in range(n)]
    for e in events:
        e.record(stream)
    resumed = []

    async def one(e):
        await start_wait(method, loop, aio, e)
        resumed.append(time.perf_counter_ns())
    tasks = [asyncio.ensure_future(one(e)) for e in events]
    await asyncio.sleep(0.002)           # the waiters settle
    cpu0, wall0 = time.process_time(), time.perf_counter()
    await asyncio.sleep(hold_s)
    cpu_share = (time.process_time() - cpu0) / (time.perf_counter() - wall0)
    t0 = time.perf_counter_ns()
    gate.set()
    await asyncio.gather(*tasks)
    lat = [(r - t0) / 1e3 for r in resumed]
    for e in events:
        e.close()
    return statistics.median(lat), max(lat), cpu_share, min(lat)


async def concurrent(method, aio, dev, stream, n):
    gate = hold(stream)
    await aio.wait(dev.create_event())   # the loop's notifier exists
    events = [dev.create_event(timing=False) for _ in range(n)]
    for e in events:
        e.record(stream)
    threads0 = os_threads()
    cpu0 = time.process_time()
    s0 = time.perf_counter()
    waiters = [start_wait(method, asyncio.get_running_loop(), aio, e) for e in events]
    await asyncio.sleep(0.01)
    started = time.perf_counter() - s0 - 0.01
    t0 = time.perf_counter()
    gate.set()
    await asyncio.gather(*waiters)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    threads1 = os_threads()
    for e in events:
        e.close()
    return wall, threads0, threads1, cpu / n, started


def pct(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1))))]


def main():
    import faulthandler
    faulthandler.dump_traceback_later(480, exit=True)   # a hang prints where
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--hold-ms", type=float, default=20.0)
    ap.add_argument("--concurrent", type=int, nargs="+", default=[10000],
                    help="one or more counts of concurrent awaits")
    ap.add_argument("--latency-at", type=int, nargs="*", default=[1, 4, 16, 64],
                    help="counts of awaits completing together, for the latency at "
                         "concurrency (none: skipped)")
    ap.add_argument("--latency-trials", type=int, default=30)
    ap.add_argument("--work-us", type=float, nargs="*", default=[20.0, 100.0, 1000.0],
                    help="lengths of GPU work (us) for the short-work latency (none: "
                         "skipped)")
    ap.add_argument("--loop", choices=("asyncio", "uvloop"), default="asyncio")
    ap.add_argument("--hold", choices=("kernel", "hostfn"), default=None,
                    help="kernel on a GPU, hostfn on the host emulation (default)")
    args = ap.parse_args()
    if (args.trials < 1 or min(args.concurrent) < 1 or args.hold_ms <= 0
            or args.latency_trials < 1 or min(args.latency_at, default=1) < 1
            or min(args.work_us, default=1) <= 0):
        ap.error("--trials, --latency-trials, --latency-at and --concurrent must be 1 "
                 "or more, --hold-ms and --work-us above 0")

    import evx
    import evx.aio as aio
    if args.loop == "uvloop":
        import uvloop
        loop = uvloop.new_event_loop()
    else:
        loop = asyncio.new_event_loop()
    dev = evx.Device(0)
    stream = dev.create_stream()
    global HOLD
    hold_kind = args.hold or ("hostfn" if evx.is_emulation() else "kernel")
    if hold_kind == "kernel":
        HOLD = KernelHold(evx)

    print("# py_async_bench: evx %s, driver %s%s, core %s, loop %s, Python %s"
          % (evx.library_version(), evx.driver_path(),
             " (host emulation: a smoke run, not a GPU figure)" if evx.is_emulation() else "",
             evx.implementation, args.loop, platform.python_version()))
    print("# trials %d per method, hold %.1f ms (%s), concurrent: %s"
          % (args.trials, args.hold_ms, "a kernel spinning on mapped host memory"
             if hold_kind == "kernel" else "a host function",
             " ".join(map(str, args.concurrent))))

    lat = {m: [] for m in METHODS}
    cpu = {m: [] for m in METHODS}
    for _ in range(args.trials):
        for m in METHODS:
            l, c = loop.run_until_complete(
                one_trial(m, aio, dev, stream, args.hold_ms / 1e3))
            lat[m].append(l)
            cpu[m].append(c)
    print()
    print("| method | median latency (us) | p90 (us) | CPU while waiting (share of a core) |")
    print("|---|---|---|---|")
    for m in METHODS:
        print("| %s | %.1f | %.1f | %.3f |" % (m, statistics.median(lat[m]),
                                              pct(lat[m], 90), statistics.median(cpu[m])))

    if args.latency_at:
        print()
        print("Latency at concurrency: N awaits completing together; medians over %d "
              "trials of each trial's median and largest latency" % args.latency_trials)
        print()
        print("| N | method | median latency (us) | largest latency (us) "
              "| CPU while waiting (cores) |")
        print("|---|---|---|---|---|")
        for n in args.latency_at:
            rows = {m: [] for m in METHODS[:3]}
            # The driver makes the 57th record of a blocking_sync event behind
            # running work wait until the work ends (evx-notify-latency
            # --diag), so the hold would end before its release.
            methods = [m for m in METHODS[:3] if m != "thread_blocking" or n <= 48]
            for _ in range(args.latency_trials):
                for m in methods:
                    rows[m].append(loop.run_until_complete(
                        latency_at(m, aio, dev, stream, n, args.hold_ms / 1e3)))
            for m in METHODS[:3]:
                if m not in methods:
                    print("| %d | %s | n/a: the driver makes the 57th blocking_sync record "
                          "behind running work wait for it | | |" % (n, m), flush=True)
                    continue
                if min(r[3] for r in rows[m]) < 0:
                    raise SystemExit("py_async_bench: %s resumed before the release at "
                                     "N=%d: the hold did not hold" % (m, n))
                med = statistics.median(r[0] for r in rows[m])
                big = statistics.median(r[1] for r in rows[m])
                c = statistics.median(r[2] for r in rows[m])
                print("| %d | %s | %.1f | %.1f | %.3f |" % (n, m, med, big, c), flush=True)

    if args.work_us:
        pool = ThreadPoolExecutor(max_workers=1)
        pool.submit(lambda: None).result()       # its thread exists
        print()
        print("Short work: GPU work of W us started with nothing held, awaited at once; "
              "medians over %d trials, the methods interleaved, from just before the "
              "launch to the coroutine resuming (threads: a warm one-thread pool)"
              % args.trials)
        print()
        print("| W (us) | method | launch to resume (us) | over W (us) | p90 (us) |")
        print("|---|---|---|---|---|")
        for us in args.work_us:
            rows = {m: [] for m in SHORT_METHODS}
            for _ in range(args.trials):
                for m in SHORT_METHODS:
                    rows[m].append(loop.run_until_complete(
                        short_trial(m, aio, dev, stream, us, pool)))
            for m in SHORT_METHODS:
                med = statistics.median(rows[m])
                print("| %g | %s | %.1f | %.1f | %.1f |"
                      % (us, m, med, med - us, pct(rows[m], 90)), flush=True)
        pool.shutdown()

    print()
    print("| concurrent | method | starting the waits (ms) | wall from release (ms) "
          "| OS threads before | after | CPU per await (us) |")
    print("|---|---|---|---|---|---|---|")
    for n in sorted(set(args.concurrent)):
        for m in ("notifier", "poll"):
            wall, t0, t1, per, started = loop.run_until_complete(
                concurrent(m, aio, dev, stream, n))
            print("| %d | %s | %.1f | %.1f | %d | %d | %.2f |"
                  % (n, m, started * 1e3, wall * 1e3, t0, t1, per * 1e6))
    stream.sync()
    stream.close()
    loop.close()


if __name__ == "__main__":
    main()
