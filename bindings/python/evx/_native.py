# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Borrowing a stream made elsewhere: the CUDA stream address behind another
framework's object, the device it is on, and the evx handle that borrows it
(``evx_stream_wrap_external``).

Used by :meth:`evx.Stream.wrap` and by the compiled core's ``timed`` for a
stream that is not an evx one; it returns raw handles and makes no package
object.
"""

import ctypes
import operator

from . import _args, _capi
from ._errors import error
from ._loader import capi

__all__ = ["address", "device_hint", "wrap"]

_DEFAULT_STREAMS = (0, _capi.EVX_STREAM_LEGACY, _capi.EVX_STREAM_PER_THREAD)
_ADDRESS_LIMIT = 1 << (8 * ctypes.sizeof(ctypes.c_void_p))


def address(obj, op="Stream.wrap"):
    """The CUstream address behind an object Stream.wrap accepts."""
    if isinstance(obj, bool):
        raise TypeError("%s: a bool is not a stream" % op)
    if isinstance(obj, int):
        addr = obj
    elif isinstance(obj, ctypes.c_void_p):
        addr = obj.value or 0
    elif hasattr(obj, "__cuda_stream__"):
        proto = obj.__cuda_stream__()
        if not (isinstance(proto, tuple) and len(proto) == 2):
            raise TypeError("%s: %s.__cuda_stream__() returned %r, "
                            "not a (version, address) pair"
                            % (op, type(obj).__name__, proto))
        if proto[0] != 0:
            raise ValueError("%s: %s.__cuda_stream__() speaks "
                             "protocol version %r; evx knows version 0"
                             % (op, type(obj).__name__, proto[0]))
        addr = operator.index(proto[1])
    elif hasattr(obj, "cuda_stream"):          # PyTorch
        addr = operator.index(obj.cuda_stream)
    elif hasattr(obj, "ptr"):                  # CuPy
        addr = operator.index(obj.ptr)
    else:
        try:
            addr = operator.index(obj)
        except TypeError:
            raise TypeError(
                "%s: cannot read a CUDA stream from %s: pass an int "
                "address, a ctypes.c_void_p, an object with __cuda_stream__, "
                "a PyTorch stream (.cuda_stream) or a CuPy stream (.ptr)"
                % (op, type(obj).__name__)) from None
    if not 0 <= addr < _ADDRESS_LIMIT:
        raise ValueError("%s: %d is not a stream address" % (op, addr))
    return addr


def device_hint(obj):
    """The device a framework's stream object says it is on, or None:
    PyTorch (.device.index), CuPy (.device_id; -1 for its null stream,
    which names no device), cuda.core and other ``__cuda_stream__``
    producers (.device.device_id). Used only for default streams (0, 1, 2),
    which do not name a device."""
    for get in (lambda o: o.device.index, lambda o: o.device_id,
                lambda o: o.device.device_id):
        try:
            d = get(obj)
        except Exception:
            continue
        if isinstance(d, int) and not isinstance(d, bool) and d >= 0:
            return d
    return None


def wrap(obj, device, op="Stream.wrap"):
    """Borrows the stream behind ``obj`` on ``device`` (an ordinal, an
    evx.Device, or None to read it from the stream or the object); returns
    ``(the evx stream handle as a c_void_p, the device ordinal, the
    address)``. The caller owns the handle."""
    addr = address(obj, op)
    if device is not None:
        dev = _args.ordinal(device, op)
    elif addr not in _DEFAULT_STREAMS:
        dev = _capi.EVX_DEVICE_FROM_STREAM
    else:
        # A default stream names no device: the object's, else the device
        # of the calling thread's current context, as CUDA's runtime (so
        # CuPy and PyTorch) takes it; refused when neither names one.
        hint = device_hint(obj)
        dev = (_capi.EVX_DEVICE_CURRENT if hint is None else _args.integer(
            hint, op, "the device %s names" % type(obj).__name__, _args.ORDINAL))
    h = ctypes.c_void_p()
    st = capi.evx_stream_wrap_external(dev, addr, ctypes.byref(h))
    if st:
        raise error(st, op)
    if dev in (_capi.EVX_DEVICE_FROM_STREAM, _capi.EVX_DEVICE_CURRENT):
        d = ctypes.c_int()
        st = capi.evx_stream_get_device(h, ctypes.byref(d))
        if st:
            err = error(st, op)
            capi.evx_stream_destroy(h)
            raise err
        dev = d.value
    return h, dev, addr
