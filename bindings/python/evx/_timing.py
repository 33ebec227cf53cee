# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Timing: :class:`timed` (a block timed by a C timer, ``evx_timer_*``,
from the compiled core) and :class:`Timeline` (``evx_timeline_*``)."""

import ctypes

from . import _args, _core
from ._device import device
from ._errors import Owned, check, error, live
from ._loader import capi
from ._stream import Stream

__all__ = ["timed", "Timeline"]

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

    def mark(self, stream):
        """Records the next mark on ``stream``; returns its index."""
        if not isinstance(stream, Stream):
            raise TypeError("Timeline.mark() needs an evx.Stream, not %s"
                            % type(stream).__name__)
        h = live(self, "Timeline.mark", "the timeline")
        s = live(stream, "Timeline.mark", "the stream")
        idx = ctypes.c_uint32()
        st = capi.evx_timeline_mark(h, s, ctypes.byref(idx))
        if st:
            raise error(st, "Timeline.mark")
        return idx.value

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
