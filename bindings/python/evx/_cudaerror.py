# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""The exception of every failing call, :class:`CudaError`, on its own so
that the host-function trampolines (evx._hostfn), which evx._errors builds
on, can tell it apart without importing evx._errors."""

from ._capi import Status
from ._loader import capi

__all__ = ["CudaError"]

_status_name = capi.evx_status_name


class CudaError(RuntimeError):
    """A call into evx failed.

    Attributes: ``status`` (:class:`Status`; a code this version does not
    name becomes a pseudo-member that still compares equal to the number),
    ``name`` (``"EVX_ERROR_INVALID_HANDLE"``, from ``evx_status_name``),
    ``message`` (what the library said went wrong; for
    ``EVX_ERROR_NOT_READY``, which the library treats as an answer and gives
    no message, the status description).
    """

    def __init__(self, status, message):
        status = Status(int(status))
        self.status = status
        self.name = _status_name(int(status)).decode("utf-8", "replace")
        self.message = message
        super().__init__("%s (%d): %s" % (self.name, int(status), message))

    def __reduce__(self):
        return (CudaError, (int(self.status), self.message))


# Pickles and reprs name the class where users find it.
CudaError.__module__ = "evx"
