# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Python functions that the driver calls on its own thread: the C
callbacks that :meth:`evx.Stream.launch_host_func` (``status_trampoline``,
an ``evx_host_fn_status_t``: an exception becomes a failure that a later
wait reports; ``release_trampoline``, called once the library no longer
needs the function: after its run, or when the CUDA graph it was captured
into is destroyed), ``trampoline`` (an ``evx_host_fn_t``, for
``errors=False``) and :func:`evx.aio.future` (``notify_status_trampoline``)
hand to the library, the table of Python callables still to run, which the
interpreter waits for at exit (:data:`EXIT_WAIT_S`; not those held by a
graph, ``in_graph``), and the exceptions raised by host functions that no
wait has reported yet (``failed``; see :func:`evx._errors.error`).
"""

import collections
import itertools
import sys
import threading
import time
import traceback
from typing import Callable, Dict, Set, Tuple

from . import _capi
from ._cudaerror import CudaError

__all__ = ["EXIT_WAIT_S", "MAX_FAILED", "submit", "withdraw", "trampoline",
           "status_trampoline", "release_trampoline", "notify_status_trampoline",
           "pending", "in_graph", "failed", "take_failed", "wait_at_exit"]

#: Exceptions kept for failures not yet reported, as the library keeps at
#: most 4096 failures (evx_stream_launch_host_func_status): the oldest go.
MAX_FAILED = 4096

#: (key, the exception its host function raised), oldest first, until a
#: wait reports it. A function captured into a graph may fail at several
#: launches: one entry each.
failed: "collections.deque[Tuple[int, BaseException]]" = collections.deque(maxlen=MAX_FAILED)
_failed_lock = threading.Lock()

#: Seconds the interpreter waits at exit for host functions still queued
#: (they call into Python, which must still be alive when they run).
EXIT_WAIT_S = 10.0

#: key -> the callable the trampoline runs for it: once, or at every launch
#: of the graph it was captured into, until the library releases it.
pending: Dict[int, Callable[[], object]] = {}
#: The keys of ``pending`` captured into a graph: the graph's destroy
#: releases them, and the interpreter does not wait for them at exit.
in_graph: Set[int] = set()
_keys = itertools.count(1)


def _entry(user_data):
    # Runs on the driver's thread. It must never let an exception escape
    # into ctypes' callback machinery: report it and return.
    try:
        fn = pending.pop(user_data, None)
        if fn is not None:
            fn()
    except BaseException:
        try:
            sys.stderr.write("evx: exception in a host function queued by "
                             "Stream.launch_host_func (ignored):\n")
            traceback.print_exc()
        except BaseException:
            pass


#: The C callback; its user data is a key of ``pending``.
trampoline = _capi.evx_host_fn_t(_entry)


def _status_entry(user_data):
    # Runs on the driver's thread; returns the status the library records.
    # An exception is kept for the wait that reports it, and never crosses
    # into ctypes' callback machinery.
    try:
        # Kept: a graph runs it at each launch; release_trampoline forgets it.
        fn = pending.get(user_data)
        if fn is not None:
            fn()
        return 0
    except BaseException as exc:  # pylint: disable=broad-except
        try:
            with _failed_lock:
                failed.append((user_data, exc))  # the oldest goes beyond MAX_FAILED
            # A CudaError raised by the function keeps its own status.
            status = int(exc.status) if isinstance(exc, CudaError) else 0
            return status if status > 0 else _capi.EVX_ERROR_UNKNOWN
        except BaseException:
            return _capi.EVX_ERROR_UNKNOWN


#: The C callback of host functions whose exceptions surface; its user data
#: is a key of ``pending``.
status_trampoline = _capi.evx_host_fn_status_t(_status_entry)


def _release_entry(user_data):
    # Runs on a driver thread (or in the driver call that destroyed the
    # graph): the library no longer calls the function.
    try:
        pending.pop(user_data, None)
        in_graph.discard(user_data)
    except BaseException:  # pylint: disable=broad-except
        pass


#: The options' release of host functions whose exceptions surface.
release_trampoline = _capi.evx_host_fn_t(_release_entry)


def _notify_status_entry(status, user_data):
    # An evx_notify_status_fn_t: runs the callable with the status, once.
    try:
        fn = pending.pop(user_data, None)
        if fn is not None:
            fn(status)
    except BaseException:
        try:
            sys.stderr.write("evx: exception in a notifier callback (ignored):\n")
            traceback.print_exc()
        except BaseException:
            pass


#: The C callback of a status watch (evx_notifier_watch_callback_status);
#: its user data is a key of ``pending``, whose callable takes the status.
notify_status_trampoline = _capi.evx_notify_status_fn_t(_notify_status_entry)


def take_failed(key):
    """The oldest exception of the host function with this key, forgotten;
    None if none is kept."""
    with _failed_lock:
        for i, (k, exc) in enumerate(failed):
            if k == key:
                del failed[i]
                return exc
    return None


def submit(fn):
    """Keeps ``fn`` until the trampoline runs it; returns its key, the user
    data to pass with :data:`trampoline`."""
    key = next(_keys)
    pending[key] = fn
    return key


def withdraw(key):
    """Forgets a key whose call the library refused."""
    pending.pop(key, None)
    in_graph.discard(key)


def wait_at_exit(wait_s=None, _pending=pending, _sleep=time.sleep, _now=time.monotonic,
                 _in_graph=in_graph):
    """Waits (at most ``wait_s``, default :data:`EXIT_WAIT_S`) for the host
    functions still queued, not those a graph holds; never raises."""
    try:
        deadline = _now() + (EXIT_WAIT_S if wait_s is None else wait_s)
        while len(_pending) > len(_in_graph) and _now() < deadline:
            _sleep(0.001)
    except Exception:
        pass
