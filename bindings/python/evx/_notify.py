# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""The machinery of evx.aio below the package's classes: one C notifier per
running event loop (its descriptor registered with ``loop.add_reader``),
watches of events, of fence values and of streams made through the compiled
core, and the futures the reader completes. It knows handles and duck-typed
objects, never the classes, so Event.wait_async, Stream.synchronize_async and
Fence.wait_async reach it without importing evx.aio (which sits above them
and checks the types of what its public calls are given).
"""

import asyncio as _asyncio
import ctypes as _ct
import itertools as _itertools
import weakref as _weakref

from . import _core
from ._errors import error as _error
from ._loader import capi

#: Tokens taken from the C notifier per ``evx_notifier_read`` call (at most
#: ``evx._core.NOTIFIER_READ_MAX``).
READ_BATCH = 256

# The hot calls (a watch per await, of an event or a fence value, and a read
# per wakeup) are the compiled core's; the rest goes through ctypes.
_create = capi.evx_notifier_create
_destroy = capi.evx_notifier_destroy
_get_fd = capi.evx_notifier_get_fd
_watch = _core.notifier_watch
_read = _core.notifier_read
_read_checked = _core.notifier_read_checked
_watch_fence = _core.notifier_watch_fence
_counts = capi.evx_notifier_get_counts
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
        _watch_fence(self.fence_h, handle, value, token)
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




def wait_event(event, fn):
    """The future of ``evx.aio.<fn>(event)`` (the core checks the type)."""
    loop = _running_loop(fn)
    return _loop_notifier(loop).watch(loop, event, fn)


def wait_fence_handle(handle, value):
    """The future of ``evx.aio.wait_fence`` for a checked fence handle and
    value."""
    loop = _running_loop("wait_fence")
    return _loop_notifier(loop).watch_fence(loop, handle, value)


def synchronize(stream):
    """The future of ``evx.aio.synchronize(stream)``: a watch of a new
    untimed event recorded on it."""
    loop = _running_loop("synchronize")
    ev = stream.device.create_event(timing=False)
    try:
        ev.record(stream)
        return _loop_notifier(loop).watch(loop, ev, "synchronize")
    finally:
        ev.close()  # allowed: the watch keeps what it captured
