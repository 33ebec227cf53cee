# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Event pools: :class:`EventPool` and its :data:`PoolStats`
(``evx_event_pool_*``)."""

import collections
import ctypes

from . import _args, _capi, _core
from ._device import device
from ._errors import Owned, check, error, live
from ._event import Event
from ._loader import capi

__all__ = ["EventPool", "PoolStats"]

#: What a pool holds and has done (evx_event_pool_get_stats).
PoolStats = collections.namedtuple(
    "PoolStats", "capacity idle in_use pending created_total acquired_total "
                 "exhausted_total", module="evx")


class EventPool(Owned):
    """A bounded pool of pre-made events of one device and flag set.

    :meth:`acquire` hands out an :class:`Event` (CudaError with
    EVX_ERROR_OUT_OF_MEMORY when all of the capacity is out or pending);
    :meth:`release` or closing the event gives it back.
    """

    __slots__ = ("_h", "_dev", "__weakref__")
    __module__ = "evx"
    _destroy = capi.evx_event_pool_destroy

    def __init__(self, device, capacity, prewarm=0, timing=True, blocking_sync=False):
        self._init(_args.ordinal(device, "evx.EventPool"), capacity, prewarm, timing,
                   blocking_sync, "evx.EventPool")

    @classmethod
    def _make(cls, ordinal, capacity, prewarm, timing, blocking_sync, op):
        pool = object.__new__(cls)
        pool._init(ordinal, capacity, prewarm, timing, blocking_sync, op)
        return pool

    def _init(self, ordinal, capacity, prewarm, timing, blocking_sync, op):
        self._h = None
        self._dev = ordinal
        opts = _capi.evx_event_pool_options_t()
        opts.struct_size = ctypes.sizeof(opts)
        opts.event_flags = (0 if timing else _capi.EVX_EVENT_DISABLE_TIMING) | \
            (_capi.EVX_EVENT_BLOCKING_SYNC if blocking_sync else 0)
        opts.capacity = _args.integer(capacity, op, "capacity", _args.UINT32)
        opts.prewarm = _args.integer(prewarm, op, "prewarm", _args.UINT32)
        h = ctypes.c_void_p()
        check(capi.evx_device_create_event_pool(ordinal, ctypes.byref(opts),
                                                ctypes.byref(h)), op)
        self._h = h

    def acquire(self):
        """An event from the pool, never recorded."""
        h = ctypes.c_void_p()
        st = capi.evx_event_pool_acquire(live(self, "EventPool.acquire", "the pool"),
                                         ctypes.byref(h))
        if st:
            raise error(st, "EventPool.acquire")
        return _core.new_event(Event, h, self._dev, True)

    def release(self, event):
        """Gives an event acquired from this pool back; the Event is closed.
        An event of another pool is refused and stays open."""
        if not isinstance(event, Event):
            raise TypeError("EventPool.release() needs an evx.Event, not %s"
                            % type(event).__name__)
        st = capi.evx_event_pool_release(live(self, "EventPool.release", "the pool"),
                                         live(event, "EventPool.release", "the event"))
        if st:
            raise error(st, "EventPool.release")
        event._h = None

    def prewarm(self, count):
        """Makes driver events until the pool holds ``count`` idle ones."""
        count = _args.integer(count, "EventPool.prewarm", "count", _args.UINT32)
        check(capi.evx_event_pool_prewarm(live(self, "EventPool.prewarm", "the pool"),
                                          count), "EventPool.prewarm")

    @property
    def stats(self):
        """A :data:`PoolStats`."""
        s = _capi.evx_event_pool_stats_t()
        s.struct_size = ctypes.sizeof(s)
        check(capi.evx_event_pool_get_stats(live(self, "EventPool.stats", "the pool"),
                                            ctypes.byref(s)), "EventPool.stats")
        return PoolStats(s.capacity, s.idle, s.in_use, s.pending,
                         s.created_total, s.acquired_total, s.exhausted_total)

    @property
    def device(self):
        return device(self._dev)
