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

The package is one module per concern; this one only gathers the public
names. Each private module imports only those below it (a Device makes the
others' objects, so its methods import theirs when called):

- ``_capi`` (generated from the headers), ``_args`` (checks of values that
  become C integers);
- ``_loader``: the compiled core ``_core`` (``_core.pyx``: the hot calls and
  the base classes) and the libevx it linked, with ``capi`` bound to it;
- ``_errors``: CudaError and how a status becomes one (the core imports it);
- ``_native``: reading another framework's stream or event and its device
  for Stream.wrap, Event.wrap and timed;
- ``_device``, ``_event``, ``_stream``, ``_timing`` (timed, Timeline),
  ``_pool``, ``_fence``: the classes; ``_hostfn``: the host-function trampoline;
- ``ipc``, ``aio`` and ``trace``: the public modules of interprocess
  events, of asyncio, and of merging anchored traces.
"""

import atexit as _atexit

# The loader first: it imports the compiled core with the library that
# EVX_LIBRARY names, if any.
from ._loader import LibraryNotFoundError, capi, path as library_path
from . import _capi, _core, _hostfn
from ._capi import (CaptureStatus, DeviceSpecial, EventFlags,  # noqa: F401
                    EventRecordFlags, EventWaitFlags, Status, StreamFlags)
from ._errors import CudaError, Owned as _Owned  # noqa: F401
from ._device import (Device, device_count, driver_path, driver_version,
                      host_func_sync_mode, is_emulation, library_version)
from ._event import Event
from ._stream import Stream
from ._timing import Anchor, Mark, Timeline, timed
from ._pool import EventPool, PoolStats
from ._fence import Fence
from . import ipc  # noqa: F401
from . import _args, _device as _device_mod, _errors as _errors_mod, _fence as _fence_mod
from . import _event as _event_mod, _native

# The package's parts that lower modules use without importing them: the
# compiled core's Python helpers, and the classes Device's factories make.
_core.connect(_errors_mod.error, _args.flag, _native.wrap, Fence, _fence_mod._stream_wait,
              _event_mod.borrow)
_device_mod.set_kinds(Event=Event, Stream=Stream, Timeline=Timeline, EventPool=EventPool,
                      create_fence=_fence_mod.create_fence,
                      open_ipc_fence=_fence_mod.open_ipc_fence,
                      import_fence_fd=_fence_mod.import_fence_fd)

__all__ = [
    "CudaError", "Device", "Event", "EventPool", "LibraryNotFoundError",
    "PoolStats", "Status", "EventFlags", "StreamFlags", "CaptureStatus", "Stream",
    "Timeline",
    "timed", "Mark", "Anchor", "device_count", "driver_version", "driver_path",
    "is_emulation",
    "host_func_sync_mode",
    "library_version", "library_path", "capi", "implementation", "Fence",
]

#: The version of the headers these bindings were generated from.
__version__ = "%d.%d.%d" % (_capi.EVX_VERSION_MAJOR, _capi.EVX_VERSION_MINOR,
                            _capi.EVX_VERSION_PATCH)

#: The core the hot paths run on: always "cython" (evx._core, compiled from
#: evx/_core.pyx); kept so that programs that print it keep working.
implementation = "cython"

#: Seconds the interpreter waits at exit for host functions still queued
#: (they call into Python, which must still be alive when they run).
HOST_FUNC_EXIT_WAIT_S = _hostfn.EXIT_WAIT_S


def _at_exit(_wait=_hostfn.wait_at_exit):
    try:
        _wait(HOST_FUNC_EXIT_WAIT_S)
    except Exception:
        pass


_atexit.register(_at_exit)
