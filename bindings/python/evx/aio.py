# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Await GPU work from asyncio (the default loop or uvloop), or get a
``concurrent.futures.Future`` for it in threaded code, with no thread
blocked and none polling.

::

    import asyncio, evx, evx.aio

    async def main():
        s = evx.Device(0).create_stream()
        ...                                 # queue GPU work on s
        await evx.aio.synchronize(s)        # or: await s.synchronize_async()
        done = s.record()
        await evx.aio.wait(done)            # or: await done.wait_async()

    asyncio.run(main())

Built on the C notifier (``evx/notify.h``): each running loop gets one
notifier, whose file descriptor is registered with ``loop.add_reader``;
:func:`wait` watches the event under a token and returns an
``asyncio.Future`` that the reader completes when the token comes back.
Thousands of concurrent awaits cost one notifier and its few internal
streams, no threads.

**The watch is made when** :func:`wait` **is called**, not when the result
is awaited: it captures the work the event's last record marks at that
moment (as ``cuStreamWaitEvent`` does); re-recording or closing the event
afterwards does not change it.

**Cancellation** of the awaiting task is safe: the watch stays in the C
notifier until its event completes, and its token is then dropped.

The notifier of a loop is destroyed when the loop is garbage collected;
that waits until the watches still pending (of cancelled awaits, say) have
completed. :func:`future` uses one process-wide notifier and its callback
form instead of a loop.
"""

import concurrent.futures as _cf
import threading as _threading

from . import _hostfn, _notify
from ._errors import error as _error
from ._event import Event, borrow
from ._fence import Fence, _value
from ._loader import capi
from ._notify import READ_BATCH, _notifiers  # noqa: F401 (the public constant; the tests' view)
from ._stream import Stream

__all__ = ["wait", "wait_fence", "synchronize", "future", "READ_BATCH"]


def _check_event(fn, event):
    if not isinstance(event, Event):
        raise TypeError("evx.aio.%s() needs an evx.Event, not %s"
                        % (fn, type(event).__name__))


def wait(event):
    """An ``asyncio.Future`` that completes (with None) once the work the
    event's last record marks now has completed: ``await evx.aio.wait(ev)``.
    ``event`` is an evx.Event, or another framework's event (anything
    :meth:`evx.Event.wrap` takes that names its device: a PyTorch, CuPy or
    cuda.core event, an object with ``__cuda_event__``), borrowed while the
    watch is made.

    A never-recorded event completes at once. Needs a running loop.
    Raises CudaError for a closed event (EVX_ERROR_INVALID_HANDLE).

    A host function launched with ``Stream.launch_host_func`` that raised
    before the event's last record (on the same evx stream) and whose
    failure no other call reported yet fails the future with
    :class:`evx.CudaError`, its ``__cause__`` the function's exception
    (evx_notifier_read_checked)."""
    if isinstance(event, Event):
        return _notify.wait_event(event, "wait")
    if isinstance(event, (Stream, Fence)):
        _check_event("wait", event)
    tmp = borrow(event, "evx.aio.wait")
    try:
        return _notify.wait_event(tmp, "wait")
    finally:
        tmp.close()   # the watch holds what it needs of the driver event


def wait_fence(fence, value):
    """An ``asyncio.Future`` that completes (with None) once the fence's
    counter is at least ``value``: ``await evx.aio.wait_fence(f, 7)`` (or
    ``await f.wait_async(7)``). A value reached already completes at once.
    Needs a running loop.

    Cancelling the awaiting task is safe: the watch stays in the C notifier
    until the value is reached, and its token is then dropped. A watch of a
    value that never comes keeps its notifier (and one internal stream)
    for the life of the process."""
    if not isinstance(fence, Fence):
        raise TypeError("evx.aio.wait_fence() needs an evx.Fence, not %s"
                        % type(fence).__name__)
    v = _value(value, "evx.aio.wait_fence")
    h = fence._live("evx.aio.wait_fence")
    return _notify.wait_fence_handle(h, v)


def synchronize(stream):
    """An ``asyncio.Future`` that completes once all work queued on the
    stream so far has completed: ``await evx.aio.synchronize(s)``."""
    if not isinstance(stream, Stream):
        raise TypeError("evx.aio.synchronize() needs an evx.Stream, not %s"
                        % type(stream).__name__)
    return _notify.synchronize(stream)


# --------------------------------------------------------------------------
# concurrent.futures, through the callback form. The callback is the
# package's host-function trampoline (evx._hostfn, the same C signature): it
# pops the completion from the table of pending host functions, never lets
# an exception escape into the driver, and the interpreter waits at exit for
# what is pending there (evx.HOST_FUNC_EXIT_WAIT_S).

_cf_lock = _threading.Lock()
_cf_notifier = None


def _complete(fut, status):
    # On the thread of the delivery, which set the message and host function
    # of a failure: the error is made here.
    err = _error(status, "evx.aio.future") if status else None
    if fut.set_running_or_notify_cancel():  # False: cancelled meanwhile
        if err is None:
            fut.set_result(None)
        else:
            fut.set_exception(err)


def future(event):
    """A ``concurrent.futures.Future`` that completes (with None) once the
    work the event's last record marks now has completed; for threaded code
    (``fut.result(timeout)``) or ``asyncio.wrap_future``.

    Its completion runs on the driver's thread (in a host function) or on
    the notifier's pump thread, and so do callbacks added with
    ``add_done_callback``: they must be short and must not call evx or
    CUDA. Cancelling the future before it completes is allowed.

    A host function launched with ``Stream.launch_host_func`` that raised
    before the event's last record (on the same evx stream, or in a graph
    launch on the event's device) and whose failure no other call reported
    yet fails the future with :class:`evx.CudaError`, its ``__cause__`` the
    function's exception (evx_notifier_watch_callback_status)."""
    global _cf_notifier
    _check_event("future", event)
    with _cf_lock:
        if _cf_notifier is None:
            _cf_notifier = _notify._new_notifier()
    fut = _cf.Future()
    key = _hostfn.submit(lambda status: _complete(fut, status))
    st = capi.evx_notifier_watch_callback_status(_cf_notifier, event.handle, _hostfn.notify_status_trampoline, key)
    if st:
        _hostfn.withdraw(key)
        raise _error(st, "evx.aio.future")
    return fut
