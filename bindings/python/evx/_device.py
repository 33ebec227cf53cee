# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""The driver and its devices: :class:`Device` and the driver queries
(device_count, driver_version, ...).

Every object of the package has a ``device``, and a Device makes them all
(events, streams, timelines, pools): the modules of those import this one,
and this one imports theirs where a method needs them.
"""

import ctypes
import operator
from typing import Any, Dict

from . import _args, _capi, _core, ipc
from ._capi import Status
from ._errors import CudaError, check, error
from ._loader import capi

__all__ = ["Device", "device", "device_count", "driver_version", "driver_path",
           "is_emulation", "host_func_sync_mode", "library_version"]


def device_count():
    """The number of devices the driver sees (evx_device_count)."""
    n = ctypes.c_int()
    check(capi.evx_device_count(ctypes.byref(n)), "evx.device_count")
    return n.value


def driver_version():
    """The loaded driver's version, as cuDriverGetVersion gives it."""
    v = ctypes.c_int()
    check(capi.evx_driver_get_version(ctypes.byref(v)), "evx.driver_version")
    return v.value


def driver_path():
    """The path of the driver library evx opened ("libcuda.so.1" for the real
    driver; the host emulation's path with EVX_DRIVER=host)."""
    p = ctypes.c_char_p()
    check(capi.evx_driver_get_path(ctypes.byref(p)), "evx.driver_path")
    return p.value.decode("utf-8", "replace")


def is_emulation():
    """Whether the loaded driver is evx's host emulation."""
    v = ctypes.c_int()
    check(capi.evx_driver_is_emulation(ctypes.byref(v)), "evx.is_emulation")
    return bool(v.value)


def host_func_sync_mode():
    """Whether the driver has ``cuLaunchHostFunc_v2`` (CUDA 13.2), through
    which host functions run with their sync mode
    (``Stream.launch_host_func(spin=True)``); else ``cuLaunchHostFunc``,
    with the same error semantics."""
    v = ctypes.c_int()
    check(capi.evx_driver_has_host_func_sync_mode(ctypes.byref(v)),
          "evx.host_func_sync_mode")
    return bool(v.value)


def library_version():
    """The version of the loaded libevx, as "MAJOR.MINOR.PATCH"."""
    return capi.evx_version_string().decode()


_devices: Dict[int, "Device"] = {}

# The classes and calls Device's factories make objects with. They live in
# the modules above this one (each imports evx._device, never the reverse),
# and evx/__init__.py hands them over once, through set_kinds, before any
# Device exists: this module stays a leaf of the package's import graph.
_kinds: Dict[str, Any] = {}


def set_kinds(**kinds):
    """Called once by evx/__init__.py: Event, Stream, Timeline, EventPool
    (classes), create_fence and open_ipc_fence (evx._fence's calls)."""
    _kinds.update(kinds)


def device(ordinal):
    """The Device of an ordinal the library has already accepted (no
    check), made once."""
    d = _devices.get(ordinal)
    if d is None:
        d = _devices.setdefault(ordinal, _core.new_device(Device, ordinal, _kinds["Event"]))
    return d


class Device(_core.DeviceCore):
    """A device, by ordinal. ``Device(n)`` checks that the driver sees it;
    two Device objects of one ordinal are the same object.

    ``create_event`` comes from the compiled core, evx._core.
    """

    __slots__ = ()
    __module__ = "evx"

    def __new__(cls, device_id=0):
        if isinstance(device_id, Device):
            return device_id
        if isinstance(device_id, bool) or not hasattr(type(device_id), "__index__"):
            raise TypeError("evx.Device: a device must be an evx.Device or an "
                            "int, not %s" % type(device_id).__name__)
        ordinal = operator.index(device_id)
        d = _devices.get(ordinal)
        if d is not None:
            return d
        count = device_count()
        if not 0 <= ordinal < count:
            raise CudaError(Status.ERROR_INVALID_DEVICE,
                            "evx.Device(%d): the driver sees %d device(s), "
                            "ordinals 0 to %d" % (ordinal, count, count - 1))
        return device(ordinal)

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
        least, greatest = ctypes.c_int(), ctypes.c_int()
        check(capi.evx_device_stream_priority_range(self._id, ctypes.byref(least),
                                                     ctypes.byref(greatest)),
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
        h = ctypes.c_void_p()
        st = capi.evx_device_create_stream(self._id, flags, prio, ctypes.byref(h))
        if st:
            raise error(st, "Device.create_stream")
        return _kinds["Stream"]._make(h, self._id, None, True)

    def create_timeline(self, capacity):
        """A :class:`Timeline` of this device."""
        return _kinds["Timeline"]._make(self._id, capacity, "Device.create_timeline")

    def create_event_pool(self, capacity, prewarm=0, timing=True, blocking_sync=False):
        """An :class:`EventPool` of this device."""
        return _kinds["EventPool"]._make(self._id, capacity, prewarm, timing, blocking_sync,
                               "Device.create_event_pool")

    def open_ipc_event(self, handle):
        """A new :class:`Event` of this device for ``handle``, the
        :attr:`Event.ipc_handle` of an event of another process (see
        :mod:`evx.ipc`).

        The event has no timing. Raises TypeError or ValueError for a handle
        that is not 64 bytes, and :class:`evx.CudaError` when the driver
        refuses it (``EVX_ERROR_INVALID_CONTEXT`` in the process that
        exported it)."""
        return ipc.open_event(self._id, handle, _kinds["Event"])

    def create_fence(self, initial=0, interprocess=False):
        """A new :class:`Fence` of this device holding ``initial`` (0 to
        ``Fence.MAX_VALUE``); ``interprocess=True``: it may be exported to
        other processes (:attr:`Fence.ipc_handle`, pickling)."""
        return _kinds["create_fence"](self._id, initial, interprocess)

    def open_ipc_fence(self, handle):
        """A new :class:`Fence` of this device for ``handle``, the
        :attr:`Fence.ipc_handle` of a fence of another process."""
        return _kinds["open_ipc_fence"](self._id, handle)

    def import_fence_fd(self, fd):
        """A new :class:`Fence` of this device for ``fd``, a descriptor
        from :meth:`Fence.export_fd` in another process (the caller keeps
        owning ``fd``)."""
        return _kinds["import_fence_fd"](self._id, fd)

    def trim(self):
        """Releases the idle driver events evx keeps for reuse on this
        device, and the pinned pages of its pool of fence words whose words
        are all free. May wait for the device's queued work when it frees
        such a page (the driver's ``cuMemFreeHost`` does); the GIL is
        released meanwhile."""
        check(capi.evx_device_trim(self._id), "Device.trim")
