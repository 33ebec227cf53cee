#!/usr/bin/env python3
# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Awaiting GPU completion from asyncio: evx.aio (the C notifier's eventfd on
the loop) against the two usual workarounds, in one process:

  notifier   ``await evx.aio.wait(ev)``
  thread     a thread per wait, blocked in ``ev.sync()``
             (cuEventSynchronize), handing the result to the loop with
             ``loop.call_soon_threadsafe``
  poll       ``while not ev.is_done: await asyncio.sleep(0)``

1. Latency: the stream is held by a host function until the benchmark
   releases it (``threading.Event.set`` from the loop's thread); the event
   recorded after it completes when the host function returns. The latency
   is from the release to the awaiting coroutine running again, median and
   90th percentile over --trials trials per method, the methods interleaved
   trial by trial. (Work that ends with a kernel would skip the host
   function's return; the path after the event completes is the same.)
2. CPU while waiting: process CPU time during --hold-ms of waiting before
   the release, as a share of one core (the loop idles for the notifier and
   the thread; it spins for poll).
3. Concurrency: --concurrent awaits of as many pending events on one loop
   with the notifier (the thread method would need a thread each; poll is
   run with the same count for the CPU comparison): wall time from the
   release to all resumed, OS threads before and after, CPU time per await.

    PYTHONPATH=build/bindings/python python3 bench/py_async_bench.py
    EVX_DRIVER=host ... python3 bench/py_async_bench.py --trials 5 --concurrent 200

On the host emulation the figures say nothing about a GPU: a smoke run only.
"""

import argparse
import asyncio
import os
import platform
import importlib.util
import statistics
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# build/bindings/python (the package with its compiled core, as meson builds
# it), unless an evx is importable already (PYTHONPATH, an install).
if importlib.util.find_spec("evx") is None:
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "build", "bindings", "python"))

METHODS = ("notifier", "thread", "poll")


def os_threads():
    return len(os.listdir("/proc/self/task"))


def hold(stream):
    """Holds the stream with a host function; returns the releasing Event."""
    gate = threading.Event()
    entered = threading.Event()

    def fn():
        entered.set()
        gate.wait(60)
    stream.launch_host_func(fn)
    entered.wait(10)
    return gate


def start_wait(method, loop, aio, ev):
    """Starts waiting for ev; returns an awaitable."""
    if method == "notifier":
        return aio.wait(ev)
    if method == "thread":
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
    ev = dev.create_event(timing=False)
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


async def concurrent(method, aio, dev, stream, n):
    gate = hold(stream)
    await aio.wait(dev.create_event())   # the loop's notifier exists
    events = [dev.create_event(timing=False) for _ in range(n)]
    for e in events:
        e.record(stream)
    threads0 = os_threads()
    cpu0 = time.process_time()
    waiters = [start_wait(method, asyncio.get_running_loop(), aio, e) for e in events]
    await asyncio.sleep(0.01)
    t0 = time.perf_counter()
    gate.set()
    await asyncio.gather(*waiters)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    threads1 = os_threads()
    for e in events:
        e.close()
    return wall, threads0, threads1, cpu / n


def pct(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--hold-ms", type=float, default=20.0)
    ap.add_argument("--concurrent", type=int, default=10000)
    ap.add_argument("--loop", choices=("asyncio", "uvloop"), default="asyncio")
    args = ap.parse_args()
    if args.trials < 1 or args.concurrent < 1 or args.hold_ms <= 0:
        ap.error("--trials and --concurrent must be 1 or more, --hold-ms above 0")

    import evx
    import evx.aio as aio
    if args.loop == "uvloop":
        import uvloop
        loop = uvloop.new_event_loop()
    else:
        loop = asyncio.new_event_loop()
    dev = evx.Device(0)
    stream = dev.create_stream()

    print("# py_async_bench: evx %s, driver %s%s, core %s, loop %s, Python %s"
          % (evx.library_version(), evx.driver_path(),
             " (host emulation: a smoke run, not a GPU figure)" if evx.is_emulation() else "",
             evx.implementation, args.loop, platform.python_version()))
    print("# trials %d per method, hold %.1f ms, %d concurrent"
          % (args.trials, args.hold_ms, args.concurrent))

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

    print()
    print("| concurrent | method | wall from release (ms) | OS threads before | after | CPU per await (us) |")
    print("|---|---|---|---|---|---|")
    for m in ("notifier", "poll"):
        wall, t0, t1, per = loop.run_until_complete(
            concurrent(m, aio, dev, stream, args.concurrent))
        print("| %d | %s | %.1f | %d | %d | %.2f |"
              % (args.concurrent, m, wall * 1e3, t0, t1, per * 1e6))
    stream.sync()
    stream.close()
    loop.close()


if __name__ == "__main__":
    main()
