# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Chrome traces of several timelines on one clock.

Each process writes its timeline (:meth:`evx.Timeline.to_trace`) after
anchoring it (:meth:`evx.Timeline.anchor`): the trace then says where its
marks fall on ``CLOCK_MONOTONIC``, which every process of a machine shares.
:func:`merge` puts the traces side by side in one trace, one ``pid`` per
input (each stream a ``tid`` of it), with every time moved to that clock::

    import evx.trace
    merged = evx.trace.merge(["producer.json", "consumer.json"], out="both.json")

Perfetto (https://ui.perfetto.dev) then shows the stages of a pipeline, on
several GPUs and processes, on one time axis. A timeline's times are its
device's; the anchor maps them to the host's clock to within half its
window (``monotonic_after_ns - monotonic_before_ns``): :class:`HostClock`
does it, from the anchor with the narrowest window or, with anchors far
enough apart, by a line through two of them, which also corrects the rate
of the device's clock.
"""

import json
import os

__all__ = ["HostClock", "merge", "MIN_RATE_SPAN_US"]

#: Two anchors closer than this (microseconds of the timeline) give no rate:
#: their windows would make it less exact than the clocks' own agreement.
MIN_RATE_SPAN_US = 100000.0


class HostClock:
    """Maps a timeline's times (microseconds from its mark 0, the ``ts`` of
    its trace) to ``CLOCK_MONOTONIC`` microseconds.

    ``anchors``: dicts with ``ts`` (microseconds from mark 0),
    ``monotonic_before_ns`` and ``monotonic_after_ns``, as the ``anchors``
    of a trace's ``evx`` object, in time order. With the first and the
    last at least :data:`MIN_RATE_SPAN_US` apart, the map is the line
    through the narrowest anchor of each half of that span (it corrects the
    rate of the device's clock); else an offset, from the anchor with the
    narrowest window."""

    def __init__(self, anchors):
        anchors = list(anchors)
        if not anchors:
            raise ValueError("evx.trace.HostClock: no anchors (record one with "
                             "Timeline.anchor(stream) before writing the trace)")
        for a in anchors:
            if a["monotonic_after_ns"] < a["monotonic_before_ns"]:
                raise ValueError("evx.trace.HostClock: anchor %r ends before it starts" % (a,))
        first, last = anchors[0], anchors[-1]
        span = last["ts"] - first["ts"]
        if span >= MIN_RATE_SPAN_US:
            # The line through the narrowest anchor of each half of the
            # span: between them it is off by no more than the wider of
            # their half windows.
            early = min((a for a in anchors if a["ts"] - first["ts"] <= span / 2),
                        key=_window_ns)
            late = min((a for a in anchors if a["ts"] - first["ts"] > span / 2),
                       key=_window_ns)
            self.rate = (_mid_us(late) - _mid_us(early)) / (late["ts"] - early["ts"])
            ref, chosen = early, (early, late)
        else:
            self.rate = 1.0
            ref = min(anchors, key=_window_ns)
            chosen = (ref,)
        #: How far a time may be off, in microseconds: half the widest
        #: window of the anchors used.
        self.uncertainty_us = max(_window_ns(a) for a in chosen) / 2000.0
        self._ts0 = ref["ts"]
        self._host0 = _mid_us(ref)

    def __call__(self, ts_us):
        """``CLOCK_MONOTONIC`` microseconds of the timeline time ``ts_us``."""
        return self._host0 + (ts_us - self._ts0) * self.rate


def _window_ns(a):
    return a["monotonic_after_ns"] - a["monotonic_before_ns"]


def _mid_us(a):
    return (a["monotonic_before_ns"] + a["monotonic_after_ns"]) / 2000.0


def _load(item):
    if isinstance(item, dict):
        return item, "<dict>"
    with open(os.fspath(item)) as f:
        return json.load(f), os.fspath(item)


def _process_name(trace, default):
    for e in trace.get("traceEvents", []):
        if e.get("ph") == "M" and e.get("name") == "process_name":
            return e.get("args", {}).get("name", default)
    return default


def merge(traces, out=None, names=None):
    """One Chrome trace (a dict) of several anchored traces: each input (a
    path, or a dict as :func:`json.load` gives it) becomes process ``k + 1``
    (named by ``names[k]``, else its own process name), its streams its
    threads, and every time moves to ``CLOCK_MONOTONIC``, from the earliest
    event of all as 0. The result's ``evx`` object gives that origin
    (``origin_monotonic_us``) and, per process, its source, rate and
    uncertainty. Written to ``out`` too, if given.

    Raises ValueError naming the input that has no anchors."""
    loaded = [_load(t) for t in traces]
    if not loaded:
        raise ValueError("evx.trace.merge: no traces given")
    if names is not None and len(names) != len(loaded):
        raise ValueError("evx.trace.merge: %d names for %d traces" % (len(names), len(loaded)))
    clocks = []
    for trace, src in loaded:
        anchors = (trace.get("evx") or {}).get("anchors") or []
        if not anchors:
            raise ValueError("evx.trace.merge: %s has no anchors (record one with "
                             "Timeline.anchor(stream) before Timeline.to_trace())" % src)
        clocks.append(HostClock(anchors))
    timed = [(clock(e["ts"]), k, e) for k, ((trace, _), clock) in enumerate(zip(loaded, clocks))
             for e in trace.get("traceEvents", []) if "ts" in e and e.get("ph") != "M"]
    origin = min((t for t, _, _ in timed), default=0.0)
    events = []
    processes = []
    for k, ((trace, src), clock) in enumerate(zip(loaded, clocks)):
        pid = k + 1
        name = names[k] if names is not None else _process_name(trace, src)
        events.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                       "args": {"name": name}})
        for e in trace.get("traceEvents", []):
            if e.get("ph") == "M" and e.get("name") == "process_name":
                continue
            e = dict(e, pid=pid)
            if "ts" in e and e.get("ph") != "M":
                e["ts"] = round(clock(e["ts"]) - origin, 3)
                if "dur" in e:
                    e["dur"] = round(e["dur"] * clock.rate, 3)
            events.append(e)
        processes.append({"pid": pid, "name": name, "source": src, "rate": clock.rate,
                          "uncertainty_us": clock.uncertainty_us})
    merged = {"displayTimeUnit": "ms", "traceEvents": events,
              "evx": {"clock": "CLOCK_MONOTONIC", "origin_monotonic_us": origin,
                      "processes": processes}}
    if out is not None:
        with open(os.fspath(out), "w") as f:
            json.dump(merged, f)
    return merged
