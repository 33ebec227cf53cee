# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Python functions that the driver calls on its own thread: the C
callbacks that :meth:`evx.Stream.launch_host_func` (``status_trampoline``,
an ``evx_host_fn_status_t``: an exception becomes a failure that a later
wait reports) and :func:`evx.aio.future` (``trampoline``, an
``evx_host_fn_t``) hand to the library, the table of Python callables still
to run, which the interpreter waits for at exit (:data:`EXIT_WAIT_S`), and
the exceptions raised by host functions that no wait has reported yet
(``failed``; see :func:`evx._errors.error`).
"""

import collections
import itertools
import sys
import threading
import time
import traceback
from typing import Callable, Dict

from . import _capi

__all__ = ["EXIT_WAIT_S", "MAX_FAILED", "submit", "withdraw", "trampoline",
           "status_trampoline", "pending", "failed", "take_failed",
           "wait_at_exit"]

#: Exceptions kept for failures not yet reported, as the library keeps at
#: most 4096 failures (evx_stream_launch_host_func_status): the oldest go.
MAX_FAILED = 4096

#: key -> the exception its host function raised, until a wait reports it.
failed: "collections.OrderedDict[int, BaseException]" = collections.OrderedDict()
_failed_lock = threading.Lock()

#: Seconds the interpreter waits at exit for host functions still queued
#: (they call into Python, which must still be alive when they run).
EXIT_WAIT_S = 10.0

#: key -> the callable the trampoline runs for it, once.
pending: Dict[int, Callable[[], object]] = {}
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
        fn = pending.pop(user_data, None)
        if fn is not None:
            fn()
        return 0
    except BaseException as exc:  # pylint: disable=broad-except
        try:
            with _failed_lock:
                failed[user_data] = exc
                while len(failed) > MAX_FAILED:
                    failed.popitem(last=False)
            # A CudaError raised by the function keeps its own status.
            from ._errors import CudaError
            status = int(exc.status) if isinstance(exc, CudaError) else 0
            return status if status > 0 else _capi.EVX_ERROR_UNKNOWN
        except BaseException:
            return _capi.EVX_ERROR_UNKNOWN


#: The C callback of host functions whose exceptions surface; its user data
#: is a key of ``pending``.
status_trampoline = _capi.evx_host_fn_status_t(_status_entry)


def take_failed(key):
    """The exception of the host function with this key, forgotten; None if
    it is not kept."""
    with _failed_lock:
        return failed.pop(key, None)


def submit(fn):
    """Keeps ``fn`` until the trampoline runs it; returns its key, the user
    data to pass with :data:`trampoline`."""
    key = next(_keys)
    pending[key] = fn
    return key


def withdraw(key):
    """Forgets a key whose call the library refused."""
    pending.pop(key, None)


def wait_at_exit(wait_s=None, _pending=pending, _sleep=time.sleep, _now=time.monotonic):
    """Waits (at most ``wait_s``, default :data:`EXIT_WAIT_S`) for the host
    functions still queued; never raises."""
    try:
        deadline = _now() + (EXIT_WAIT_S if wait_s is None else wait_s)
        while _pending and _now() < deadline:
            _sleep(0.001)
    except Exception:
        pass
