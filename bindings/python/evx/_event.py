# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Events: :class:`Event`, on the compiled core's EventCore."""

import ctypes

from . import _core, _notify, ipc
from ._capi import EventFlags
from ._device import device
from ._errors import check, live
from ._loader import capi

__all__ = ["Event"]


def handle_int(h):
    """A handle (an int, a c_void_p or None) as an int, 0 for None."""
    if h is None:
        return 0
    if isinstance(h, int):
        return h
    return h.value or 0


class Event(_core.EventCore):
    """An evx event: made by :meth:`Device.create_event`,
    :meth:`Stream.record` or :meth:`EventPool.acquire`; recorded on any
    stream of its device, again and again.

    ``end - start`` is the time between two recorded, completed events in
    milliseconds (it raises CudaError with EVX_ERROR_NOT_READY while either
    is pending). Closing (or the garbage collector) destroys the evx event;
    an event from a pool goes back to its pool.

    The hot methods (``record``, ``sync``, ``is_done``, ``-``, ``close``)
    come from the compiled core, evx._core.
    """

    __slots__ = ()
    __module__ = "evx"

    def __new__(cls, *args, **kwargs):
        raise TypeError("evx.Event is made by Device.create_event(), "
                        "Stream.record() or EventPool.acquire()")

    @property
    def flags(self):
        """The :class:`EventFlags` the event was created with."""
        f = ctypes.c_uint()
        check(capi.evx_event_get_flags(live(self, "Event.flags", "the event"),
                                       ctypes.byref(f)), "Event.flags")
        return EventFlags(f.value)

    @property
    def is_timing_disabled(self):
        return bool(self.flags & EventFlags.DISABLE_TIMING)

    @property
    def device(self):
        """The :class:`Device` the event belongs to."""
        return device(self._dev)

    @property
    def handle(self):
        """The evx handle as an int (0 once closed)."""
        return handle_int(self._h)

    @property
    def native(self):
        """The driver's ``CUevent`` address as an int. evx keeps owning it:
        valid while this event is open, never to be destroyed by the caller."""
        p = ctypes.c_void_p()
        check(capi.evx_event_get_native(live(self, "Event.native", "the event"),
                                        ctypes.byref(p)), "Event.native")
        return p.value or 0

    @property
    def ipc_handle(self):
        """The event's IPC handle, as 64 ``bytes`` to send to another
        process, which opens it with :meth:`Device.open_ipc_event` (see
        :mod:`evx.ipc`).

        Raises :class:`evx.CudaError` (``EVX_ERROR_INVALID_HANDLE``) for an
        event made without ``ipc=True`` or already closed."""
        return ipc.ipc_handle(self)

    def __reduce__(self):
        # Only an interprocess event pickles: as its IPC handle (evx.ipc).
        return ipc.reduce_event(self)

    def wait_async(self):
        """``await event.wait_async()``: an asyncio Future for the work the
        event's last record marks now (see :func:`evx.aio.wait`)."""
        return _notify.wait_event(self, "wait")

    def __await__(self):
        """``await event``: the same as ``await event.wait_async()``. The
        watch is made when the ``await`` starts, so it waits for the record
        the event has at that moment."""
        return self.wait_async().__await__()

    def __repr__(self):
        if self._h is None:
            return "<evx.Event closed>"
        return "<evx.Event 0x%x device %d>" % (self.handle, self._dev)
