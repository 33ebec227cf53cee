# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Borrowing a stream or an event made elsewhere: the CUDA stream or event
address behind another framework's object, the device it is on, and the evx
handle that borrows it (``evx_stream_wrap_external``,
``evx_event_wrap_external_with_release``).

Used by :meth:`evx.Stream.wrap`, :meth:`evx.Event.wrap`, the compiled core's
``timed`` and ``Stream.wait`` for objects that are not evx ones, and
:func:`evx.aio.wait`; it returns raw handles and makes no package object.
"""

import ctypes
import itertools
import operator
from typing import Dict

from . import _args, _capi
from ._errors import error
from ._loader import capi

__all__ = ["address", "device_hint", "wrap", "event_source", "wrap_event", "held"]

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
        dev = _read_device(h, capi.evx_stream_get_device, capi.evx_stream_destroy, op)
    return h, dev, addr


def _read_device(h, get_device, destroy, op):
    """The device ordinal the library resolved for a new borrow ``h``; on
    failure, ``h`` is destroyed and the error raised."""
    d = ctypes.c_int()
    st = get_device(h, ctypes.byref(d))
    if st:
        err = error(st, op)             # before the destroy sets its own
        destroy(h)
        raise err
    return d.value


# --------------------------------------------------------------------------
# Events. The driver cannot tell an event's device, so it comes from the
# object (or the caller); the object is kept referenced until the borrow
# ends: the library's release callback drops it when the evx event is
# destroyed (closed or collected), after every racing call has returned.

#: key -> the object an evx event borrows from, until its release.
held: Dict[int, object] = {}
_held_keys = itertools.count(1)


def _drop(user_data):
    # evx_release_fn_t: runs inside evx_event_destroy on the destroying
    # thread; never lets an exception into ctypes' callback machinery.
    try:
        held.pop(user_data, None)
    except BaseException:  # pylint: disable=broad-except
        pass


_release = _capi.evx_release_fn_t(_drop)

_EVENT_FORMS = ("an object with __cuda_event__, a torch.cuda.Event (.cuda_event), "
                "a CuPy Event (.ptr), a cuda.core Event (.handle), or an int "
                "address with device=")


def _stream_given(obj):
    """Whether obj is a stream (of evx, PyTorch, CuPy, cuda.core), not an
    event: CuPy's streams have .ptr as its events do, cuda.core's .handle."""
    return (hasattr(obj, "__cuda_stream__") or hasattr(obj, "cuda_stream")
            or hasattr(obj, "wait_event"))


def _protocol_event(obj, op):
    """(address, device ordinal) from ``obj.__cuda_event__()``, version 0
    (docs/protocols.md)."""
    name = type(obj).__name__
    proto = obj.__cuda_event__()
    if not (isinstance(proto, tuple) and len(proto) == 3):
        raise TypeError("%s: %s.__cuda_event__() returned %r, not a (version, "
                        "handle, device_ordinal) tuple" % (op, name, proto))
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in proto):
        raise TypeError("%s: %s.__cuda_event__() returned %r: its items must be ints"
                        % (op, name, proto))
    if proto[0] != 0:
        raise ValueError("%s: %s.__cuda_event__() speaks protocol version %r; evx "
                         "knows version 0" % (op, name, proto[0]))
    if proto[2] < 0:
        raise ValueError("%s: %s.__cuda_event__() names device %d, which is no "
                         "device ordinal" % (op, name, proto[2]))
    return proto[1], proto[2]


def _object_device(obj):
    """The device a framework's event object names, or None: PyTorch
    (.device.index, once it has a CUDA event), cuda.core (.device.device_id),
    CuPy (.device.id, where it has one)."""
    for get in (lambda o: o.device.index, lambda o: o.device.device_id,
                lambda o: o.device.id):
        try:
            d = get(obj)
        except Exception:  # pylint: disable=broad-except
            continue
        if isinstance(d, int) and not isinstance(d, bool) and d >= 0:
            return d
    return None


def _framework_event(obj, op):
    """(address, the device the object names or None) of a framework's
    event object; None when obj is none of them."""
    name = type(obj).__name__
    if hasattr(obj, "cuda_event"):                       # PyTorch
        addr = operator.index(obj.cuda_event)
        if addr == 0:
            raise ValueError(
                "%s: the %s has no CUDA event yet (cuda_event is 0): PyTorch makes "
                "it at the first record; record it first (event.record())" % (op, name))
        return addr, _object_device(obj)
    if hasattr(obj, "handle") and hasattr(obj, "device"):  # cuda.core
        try:
            addr = int(obj.handle)
        except (TypeError, ValueError):
            raise TypeError("%s: %s.handle is %r, not a CUevent address"
                            % (op, name, obj.handle)) from None
        return addr, _object_device(obj)
    if hasattr(obj, "ptr"):                              # CuPy
        return operator.index(obj.ptr), _object_device(obj)
    return None


def event_source(obj, device, op, fallback=None):
    """``(address, device)`` of the CUevent behind ``obj``, for ``op``:
    the device is an ordinal; where neither the object nor ``device`` names
    one, ``fallback`` (the device of the evx object a call pairs it with),
    else EVX_DEVICE_CURRENT (the device of the calling thread's current
    context, as PyTorch and CuPy take theirs)."""
    if isinstance(obj, bool):
        raise TypeError("%s: a bool (%r) is not an event" % (op, obj))
    given = None if device is None else _args.ordinal(device, op)
    named = None
    if hasattr(obj, "__cuda_event__"):
        addr, named = _protocol_event(obj, op)
    elif _stream_given(obj):
        raise TypeError("%s: %s is a stream, not an event (borrow streams with "
                        "evx.Stream.wrap)" % (op, type(obj).__name__))
    elif getattr(type(obj), "__module__", None) == "evx":
        # evx's fences, timelines and pools have a .handle and a .device
        # too, which are no CUevent.
        raise TypeError("%s: an evx.%s is not an event" % (op, type(obj).__name__))
    else:
        found = _framework_event(obj, op)
        if found is not None:
            addr, named = found
        else:
            if isinstance(obj, ctypes.c_void_p):
                addr = obj.value or 0
            else:
                try:
                    addr = operator.index(obj)
                except TypeError:
                    raise TypeError("%s: cannot read a CUDA event from %s: pass %s"
                                    % (op, type(obj).__name__, _EVENT_FORMS)) from None
            if given is None:
                raise ValueError(
                    "%s: device= is needed with a raw event address (%#x): the driver "
                    "cannot tell an event's device" % (op, addr))
    if not 0 < addr < _ADDRESS_LIMIT:
        raise ValueError("%s: %d is not an event address (%s gave it)"
                         % (op, addr, type(obj).__name__))
    if given is not None and named is not None and given != named:
        raise ValueError("%s: device=%d was given, but the %s is of device %d"
                         % (op, given, type(obj).__name__, named))
    if given is not None:
        return addr, given
    if named is not None:
        return addr, named
    return addr, _capi.EVX_DEVICE_CURRENT if fallback is None else fallback


def wrap_event(obj, device, op="Event.wrap", fallback=None):
    """Borrows the event behind ``obj``; returns ``(the evx event handle as
    a c_void_p, the device ordinal)``. ``obj`` stays referenced until the
    handle is destroyed. The caller owns the handle. ``fallback``: see
    :func:`event_source`."""
    addr, dev = event_source(obj, device, op, fallback)
    key = next(_held_keys)
    held[key] = obj
    h = ctypes.c_void_p()
    st = capi.evx_event_wrap_external_with_release(dev, addr, _release, key,
                                                   ctypes.byref(h))
    if st:
        held.pop(key, None)             # a failed wrap never calls release
        raise error(st, op)
    if dev == _capi.EVX_DEVICE_CURRENT:
        dev = _read_device(h, capi.evx_event_get_device, capi.evx_event_destroy, op)
    return h, dev
