# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Fences: :class:`Fence` (``include/evx/fence.h``), a 64-bit counter of a
device that only grows, signalled and waited for on streams, on the host,
between processes and from asyncio::

    import evx
    dev = evx.Device(0)
    a, b = dev.create_stream(), dev.create_stream()
    fence = dev.create_fence()          # counter 0
    b.wait(fence, 1)                    # queued before the signal it waits for
    ...                                 # work on a
    fence.signal(a, 1)
    fence.wait(1, timeout=5.0)          # the host: True once reached
    # in a coroutine: await fence.wait_async(1)

Every signal must be above the last value signalled or queued (in every
process sharing the fence): one that is not raises :class:`evx.CudaError`
(``EVX_ERROR_INVALID_VALUE``). Values are ints from 0 to
``Fence.MAX_VALUE`` (2**63 - 1); others raise ValueError (TypeError for what
is not an int) before reaching C. See ``docs/fences.md``.

An interprocess fence (``create_fence(interprocess=True)``) pickles to its
IPC handle, so it can be passed to a ``multiprocessing`` child (spawn or
forkserver), which opens it; unpickling in the process that exported it
raises :class:`evx.CudaError` (``EVX_ERROR_INVALID_CONTEXT``).
"""

import ctypes as _ct
import math as _math

from . import _args, _capi, _core, _notify
from ._device import device
from ._errors import Owned, check, live
from ._loader import capi

__all__ = ["Fence", "create_fence", "open_ipc_fence", "import_fence_fd"]

#: The largest value a fence holds (``EVX_FENCE_MAX_VALUE``, 2**63 - 1).
MAX_VALUE = _capi.EVX_FENCE_MAX_VALUE
#: Bytes in a fence's IPC handle (``EVX_IPC_FENCE_HANDLE_SIZE``).
HANDLE_SIZE = _capi.EVX_IPC_FENCE_HANDLE_SIZE

_VALUE = (0, MAX_VALUE, "fence value")
_UINT64_MAX = (1 << 64) - 1


def _value(value, op):
    return _args.integer(value, op, "value", _VALUE)


class Fence(Owned):
    """A fence of one device. Made by :meth:`evx.Device.create_fence` or
    :meth:`evx.Device.open_ipc_fence`; closed by :meth:`close` (or the
    ``with`` statement, or garbage collection). Work already queued on it
    still runs after it is closed."""

    __slots__ = ("_h", "_dev", "_interprocess", "__weakref__")
    __module__ = "evx"
    _destroy = capi.evx_fence_destroy
    #: The largest value a fence holds (2**63 - 1).
    MAX_VALUE = MAX_VALUE
    #: Bytes in a fence's IPC handle.
    HANDLE_SIZE = HANDLE_SIZE

    def __init__(self, *args, **kwargs):
        raise TypeError("evx.Fence cannot be made directly: use "
                        "Device.create_fence() or Device.open_ipc_fence()")

    @classmethod
    def _adopt(cls, handle, ordinal, interprocess):
        f = object.__new__(cls)
        f._h = handle
        f._dev = ordinal
        f._interprocess = interprocess
        return f

    def _live(self, op):
        return live(self, op, "the fence")

    @property
    def device(self):
        """The :class:`evx.Device` the fence belongs to."""
        return device(self._dev)

    @property
    def handle(self):
        """The evx handle, as an int (0 once closed)."""
        return self._h or 0

    @property
    def interprocess(self):
        """Whether the fence can be exported (:attr:`ipc_handle`)."""
        return self._interprocess

    def signal(self, stream, value):
        """Queues on ``stream`` (a :class:`evx.Stream` of the fence's device)
        a signal: once the stream's earlier work is done, the counter
        becomes ``value``. Does not block."""
        op = "Fence.signal"
        v = _value(value, op)
        if not isinstance(stream, _core.StreamCore):
            raise TypeError("%s: stream must be an evx.Stream, not %s"
                            % (op, type(stream).__name__))
        h = self._live(op)
        s = live(stream, op, "the stream")
        check(capi.evx_fence_signal(h, s, v), op)

    def signal_host(self, value):
        """Sets the counter to ``value`` now, from the host."""
        op = "Fence.signal_host"
        v = _value(value, op)
        check(capi.evx_fence_signal_host(self._live(op), v), op)

    @property
    def value(self):
        """The counter now (a load; no driver call)."""
        op = "Fence.value"
        out = _ct.c_uint64()
        check(capi.evx_fence_get_value(self._live(op), _ct.byref(out)), op)
        return out.value

    def wait(self, value, timeout=None):
        """Blocks this thread (the GIL released) until the counter is at
        least ``value``: True when it is, False when ``timeout`` seconds
        passed first. ``timeout=None`` waits without limit; 0 only looks."""
        op = "Fence.wait"
        v = _value(value, op)
        if timeout is None:
            ns = _UINT64_MAX
        else:
            if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
                raise TypeError("%s: timeout must be a number of seconds or None, not %s"
                                % (op, type(timeout).__name__))
            if (isinstance(timeout, float) and _math.isnan(timeout)) or timeout < 0:
                raise ValueError("%s: timeout %r is not a number of seconds >= 0"
                                 % (op, timeout))
            # An int too large for a float (10**400) is compared as an
            # int: timeout * 1e9 would raise a bare OverflowError.
            if timeout >= _UINT64_MAX // 10**9 + 1 or timeout * 1e9 >= _UINT64_MAX:
                raise ValueError("%s: timeout %r s is longer than the C call can wait "
                                 "(give None to wait without limit)" % (op, timeout))
            ns = int(timeout * 1e9)
        st = capi.evx_fence_wait_host(self._live(op), v, ns)
        if st == _capi.EVX_ERROR_TIMEOUT:
            return False
        check(st, op)
        return True

    def wait_async(self, value):
        """``await fence.wait_async(v)``: an asyncio Future that completes
        once the counter is at least ``value`` (see
        :func:`evx.aio.wait_fence`). Needs a running loop."""
        op = "evx.aio.wait_fence"
        v = _value(value, op)
        return _notify.wait_fence_handle(self._live(op), v)

    @property
    def ipc_handle(self):
        """The fence's IPC handle, 64 ``bytes`` for
        :meth:`evx.Device.open_ipc_fence` in another process. Keep this fence
        open until every peer has opened it."""
        op = "Fence.ipc_handle"
        h = _capi.evx_ipc_fence_handle_t()
        check(capi.evx_fence_get_ipc_handle(self._live(op), _ct.byref(h)), op)
        return bytes(h.reserved)

    def export_fd(self):
        """A new file descriptor (an int, close-on-exec) of this
        interprocess fence's shared page, for a process that shares neither
        ``/dev/shm`` nor the PID namespace with this one: send it over a
        Unix socket (``multiprocessing.reduction.send_handle``, or
        ``socket.send_fds``); the peer opens it with
        :meth:`evx.Device.import_fence_fd`. The caller owns it: close it
        (``os.close``) once sent."""
        op = "Fence.export_fd"
        fd = _ct.c_int(-1)
        check(capi.evx_fence_export_fd(self._live(op), _ct.byref(fd)), op)
        return fd.value

    def stream_wait(self, stream, value, *, flush=False):
        """Queues on ``stream`` a wait until the counter is at least
        ``value``, as ``stream.wait(fence, value)``; ``flush=True`` first
        flushes remote (GPUDirect RDMA) writes to the device
        (``EVX_FENCE_WAIT_FLUSH``), and raises :class:`evx.CudaError`
        (``EVX_ERROR_NOT_SUPPORTED``) on a device that cannot."""
        op = "Fence.stream_wait"
        v = _value(value, op)
        fl = _args.flag(flush, op, "flush")
        sh = stream.handle
        flags = _capi.EVX_FENCE_WAIT_FLUSH if fl else _capi.EVX_FENCE_WAIT_DEFAULT
        check(capi.evx_stream_wait_fence_with_flags(sh, self._live(op), v, flags), op)

    @staticmethod
    def reclaim():
        """Gives back the memory of destroyed fences whose queued
        operations have run (never waiting for the device); returns
        ``(pending, kept)``: how many destroyed fences' memory still waits
        for queued operations (or for a capture on one of their streams to
        end), and how many are kept, for the life of the
        process or until :meth:`evx.Device.trim` releases them (an
        interprocess fence's page, whose unregister may wait for the
        device, and memory the driver refused) (``evx_fence_reclaim``)."""
        pending, kept = _ct.c_uint64(0), _ct.c_uint64(0)
        check(capi.evx_fence_reclaim(_ct.byref(pending), _ct.byref(kept)), "Fence.reclaim")
        return pending.value, kept.value

    def __reduce__(self):
        if self.closed:
            raise TypeError("cannot pickle a closed evx.Fence")
        if not self._interprocess:
            raise TypeError(
                "cannot pickle %r: only an interprocess fence (made with "
                "Device.create_fence(interprocess=True)) can be pickled; its "
                "pickle is its IPC handle, which the unpickling process opens"
                % (self,))
        return (device(self._dev).open_ipc_fence, (self.ipc_handle,))

    def __repr__(self):
        if self._h is None:
            return "<evx.Fence closed>"
        return "<evx.Fence 0x%x of device %d%s>" % (
            self.handle, self._dev, ", interprocess" if self._interprocess else "")


def create_fence(ordinal, initial=0, interprocess=False):
    """A new :class:`evx.Fence` of this device holding ``initial`` (0 to
    ``Fence.MAX_VALUE``); ``interprocess=True``: it may be exported to
    other processes (:attr:`Fence.ipc_handle`, pickling)."""
    op = "Device.create_fence"
    v = _args.integer(initial, op, "initial", _VALUE)
    ipc = _args.flag(interprocess, op, "interprocess")
    out = _ct.c_void_p()
    flags = _capi.EVX_FENCE_INTERPROCESS if ipc else _capi.EVX_FENCE_DEFAULT
    check(capi.evx_device_create_fence(ordinal, v, flags, _ct.byref(out)), op)
    return Fence._adopt(out.value, ordinal, ipc)


def open_ipc_fence(ordinal, handle):
    """A new :class:`evx.Fence` of this device for ``handle``, the
    :attr:`Fence.ipc_handle` of a fence of another process. Raises
    TypeError or ValueError for a handle that is not 64 bytes, and
    :class:`evx.CudaError` when evx refuses it (``EVX_ERROR_INVALID_CONTEXT``
    in the process that exported it)."""
    op = "Device.open_ipc_fence"
    data = _args.handle_bytes(handle, op, HANDLE_SIZE, "Fence.ipc_handle",
                              "a fence's IPC handle")
    h = _capi.evx_ipc_fence_handle_t.from_buffer_copy(data)
    out = _ct.c_void_p()
    check(capi.evx_device_open_ipc_fence(ordinal, _ct.byref(h), _ct.byref(out)), op)
    return Fence._adopt(out.value, ordinal, True)


def import_fence_fd(ordinal, fd):
    """A new :class:`evx.Fence` of this device for ``fd``, a descriptor
    that :meth:`Fence.export_fd` gave in another process (received over a
    Unix socket). evx keeps its own duplicate: the caller still owns ``fd``.
    Raises TypeError for what is not an int, and :class:`evx.CudaError`
    when evx refuses it (not a fence's page: ``EVX_ERROR_INVALID_VALUE``;
    a fence of this process: ``EVX_ERROR_INVALID_CONTEXT``)."""
    op = "Device.import_fence_fd"
    if hasattr(fd, "fileno") and not isinstance(fd, int):
        fd = fd.fileno()
    n = _args.integer(fd, op, "fd", (-(1 << 31), (1 << 31) - 1, "file descriptor"))
    out = _ct.c_void_p()
    check(capi.evx_device_import_fence_fd(ordinal, n, _ct.byref(out)), op)
    return Fence._adopt(out.value, ordinal, True)


def _stream_wait(stream, fence, value):
    """``Stream.wait(fence, value)`` (the compiled core calls it with the
    stream's handle checked)."""
    op = "Stream.wait"
    if not isinstance(fence, Fence):
        raise TypeError("%s: a value is given only with an evx.Fence (Stream.wait(fence, "
                        "value)), not with %s" % (op, type(fence).__name__))
    v = _value(value, op)
    h = fence._live(op)
    check(capi.evx_stream_wait_fence(stream.handle, h, v), op)

