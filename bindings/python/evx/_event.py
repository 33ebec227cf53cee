# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Events: :class:`Event`, on the compiled core's EventCore."""

import ctypes

from . import _core, _native, _notify, ipc
from ._capi import EventFlags
from ._device import device
from ._errors import check, error, live
from ._loader import capi

__all__ = ["Event", "borrow"]


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
                        "Stream.record(), EventPool.acquire() or Event.wrap()")

    @classmethod
    def wrap(cls, obj, device=None):
        """Borrows an event made elsewhere (``evx_event_wrap_external``).

        ``obj``: an object with ``__cuda_event__`` (version 0,
        docs/protocols.md), a ``torch.cuda.Event`` (``.cuda_event``; it must
        have been recorded once, as PyTorch makes its CUDA event at the first
        record), a CuPy event (``.ptr``), a cuda.core ``Event``
        (``.handle``), or an int address (or ``ctypes.c_void_p``), which
        needs ``device``. ``device``: the event's device (an ordinal or an
        evx.Device); None reads it from the object (``__cuda_event__``'s,
        PyTorch's ``event.device``, cuda.core's ``event.device``), else it is
        the device of the calling thread's current context. A device that
        differs from the one the object names is refused.

        The object is kept referenced until the evx event is closed (or
        collected); evx never destroys the driver event. The flags of a
        borrowed event are unknown (:attr:`flags` raises CudaError with
        EVX_ERROR_NOT_SUPPORTED); an elapsed time of an event made without
        timing is refused by the driver.
        """
        return _borrowed(cls, obj, device, "Event.wrap")

    @property
    def is_owned(self):
        """True when evx owns the driver event, False for a borrowed one
        (:meth:`wrap`)."""
        o = ctypes.c_int()
        check(capi.evx_event_is_owned(live(self, "Event.is_owned", "the event"),
                                      ctypes.byref(o)), "Event.is_owned")
        return bool(o.value)

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
    def ptr(self):
        """The same as :attr:`native`: the address CuPy reads from an event
        (``cupy.cuda.Stream.wait_event(evx_event)``)."""
        return self.native

    def __cuda_event__(self):
        """The CUDA event protocol, version 0 (docs/protocols.md):
        ``(0, address, device_ordinal)``."""
        return (0, self.native, self._dev)

    def wait(self, stream):
        """Makes future work on ``stream`` wait for this event's last record:
        an evx.Stream, or another framework's stream (anything
        :meth:`Stream.wrap` takes), borrowed for the call. PyTorch's
        ``torch_stream.wait_event(evx_event)`` calls this. Does not block the
        thread."""
        op = "Event.wait"
        if isinstance(stream, _core.StreamCore):
            stream.wait(self)
            return
        h = live(self, op, "the event")
        sh, _, _ = _native.wrap(stream, None, op)
        st = capi.evx_stream_wait_event(sh, h, 0)
        err = error(st, op) if st else None   # before the destroy sets its own
        capi.evx_stream_destroy(sh)
        if err is not None:
            raise err

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


def _borrowed(cls, obj, device, op, fallback=None):
    h, ordinal = _native.wrap_event(obj, device, op, fallback)
    try:
        return _core.new_event(cls, h, ordinal)
    except BaseException:
        capi.evx_event_destroy(h)
        raise


def borrow(obj, op, fallback=None):
    """An evx Event borrowing a foreign event for one call (``Stream.wait``,
    ``Event.elapsed_since``, :func:`evx.aio.wait`): the caller closes it.
    ``fallback``: the device of the evx object the call pairs it with, for
    an object that names none (a CuPy event). An address is refused here:
    only :meth:`Event.wrap` takes its device."""
    if isinstance(obj, (int, ctypes.c_void_p)):
        raise TypeError("%s() needs an evx.Event, not %s: borrow a raw event address "
                        "with evx.Event.wrap(address, device=...)" % (op, type(obj).__name__))
    return _borrowed(Event, obj, None, op, fallback)
