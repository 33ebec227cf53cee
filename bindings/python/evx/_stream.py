# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Streams: :class:`Stream`, on the compiled core's StreamCore."""

import ctypes

from . import _capi, _core, _hostfn, _native, _notify
from ._capi import CaptureStatus, StreamFlags
from ._device import device
from ._errors import check, error, live
from ._event import Event, handle_int
from ._loader import capi

__all__ = ["Stream"]


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
    __module__ = "evx"

    def __new__(cls, *args, **kwargs):
        raise TypeError("evx.Stream is made by Device.create_stream() or "
                        "Stream.wrap()")

    @classmethod
    def _make(cls, h, ordinal, owner, owned, native=None):
        """A Stream owning the evx stream handle ``h`` (from
        evx_device_create_stream or evx_stream_wrap_external)."""
        s = _core.new_stream(cls, h, ordinal, Event)
        s._owner = owner
        s._owned = owned
        s._native = native
        return s

    @classmethod
    def wrap(cls, obj, device=None):
        """Borrows a stream made elsewhere.

        ``obj``: an int address, a ``ctypes.c_void_p``, any object with
        ``__cuda_stream__`` (protocol version 0: cuda.core, CuPy, ...), a
        PyTorch stream (``.cuda_stream``) or a CuPy stream (``.ptr``).
        ``device``: the stream's device, or None to read it from the stream.
        A default stream (0, 1 or 2: PyTorch's and CuPy's default streams)
        names no device: with ``device`` None it is read from the object
        (PyTorch's ``device``, CuPy's ``device_id``, cuda.core's
        ``device``), else it is the device of the calling thread's current
        context (as CUDA's runtime, CuPy and PyTorch take it); with neither,
        CudaError (EVX_ERROR_INVALID_VALUE) asks for ``device``. The wrapped
        object is kept referenced until the evx stream is closed; evx never
        destroys the driver stream.
        """
        h, ordinal, addr = _native.wrap(obj, device, "Stream.wrap")
        return cls._make(h, ordinal, obj, False, addr)

    def launch_host_func(self, fn, *, name=None, spin=False, errors=True):
        """Queues ``fn()`` to run on a driver thread once the work queued
        before it has completed; work queued after it waits for it.

        ``fn`` and its ctypes callback stay referenced until it has run. It
        must not call evx or CUDA.

        An exception raised by ``fn`` is not lost: the next call that waits
        for work queued after it (``Stream.sync()``, or ``Stream.is_done``
        finding the stream idle; ``Event.sync()``/``Event.is_done`` of an
        event recorded on this stream object after it;
        ``Timeline.sync()``/``Timeline.to_trace()`` whose last mark is)
        raises :class:`evx.CudaError`, once, with the
        exception as its ``__cause__``; its message names the function
        (``name``, else its ``__qualname__``). The status is the exception's
        own for a ``CudaError``, else ``Status.ERROR_UNKNOWN``
        (``evx_stream_launch_host_func_status``). ``spin=True`` asks the
        driver's host-function thread to spin-wait (CUDA 13.2 and later;
        :func:`evx.host_func_sync_mode` says whether the driver can).

        On a stream being captured into a CUDA graph (``torch.cuda.graph``)
        ``fn`` becomes a host node of the graph and runs at every launch
        (``replay()``); it stays referenced until the graph and its
        executables are destroyed. An exception in a launch is reported
        once by the next waiting call on any stream, event, timer or
        timeline of the device that ends its wait after it (the message says
        it ran in a launch of its graph).
        """
        op = "Stream.launch_host_func"
        if not callable(fn):
            raise TypeError("Stream.launch_host_func() needs a callable, not %s"
                            % type(fn).__name__)
        if name is not None and not isinstance(name, str):
            raise TypeError("Stream.launch_host_func(): name must be a str, not %s"
                            % type(name).__name__)
        h = live(self, op, "the stream")
        if not errors:
            if spin:
                raise ValueError("Stream.launch_host_func(): spin=True needs errors=True "
                                 "(evx_stream_launch_host_func has no sync mode)")
            key = _hostfn.submit(fn)
            st = capi.evx_stream_launch_host_func(h, _hostfn.trampoline, key)
        else:
            label = name if name is not None else getattr(
                fn, "__qualname__", None) or type(fn).__qualname__
            raw = label.encode("utf-8", "replace")
            longest = _capi.EVX_HOST_FUNC_NAME_SIZE - 1
            if len(raw) > longest:
                if name is not None:
                    raise ValueError("Stream.launch_host_func(): name is %d bytes in UTF-8; "
                                     "at most %d" % (len(raw), longest))
                raw = raw[:longest - 3].decode("utf-8", "ignore").encode("utf-8") + b"..."
            opts = _capi.evx_host_func_options_t()
            opts.struct_size = ctypes.sizeof(opts)
            opts.flags = _capi.EVX_HOST_FUNC_SPINWAIT if spin else 0
            opts.name = raw
            opts.release = _hostfn.release_trampoline
            # A graph keeps a captured function until it is destroyed: the
            # interpreter does not wait for those at exit.
            cap = _capi.evx_capture_status_t(0)
            captured = (capi.evx_stream_get_capture_status(h, ctypes.byref(cap)) == 0
                        and cap.value == _capi.EVX_CAPTURE_STATUS_ACTIVE)
            key = _hostfn.submit(fn)
            if captured:
                _hostfn.in_graph.add(key)
            st = capi.evx_stream_launch_host_func_status(
                h, _hostfn.status_trampoline, key, ctypes.byref(opts))
        if st:
            _hostfn.withdraw(key)
            raise error(st, op)

    @property
    def priority(self):
        p = ctypes.c_int()
        check(capi.evx_stream_get_priority(live(self, "Stream.priority", "the stream"),
                                           ctypes.byref(p)), "Stream.priority")
        return p.value

    @property
    def flags(self):
        """The stream's :class:`StreamFlags`, as the driver reports them."""
        f = ctypes.c_uint()
        check(capi.evx_stream_get_flags(live(self, "Stream.flags", "the stream"),
                                        ctypes.byref(f)), "Stream.flags")
        return StreamFlags(f.value)

    @property
    def capture_status(self):
        """The stream's :class:`CaptureStatus` (``cuStreamIsCapturing``):
        ``NONE``, ``ACTIVE`` while it is being captured into a CUDA graph
        (itself, or joined to a capture by waiting on a captured event), or
        ``INVALIDATED`` once a call has broken the capture, which must
        still be ended. Reading it leaves any capture as it was."""
        c = _capi.evx_capture_status_t()
        check(capi.evx_stream_get_capture_status(
            live(self, "Stream.capture_status", "the stream"), ctypes.byref(c)),
            "Stream.capture_status")
        return CaptureStatus(c.value)

    @property
    def device(self):
        return device(self._dev)

    @property
    def owned(self):
        """True when evx owns the driver stream, False when borrowed."""
        o = ctypes.c_int()
        check(capi.evx_stream_is_owned(live(self, "Stream.owned", "the stream"),
                                       ctypes.byref(o)), "Stream.owned")
        return bool(o.value)

    @property
    def handle(self):
        """The evx handle as an int (0 once closed)."""
        return handle_int(self._h)

    @property
    def native(self):
        """The driver's ``CUstream`` address as an int (usable as a
        ``cudaStream_t``). Ownership does not move."""
        h = live(self, "Stream.native", "the stream")
        n = self._native
        if n is None:
            p = ctypes.c_void_p()
            check(capi.evx_stream_get_native(h, ctypes.byref(p)), "Stream.native")
            n = self._native = p.value or 0
        return n

    def __cuda_stream__(self):
        """The CUDA stream protocol, version 0: ``(0, address)``."""
        return (0, self.native)

    def synchronize_async(self):
        """``await stream.synchronize_async()``: an asyncio Future for all
        work queued on the stream so far (see :func:`evx.aio.synchronize`)."""
        return _notify.synchronize(self)

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
