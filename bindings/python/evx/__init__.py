# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""evx for Python: CUDA events and streams through the evx C library.

Names follow cuda.core where the concept is the same::

    import evx
    dev = evx.Device(0)
    s = dev.create_stream()
    start = s.record()            # a new timing event, recorded on s
    ...                           # GPU work on s
    end = s.record()
    end.sync()
    print(end - start, "ms")

    with evx.timed(s) as t:       # the C timer (evx_timer_*)
        ...
    print(t.elapsed_ms)           # synchronizes on first read

Streams of other frameworks are borrowed with :meth:`Stream.wrap` (PyTorch,
CuPy, cuda.core, anything with ``__cuda_stream__``, a raw address), and evx
streams are handed to them through :attr:`Stream.native` or
``__cuda_stream__``.

Every failing call raises :class:`CudaError`, whose ``status`` is a
:class:`Status` (generated from ``include/evx/status.h``) and whose
``message`` is the library's own (``evx_last_error_message``).

The raw C API, generated from the headers, is :mod:`evx._capi`; its functions
bound to the loaded library are ``evx.capi``.
"""

import atexit as _atexit
import collections as _collections
import ctypes as _ct
import itertools as _itertools
import operator as _operator
import os as _os
import sys as _sys
import time as _time
import traceback as _traceback

from . import _args, _capi
from ._capi import (DeviceSpecial, EventFlags, EventRecordFlags,  # noqa: F401
                    EventWaitFlags, Status, StreamFlags)
from ._loader import LibraryNotFoundError, load_library

__all__ = [
    "CudaError", "Device", "Event", "EventPool", "LibraryNotFoundError",
    "PoolStats", "Status", "EventFlags", "StreamFlags", "Stream", "Timeline",
    "timed", "device_count", "driver_version", "driver_path", "is_emulation",
    "library_version", "library_path", "capi", "implementation",
]

#: The version of the headers these bindings were generated from.
__version__ = "%d.%d.%d" % (_capi.EVX_VERSION_MAJOR, _capi.EVX_VERSION_MINOR,
                            _capi.EVX_VERSION_PATCH)

# The compiled core and the libevx it linked (see _loader.py).
_lib, library_path = load_library()
from . import _core  # noqa: E402 - imported by load_library, with its library

#: Every C function of the loaded library (argtypes and restype set).
capi = _capi.Functions(_lib)
#: The core the hot paths run on: always "cython" (evx._core, compiled from
#: evx/_core.pyx); kept so that programs that print it keep working.
implementation = "cython"

_c_void_p = _ct.c_void_p
_c_int = _ct.c_int
_c_uint = _ct.c_uint
_c_uint32 = _ct.c_uint32
_c_float = _ct.c_float
_byref = _ct.byref

# Not hot, or taking arguments the layer does not make itself: fully typed.
_st_create = capi.evx_device_create_stream
_st_wrap = capi.evx_stream_wrap_external
_st_launch = capi.evx_stream_launch_host_func
_tl_destroy = capi.evx_timeline_destroy
_pool_destroy = capi.evx_event_pool_destroy
_pool_acquire = capi.evx_event_pool_acquire
_pool_release = capi.evx_event_pool_release
_last_message = capi.evx_last_error_message
_status_name = capi.evx_status_name
_status_string = capi.evx_status_string

_NOT_READY = _capi.EVX_ERROR_NOT_READY
_INVALID_HANDLE = _capi.EVX_ERROR_INVALID_HANDLE
_DISABLE_TIMING = _capi.EVX_EVENT_DISABLE_TIMING
_FROM_STREAM = _capi.EVX_DEVICE_FROM_STREAM


def _handle_int(h):
    """A handle (an int, a c_void_p or None) as an int, 0 for None."""
    if h is None:
        return 0
    if isinstance(h, int):
        return h
    return h.value or 0


# --------------------------------------------------------------------------
# Errors


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


def _error(status, op=None, message=None):
    """The CudaError for a status just returned on this thread by a call
    made for the Python operation ``op`` (``"Stream.wait"``), which the
    message starts with; ``message``: what went wrong, when the layer found
    it before the library (else the library's own message)."""
    if message is None:
        if status == _NOT_READY:
            message = _status_string(status).decode("utf-8", "replace")
        else:
            message = _last_message().decode("utf-8", "replace")
            if not message:
                message = _status_string(status).decode("utf-8", "replace")
    if op:
        message = "%s: %s" % (op, message)
    return CudaError(status, message)


def _check(status, op):
    if status:
        raise _error(status, op)


def _live(obj, op, role):
    """The handle of an evx object, or CudaError(INVALID_HANDLE) naming op
    and saying the object is closed (or released to its pool)."""
    h = obj._h
    if h is None:
        raise _error(_INVALID_HANDLE, op, "%s is %s" % (role, obj._gone))
    return h


class _Owned:
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
            _check(self._destroy(h), type(self).__name__ + ".close")

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


# --------------------------------------------------------------------------
# Driver and devices


def device_count():
    """The number of devices the driver sees (evx_device_count)."""
    n = _c_int()
    _check(capi.evx_device_count(_byref(n)), "evx.device_count")
    return n.value


def driver_version():
    """The loaded driver's version, as cuDriverGetVersion gives it."""
    v = _c_int()
    _check(capi.evx_driver_get_version(_byref(v)), "evx.driver_version")
    return v.value


def driver_path():
    """The path of the driver library evx opened ("libcuda.so.1" for the real
    driver; the host emulation's path with EVX_DRIVER=host)."""
    p = _ct.c_char_p()
    _check(capi.evx_driver_get_path(_byref(p)), "evx.driver_path")
    return p.value.decode("utf-8", "replace")


def is_emulation():
    """Whether the loaded driver is evx's host emulation."""
    v = _c_int()
    _check(capi.evx_driver_is_emulation(_byref(v)), "evx.is_emulation")
    return bool(v.value)


def library_version():
    """The version of the loaded libevx, as "MAJOR.MINOR.PATCH"."""
    return capi.evx_version_string().decode()


def _ordinal(device, op):
    """A device ordinal from a Device or an int (not a bool), for op."""
    if isinstance(device, Device):
        return device._id
    if isinstance(device, bool) or not hasattr(type(device), "__index__"):
        raise TypeError("%s: a device must be an evx.Device or an int, not %s"
                        % (op, type(device).__name__))
    return _args.integer(device, op, "device", _args.ORDINAL)


_devices = {}


def _device(ordinal):
    d = _devices.get(ordinal)
    if d is None:
        d = _devices.setdefault(ordinal, _core.new_device(Device, ordinal))
    return d


class Device(_core.DeviceCore):
    """A device, by ordinal. ``Device(n)`` checks that the driver sees it;
    two Device objects of one ordinal are the same object.

    ``create_event`` comes from the compiled core, evx._core.
    """

    __slots__ = ()

    def __new__(cls, device_id=0):
        if isinstance(device_id, Device):
            return device_id
        if isinstance(device_id, bool) or not hasattr(type(device_id), "__index__"):
            raise TypeError("evx.Device: a device must be an evx.Device or an "
                            "int, not %s" % type(device_id).__name__)
        ordinal = _operator.index(device_id)
        d = _devices.get(ordinal)
        if d is not None:
            return d
        count = device_count()
        if not 0 <= ordinal < count:
            raise CudaError(Status.ERROR_INVALID_DEVICE,
                            "evx.Device(%d): the driver sees %d device(s), "
                            "ordinals 0 to %d" % (ordinal, count, count - 1))
        return _device(ordinal)

    @property
    def device_id(self):
        """The ordinal (as cuda.core's ``Device.device_id``)."""
        return self._id

    ordinal = device_id

    def __index__(self):
        return self._id

    def __int__(self):
        return self._id

    def __repr__(self):
        return "<evx.Device %d>" % self._id

    def __reduce__(self):
        return (Device, (self._id,))

    @property
    def stream_priority_range(self):
        """``(least, greatest)``: the priorities create_stream accepts; lower
        numbers are higher priority, so greatest <= least (0 and -5 on an
        H200)."""
        least, greatest = _c_int(), _c_int()
        _check(capi.evx_device_stream_priority_range(self._id, _byref(least),
                                                      _byref(greatest)),
               "Device.stream_priority_range")
        return (least.value, greatest.value)

    def create_stream(self, priority=None, non_blocking=True):
        """A new :class:`Stream` that evx owns.

        ``priority``: None or 0 for the default; lower numbers are higher
        priority, within :attr:`stream_priority_range` (out of range is
        refused, never clamped). ``non_blocking=False`` makes a stream that
        synchronizes with the legacy default stream.
        """
        prio = 0 if priority is None else _args.integer(
            priority, "Device.create_stream", "priority")
        flags = (_capi.EVX_STREAM_NON_BLOCKING
                 if _args.flag(non_blocking, "Device.create_stream", "non_blocking")
                 else _capi.EVX_STREAM_DEFAULT)
        h = _c_void_p()
        st = _st_create(self._id, flags, prio, _byref(h))
        if st:
            raise _error(st, "Device.create_stream")
        return _make_stream(h, self._id, None, True)

    def create_timeline(self, capacity):
        """A :class:`Timeline` of this device."""
        return Timeline._make(self._id, capacity, "Device.create_timeline")

    def create_event_pool(self, capacity, prewarm=0, timing=True, blocking_sync=False):
        """An :class:`EventPool` of this device."""
        return EventPool._make(self._id, capacity, prewarm, timing, blocking_sync,
                               "Device.create_event_pool")

    def trim(self):
        """Releases the idle driver events evx keeps for reuse on this device."""
        _check(capi.evx_device_trim(self._id), "Device.trim")


# --------------------------------------------------------------------------
# Events


class Event(_core.EventCore):
    """An evx event: made by :meth:`Device.create_event`,
    :meth:`Stream.record` or :meth:`EventPool.acquire`; recorded on any
    stream of its device, again and again.

    ``end - start`` is the time between two recorded, completed events in
    milliseconds (it raises CudaError with EVX_ERROR_NOT_READY while either
    is pending). Closing (or the garbage collector) destroys the evx event;
    an event from a pool goes back to its pool.

    The hot methods (``record``, ``sync``, ``is_done``, ``-``, ``close``)
    come from the compiled core, evx._core.
    """

    __slots__ = ()

    def __new__(cls, *args, **kwargs):
        raise TypeError("evx.Event is made by Device.create_event(), "
                        "Stream.record() or EventPool.acquire()")

    @property
    def flags(self):
        """The :class:`EventFlags` the event was created with."""
        f = _c_uint()
        _check(capi.evx_event_get_flags(_live(self, "Event.flags", "the event"),
                                        _byref(f)), "Event.flags")
        return EventFlags(f.value)

    @property
    def is_timing_disabled(self):
        return bool(self.flags & EventFlags.DISABLE_TIMING)

    @property
    def device(self):
        """The :class:`Device` the event belongs to."""
        return _device(self._dev)

    @property
    def handle(self):
        """The evx handle as an int (0 once closed)."""
        return _handle_int(self._h)

    @property
    def native(self):
        """The driver's ``CUevent`` address as an int. evx keeps owning it:
        valid while this event is open, never to be destroyed by the caller."""
        p = _c_void_p()
        _check(capi.evx_event_get_native(_live(self, "Event.native", "the event"),
                                         _byref(p)), "Event.native")
        return p.value or 0

    def wait_async(self):
        """``await event.wait_async()``: an asyncio Future for the work the
        event's last record marks now (see :func:`evx.aio.wait`)."""
        from . import aio
        return aio.wait(self)

    def __await__(self):
        """``await event``: the same as ``await event.wait_async()``. The
        watch is made when the ``await`` starts, so it waits for the record
        the event has at that moment."""
        return self.wait_async().__await__()

    def __repr__(self):
        if self._h is None:
            return "<evx.Event closed>"
        return "<evx.Event 0x%x device %d>" % (self.handle, self._dev)


# --------------------------------------------------------------------------
# Streams

_host_pending = {}
_host_keys = _itertools.count(1)


def _host_entry(user_data):
    # Runs on the driver's thread. It must never let an exception escape
    # into ctypes' callback machinery: report it and return.
    try:
        fn = _host_pending.pop(user_data, None)
        if fn is not None:
            fn()
    except BaseException:
        try:
            _sys.stderr.write("evx: exception in a host function queued by "
                              "Stream.launch_host_func (ignored):\n")
            _traceback.print_exc()
        except BaseException:
            pass


_host_trampoline = _capi.evx_host_fn_t(_host_entry)

def _stream_address(obj):
    """The CUstream address behind an object Stream.wrap accepts."""
    if isinstance(obj, bool):
        raise TypeError("Stream.wrap: a bool is not a stream")
    if isinstance(obj, int):
        addr = obj
    elif isinstance(obj, _c_void_p):
        addr = obj.value or 0
    elif hasattr(obj, "__cuda_stream__"):
        proto = obj.__cuda_stream__()
        if not (isinstance(proto, tuple) and len(proto) == 2):
            raise TypeError("Stream.wrap: %s.__cuda_stream__() returned %r, "
                            "not a (version, address) pair"
                            % (type(obj).__name__, proto))
        if proto[0] != 0:
            raise ValueError("Stream.wrap: %s.__cuda_stream__() speaks "
                             "protocol version %r; evx knows version 0"
                             % (type(obj).__name__, proto[0]))
        addr = _operator.index(proto[1])
    elif hasattr(obj, "cuda_stream"):          # PyTorch
        addr = _operator.index(obj.cuda_stream)
    elif hasattr(obj, "ptr"):                  # CuPy
        addr = _operator.index(obj.ptr)
    else:
        try:
            addr = _operator.index(obj)
        except TypeError:
            raise TypeError(
                "Stream.wrap: cannot read a CUDA stream from %s: pass an int "
                "address, a ctypes.c_void_p, an object with __cuda_stream__, "
                "a PyTorch stream (.cuda_stream) or a CuPy stream (.ptr)"
                % type(obj).__name__) from None
    if not 0 <= addr < (1 << (8 * _ct.sizeof(_c_void_p))):
        raise ValueError("Stream.wrap: %d is not a stream address" % addr)
    return addr


def _device_hint(obj):
    """The device a framework's stream object says it is on, or None:
    PyTorch (.device.index), CuPy (.device_id), cuda.core (.device.device_id).
    Used only for default streams (0, 1, 2), which do not name a device."""
    for get in (lambda o: o.device.index, lambda o: o.device_id,
                lambda o: o.device.device_id):
        try:
            d = get(obj)
        except Exception:
            continue
        if isinstance(d, int) and not isinstance(d, bool) and d >= 0:
            return d
    return None


def _make_stream(h, ordinal, owner, owned):
    s = _core.new_stream(h, ordinal)
    s._owner = owner
    s._owned = owned
    s._native = None
    return s


class Stream(_core.StreamCore):
    """An evx stream: owned (made by :meth:`Device.create_stream`) or
    borrowed (:meth:`Stream.wrap`). Closing an owned stream destroys the
    driver stream (queued work still completes); closing a borrowed one ends
    the evx handle and drops the reference to the wrapped object.

    ``__cuda_stream__()`` returns ``(0, address)``, so frameworks that speak
    that protocol (cuda.core, CuPy, recent PyTorch) accept an evx stream.

    The hot methods (``record``, ``wait``, ``sync``, ``is_done``) come from
    the compiled core, evx._core.
    """

    __slots__ = ("_owner", "_owned", "_native")

    def __new__(cls, *args, **kwargs):
        raise TypeError("evx.Stream is made by Device.create_stream() or "
                        "Stream.wrap()")

    @classmethod
    def wrap(cls, obj, device=None):
        """Borrows a stream made elsewhere.

        ``obj``: an int address, a ``ctypes.c_void_p``, any object with
        ``__cuda_stream__`` (protocol version 0: cuda.core, CuPy, ...), a
        PyTorch stream (``.cuda_stream``) or a CuPy stream (``.ptr``).
        ``device``: the stream's device, or None to read it from the stream
        (a default stream, 0/1/2, needs a device). The wrapped object is kept
        referenced until the evx stream is closed; evx never destroys the
        driver stream. For a default stream of a framework object (PyTorch's
        default stream is 0) the device is read from the object when
        ``device`` is None.
        """
        addr = _stream_address(obj)
        if device is None and addr in (0, _capi.EVX_STREAM_LEGACY,
                                       _capi.EVX_STREAM_PER_THREAD):
            device = _device_hint(obj)
        dev = _FROM_STREAM if device is None else _ordinal(device, "Stream.wrap")
        h = _c_void_p()
        st = _st_wrap(dev, addr, _byref(h))
        if st:
            raise _error(st, "Stream.wrap")
        if dev == _FROM_STREAM:
            d = _c_int()
            st = capi.evx_stream_get_device(h, _byref(d))
            if st:
                err = _error(st, "Stream.wrap")
                capi.evx_stream_destroy(h)
                raise err
            dev = d.value
        s = _make_stream(h, dev, obj, False)
        s._native = addr
        return s

    def launch_host_func(self, fn):
        """Queues ``fn()`` to run on a driver thread once the work queued
        before it has completed; work queued after it waits for it.

        ``fn`` and its ctypes callback stay referenced until it has run. It
        must not call evx or CUDA. An exception inside it is printed to
        stderr and otherwise ignored: it cannot cross into the driver.
        """
        if not callable(fn):
            raise TypeError("Stream.launch_host_func() needs a callable, not %s"
                            % type(fn).__name__)
        h = _live(self, "Stream.launch_host_func", "the stream")
        key = next(_host_keys)
        _host_pending[key] = fn
        st = _st_launch(h, _host_trampoline, key)
        if st:
            _host_pending.pop(key, None)
            raise _error(st, "Stream.launch_host_func")

    @property
    def priority(self):
        p = _c_int()
        _check(capi.evx_stream_get_priority(_live(self, "Stream.priority", "the stream"),
                                            _byref(p)), "Stream.priority")
        return p.value

    @property
    def flags(self):
        """The stream's :class:`StreamFlags`, as the driver reports them."""
        f = _c_uint()
        _check(capi.evx_stream_get_flags(_live(self, "Stream.flags", "the stream"),
                                         _byref(f)), "Stream.flags")
        return StreamFlags(f.value)

    @property
    def device(self):
        return _device(self._dev)

    @property
    def owned(self):
        """True when evx owns the driver stream, False when borrowed."""
        o = _c_int()
        _check(capi.evx_stream_is_owned(_live(self, "Stream.owned", "the stream"),
                                        _byref(o)), "Stream.owned")
        return bool(o.value)

    @property
    def handle(self):
        """The evx handle as an int (0 once closed)."""
        return _handle_int(self._h)

    @property
    def native(self):
        """The driver's ``CUstream`` address as an int (usable as a
        ``cudaStream_t``). Ownership does not move."""
        h = _live(self, "Stream.native", "the stream")
        n = self._native
        if n is None:
            p = _c_void_p()
            _check(capi.evx_stream_get_native(h, _byref(p)), "Stream.native")
            n = self._native = p.value or 0
        return n

    def __cuda_stream__(self):
        """The CUDA stream protocol, version 0: ``(0, address)``."""
        return (0, self.native)

    def synchronize_async(self):
        """``await stream.synchronize_async()``: an asyncio Future for all
        work queued on the stream so far (see :func:`evx.aio.synchronize`)."""
        from . import aio
        return aio.synchronize(self)

    @property
    def wrapped(self):
        """The object a borrowed stream was made from (None when owned)."""
        return self._owner

    def close(self):
        """Ends the evx stream (destroying the driver stream only if evx owns
        it) and drops the reference to a wrapped object. A second close does
        nothing."""
        self._owner = None
        _core.StreamCore.close(self)

    def __repr__(self):
        if self._h is None:
            return "<evx.Stream closed>"
        return "<evx.Stream 0x%x device %d %s>" % (
            self.handle, self._dev, "owned" if self._owned else "borrowed")


_core.bind(_error, Event, Stream, Stream.wrap,
           _os.environ.get("EVX_PYTHON_RELEASE_GIL", "") not in ("", "0"))


# --------------------------------------------------------------------------
# Timing: timed (the C timer), Timeline

#: ``with evx.timed(stream) as t: ...`` then ``t.elapsed_ms``: see its
#: docstring. The timers are reused: a block makes no driver object.
timed = _core.timed


class Timeline(_Owned):
    """Marks recorded in order on streams of one device, read back in one
    call (evx_timeline_*): interval i is from mark i to mark i + 1."""

    __slots__ = ("_h", "_dev", "__weakref__")
    _destroy = _tl_destroy

    def __init__(self, device, capacity):
        self._init(_ordinal(device, "evx.Timeline"), capacity, "evx.Timeline")

    @classmethod
    def _make(cls, ordinal, capacity, op):
        tl = object.__new__(cls)
        tl._init(ordinal, capacity, op)
        return tl

    def _init(self, ordinal, capacity, op):
        self._h = None
        self._dev = ordinal
        capacity = _args.integer(capacity, op, "capacity", _args.UINT32)
        h = _c_void_p()
        _check(capi.evx_device_create_timeline(ordinal, capacity, _byref(h)), op)
        self._h = h

    def mark(self, stream):
        """Records the next mark on ``stream``; returns its index."""
        if not isinstance(stream, Stream):
            raise TypeError("Timeline.mark() needs an evx.Stream, not %s"
                            % type(stream).__name__)
        h = _live(self, "Timeline.mark", "the timeline")
        s = _live(stream, "Timeline.mark", "the stream")
        idx = _c_uint32()
        st = capi.evx_timeline_mark(h, s, _byref(idx))
        if st:
            raise _error(st, "Timeline.mark")
        return idx.value

    @property
    def count(self):
        """Marks recorded since creation or the last reset."""
        n = _c_uint32()
        _check(capi.evx_timeline_count(_live(self, "Timeline.count", "the timeline"),
                                       _byref(n)), "Timeline.count")
        return n.value

    def __len__(self):
        return self.count

    def sync(self):
        """Waits for the last mark's work."""
        _check(capi.evx_timeline_synchronize(_live(self, "Timeline.sync", "the timeline")),
               "Timeline.sync")

    def intervals(self):
        """Every interval between consecutive marks, in milliseconds (a list
        of floats, one fewer than the marks). Waits for the last mark."""
        op = "Timeline.intervals"
        h = _live(self, op, "the timeline")
        _check(capi.evx_timeline_synchronize(h), op)
        n = _c_uint32()
        _check(capi.evx_timeline_intervals(h, None, 0, _byref(n)), op)
        if n.value == 0:
            return []
        buf = (_c_float * n.value)()
        written = _c_uint32()
        _check(capi.evx_timeline_intervals(h, buf, n.value, _byref(written)), op)
        return list(buf[:written.value])

    def reset(self):
        """Forgets every mark, keeping the events for reuse."""
        _check(capi.evx_timeline_reset(_live(self, "Timeline.reset", "the timeline")),
               "Timeline.reset")

    @property
    def device(self):
        return _device(self._dev)


# --------------------------------------------------------------------------
# Event pools

#: What a pool holds and has done (evx_event_pool_get_stats).
PoolStats = _collections.namedtuple(
    "PoolStats", "capacity idle in_use pending created_total acquired_total "
                 "exhausted_total")


class EventPool(_Owned):
    """A bounded pool of pre-made events of one device and flag set.

    :meth:`acquire` hands out an :class:`Event` (CudaError with
    EVX_ERROR_OUT_OF_MEMORY when all of the capacity is out or pending);
    :meth:`release` or closing the event gives it back.
    """

    __slots__ = ("_h", "_dev", "__weakref__")
    _destroy = _pool_destroy

    def __init__(self, device, capacity, prewarm=0, timing=True, blocking_sync=False):
        self._init(_ordinal(device, "evx.EventPool"), capacity, prewarm, timing,
                   blocking_sync, "evx.EventPool")

    @classmethod
    def _make(cls, ordinal, capacity, prewarm, timing, blocking_sync, op):
        pool = object.__new__(cls)
        pool._init(ordinal, capacity, prewarm, timing, blocking_sync, op)
        return pool

    def _init(self, ordinal, capacity, prewarm, timing, blocking_sync, op):
        self._h = None
        self._dev = ordinal
        opts = _capi.evx_event_pool_options_t()
        opts.struct_size = _ct.sizeof(opts)
        opts.event_flags = (0 if timing else _DISABLE_TIMING) | \
            (_capi.EVX_EVENT_BLOCKING_SYNC if blocking_sync else 0)
        opts.capacity = _args.integer(capacity, op, "capacity", _args.UINT32)
        opts.prewarm = _args.integer(prewarm, op, "prewarm", _args.UINT32)
        h = _c_void_p()
        _check(capi.evx_device_create_event_pool(ordinal, _byref(opts), _byref(h)), op)
        self._h = h

    def acquire(self):
        """An event from the pool, never recorded."""
        h = _c_void_p()
        st = _pool_acquire(_live(self, "EventPool.acquire", "the pool"), _byref(h))
        if st:
            raise _error(st, "EventPool.acquire")
        return _core.new_event(h, self._dev, True)

    def release(self, event):
        """Gives an event acquired from this pool back; the Event is closed.
        An event of another pool is refused and stays open."""
        if not isinstance(event, Event):
            raise TypeError("EventPool.release() needs an evx.Event, not %s"
                            % type(event).__name__)
        st = _pool_release(_live(self, "EventPool.release", "the pool"),
                           _live(event, "EventPool.release", "the event"))
        if st:
            raise _error(st, "EventPool.release")
        event._h = None

    def prewarm(self, count):
        """Makes driver events until the pool holds ``count`` idle ones."""
        count = _args.integer(count, "EventPool.prewarm", "count", _args.UINT32)
        _check(capi.evx_event_pool_prewarm(_live(self, "EventPool.prewarm", "the pool"),
                                           count), "EventPool.prewarm")

    @property
    def stats(self):
        """A :data:`PoolStats`."""
        s = _capi.evx_event_pool_stats_t()
        s.struct_size = _ct.sizeof(s)
        _check(capi.evx_event_pool_get_stats(_live(self, "EventPool.stats", "the pool"),
                                             _byref(s)), "EventPool.stats")
        return PoolStats(s.capacity, s.idle, s.in_use, s.pending,
                         s.created_total, s.acquired_total, s.exhausted_total)

    @property
    def device(self):
        return _device(self._dev)


# Interprocess events: Event.ipc_handle, Device.open_ipc_event, pickling.
from . import ipc  # noqa: E402
ipc.install(_sys.modules[__name__])


# --------------------------------------------------------------------------
# Interpreter exit

#: Seconds the interpreter waits at exit for host functions still queued
#: (they call into Python, which must still be alive when they run).
HOST_FUNC_EXIT_WAIT_S = 10.0


def _at_exit(_pending=_host_pending, _sleep=_time.sleep, _now=_time.monotonic,
             _clear=_core.clear_timers):
    try:
        deadline = _now() + HOST_FUNC_EXIT_WAIT_S
        while _pending and _now() < deadline:
            _sleep(0.001)
        _clear()
    except Exception:
        pass


_atexit.register(_at_exit)
