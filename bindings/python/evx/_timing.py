# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Timing: :class:`timed` (a block timed by a C timer, ``evx_timer_*``,
from the compiled core) and :class:`Timeline` (``evx_timeline_*``)."""

import collections
import contextlib
import ctypes
import importlib
import os

from . import _args, _capi, _core
from ._device import device
from ._errors import Owned, check, error, live
from ._loader import capi
from ._plot import draw
from ._stream import Stream

__all__ = ["timed", "Timeline", "Mark", "Anchor"]

#: One mark of a :class:`Timeline` (:meth:`Timeline.marks`): its number (its
#: index in the timeline), its time in milliseconds from mark 0, its label
#: ("" if none), its kind ("point", "begin" or "end") and the handle value of
#: its stream.
Mark = collections.namedtuple("Mark", "number ms label kind stream")
Mark.__module__ = "evx"

#: One anchor of a :class:`Timeline` (:meth:`Timeline.anchor`): the number (index) of
#: its mark, ``CLOCK_MONOTONIC`` in nanoseconds read before the mark was
#: recorded and after it completed (its GPU time lies between), and
#: ``CLOCK_REALTIME`` read with the first.
Anchor = collections.namedtuple("Anchor",
                                "number monotonic_before_ns monotonic_after_ns realtime_ns")
Anchor.__module__ = "evx"

_KINDS = {"point": _capi.EVX_MARK_POINT, "begin": _capi.EVX_MARK_BEGIN,
          "end": _capi.EVX_MARK_END}
_KIND_NAMES = {v: k for k, v in _KINDS.items()}
_KIND_NAMES[_capi.EVX_MARK_ANCHOR] = "anchor"


def _label(label, op):
    if not isinstance(label, str):
        raise TypeError("%s: label must be a str, not %s" % (op, type(label).__name__))
    raw = label.encode("utf-8")
    if len(raw) >= _capi.EVX_MARK_LABEL_SIZE or b"\0" in raw:
        raise ValueError("%s: label %r is %d bytes in UTF-8 or holds a NUL; at most %d, "
                         "no NUL" % (op, label, len(raw), _capi.EVX_MARK_LABEL_SIZE - 1))
    return raw

#: ``with evx.timed(stream) as t: ...`` then ``t.elapsed_ms``: see its
#: docstring. Its C timer is kept by the thread for the next block: a block
#: makes no driver object.
timed = _core.timed


class Timeline(Owned):
    """Marks recorded in order on streams of one device, read back in one
    call (evx_timeline_*): interval i is from mark i to mark i + 1."""

    __slots__ = ("_h", "_dev", "__weakref__")
    __module__ = "evx"
    _destroy = capi.evx_timeline_destroy

    def __init__(self, device, capacity):
        self._init(_args.ordinal(device, "evx.Timeline"), capacity, "evx.Timeline")

    @classmethod
    def _make(cls, ordinal, capacity, op):
        tl = object.__new__(cls)
        tl._init(ordinal, capacity, op)
        return tl

    def _init(self, ordinal, capacity, op):
        self._h = None
        self._dev = ordinal
        capacity = _args.integer(capacity, op, "capacity", _args.UINT32)
        h = ctypes.c_void_p()
        check(capi.evx_device_create_timeline(ordinal, capacity, ctypes.byref(h)), op)
        self._h = h

    def mark(self, stream, label=None, kind="point"):
        """Records the next mark on ``stream``; returns its index.

        ``label`` names it (at most 63 bytes in UTF-8) in :meth:`marks`, in
        the trace of :meth:`to_trace` and, where libevx has NVTX, in Nsight
        Systems; ``kind`` is "point", or "begin"/"end" of a range (see
        :meth:`range`)."""
        op = "Timeline.mark"
        if not isinstance(stream, Stream):
            raise TypeError("Timeline.mark() needs an evx.Stream, not %s"
                            % type(stream).__name__)
        if kind not in _KINDS:
            raise ValueError("Timeline.mark(): kind must be 'point', 'begin' or 'end', "
                             "not %r" % (kind,))
        raw = _label("" if label is None else label, op)
        h = live(self, op, "the timeline")
        s = live(stream, op, "the stream")
        idx = ctypes.c_uint32()
        if label is None and kind == "point":
            st = capi.evx_timeline_mark(h, s, ctypes.byref(idx))
        else:
            st = capi.evx_timeline_mark_labeled(h, s, raw, _KINDS[kind], ctypes.byref(idx))
        if st:
            raise error(st, op)
        return idx.value

    @contextlib.contextmanager
    def range(self, label, stream):
        """``with timeline.range("forward", stream): ...``: a begin mark
        before the block and an end mark after it, on ``stream``; ranges
        nest. The end mark is made also when the block raises."""
        self.mark(stream, label, "begin")
        try:
            yield self
        finally:
            self.mark(stream, label, "end")

    def anchor(self, stream):
        """Records an anchor on ``stream`` (``evx_timeline_anchor``): a mark
        (kind "anchor") with the host's clocks read before it is recorded
        and after it completed, so that :func:`evx.trace.merge` can put the
        traces of several processes and devices on one clock. Blocks until
        the mark completes: give it a stream with no work pending. Returns
        an :class:`Anchor`."""
        op = "Timeline.anchor"
        if not isinstance(stream, Stream):
            raise TypeError("Timeline.anchor() needs an evx.Stream, not %s"
                            % type(stream).__name__)
        h = live(self, op, "the timeline")
        s = live(stream, op, "the stream")
        a = _capi.evx_timeline_anchor_info_t()
        a.struct_size = ctypes.sizeof(a)
        check(capi.evx_timeline_anchor(h, s, ctypes.byref(a)), op)
        return Anchor(a.index, a.monotonic_before_ns, a.monotonic_after_ns, a.realtime_ns)

    def anchors(self):
        """Every anchor of the timeline (:meth:`anchor`), in mark order, as
        :class:`Anchor` (``evx_timeline_get_anchor``). Waits for the last
        mark."""
        op = "Timeline.anchors"
        h = live(self, op, "the timeline")
        out = []
        a = _capi.evx_timeline_anchor_info_t()
        for m in self.marks():
            if m.kind == "anchor":
                a.struct_size = ctypes.sizeof(a)
                check(capi.evx_timeline_get_anchor(h, m.number, ctypes.byref(a)), op)
                out.append(Anchor(a.index, a.monotonic_before_ns, a.monotonic_after_ns,
                                  a.realtime_ns))
        return out

    def marks(self):
        """Every mark as a :class:`Mark`, in order. Waits for the last
        mark."""
        op = "Timeline.marks"
        h = live(self, op, "the timeline")
        check(capi.evx_timeline_synchronize(h), op)
        n = ctypes.c_uint32()
        check(capi.evx_timeline_count(h, ctypes.byref(n)), op)
        out = []
        info = _capi.evx_timeline_mark_info_t()
        for i in range(n.value):
            info.struct_size = ctypes.sizeof(info)
            check(capi.evx_timeline_get_mark(h, i, ctypes.byref(info)), op)
            out.append(Mark(info.index, info.ms, info.label.decode("utf-8", "replace"),
                            _KIND_NAMES.get(info.kind, str(info.kind)),
                            info.stream or 0))
        return out

    def to_trace(self, path, title=None):
        """Writes the timeline as a Chrome trace (JSON trace event format;
        open it in https://ui.perfetto.dev or chrome://tracing): one track
        per stream, ranges as nested slices, each point mark as the interval
        to the next mark. The same bytes as ``evx_timeline_write_trace``,
        which writes it. Waits for the last mark; returns ``path``."""
        op = "Timeline.to_trace"
        if title is not None and not isinstance(title, str):
            raise TypeError("Timeline.to_trace(): title must be a str, not %s"
                            % type(title).__name__)
        fs = os.fsencode(path)
        check(capi.evx_timeline_write_trace(
            live(self, op, "the timeline"), fs,
            None if title is None else title.encode("utf-8")), op)
        return path

    def plot(self, path=None, ax=None, title=None):
        """Draws the timeline with matplotlib (which must be installed): one
        row per stream, ranges as nested bars, point marks as the intervals
        to the next mark. Saves it to ``path`` if given; returns the axes."""
        try:
            # Through importlib: matplotlib is optional, and has no stubs
            # that the type check of the package could rely on.
            matplotlib = importlib.import_module("matplotlib")
            if ax is None and path is not None:
                matplotlib.use("Agg", force=False)
            plt = importlib.import_module("matplotlib.pyplot")
        except ImportError as e:
            raise ImportError("Timeline.plot() needs matplotlib (pip install matplotlib)"
                              ) from e
        marks = self.marks()
        if ax is None:
            fig, ax = plt.subplots(figsize=(10, 1.2 + 0.9 * max(
                1, len({m.stream for m in marks}))))
        draw(ax, marks, title)
        if path is not None:
            ax.figure.savefig(path, dpi=120, bbox_inches="tight")
        return ax

    @property
    def count(self):
        """Marks recorded since creation or the last reset."""
        n = ctypes.c_uint32()
        check(capi.evx_timeline_count(live(self, "Timeline.count", "the timeline"),
                                      ctypes.byref(n)), "Timeline.count")
        return n.value

    def __len__(self):
        return self.count

    def sync(self):
        """Waits for the last mark's work."""
        check(capi.evx_timeline_synchronize(live(self, "Timeline.sync", "the timeline")),
              "Timeline.sync")

    def intervals(self):
        """Every interval between consecutive marks, in milliseconds (a list
        of floats, one fewer than the marks). Waits for the last mark."""
        op = "Timeline.intervals"
        h = live(self, op, "the timeline")
        check(capi.evx_timeline_synchronize(h), op)
        n = ctypes.c_uint32()
        check(capi.evx_timeline_intervals(h, None, 0, ctypes.byref(n)), op)
        if n.value == 0:
            return []
        buf = (ctypes.c_float * n.value)()
        written = ctypes.c_uint32()
        check(capi.evx_timeline_intervals(h, buf, n.value, ctypes.byref(written)), op)
        return list(buf[:written.value])

    def reset(self):
        """Forgets every mark, keeping the events for reuse."""
        check(capi.evx_timeline_reset(live(self, "Timeline.reset", "the timeline")),
              "Timeline.reset")

    @property
    def device(self):
        return device(self._dev)
