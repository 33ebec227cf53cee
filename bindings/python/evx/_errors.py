# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Errors: :class:`CudaError`, and how every module of the package (and the
compiled core, which imports :func:`error`) makes and raises it.

Every failing call raises CudaError, whose ``status`` is a
:class:`evx.Status` and whose ``message`` is the library's own
(``evx_last_error_message``), starting with the Python operation the caller
called (``"Stream.wait: ..."``).
"""

import ctypes

from ._capi import EVX_ERROR_INVALID_HANDLE, EVX_ERROR_NOT_READY
from . import _hostfn
from ._cudaerror import CudaError
from ._loader import capi

__all__ = ["CudaError", "error", "check", "live", "Owned"]

_last_message = capi.evx_last_error_message
_status_string = capi.evx_status_string
_last_host = capi.evx_last_error_host_func


def error(status, op=None, message=None):
    """The CudaError for a status just returned on this thread by a call
    made for the Python operation ``op`` (``"Stream.wait"``), which the
    message starts with; ``message``: what went wrong, when the layer found
    it before the library (else the library's own message)."""
    cause = None
    if message is None:
        if status == EVX_ERROR_NOT_READY:
            message = _status_string(status).decode("utf-8", "replace")
        else:
            message = _last_message().decode("utf-8", "replace")
            if not message:
                message = _status_string(status).decode("utf-8", "replace")
            cause = _host_failure()
    if op:
        message = "%s: %s" % (op, message)
    err = CudaError(status, message)
    if cause is not None:
        # As `raise err from cause`: the host function's own exception.
        err.__cause__ = cause
        err.__suppress_context__ = True
    return err


def _host_failure():
    """The exception of the Python host function whose failure the thread's
    last failed call reported, if it raised one (evx_last_error_host_func)."""
    if not _hostfn.failed:
        return None
    ud = ctypes.c_void_p()
    if _last_host(ctypes.byref(ud)) != 0 or not ud.value:
        return None
    return _hostfn.take_failed(ud.value)


def check(status, op):
    """Raises the CudaError for a failed status."""
    if status:
        raise error(status, op)


def live(obj, op, role):
    """The handle of an evx object, or CudaError(INVALID_HANDLE) naming op
    and saying the object is closed (or released to its pool)."""
    h = obj._h
    if h is None:
        raise error(EVX_ERROR_INVALID_HANDLE, op, "%s is %s" % (role, obj._gone))
    return h


class Owned:
    """What Timeline and EventPool share: one evx handle in ``_h``, closed by
    ``close()`` (a second close does nothing), ``closed``, the context
    manager, and a ``__del__`` that never raises, also at interpreter exit.
    ``_destroy`` is the C destroy function."""

    __slots__ = ()
    _destroy = None
    _gone = "closed"

    @property
    def closed(self):
        return self._h is None

    def close(self):
        h = self._h
        if h is not None:
            self._h = None
            check(self._destroy(h), type(self).__name__ + ".close")

    def __del__(self):
        try:
            h = self._h
            destroy = self._destroy
        except AttributeError:     # never initialized, or torn down at exit
            return
        if h is not None:
            self._h = None
            try:
                destroy(h)
            except Exception:
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
