# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Interprocess events (``include/evx/ipc.h``).

The package's classes use it:

- ``Event.ipc_handle``: the event's IPC handle, 64 ``bytes``
  (``evx_event_get_ipc_handle``), for an event made with
  ``Device.create_event(timing=False, ipc=True)``;
- ``Device.open_ipc_event(handle)``: an :class:`evx.Event` for a handle
  another process exported (``evx_device_open_ipc_event``);
- pickling of interprocess events, as cuda.core does: the pickle holds the
  device and the handle, and unpickling opens the event, so such an event can
  be passed to a ``multiprocessing`` child (spawn or forkserver) as an
  argument or through a queue. The driver opens a handle only in a process
  other than the one that exported it, so unpickling in the same process
  raises :class:`evx.CudaError` (``EVX_ERROR_INVALID_CONTEXT``).

An opened event is recorded, waited for, synchronized and queried as any
other; it has no timing (``end - start`` raises). Closing it closes the
driver's handle; the exporting process must keep its event open while peers
use theirs.
"""

import ctypes as _ct

from . import _args, _capi, _core
from ._errors import error as _error
from ._loader import capi

__all__ = ["HANDLE_SIZE", "ipc_handle", "open_event", "reduce_event"]

#: Bytes in an IPC event handle (``EVX_IPC_HANDLE_SIZE``).
HANDLE_SIZE = _capi.EVX_IPC_HANDLE_SIZE


def ipc_handle(event):
    """The event's IPC handle, as 64 ``bytes`` to send to another process,
    which opens it with :meth:`Device.open_ipc_event`.

    Raises :class:`evx.CudaError` (``EVX_ERROR_INVALID_HANDLE``) for an event
    made without ``ipc=True`` or already closed."""
    h = _capi.evx_ipc_event_handle_t()
    st = capi.evx_event_get_ipc_handle(event._h, _ct.byref(h))
    if st:
        raise _error(st)
    return bytes(h.reserved)


def open_event(ordinal, handle, event_type):
    """A new event of ``event_type`` (evx.Event) of device ``ordinal`` for
    ``handle``, the :attr:`Event.ipc_handle` of an event of another process
    (what :meth:`evx.Device.open_ipc_event` returns)."""
    data = _args.handle_bytes(handle, "evx.Device(%d).open_ipc_event" % ordinal, HANDLE_SIZE,
                              "Event.ipc_handle", "an IPC event handle")
    h = _capi.evx_ipc_event_handle_t.from_buffer_copy(data)
    out = _ct.c_void_p()
    st = capi.evx_device_open_ipc_event(ordinal, _ct.byref(h), _ct.byref(out))
    if st:
        raise _error(st)
    return _core.new_event(event_type, out, ordinal)


def reduce_event(event):
    """The pickle of an interprocess event (its ``__reduce__``): its device
    and its IPC handle, opened by the unpickling process."""
    if event.closed:
        raise TypeError("cannot pickle a closed evx.Event")
    if not event.flags & _capi.EVX_EVENT_INTERPROCESS:
        raise TypeError(
            "cannot pickle %r: only an interprocess event (made with "
            "Device.create_event(timing=False, ipc=True)) can be pickled; "
            "its pickle is its IPC handle, which the unpickling process "
            "opens" % (event,))
    return (event.device.open_ipc_event, (event.ipc_handle,))
