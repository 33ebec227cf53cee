#!/usr/bin/env python3
# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""A fuzzer over evx's public Python API (docs/fuzzing.md).

Each input is a short program: calls of the public API (evx.Device, Stream,
Event, EventPool, Timeline, timed, the module functions) with one argument
at a time taken from a pool of wrong types and ranges (huge and negative
ints, floats, None, strings, foreign objects), foreign ``__cuda_stream__``
objects that raise or lie, calls on closed objects, threads that close
what other threads use, and stream captures made with the driver's calls
(graphs instantiated, launched and destroyed). It checks:

- no crash (a segfault kills the run) and no hang (faulthandler ends a run
  that makes no progress for --hang-seconds, with every thread's stack);
- every exception is evx.CudaError, TypeError or ValueError (an exception
  raised by a foreign object's own method may pass through unchanged);
- a value outside the C type of its argument is refused, never truncated:
  the call must not succeed, and its error must name the caller's value;
- a TypeError or ValueError for a bad argument names the caller's value
  (its repr, its str or its type's name).

A broken rule is a violation. Without --strict, the violations listed in
KNOWN_TODAY (what the Python layer does today, before its rewrite) are
reported and counted but do not fail the run; any other violation does.
With --strict every violation fails the run: the rule once the rewrite has
landed.

It runs under atheris (libFuzzer for Python, from PyPI) when that imports,
else (or with --random) on a seeded random driver; both feed the same
TestOneInput. Needs the library built (EVX_LIB_DIR and the built package on
PYTHONPATH, as the fuzz_py step of scripts/test.sh sets them) and runs on the host emulation with two devices.

    python tests/fuzz/py_fuzz.py --seconds 30 [--strict] [--random --seed N]
"""

import argparse
import asyncio
import faulthandler
import os
import pickle
import random
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "py_corpus")
# The package with its compiled core, as meson builds it, unless an evx is
# importable already (PYTHONPATH, an install).
import importlib.util  # noqa: E402
if importlib.util.find_spec("evx") is None:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "build", "bindings",
                                    "python"))
os.environ.setdefault("EVX_DRIVER", "host")
os.environ.setdefault("EVX_HOST_DEVICES", "2")

try:
    import atheris
    ATHERIS_ERROR = None
except ImportError as e:          # a seeded random driver instead
    atheris = None
    ATHERIS_ERROR = "%s: %s" % (type(e).__name__, e)

if atheris is not None:
    with atheris.instrument_imports():
        import evx
        import evx.aio
else:
    import evx
    import evx.aio

# Violations allowed without --strict. Empty since the rewrite of the
# Python layer (bindings/python/evx/_core.pyx, _args.py) and the timed
# object's ILLEGAL_STATE errors: every kind the fuzzer found before is fixed,
# and --strict is the rule. An entry (rule, call) is added only with its
# reason in docs/fuzzing.md.
KNOWN_TODAY = set()

ALLOWED = (evx.CudaError, TypeError, ValueError)
# The statuses that refuse a value (not a closed handle, not a state).
VALUE_STATUSES = (evx.Status.ERROR_INVALID_VALUE, evx.Status.ERROR_INVALID_DEVICE)
INT32 = (-2**31, 2**31 - 1)
UINT32 = (0, 2**32 - 1)
INTS = [0, 1, 2, 3, -1, -2, -5, -6, 7, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**32 + 1,
        2**32 + 3, 2**63 - 1, 2**63, 2**64, 2**64 + 1, 10**20, -2**31, -2**31 - 1,
        -2**32, -2**63 - 1, -10**20]
OTHERS = [None, True, False, 0.0, 1.5, -1.0, float("nan"), float("inf"), "0", "abc", "",
          b"\x01", [], (1,), {}, object(), 1j]


class Foreign(Exception):
    """Raised by a foreign object's own method: may pass through evx."""


class Stats:
    lock = threading.Lock()
    calls = 0
    inputs = 0
    raised = {}
    violations = {}        # (rule, call) -> [count, example]
    strict = False
    survey = False         # --survey: report every violation, fail on none


def violation(rule, call, value, exc=None):
    key = (rule, call)
    text = "%s: %s with %s%s" % (rule, call, _show(value),
                                 "" if exc is None else " -> %s: %s" % (
                                     type(exc).__name__, str(exc)[:200]))
    with Stats.lock:
        entry = Stats.violations.get(key)
        if entry is None:
            Stats.violations[key] = [1, text]
            known = key in KNOWN_TODAY and not Stats.strict
            print("py-fuzz: %s %s" % ("known today:" if known else "VIOLATION:", text),
                  file=sys.stderr, flush=True)
        else:
            entry[0] += 1
    if not Stats.survey and (Stats.strict or key not in KNOWN_TODAY):
        raise AssertionError("py-fuzz: " + text)


def _show(v):
    try:
        r = repr(v)
    except Exception:
        r = "<%s>" % type(v).__name__
    return r if len(r) < 60 else r[:57] + "..."


def _names(exc, value, kind):
    """Whether the error names the caller's value: an int by its digits, any
    other value by its repr, its str or (for a value of a wrong type) the
    name of its type."""
    msg = str(exc)
    if kind == "range" or (isinstance(value, int) and not isinstance(value, bool)
                           and kind != "any"):
        return str(value) in msg
    try:
        if repr(value) in msg or str(value) in msg and str(value):
            return True
    except Exception:
        pass
    return type(value).__name__ in msg


def _int_kind(value, c_range, none_ok=False):
    """How a value for an integer argument of C range c_range must fare:
    None (any outcome), 'range' (refused, naming it) or 'type' (TypeError or
    ValueError naming it)."""
    if value is None and none_ok:
        return None
    if isinstance(value, bool):
        return None            # Python's own int; accepted or refused, both fine
    if isinstance(value, int):
        return None if c_range[0] <= value <= c_range[1] else "range"
    return "type"


def _flag_kind(value):
    """How a value for a yes/no argument must fare: True, False, 0 and 1
    pass; another int is refused naming it, anything else with a TypeError."""
    if isinstance(value, bool) or (type(value) is int and value in (0, 1)):
        return None
    return "range" if isinstance(value, int) else "type"


def attempt(call, fn, value=None, kind=None, status=None, allow=None):
    """Calls fn() and checks the outcome against the rules; returns its result
    or None when it raised. `value` is the argument under test and `kind`
    what it must get (see _int_kind; 'any' for an object of the wrong type
    that must be refused with a TypeError). `status`: the call must fail
    with a CudaError of that status (a misuse the C API refuses the same
    way). `allow`: (exception type, text its message holds), an exception
    outside the rule that this call may raise (docs/fuzzing.md says why)."""
    with Stats.lock:
        Stats.calls += 1
    try:
        result = fn()
    except Foreign:
        return None
    except ALLOWED as e:
        with Stats.lock:
            Stats.raised[type(e).__name__] = Stats.raised.get(type(e).__name__, 0) + 1
        if status is not None and not (isinstance(e, evx.CudaError) and e.status == status):
            violation("not the C API's status for this misuse (%s)" % status.name, call, value,
                      e)
        if (kind == "range" and isinstance(e, evx.CudaError) and e.status in VALUE_STATUSES
                and not _names(e, value, kind)):
            violation("out-of-range int reached C truncated", call, value, e)
        elif kind and isinstance(e, (TypeError, ValueError)) and not _names(e, value, kind):
            violation("message does not name the value", call, value, e)
        return None
    except AssertionError:
        raise
    except Exception as e:
        name = type(e).__name__
        if allow is not None and type(e) is allow[0] and allow[1] in str(e):
            with Stats.lock:
                Stats.raised[name] = Stats.raised.get(name, 0) + 1
            return None
        with Stats.lock:
            Stats.raised[name] = Stats.raised.get(name, 0) + 1
        violation("unexpected " + name, call, value, e)
        return None
    if status is not None:
        violation("a misuse the C API refuses (%s) was accepted" % status.name, call, value)
        return None
    if kind in ("range", "type", "any"):
        # An object made from a truncated value is not used further: its
        # own state (a device ordinal, a capacity) is wrong, and what
        # follows from that is this violation again.
        try:
            if hasattr(result, "close"):
                result.close()
        except ALLOWED:
            pass
        violation("out-of-range int accepted (truncated)" if kind == "range"
                  else "wrong type accepted", call, value)
        return None
    return result


# --------------------------------------------------------------------------
# the input


class Input:
    """Reads choices from the fuzzer's bytes (zeros once they run out)."""

    def __init__(self, data):
        self.data = data
        self.pos = 0

    def byte(self):
        if self.pos >= len(self.data):
            return 0
        self.pos += 1
        return self.data[self.pos - 1]

    def left(self):
        return len(self.data) - self.pos

    def pick(self, seq):
        return seq[self.byte() % len(seq)]

    def value(self, valid):
        """A valid value (about half the time) or one from the bad pools."""
        b = self.byte()
        if b < 128:
            return valid[b % len(valid)]
        if b < 224:
            return INTS[b % len(INTS)]
        return OTHERS[b % len(OTHERS)]


class World:
    """The objects an input works on."""

    def __init__(self):
        self.devs = [evx.Device(0), evx.Device(1)]
        self.streams = []
        self.events = []
        self.pools = []
        self.timelines = []
        self.timeds = []
        self.captures = []     # (stream, its CUstream) whose capture this input began
        self.graphs = []       # (CUgraph, device)
        self.execs = []        # (CUgraphExec, device)
        # A fence's signal or wait went into a capture: graphs of this input
        # are no longer launched (see op_fence).
        self.fence_in_graph = False

    def any_of(self, inp, lst, fallback=None):
        return inp.pick(lst) if lst else fallback

    def close_all(self):
        graphs_close(self)
        for lst in (self.events, self.pools, self.timelines, self.streams):
            for o in lst:
                try:
                    if isinstance(o, evx.Stream) and not o.closed:
                        o.sync()
                    o.close()
                except ALLOWED:
                    pass
            lst.clear()
        self.timeds.clear()


def foreign_stream(inp, w):
    """An object that claims to be a stream, honestly or not, with the value
    under test in it and what that value must get (see attempt)."""
    live = [s for s in w.streams if not s.closed]
    addr = inp.pick(live).native if live and inp.byte() & 1 else 0
    choice = inp.byte() % 16
    protos = [(0, addr), (1, addr), (0,), (0, addr, 5), [0, addr], "x", None, (0, 10**30),
              (0, -1), (0, 1.5), (0, "7"), (0, 2**64), (0, 12345), (0, 1), (0, 2)]

    class CudaStreamObj:
        def __cuda_stream__(self):
            if choice == 15:
                raise Foreign("__cuda_stream__ raised")
            return protos[choice]

    class NotCallable:
        __cuda_stream__ = 5

    class Torchish:
        def __init__(self, v, dev):
            self.cuda_stream = v
            self.device = type("D", (), {"index": dev})()

    class Cupyish:
        def __init__(self, v, dev):
            self.ptr = v
            self.device_id = dev

    class BadHint:
        cuda_stream = 0

        @property
        def device(self):
            raise Foreign("device raised")

    kind = inp.byte() % 6
    call = "Stream.wrap(obj)"
    if kind == 0:
        proto = protos[choice] if choice < 15 else None
        if (isinstance(proto, tuple) and len(proto) == 2 and proto[0] == 0 and
                isinstance(proto[1], int) and not 0 <= proto[1] < 2**64):
            return CudaStreamObj(), "Stream.wrap(__cuda_stream__ address)", proto[1], "range"
        return CudaStreamObj(), "Stream.wrap(__cuda_stream__)", None, None
    if kind == 1:
        return NotCallable(), call, None, None
    if kind == 4:
        return BadHint(), call, None, None
    make = Torchish if kind == 2 else Cupyish
    if kind == 5:              # a bare value
        v = inp.value([addr, 0, 1, 2])
        return v, call, v, (None if isinstance(v, evx.Stream)
                            else _int_kind(v, (0, 2**64 - 1)) or (
                                "any" if not isinstance(v, int) else None))
    if inp.byte() & 1:         # a bad address, a good device
        v = inp.value([addr, 0, 1, 2])
        return make(v, 0), "Stream.wrap(%s)" % make.__name__, v, (
            _int_kind(v, (0, 2**64 - 1)) or ("any" if not isinstance(v, int) else None))
    dev = inp.value([0, 1])    # a default stream and the device it says it is on
    kind = None
    if isinstance(dev, int) and not isinstance(dev, bool) and dev >= 0:
        kind = _int_kind(dev, INT32)
    return make(inp.pick([0, 1, 2]), dev), "Stream.wrap(device hint)", dev, kind


# --------------------------------------------------------------------------
# the operations


def op_device(inp, w):
    v = inp.value([0, 1, w.devs[0], w.devs[1]])
    attempt("Device(device_id)", lambda: evx.Device(v), v,
            None if isinstance(v, evx.Device) else _int_kind(v, INT32))
    attempt("device_count()", evx.device_count)
    attempt("driver_version()", evx.driver_version)
    attempt("is_emulation()", evx.is_emulation)
    d = w.any_of(inp, w.devs)
    attempt("Device.stream_priority_range", lambda: d.stream_priority_range)
    if inp.byte() & 1:
        attempt("Device.trim()", d.trim)


def op_create_event(inp, w):
    d = w.any_of(inp, w.devs)
    timing, bs, ipc = inp.value([True, False]), inp.value([False, True]), inp.value([False, True])
    which = inp.byte() % 3     # the argument under test; the others valid
    if which == 0:
        bs, ipc = bool(bs) if _flag_kind(bs) is None else False, False
        call, v = "Device.create_event(timing)", timing
    elif which == 1:
        timing, ipc = True, False
        call, v = "Device.create_event(blocking_sync)", bs
    else:
        timing, bs = False, False
        call, v = "Device.create_event(ipc)", ipc
    e = attempt(call, lambda: d.create_event(timing=timing, blocking_sync=bs, ipc=ipc), v,
                _flag_kind(v))
    if e is not None:
        w.events.append(e)
        attempt("Event.is_done (never recorded)", lambda: e.is_done)


def op_create_stream(inp, w):
    d = w.any_of(inp, w.devs)
    prio = inp.value([0, -1, -5, None])
    nb = inp.value([True, False])
    if inp.byte() & 1:
        s = attempt("Device.create_stream(non_blocking)",
                    lambda: d.create_stream(non_blocking=nb), nb, _flag_kind(nb))
    else:
        s = attempt("Device.create_stream(priority)", lambda: d.create_stream(priority=prio),
                    prio, _int_kind(prio, INT32, none_ok=True))
    if s is not None:
        w.streams.append(s)


def op_wrap(inp, w):
    if inp.byte() & 1:         # a good stream, a bad device
        live = [s for s in w.streams if not s.closed]
        obj = inp.pick(live).native if live and inp.byte() & 1 else inp.pick([0, 1, 2])
        dev = inp.value([0, 1])
        kind = None if isinstance(dev, evx.Device) else _int_kind(dev, INT32, none_ok=True)
        s = attempt("Stream.wrap(device)", lambda: evx.Stream.wrap(obj, device=dev), dev, kind)
    else:                      # a foreign object, honest or not
        obj, call, value, kind = foreign_stream(inp, w)
        dev = None if call == "Stream.wrap(device hint)" else inp.pick([None, None, 0, 1])
        s = attempt(call, lambda: evx.Stream.wrap(obj, device=dev), value, kind)
    if s is not None:
        w.streams.append(s)


def op_record(inp, w):
    e = w.any_of(inp, w.events)
    s = w.any_of(inp, w.streams)
    if e is None or s is None:
        return
    bad = inp.value([s])
    attempt("Event.record(stream)", lambda: e.record(bad), bad,
            None if isinstance(bad, evx.Stream) else "any")
    bad = inp.value([e, None])
    ev = attempt("Stream.record(event)", lambda: s.record(bad), bad,
                 None if bad is None or isinstance(bad, evx.Event) else "any")
    if ev is not None and bad is None:
        w.events.append(ev)
    ext = inp.value([False, True])  # True: refused outside stream capture
    if inp.byte() & 1:
        attempt("Event.record(external)", lambda: e.record(s, external=ext), ext,
                _flag_kind(ext))
    else:
        attempt("Stream.wait(external)", lambda: s.wait(e, external=ext), ext,
                _flag_kind(ext))


def op_wait(inp, w):
    s = w.any_of(inp, w.streams)
    if s is None:
        return
    other = inp.value(w.events + w.streams or [None])
    attempt("Stream.wait(event_or_stream)", lambda: s.wait(other), other,
            None if isinstance(other, (evx.Event, evx.Stream)) else "any")


def op_query(inp, w):
    objs = w.events + w.streams
    if not objs:
        return
    o = inp.pick(objs)
    which = inp.byte() % 3
    if which == 0:
        attempt("is_done", lambda: o.is_done)
    elif which == 1:
        attempt("sync()", o.sync)
    else:
        attempt("native", lambda: o.native)
        attempt("device", lambda: o.device)
        attempt("flags", lambda: o.flags)
        attempt("handle", lambda: o.handle)
        attempt("repr", lambda: repr(o))
        if isinstance(o, evx.Stream):
            attempt("Stream.priority", lambda: o.priority)
            attempt("Stream.capture_status", lambda: o.capture_status)
            attempt("Stream.owned", lambda: o.owned)
            attempt("Stream.__cuda_stream__", o.__cuda_stream__)


def op_elapsed(inp, w):
    a = w.any_of(inp, w.events)
    if a is None:
        return
    b = inp.value(w.events)
    attempt("Event.elapsed_since(start)", lambda: a.elapsed_since(b), b,
            None if isinstance(b, evx.Event) else "any")
    if isinstance(b, evx.Event):
        attempt("Event - Event", lambda: a - b)
    else:
        try:
            a - b
        except TypeError:
            pass
        except Exception as e:
            violation("unexpected " + type(e).__name__, "Event - other", b, e)


def _raises():
    """A host function whose exception surfaces at a later wait (a
    CudaError whose __cause__ it is)."""
    raise KeyError("raised by a fuzzed host function")


def op_host_func(inp, w):
    s = w.any_of(inp, w.streams)
    if s is None:
        return
    fn = inp.value([lambda: None, _raises])
    which = inp.byte() % 3
    if which == 0:
        attempt("Stream.launch_host_func(fn)", lambda: s.launch_host_func(fn), fn,
                None if callable(fn) else "any")
    elif which == 1:
        name = inp.value(["step", "n" * 127, "n" * 128, ""])
        attempt("Stream.launch_host_func(name)", lambda: s.launch_host_func(lambda: None, name=name),
                name, None if name is None or isinstance(name, str) else "any")
    else:
        spin, errors = inp.value([False, True]), inp.value([True, False])
        attempt("Stream.launch_host_func(spin, errors)",
                lambda: s.launch_host_func(_raises if errors else (lambda: None),
                                           spin=spin, errors=errors))


def op_pool(inp, w):
    which = inp.byte() % 6
    if which == 0 or not w.pools:
        dev = inp.value([0, 1, w.devs[1]])
        cap = inp.value([1, 2, 4])
        pre = inp.value([0, 1])
        field = inp.byte() % 3
        if field == 0:
            cap, pre = 2, 0
            call, v, kind = "EventPool(device)", dev, (
                None if isinstance(dev, evx.Device) else _int_kind(dev, INT32))
        elif field == 1:
            dev, pre = 0, 0
            call, v, kind = "EventPool(capacity)", cap, _int_kind(cap, UINT32)
        else:
            dev, cap = 0, 4
            call, v, kind = "EventPool(prewarm)", pre, _int_kind(pre, UINT32)
        p = attempt(call, lambda: evx.EventPool(dev, cap, prewarm=pre), v, kind)
        if p is not None and cap > 64:
            # kept, a prewarm of a count truncated today could make billions
            attempt("EventPool.close()", p.close)
        elif p is not None:
            w.pools.append(p)
        return
    p = inp.pick(w.pools)
    if which == 1:
        e = attempt("EventPool.acquire()", p.acquire)
        if e is not None:
            w.events.append(e)
    elif which == 2:
        e = inp.value(w.events or [None])
        attempt("EventPool.release(event)", lambda: p.release(e), e,
                None if isinstance(e, evx.Event) else "any")
    elif which == 3:
        n = inp.value([0, 1, 2])
        kind = _int_kind(n, UINT32)
        if kind is None and isinstance(n, int) and n > 64:
            return             # as asked, it would make that many driver events
        attempt("EventPool.prewarm(count)", lambda: p.prewarm(n), n, kind)
    elif which == 4:
        attempt("EventPool.stats", lambda: p.stats)
    else:
        attempt("EventPool.close()", p.close)


def op_timeline(inp, w):
    which = inp.byte() % 8
    if which == 0 or not w.timelines:
        if inp.byte() & 1:
            cap, dev = inp.value([2, 4, 16]), 0
            call, v, kind = "Timeline(capacity)", cap, _int_kind(cap, UINT32)
        else:
            cap, dev = 4, inp.value([0, 1])
            call, v, kind = "Timeline(device)", dev, _int_kind(dev, INT32)
        t = attempt(call, lambda: evx.Timeline(dev, cap), v, kind)
        if t is not None:
            w.timelines.append(t)
        return
    t = inp.pick(w.timelines)
    if which == 1:
        s = inp.value(w.streams or [None])
        attempt("Timeline.mark(stream)", lambda: t.mark(s), s,
                None if isinstance(s, evx.Stream) else "any")
    elif which == 2:
        attempt("Timeline.intervals()", t.intervals)
        attempt("Timeline.count", lambda: t.count)
    elif which == 3:
        attempt("Timeline.reset()", t.reset)
    elif which == 5:
        s = inp.value(w.streams or [None])
        label = inp.value(["loss", "x" * 63, "x" * 64, "nul\0"])
        kind = inp.value(["point", "begin", "end"])
        if not isinstance(s, evx.Stream):
            return
        attempt("Timeline.mark(label)", lambda: t.mark(s, label), label,
                None if label is None or isinstance(label, str) else "any")
        attempt("Timeline.mark(kind)", lambda: t.mark(s, "k", kind), kind,
                None if isinstance(kind, str) else "any")
    elif which == 6:
        attempt("Timeline.marks()", t.marks)
    elif which == 7:
        attempt("Timeline.to_trace(path)", lambda: t.to_trace(os.devnull))
    else:
        attempt("Timeline.close()", t.close)


def op_timed(inp, w):
    s = inp.value(w.streams or [0])
    kind = None if isinstance(s, evx.Stream) else "any"
    if isinstance(s, int) and not isinstance(s, bool):
        kind = _int_kind(s, (0, 2**64 - 1))
    t = attempt("timed(stream)", lambda: evx.timed(s), s, kind)
    if t is None:
        return
    order = inp.byte() % 4
    # misuses of the order: what evx_timer_* gives for the same (ILLEGAL_STATE)
    illegal = evx.Status.ERROR_ILLEGAL_STATE
    if order == 0:
        attempt("timed.elapsed_ms (block not ended)", lambda: t.elapsed_ms, status=illegal)
    elif order == 3:
        attempt("timed.__exit__ (not entered)", lambda: t.__exit__(None, None, None),
                status=illegal)
    entered = attempt("timed.__enter__", t.__enter__)
    if entered is None:
        return
    if order == 1:
        attempt("timed (entered twice)", t.__enter__, status=illegal)
    if order == 2:
        attempt("timed.elapsed_ms (in the block)", lambda: t.elapsed_ms, status=illegal)
    attempt("timed.__exit__", lambda: t.__exit__(None, None, None))
    attempt("timed.elapsed_ms", lambda: t.elapsed_ms)


NO_LOOP = (RuntimeError, "needs a running event loop")


def op_aio(inp, w):
    """evx.aio: wait, synchronize and future with bad arguments, on closed
    objects, cancelled, and wait without a running loop (RuntimeError, as
    asyncio's own calls give: docs/fuzzing.md)."""
    which = inp.byte() % 5
    v = inp.value(w.events + w.streams or [None])
    is_event, is_stream = isinstance(v, evx.Event), isinstance(v, evx.Stream)
    if which == 0:
        attempt("evx.aio.wait (no running loop)", lambda: evx.aio.wait(v), v,
                None if is_event else "any", allow=NO_LOOP)
        return
    if which == 1:
        fut = attempt("evx.aio.future(event)", lambda: evx.aio.future(v), v,
                      None if is_event else "any")
        if fut is not None:
            if inp.byte() & 1:
                fut.cancel()
            else:
                try:
                    fut.result(HANG_SECONDS)
                except evx.CudaError as e:
                    # _raises, launched before the event's record: reported
                    # to the future, chained (evx_notifier_watch_callback_status)
                    with Stats.lock:
                        Stats.raised["CudaError"] = Stats.raised.get("CudaError", 0) + 1
                    if not isinstance(e.__cause__, KeyError):
                        violation("evx.aio.future failed, not by a host function",
                                  "evx.aio.future(event)", v, e)
                except Exception as e:
                    violation("evx.aio.future did not complete", "evx.aio.future(event)", v, e)
        return
    cancel = inp.byte() & 1

    async def body():
        if which == 2 or which == 4:
            fut = attempt("evx.aio.wait(event)", lambda: evx.aio.wait(v), v,
                          None if is_event else "any")
        else:
            fut = attempt("evx.aio.synchronize(stream)", lambda: evx.aio.synchronize(v), v,
                          None if is_stream else "any")
        if fut is None:
            return
        if cancel:
            fut.cancel()
            return
        try:
            await asyncio.wait_for(fut, HANG_SECONDS)
        except asyncio.TimeoutError as e:
            violation("an evx.aio future never completed", "evx.aio", v, e)
        except evx.CudaError as e:
            # _raises, launched before the event's record: reported to the
            # await, chained to its exception (evx_notifier_read_checked)
            with Stats.lock:
                Stats.raised["CudaError"] = Stats.raised.get("CudaError", 0) + 1
            if not isinstance(e.__cause__, KeyError):
                violation("an evx.aio future failed, not by a host function", "evx.aio", v, e)

    asyncio.run(body())


IPC_BYTES = [b"\0" * 64, bytes(range(64)), b"evxhipc1/evxh-1-1-1".ljust(64, b"\0"), b"",
             b"x", b"\1" * 63, bytearray(65), memoryview(b"\2" * 64), "x" * 64, 64, None,
             [0] * 64, 1.5, object()]


def op_ipc(inp, w):
    """Event.ipc_handle on events with and without ipc=True, and
    Device.open_ipc_event with bad bytes (the emulation refuses a handle of
    its own process with INVALID_CONTEXT, as the driver does)."""
    e = w.any_of(inp, w.events)
    handles = list(IPC_BYTES)
    if e is not None:
        h = attempt("Event.ipc_handle", lambda: e.ipc_handle)
        if h is not None:
            handles.append(h)
    h = inp.pick(handles)
    d = w.any_of(inp, w.devs)
    kind = None
    try:
        if len(bytes(memoryview(h))) != 64:
            kind = "any"
    except TypeError:
        kind = "any"
    opened = attempt("Device.open_ipc_event(handle)", lambda: d.open_ipc_event(h), h, kind)
    if opened is not None:
        violation("an IPC handle opened in its own process (or a forged one)",
                  "Device.open_ipc_event(handle)", h)


FENCE_RANGE = (0, 2**63 - 1)
FENCE_TIMEOUTS = [0, 0.0, 0.001, None, -1, -0.5, float("nan"), 1e300, "1", True, []]


def op_fence(inp, w):
    """A fence made with any initial value and interprocess flag, then
    signals (host and queued), stream waits, host waits, reads, the IPC
    handle and pickling, with the values and timeouts of the pools. Waits
    are made only for values signalled or queued already (or refused before
    C), a stream waits for the last value before it signals the next (so
    signals run in order), and host waits only with a timeout, so that
    nothing blocks for good.

    A signal or wait on a stream being captured is a node of a graph, not
    work queued: a captured signal never makes its value one that is
    waited for (nothing runs it unless the graph is launched), and once an
    operation went into a capture, no graph of this input is launched: a
    launch after the fence is destroyed would act on memory evx has given
    back (docs/fences.md, "Stream capture"), a program's error, which a
    GPU reports as a fault and the emulation's launch refuses."""
    d = w.any_of(inp, w.devs)
    if inp.byte() & 1:       # one argument under test at a time
        initial, ipc = inp.value([0, 1, 5, 2**63 - 1]), bool(inp.byte() & 1)
        f = attempt("Device.create_fence(initial)",
                    lambda: d.create_fence(initial=initial, interprocess=ipc),
                    initial, _int_kind(initial, FENCE_RANGE))
    else:
        initial, ipc = inp.byte() % 3, inp.value([False, True, 0, 1])
        f = attempt("Device.create_fence(interprocess)",
                    lambda: d.create_fence(initial=initial, interprocess=ipc),
                    ipc, _flag_kind(ipc))
    if f is None:
        return
    last = initial
    streams = [s for s in w.streams if not s.closed and s.device == d]
    for _ in range(1 + inp.byte() % 6):
        v = inp.value([last, last + 1, last + 2, 0, 1])
        kind = _int_kind(v, FENCE_RANGE)
        op = inp.byte() % 7
        if op == 0:
            if attempt("Fence.signal_host(value)", lambda: f.signal_host(v) or True, v, kind):
                last = v
        elif op == 1 and streams:
            s = inp.pick(streams)
            captured = _captured(w, s)
            # signals must also run in increasing order: the stream first
            # waits for the last value, as a program signalling from several
            # streams must
            attempt("Stream.wait(fence, last)", lambda: s.wait(f, last))
            if (attempt("Fence.signal(stream, value)", lambda: f.signal(s, v) or True, v, kind)
                    and not captured):
                last = v
        elif op == 2 and streams:
            s = inp.pick(streams)
            if kind is None and not isinstance(v, bool) and v > last:
                continue                 # a value nobody signals: never waited for
            _captured(w, s)
            attempt("Stream.wait(fence, value)", lambda: s.wait(f, v), v, kind)
        elif op == 3:
            t = inp.pick(FENCE_TIMEOUTS)
            if t is None and (kind is not None or isinstance(v, bool) or v > last):
                t = 0
            attempt("Fence.wait(value, timeout)", lambda: f.wait(v, timeout=t), v, kind)
        elif op == 4:
            attempt("Fence.value", lambda: f.value)
        elif op == 5:
            h = attempt("Fence.ipc_handle", lambda: f.ipc_handle)
            if h is not None:
                attempt("Device.open_ipc_fence(own handle)", lambda: d.open_ipc_fence(h),
                        status=evx.Status.ERROR_INVALID_CONTEXT)
        else:
            attempt("pickle.dumps(fence)", lambda: pickle.dumps(f),
                    allow=(TypeError, "only an interprocess fence"))
    attempt("Fence.close", f.close)
    attempt("Fence.close again", f.close)


def _captured(w, s):
    """Whether a fence operation on stream s would go into a capture (its
    status unreadable counts as yes); if so, w's graphs are not launched
    any more."""
    st = attempt("Stream.capture_status", lambda: s.capture_status)
    captured = st != evx.CaptureStatus.NONE
    if captured:
        w.fence_in_graph = True
    return captured


class Driver:
    """The driver's capture and graph calls (the library evx opened), as a
    framework (torch.cuda.graph) makes them; each made with the device's
    primary context current."""

    _one = None

    @classmethod
    def get(cls):
        if cls._one is None:
            cls._one = cls()
        return cls._one

    def __init__(self):
        import ctypes
        self.ct = ctypes
        cu = self.cu = ctypes.CDLL(evx.driver_path())
        p, i, u = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint
        for name, args in (("cuDevicePrimaryCtxRetain", [ctypes.POINTER(p), i]),
                           ("cuDevicePrimaryCtxRelease_v2", [i]),
                           ("cuCtxPushCurrent_v2", [p]), ("cuCtxPopCurrent_v2", [ctypes.POINTER(p)]),
                           ("cuStreamBeginCapture_v2", [p, u]), ("cuStreamEndCapture", [p, ctypes.POINTER(p)]),
                           ("cuGraphInstantiateWithFlags", [ctypes.POINTER(p), p, ctypes.c_ulonglong]),
                           ("cuGraphLaunch", [p, p]), ("cuGraphExecDestroy", [p]),
                           ("cuGraphDestroy", [p])):
            f = getattr(cu, name)
            f.restype, f.argtypes = ctypes.c_int, args

    def call(self, dev, name, *args):
        ct, cu = self.ct, self.cu
        ctx = ct.c_void_p()
        assert cu.cuDevicePrimaryCtxRetain(ct.byref(ctx), dev) == 0
        assert cu.cuCtxPushCurrent_v2(ctx) == 0
        try:
            return getattr(cu, name)(*args)
        finally:
            assert cu.cuCtxPopCurrent_v2(ct.byref(ctx)) == 0
            assert cu.cuDevicePrimaryCtxRelease_v2(dev) == 0


def _end_capture(w, cap):
    d = Driver.get()
    s, native, dev = cap
    g = d.ct.c_void_p()
    rc = d.call(dev, "cuStreamEndCapture", native, d.ct.byref(g))
    if (rc == 0) != bool(g.value):
        raise AssertionError("py-fuzz: cuStreamEndCapture returned %d with graph %s"
                             % (rc, g.value))
    if g.value:
        w.graphs.append((g, dev))
    w.captures.remove(cap)


def graphs_close(w):
    """Ends the captures and destroys the graphs and executables (before the
    streams close, which would end a capture too)."""
    if not (w.captures or w.graphs or w.execs):
        return
    d = Driver.get()
    for cap in list(w.captures):
        _end_capture(w, cap)
    for x, dev in w.execs:
        assert d.call(dev, "cuGraphExecDestroy", x) == 0
    for g, dev in w.graphs:
        assert d.call(dev, "cuGraphDestroy", g) == 0
    w.execs.clear()
    w.graphs.clear()


def _instantiate(w, d, graph):
    g, dev = graph
    x = d.ct.c_void_p()
    if d.call(dev, "cuGraphInstantiateWithFlags", d.ct.byref(x), g, 0) != 0 or not x.value:
        raise AssertionError("py-fuzz: a captured graph did not instantiate")
    w.execs.append((x, dev))


def _launch(inp, w, d, exec_):
    """Launches on a live stream of the graph's device, or not at all (not
    once a fence operation went into a capture: see op_fence)."""
    x, dev = exec_
    if w.fence_in_graph:
        return
    on = []
    for s in w.streams:
        try:
            if not s.closed and s.device.ordinal == dev:
                on.append((s, s.native))
        except ALLOWED:
            pass
    if on:
        s, native = inp.pick(on)
        rc = d.call(dev, "cuGraphLaunch", x, native)
        if rc != 0 and not w.captures:
            raise AssertionError("py-fuzz: cuGraphLaunch with no capture on: %d" % rc)


def op_graph(inp, w):
    """Stream capture: begin one on a live stream (global, thread-local,
    relaxed, or a mode the driver refuses), end it, instantiate the graph,
    launch it on a stream of its device, destroy graphs and executables.
    The other operations run on capturing streams meanwhile (host
    functions that raise become graph nodes run at each launch)."""
    d = Driver.get()
    which = inp.byte() % 5
    live = [s for s in w.streams if not s.closed]
    if which == 0 and live:
        s = inp.pick(live)
        mode = inp.pick([0, 1, 2, 2, 7])
        try:
            native, dev = s.native, s.device.ordinal
        except ALLOWED:
            return
        if native is None or any(c[1] == native for c in w.captures):
            return
        rc = d.call(dev, "cuStreamBeginCapture_v2", native, mode)
        if mode > 2 and rc == 0:
            raise AssertionError("py-fuzz: cuStreamBeginCapture took mode %d" % mode)
        if rc == 0:
            w.captures.append((s, native, dev))
    elif which == 1 and w.captures:
        # ended, then (most often) instantiated and launched at once
        n = len(w.graphs)
        _end_capture(w, inp.pick(w.captures))
        if len(w.graphs) > n and inp.byte() % 4:
            _instantiate(w, d, w.graphs[-1])
            for _ in range(inp.byte() % 4):
                _launch(inp, w, d, w.execs[-1])
    elif which == 2 and w.graphs:
        _instantiate(w, d, inp.pick(w.graphs))
    elif which == 3 and w.execs:
        _launch(inp, w, d, inp.pick(w.execs))
    elif which == 4 and (w.graphs or w.execs):
        lst = w.graphs if w.graphs and inp.byte() & 1 else (w.execs or w.graphs)
        h, dev = lst.pop(inp.byte() % len(lst))
        name = "cuGraphDestroy" if lst is w.graphs else "cuGraphExecDestroy"
        assert d.call(dev, name, h) == 0


def op_close(inp, w):
    """Closes something; later ops use it closed."""
    objs = w.events + w.streams + w.pools + w.timelines
    if objs:
        o = inp.pick(objs)
        attempt("close()", o.close)
        attempt("close() again", o.close)


def op_threads(inp, w):
    """Threads recording, querying and waiting on shared objects while
    others close them."""
    # Interprocess events too: the hang this found in the emulation (a wait
    # queued ahead of the record it waited for) is fixed, with the regression
    # case ipc.record_wait_race (docs/fuzzing.md).
    events = list(w.events)
    if not w.streams or not events:
        return
    n = 2 + inp.byte() % 4
    seeds = [inp.byte() for _ in range(n)]
    errors = []

    def worker(seed):
        rng = random.Random(seed)
        try:
            for _ in range(20):
                e, s = rng.choice(events), rng.choice(w.streams)
                r = rng.randrange(7)
                if r == 0:
                    attempt("thread: Event.record", lambda: e.record(s))
                elif r == 1:
                    attempt("thread: Event.is_done", lambda: e.is_done)
                elif r == 2:
                    attempt("thread: Stream.wait", lambda: s.wait(e))
                elif r == 3:
                    attempt("thread: Event.sync", e.sync)
                elif r == 4:
                    attempt("thread: Stream.record", lambda: s.record())
                elif r == 5:
                    attempt("thread: Event.close", e.close)
                else:
                    attempt("thread: Stream.is_done", lambda: s.is_done)
        except AssertionError as ex:
            errors.append(ex)

    threads = [threading.Thread(target=worker, args=(sd,)) for sd in seeds]
    for t in threads:
        t.start()
    for t in threads:
        t.join(HANG_SECONDS)
        if t.is_alive():
            raise AssertionError("py-fuzz: a thread hung for %d s" % HANG_SECONDS)
    if errors:
        raise errors[0]


OPS = [op_device, op_create_event, op_create_stream, op_wrap, op_record, op_wait, op_query,
       op_elapsed, op_host_func, op_pool, op_timeline, op_timed, op_close, op_threads, op_aio,
       op_ipc, op_fence, op_graph]
HANG_SECONDS = 30


DEADLINE = [None]              # atheris mode: when to print the totals and exit


def TestOneInput(data):
    if DEADLINE[0] is not None and time.monotonic() > DEADLINE[0]:
        # libFuzzer's own exit skips Python's atexit: end here instead
        summary()
        os._exit(0)
    faulthandler.dump_traceback_later(HANG_SECONDS, exit=True)
    Stats.inputs += 1
    inp = Input(data)
    w = World()
    try:
        for _ in range(40):
            if inp.left() == 0:
                break
            inp.pick(OPS)(inp, w)
    finally:
        w.close_all()
    faulthandler.cancel_dump_traceback_later()


def summary():
    print("py-fuzz: %d inputs, %d calls on the %s core; exceptions: %s" % (
        Stats.inputs, Stats.calls, evx.implementation,
        ", ".join("%s %d" % kv for kv in sorted(Stats.raised.items())) or "none"),
        file=sys.stderr)
    known = [(k, v) for k, v in Stats.violations.items() if k in KNOWN_TODAY]
    new = [(k, v) for k, v in Stats.violations.items() if k not in KNOWN_TODAY]
    for title, lst in (("known today (allowed without --strict)", known),
                       ("not known (fail the run)", new)):
        if lst:
            print("py-fuzz: violations %s: %d kinds" % (title, len(lst)), file=sys.stderr)
            for (rule, call), (count, example) in sorted(lst):
                print("  %6d x %s" % (count, example), file=sys.stderr)
    sys.stderr.flush()


def main():
    global HANG_SECONDS
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=30, help="how long to run")
    ap.add_argument("--strict", action="store_true",
                    help="fail on every violation, also those in KNOWN_TODAY")
    ap.add_argument("--survey", action="store_true",
                    help="report every violation and fail on none (crashes and hangs "
                         "still fail): to list what the layer does")
    ap.add_argument("--random", action="store_true",
                    help="the seeded random driver even when atheris is installed")
    ap.add_argument("--seed", type=int, default=None, help="seed of the random driver")
    ap.add_argument("--artifacts", default=None,
                    help="atheris mode: where a failing input is written (default: a "
                         "new temporary folder)")
    ap.add_argument("--hang-seconds", type=int, default=HANG_SECONDS,
                    help="an input running longer than this is a hang")
    args, rest = ap.parse_known_args()
    Stats.strict = args.strict
    Stats.survey = args.survey
    HANG_SECONDS = args.hang_seconds
    faulthandler.enable()
    mode = "random" if args.random or atheris is None else "atheris"
    print("py-fuzz: %s driver%s, %s core, %s, %g s" % (
        mode, "" if atheris or args.random else " (atheris: %s)" % ATHERIS_ERROR,
        evx.implementation, "strict" if args.strict else "known-today violations allowed",
        args.seconds), file=sys.stderr, flush=True)
    if mode == "atheris":
        DEADLINE[0] = time.monotonic() + args.seconds
        artifacts = args.artifacts or tempfile.mkdtemp(prefix="py-fuzz-")
        os.makedirs(artifacts, exist_ok=True)
        print("py-fuzz: a failing input is written to %s/" % artifacts, file=sys.stderr)
        # The inputs of failures found before (tests/fuzz/py_corpus) seed
        # the run, read-only: libFuzzer writes nothing back there.
        seeds = sorted(os.path.join(CORPUS, n) for n in os.listdir(CORPUS))
        atheris.Setup([sys.argv[0], "-max_total_time=%d" % (int(args.seconds) + 60),
                       "-timeout=%d" % HANG_SECONDS, "-max_len=256",
                       "-artifact_prefix=%s/" % artifacts] +
                      (["-seed_inputs=" + ",".join(seeds)] if seeds else []) + rest,
                      TestOneInput)
        atheris.Fuzz()
        return 0
    seed = args.seed if args.seed is not None else int(time.time())
    print("py-fuzz: seed %d (--seed %d repeats this run)" % (seed, seed), file=sys.stderr)
    rng = random.Random(seed)
    end = time.monotonic() + args.seconds
    try:
        while time.monotonic() < end:
            TestOneInput(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 256))))
    except AssertionError as e:
        summary()
        print(e, file=sys.stderr)
        return 1
    summary()
    return 0


if __name__ == "__main__":
    sys.exit(main())
