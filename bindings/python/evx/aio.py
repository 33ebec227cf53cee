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

import asyncio as _asyncio
import concurrent.futures as _cf
import ctypes as _ct
import itertools as _itertools
import threading as _threading
import weakref as _weakref

from . import _core, _hostfn
from ._errors import error as _error
from ._event import Event
from ._loader import capi as _capi
from ._stream import Stream

__all__ = ["wait", "wait_fence", "synchronize", "future", "READ_BATCH"]

#: Tokens taken from the C notifier per ``evx_notifier_read`` call (at most
#: ``evx._core.NOTIFIER_READ_MAX``).
READ_BATCH = 256

# The hot calls (a watch per await, a read per wakeup) are the compiled
# core's; the rest goes through ctypes.
_create = _capi.evx_notifier_create
_destroy = _capi.evx_notifier_destroy
_get_fd = _capi.evx_notifier_get_fd
_watch = _core.notifier_watch
_watch_cb_status = _capi.evx_notifier_watch_callback_status
_read = _core.notifier_read
_read_checked = _core.notifier_read_checked
_watch_fence = _capi.evx_notifier_watch_fence
_counts = _capi.evx_notifier_get_counts
_c_void_p = _ct.c_void_p
_byref = _ct.byref


def _new_notifier():
    h = _c_void_p()
    st = _create(None, _byref(h))
    if st:
        raise _error(st)
    return h


def _notifier_with_fd():
    """A new C notifier and its descriptor; nothing is left on failure."""
    h = _new_notifier()
    fd = _ct.c_int()
    st = _get_fd(h, _byref(fd))
    if st:
        err = _error(st)
        _destroy(h)
        raise err
    return h, fd.value


class _LoopNotifier:
    """One C notifier serving one event loop."""

    __slots__ = ("h", "fd", "futures", "tokens", "loop_ref", "fence_h", "__weakref__")

    def __init__(self, loop):
        self.h, self.fd = _notifier_with_fd()
        self.futures = {}
        self.tokens = _itertools.count(1)
        self.loop_ref = _weakref.ref(loop)
        self.fence_h = None
        loop.add_reader(self.fd, self._on_readable)
        # Destroys the C notifier when the loop goes away; holds no
        # reference to the loop or to self.
        # Not at interpreter exit: it could wait there for work that never
        # completes.
        _weakref.finalize(loop, _finish, self.h).atexit = False

    def watch(self, loop, event, fn):
        token = next(self.tokens)
        _watch(self.h, event, token, "evx.aio." + fn)
        fut = loop.create_future()
        self.futures[token] = fut
        return fut

    def watch_fence(self, loop, handle, value):
        # Fence watches go to a second notifier of the loop: a value may
        # never come, and destroying a notifier waits for its pending
        # watches, so this one is destroyed only if none is pending when
        # the loop goes (else it is left to the process).
        if self.fence_h is None:
            h, fd = _notifier_with_fd()
            self.fence_h = h
            loop.add_reader(fd, self._on_readable_fence)
            _weakref.finalize(loop, _finish_if_idle, h).atexit = False
        token = next(self.tokens)
        st = _watch_fence(self.fence_h, handle, value, token)
        if st:
            raise _error(st, "evx.aio.wait_fence")
        fut = loop.create_future()
        self.futures[token] = fut
        return fut

    def _on_readable(self):
        self._drain(self.h, True)

    def _on_readable_fence(self):
        self._drain(self.fence_h, False)

    def _drain(self, h, checked):
        # checked (event watches): a host function that failed before a
        # watched event fails that event's future, with the CudaError
        # chained to the function's exception; the read stops after it.
        futures = self.futures
        while True:
            err = None
            try:
                if checked:
                    tokens, err = _read_checked(h, READ_BATCH)
                else:
                    tokens = _read(h, READ_BATCH)
            except Exception as e:
                loop = self.loop_ref()
                if loop is not None:
                    loop.call_exception_handler({
                        "message": "evx.aio: evx_notifier_read failed",
                        "exception": e})
                return
            n = len(tokens)
            if err is not None:
                fut = futures.pop(tokens.pop(), None)
                if fut is not None and not fut.done():  # done: cancelled, lost with it
                    fut.set_exception(err)
            for token in tokens:
                fut = futures.pop(token, None)
                if fut is not None and not fut.done():  # done: cancelled
                    fut.set_result(None)
            if n < READ_BATCH and err is None:
                return


def _finish(h):
    # The loop is gone (its selector with it); pending watches are waited
    # for by the C call, which releases the GIL while it waits.
    try:
        _destroy(h)
    except Exception:
        pass


def _finish_if_idle(h):
    # A fence notifier: destroyed only when no watch is pending (a fence
    # value may never come, and the destroy would wait for it).
    try:
        pending = _ct.c_uint64()
        if _counts(h, _byref(pending), None) == 0 and pending.value == 0:
            _destroy(h)
    except Exception:
        pass


_notifiers: "_weakref.WeakKeyDictionary[_asyncio.AbstractEventLoop, _LoopNotifier]" = \
    _weakref.WeakKeyDictionary()


def _loop_notifier(loop):
    n = _notifiers.get(loop)
    if n is None:
        n = _notifiers[loop] = _LoopNotifier(loop)
    return n


def _running_loop(fn):
    try:
        return _asyncio.get_running_loop()
    except RuntimeError:
        raise RuntimeError("evx.aio.%s() needs a running event loop: call it "
                           "from a coroutine (or use evx.aio.future() from "
                           "threads)" % fn) from None


def _check_event(fn, event):
    if not isinstance(event, Event):
        raise TypeError("evx.aio.%s() needs an evx.Event, not %s"
                        % (fn, type(event).__name__))


def wait(event):
    """An ``asyncio.Future`` that completes (with None) once the work the
    event's last record marks now has completed: ``await evx.aio.wait(ev)``.

    A never-recorded event completes at once. Needs a running loop.
    Raises CudaError for a closed event (EVX_ERROR_INVALID_HANDLE).

    A host function launched with ``Stream.launch_host_func`` that raised
    before the event's last record (on the same evx stream) and whose
    failure no other call reported yet fails the future with
    :class:`evx.CudaError`, its ``__cause__`` the function's exception
    (evx_notifier_read_checked)."""
    _check_event("wait", event)
    loop = _running_loop("wait")
    return _loop_notifier(loop).watch(loop, event, "wait")


def wait_fence(fence, value):
    """An ``asyncio.Future`` that completes (with None) once the fence's
    counter is at least ``value``: ``await evx.aio.wait_fence(f, 7)`` (or
    ``await f.wait_async(7)``). A value reached already completes at once.
    Needs a running loop.

    Cancelling the awaiting task is safe: the watch stays in the C notifier
    until the value is reached, and its token is then dropped. A watch of a
    value that never comes keeps its notifier (and one internal stream)
    for the life of the process."""
    from ._fence import Fence, _value
    if not isinstance(fence, Fence):
        raise TypeError("evx.aio.wait_fence() needs an evx.Fence, not %s"
                        % type(fence).__name__)
    v = _value(value, "evx.aio.wait_fence")
    h = fence._live("evx.aio.wait_fence")
    loop = _running_loop("wait_fence")
    return _loop_notifier(loop).watch_fence(loop, h, v)


def synchronize(stream):
    """An ``asyncio.Future`` that completes once all work queued on the
    stream so far has completed: ``await evx.aio.synchronize(s)``."""
    if not isinstance(stream, Stream):
        raise TypeError("evx.aio.synchronize() needs an evx.Stream, not %s"
                        % type(stream).__name__)
    loop = _running_loop("synchronize")
    ev = stream.device.create_event(timing=False)
    try:
        ev.record(stream)
        return _loop_notifier(loop).watch(loop, ev, "synchronize")
    finally:
        ev.close()  # allowed: the watch keeps what it captured


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
            _cf_notifier = _new_notifier()
    fut = _cf.Future()
    key = _hostfn.submit(lambda status: _complete(fut, status))
    st = _watch_cb_status(_cf_notifier, event.handle, _hostfn.notify_status_trampoline, key)
    if st:
        _hostfn.withdraw(key)
        raise _error(st, "evx.aio.future")
    return fut
