# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Python functions that the driver calls on its own thread: the one C
callback (a ctypes ``evx_host_fn_t``) that both
:meth:`evx.Stream.launch_host_func` and :func:`evx.aio.future` hand to the
library, and the table of Python callables still to run, which the
interpreter waits for at exit (:data:`EXIT_WAIT_S`).
"""

import itertools
import sys
import time
import traceback
from typing import Callable, Dict

from . import _capi

__all__ = ["EXIT_WAIT_S", "submit", "withdraw", "trampoline", "pending",
           "wait_at_exit"]

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
