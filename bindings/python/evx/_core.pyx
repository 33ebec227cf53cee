# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
# cython: language_level=3, embedsignature=True, binding=False
# (binding=False: methods are the C method descriptors CPython's own types
# use, as the hand-written core's were; embedsignature keeps signatures in
# their docstrings.)
"""evx._core: the compiled core of evx's Python layer, written in Cython.

It links libevx and calls it directly (the declarations are in
libevx.pxd). It holds what a timing loop calls: the base classes of
evx.Device, evx.Event and evx.Stream (DeviceCore, EventCore, StreamCore)
with their hot methods, event creation, ``timed``, and the notifier's
watches (of events and fence values) and reads that every await makes. It
imports nothing of the package: the package's factories (evx/_device.py,
_stream.py, ...) make objects with new_device, new_event and new_stream,
naming the class to make and, for a device or a stream, the class of the
events it makes; the exceptions it raises are made by evx._errors.error,
``timed`` borrows a stream of another framework through evx._native.wrap
and ``Stream.wait(fence, value)`` goes to evx._fence, all handed over once
by evx/__init__.py (:func:`connect`).

:func:`library_path` is the file of the libevx this module linked (dladdr
on one of its functions): the package opens that same file with ctypes for
evx.capi, and the dynamic linker gives back the copy already loaded, so
the compiled calls and the ctypes ones share one library and one handle
table.

The GIL: every call that can wait (synchronize, record: the driver may block
on a full queue, and anything queued behind a host function, which needs the
GIL to run its Python code) releases it. The calls that never wait, neither
on the GPU nor on a lock that a thread waiting for the GIL could hold, keep
it: releasing and retaking it costs more than the call. They are the queries
and elapsed time (which answers NOT_READY instead of waiting), and the
creation and destruction of events: evx takes an event from its reuse cache
or calls cuEventCreate, and gives it back or calls cuEventDestroy, none of
which waits for GPU work or for a host function. The one slow step is a
device's first use, which retains its primary context (hundreds of
milliseconds on a GPU); so a device's events are made releasing the GIL
until one has been made. EVX_PYTHON_RELEASE_GIL=1 in the environment when
the core is imported makes every call release it.
"""

cimport cython
from cpython.long cimport PyLong_AsVoidPtr, PyLong_FromVoidPtr
from cpython.object cimport PyObject, PyTypeObject

from libc.stdint cimport uint32_t, uint64_t

from .libevx cimport *

cdef extern from "<dlfcn.h>" nogil:
    ctypedef struct Dl_info:
        const char *dli_fname
    int dladdr(const void *addr, Dl_info *info)


# --------------------------------------------------------------------------
# Settings, the library check, and the exceptions

import os as _os

# The package's Python parts the core calls, handed over once by
# evx/__init__.py (connect): the core imports nothing of the package.
cdef object g_error = None         # evx._errors.error
cdef object g_flag = None          # evx._args.flag
cdef object g_wrap = None          # evx._native.wrap
cdef object g_fence_type = None    # evx.Fence
cdef object g_fence_wait = None    # evx._fence's Stream.wait(fence, value)
cdef object g_borrow_event = None  # evx._event.borrow
cdef bint g_release_all = _os.environ.get("EVX_PYTHON_RELEASE_GIL", "") not in ("", "0")

# Devices whose first event has been made: their events are made holding the
# GIL. Ordinals past the table always release it.
cdef enum:
    WARM_DEVICES = 256
cdef unsigned char g_warm[WARM_DEVICES]


def library_path():
    """The path of the libevx file this module linked, as the dynamic linker
    opened it."""
    cdef Dl_info info
    if dladdr(<const void *>&evx_version, &info) == 0 or info.dli_fname == NULL:
        raise ImportError("evx._core: dladdr() cannot name the libevx it linked")
    return (<bytes>info.dli_fname).decode("utf-8", "surrogateescape")


def check_library_version():
    """Raises ImportError when the linked libevx is of another major version
    or an older minor one than the headers this module was built with."""
    cdef unsigned v = evx_version()
    if (v // 10000 != <unsigned>EVX_VERSION_MAJOR or
            v < <unsigned>(EVX_VERSION_MAJOR * 10000 + EVX_VERSION_MINOR * 100)):
        raise ImportError(
            "evx._core was built for libevx %d.%d and later %d.x; the library "
            "it loaded (%s) is %d.%d.%d" % (
                EVX_VERSION_MAJOR, EVX_VERSION_MINOR, EVX_VERSION_MAJOR,
                library_path(), v // 10000, v // 100 % 100, v % 100))


def connect(error, flag, wrap, fence_type, fence_wait, borrow_event):
    """Called once by evx/__init__.py, before any call can fail: ``error``
    (evx._errors.error) makes the exception of a status, ``flag``
    (evx._args.flag) checks a yes/no argument, ``wrap`` (evx._native.wrap)
    borrows another framework's stream, ``fence_wait(stream, fence,
    value)`` queues ``Stream.wait(fence, value)`` for a ``fence_type``
    (evx.Fence), and ``borrow_event(obj, op, device)`` (evx._event.borrow)
    borrows another framework's event for one call, as an EventCore the
    caller closes (``device``: the one to take where the object names
    none)."""
    global g_error, g_flag, g_wrap, g_fence_type, g_fence_wait, g_borrow_event
    g_error, g_flag, g_wrap = error, flag, wrap
    g_fence_type, g_fence_wait = fence_type, fence_wait
    g_borrow_event = borrow_event


def releases_gil_always():
    """Whether every call releases the GIL (EVX_PYTHON_RELEASE_GIL=1)."""
    return g_release_all


cdef object error(evx_status_t st, str op, message=None):
    """evx._errors.error(st, op, message): the exception for a status (the
    library's thread-local message when ``message`` is None)."""
    return g_error(st, op, message)


cdef inline object failure(evx_status_t st, str op):
    """The exception for a status just returned on this thread."""
    return error(st, op)


cdef object done_or_raise(evx_status_t st, str op):
    """A query's answer as is_done gives it."""
    if st == EVX_SUCCESS:
        return True
    if st == EVX_ERROR_NOT_READY:
        return False
    raise failure(st, op)


cdef object gone(obj, str op, str role):
    """The exception for a closed object given to op."""
    return error(EVX_ERROR_INVALID_HANDLE, op, "%s is %s" % (role, obj._gone))


cdef bint checked_flag(value, str op, str what) except -1:
    """A yes/no argument: True or False, or evx._args.flag's check (TypeError
    or ValueError naming the value for anything but a bool, 0 or 1)."""
    if value is True:
        return True
    if value is False:
        return False
    return g_flag(value, op, what)


cdef object misuse(str op, str message):
    """The exception for a call made out of order, with the status the C
    timers give for the same misuse (EVX_ERROR_ILLEGAL_STATE)."""
    return error(EVX_ERROR_ILLEGAL_STATE, op, message)


cdef void *handle_from(v) except? NULL:
    """A handle from what may be assigned to _h: an int, a ctypes.c_void_p
    (its .value) or None."""
    if v is None:
        return NULL
    if not isinstance(v, int):
        try:
            v = v.value                        # ctypes.c_void_p
        except AttributeError:
            raise TypeError("an evx handle is an int, a ctypes.c_void_p or "
                            "None, not %s" % type(v).__name__) from None
        if v is None:
            return NULL
    return PyLong_AsVoidPtr(v)


# --------------------------------------------------------------------------
# Events and streams: one handle each


cdef class Handle:
    """What EventCore and StreamCore share: the evx handle (NULL once
    closed), the device ordinal, weak references, the context manager."""

    cdef void *h
    cdef readonly int _dev
    cdef object __weakref__

    @property
    def _h(self):
        """The evx handle as an int, or None once closed."""
        return None if self.h == NULL else PyLong_FromVoidPtr(self.h)

    @_h.setter
    def _h(self, v):
        self.h = handle_from(v)

    @_h.deleter
    def _h(self):
        raise AttributeError("_h cannot be deleted")

    @property
    def closed(self):
        """True once closed."""
        return self.h == NULL

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()            # by name: evx.Stream's close drops its owner
        return False


cdef tuple NO_ARGS = ()


cdef inline object new_core(type base, type cls):
    """A new object of cls (evx.Event or evx.Stream) made by its core base's
    own tp_new: cls.__new__ refuses callers (Event and Stream are made by
    the library's calls only), and base.__new__(cls) would go through a
    Python-level method call."""
    return (<PyTypeObject *>base).tp_new(cls, <PyObject *>NO_ARGS, NULL)


cdef type subclass_of(type base, cls, str what):
    """cls, checked to derive from base (a factory's argument)."""
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise TypeError("%s must be a subclass of evx._core.%s, not %r"
                        % (what, base.__name__, cls))
    return <type>cls


cdef class EventCore(Handle):
    """The compiled core of evx.Event."""

    cdef bint pooled          # acquired from a pool: closing gives it back

    @property
    def _gone(self):
        """What a closed event is: "closed", or "released to its pool"."""
        return "released to its pool" if self.pooled else "closed"

    cdef evx_status_t release(self) noexcept:
        cdef evx_event_t h = <evx_event_t>self.h
        cdef evx_status_t st = EVX_SUCCESS
        if h != NULL:
            self.h = NULL
            if g_release_all:
                with nogil:
                    st = evx_event_destroy(h)
            else:
                st = evx_event_destroy(h)
        return st

    def __dealloc__(self):
        self.release()

    def close(self):
        """Destroys the evx event (an event from a pool goes back to the
        pool). Pending work is not waited for. A second close does nothing."""
        cdef evx_status_t st = self.release()
        if st:
            raise failure(st, "Event.close")

    def record(self, stream, external=False):
        """Records the event on ``stream`` (an evx Stream of the event's
        device). ``external=True`` records an external event node inside
        stream capture (the driver refuses it outside capture)."""
        cdef evx_event_t h = <evx_event_t>self.h
        cdef evx_stream_t s
        cdef evx_status_t st
        cdef unsigned flags = EVX_EVENT_RECORD_DEFAULT
        if external is not False and checked_flag(external, "Event.record", "external"):
            flags = EVX_EVENT_RECORD_EXTERNAL
        if not isinstance(stream, StreamCore):
            raise TypeError("Event.record() needs an evx.Stream (wrap others "
                            "with evx.Stream.wrap), not %s" % type(stream).__name__)
        s = <evx_stream_t>(<StreamCore>stream).h
        if h == NULL:
            raise gone(self, "Event.record", "the event")
        if s == NULL:
            raise gone(stream, "Event.record", "the stream")
        with nogil:
            st = evx_event_record_with_flags(h, s, flags)
        if st:
            raise failure(st, "Event.record")

    def sync(self):
        """Waits until the recorded work has completed."""
        cdef evx_event_t h = <evx_event_t>self.h
        cdef evx_status_t st
        if h == NULL:
            raise gone(self, "Event.sync", "the event")
        with nogil:
            st = evx_event_synchronize(h)
        if st:
            raise failure(st, "Event.sync")

    @property
    def is_done(self):
        """True when the recorded work has completed (or the event was never
        recorded), False while it is pending. Errors raise CudaError."""
        cdef evx_event_t h = <evx_event_t>self.h
        cdef evx_status_t st
        if h == NULL:
            raise gone(self, "Event.is_done", "the event")
        if g_release_all:
            with nogil:
                st = evx_event_query(h)
        else:
            st = evx_event_query(h)
        return done_or_raise(st, "Event.is_done")

    cdef float elapsed(self, EventCore start, str op) except? -1.0:
        cdef float ms = 0.0
        cdef evx_status_t st
        cdef evx_event_t a = <evx_event_t>start.h
        cdef evx_event_t b = <evx_event_t>self.h
        if b == NULL:
            raise gone(self, op, "the end event")
        if a == NULL:
            raise gone(start, op, "the start event")
        if g_release_all:
            with nogil:
                st = evx_event_elapsed_time(&ms, a, b)
        else:
            st = evx_event_elapsed_time(&ms, a, b)
        if st:
            raise failure(st, op)
        return ms

    def __sub__(self, other):
        """``end - start``: milliseconds from start to end."""
        if not isinstance(other, EventCore):
            return NotImplemented
        return self.elapsed(<EventCore>other, "Event.__sub__ (end - start)")

    def elapsed_since(self, start):
        """The same as ``self - start``: milliseconds from start to this
        event. ``start`` may be another framework's event (anything
        ``Event.wrap`` takes that names its device), borrowed for the
        call."""
        cdef EventCore tmp
        if isinstance(start, EventCore):
            return self.elapsed(<EventCore>start, "Event.elapsed_since")
        if self.h == NULL:
            raise gone(self, "Event.elapsed_since", "the end event")
        tmp = borrowed_event(start, "Event.elapsed_since", self._dev)
        try:
            return self.elapsed(tmp, "Event.elapsed_since")
        finally:
            tmp.release()     # a borrow's destroy frees nothing of the driver's


cdef EventCore borrowed_event(obj, str op, int dev):
    """Another framework's event (or an object with __cuda_event__),
    borrowed for one call through evx._event.borrow, on device ``dev`` (that
    of the evx object the call pairs it with) where the object names none;
    its TypeError names op and what was given."""
    if isinstance(obj, (StreamCore, g_fence_type)):
        raise TypeError("%s() needs an event, not %s" % (op, type(obj).__name__))
    return <EventCore?>g_borrow_event(obj, op, dev)


cdef EventCore make_event(type cls, int dev, unsigned flags, str op):
    """An event of cls (evx.Event; EventCore for one used inside a call)
    for a new driver event."""
    cdef evx_event_t h = NULL
    cdef evx_status_t st
    cdef EventCore ev
    if 0 <= dev < WARM_DEVICES and g_warm[dev]:
        if g_release_all:
            with nogil:
                st = evx_device_create_event(dev, flags, &h)
        else:
            st = evx_device_create_event(dev, flags, &h)
    else:
        with nogil:
            st = evx_device_create_event(dev, flags, &h)
        if st == EVX_SUCCESS and 0 <= dev < WARM_DEVICES:
            g_warm[dev] = 1
    if st:
        raise failure(st, op)
    try:
        ev = new_core(EventCore, cls)
    except BaseException:
        evx_event_destroy(h)
        raise
    ev.h = h
    ev._dev = dev
    return ev


cdef class DeviceCore:
    """The compiled core of evx.Device: its ordinal and create_event, the
    call a loop that makes events per step makes."""

    cdef readonly int _id
    cdef type event_type      # the class of the events it makes (evx.Event)

    def create_event(self, timing=True, blocking_sync=False, ipc=False):
        """A new :class:`Event` of this device, not yet recorded.

        ``timing=False`` makes a cheaper event that cannot be timed;
        ``blocking_sync=True`` makes :meth:`Event.sync` block the thread
        instead of spinning; ``ipc=True`` needs ``timing=False`` (the library
        refuses it otherwise). Each is a bool (or 0 or 1); anything else is
        refused, naming the value.
        """
        cdef unsigned flags = EVX_EVENT_DEFAULT
        if timing is not True and not checked_flag(timing, "Device.create_event", "timing"):
            flags |= EVX_EVENT_DISABLE_TIMING
        if blocking_sync is not False and checked_flag(blocking_sync, "Device.create_event",
                                                       "blocking_sync"):
            flags |= EVX_EVENT_BLOCKING_SYNC
        if ipc is not False and checked_flag(ipc, "Device.create_event", "ipc"):
            flags |= EVX_EVENT_INTERPROCESS
        return make_event(self.event_type, self._id, flags, "Device.create_event")


def new_device(cls, int ordinal, event_type):
    """A new object of cls (evx.Device) for a device ordinal, whose
    create_event makes objects of event_type (evx.Event)."""
    cdef type c = subclass_of(DeviceCore, cls, "new_device(): cls")
    cdef type et = subclass_of(EventCore, event_type, "new_device(): event_type")
    cdef DeviceCore d = new_core(DeviceCore, c)
    d._id = ordinal
    d.event_type = et
    return d


def new_event(cls, handle, int ordinal, bint pooled=False):
    """A new object of cls (evx.Event) owning an existing evx event handle
    (``pooled``: acquired from a pool)."""
    cdef EventCore ev = new_core(EventCore, subclass_of(EventCore, cls, "new_event(): cls"))
    ev.h = <evx_event_t>handle_from(handle)
    ev._dev = ordinal
    ev.pooled = pooled
    return ev


# --------------------------------------------------------------------------
# Streams


cdef class StreamCore(Handle):
    """The compiled core of evx.Stream."""

    cdef type event_type      # the class of the events record() makes

    @property
    def _gone(self):
        return "closed"

    cdef evx_status_t release(self) noexcept:
        # Destroying a borrowed stream's handle never touches the driver
        # stream (evx only forgets it), so this may run after a subclass's
        # slots (the wrapped object) are cleared.
        cdef evx_stream_t h = <evx_stream_t>self.h
        cdef evx_status_t st = EVX_SUCCESS
        if h != NULL:
            self.h = NULL
            with nogil:
                st = evx_stream_destroy(h)
        return st

    def __dealloc__(self):
        self.release()

    def close(self):
        """Ends the evx stream (destroying the driver stream only if evx owns
        it). A second close does nothing."""
        cdef evx_status_t st = self.release()
        if st:
            raise failure(st, "Stream.close")

    def record(self, event=None):
        """Records ``event`` (a new timing event when None) on this stream;
        returns the event."""
        cdef evx_stream_t s = <evx_stream_t>self.h
        cdef evx_event_t e
        cdef evx_status_t st
        if event is None:
            if s == NULL:
                raise gone(self, "Stream.record", "the stream")
            event = make_event(self.event_type, self._dev, EVX_EVENT_DEFAULT,
                               "Stream.record")
        elif not isinstance(event, EventCore):
            raise TypeError("Stream.record() needs an evx.Event or None, not %s"
                            % type(event).__name__)
        e = <evx_event_t>(<EventCore>event).h
        if s == NULL:
            raise gone(self, "Stream.record", "the stream")
        if e == NULL:
            raise gone(event, "Stream.record", "the event")
        with nogil:
            st = evx_event_record(e, s)
        if st:
            raise failure(st, "Stream.record")
        return event

    def wait(self, event_or_stream, value=None, *, external=False):
        """Makes future work on this stream wait for an Event, for all work
        queued so far on another Stream (through a temporary event recorded
        there), or, with ``value``, until an evx.Fence is at least
        ``value`` (the fence may be signalled later). Does not block the
        thread. ``external=True`` waits as an external event node inside
        stream capture (events and streams only)."""
        cdef evx_stream_t s = <evx_stream_t>self.h
        cdef evx_stream_t other
        cdef evx_event_t e
        cdef evx_status_t st
        cdef unsigned flags = EVX_EVENT_WAIT_DEFAULT
        if value is not None or not isinstance(event_or_stream, (EventCore, StreamCore)):
            if isinstance(event_or_stream, (EventCore, StreamCore)):
                raise TypeError("Stream.wait: a value is given only with an evx.Fence "
                                "(Stream.wait(fence, value)), not with %s (external= is "
                                "keyword-only)" % type(event_or_stream).__name__)
            if value is None:
                if isinstance(event_or_stream, g_fence_type):
                    raise TypeError("Stream.wait: value must be an int, not NoneType "
                                    "(Stream.wait(fence, value): the value to wait for)")
                self.wait_foreign(event_or_stream, external)
                return
            if external is not False:
                raise TypeError("Stream.wait: external= is for events and streams, "
                                "not fences")
            if s == NULL:
                raise gone(self, "Stream.wait", "the stream")
            g_fence_wait(self, event_or_stream, value)
            return
        if external is not False and checked_flag(external, "Stream.wait", "external"):
            flags = EVX_EVENT_WAIT_EXTERNAL
        cdef EventCore tmp
        if isinstance(event_or_stream, EventCore):
            e = <evx_event_t>(<EventCore>event_or_stream).h
            if s == NULL:
                raise gone(self, "Stream.wait", "the stream")
            if e == NULL:
                raise gone(event_or_stream, "Stream.wait", "the event waited for")
            with nogil:
                st = evx_stream_wait_event(s, e, flags)
            if st:
                raise failure(st, "Stream.wait")
            return
        if not isinstance(event_or_stream, StreamCore):
            raise TypeError("Stream.wait() needs an evx.Event or an evx.Stream, "
                            "not %s" % type(event_or_stream).__name__)
        other = <evx_stream_t>(<StreamCore>event_or_stream).h
        if s == NULL:
            raise gone(self, "Stream.wait", "the stream")
        if other == NULL:
            raise gone(event_or_stream, "Stream.wait", "the stream waited for")
        if event_or_stream is self:
            return
        tmp = make_event(EventCore, (<StreamCore>event_or_stream)._dev,
                         EVX_EVENT_DISABLE_TIMING, "Stream.wait")
        with nogil:
            st = evx_event_record(<evx_event_t>tmp.h, other)
            if st == EVX_SUCCESS:
                st = evx_stream_wait_event(s, <evx_event_t>tmp.h, flags)
        err = failure(st, "Stream.wait") if st else None   # the first failure
        st = tmp.release()
        if err is not None:
            raise err
        if st:
            raise failure(st, "Stream.wait")

    cdef int wait_foreign(self, obj, external) except -1:
        """Stream.wait for another framework's event, borrowed for the
        call (a TypeError naming what was given for anything else)."""
        cdef EventCore tmp
        if self.h == NULL:
            raise gone(self, "Stream.wait", "the stream")
        try:
            tmp = borrowed_event(obj, "Stream.wait", self._dev)
        except TypeError as exc:
            raise TypeError("Stream.wait() needs an evx.Event, an evx.Stream, an evx.Fence "
                            "and a value, or another framework's event (%s)" % exc) from None
        try:
            self.wait(tmp, external=external)
        finally:
            tmp.release()
        return 0

    def sync(self):
        """Waits until all work queued on the stream has completed."""
        cdef evx_stream_t s = <evx_stream_t>self.h
        cdef evx_status_t st
        if s == NULL:
            raise gone(self, "Stream.sync", "the stream")
        with nogil:
            st = evx_stream_synchronize(s)
        if st:
            raise failure(st, "Stream.sync")

    @property
    def is_done(self):
        """True when all queued work has completed, False while busy. Errors
        raise CudaError."""
        cdef evx_stream_t s = <evx_stream_t>self.h
        cdef evx_status_t st
        if s == NULL:
            raise gone(self, "Stream.is_done", "the stream")
        if g_release_all:
            with nogil:
                st = evx_stream_query(s)
        else:
            st = evx_stream_query(s)
        return done_or_raise(st, "Stream.is_done")


def new_stream(cls, handle, int ordinal, event_type):
    """A new object of cls (evx.Stream) owning an existing evx stream
    handle, whose record() makes objects of event_type (evx.Event)."""
    cdef type c = subclass_of(StreamCore, cls, "new_stream(): cls")
    cdef type et = subclass_of(EventCore, event_type, "new_stream(): event_type")
    cdef StreamCore s = new_core(StreamCore, c)
    s.h = <evx_stream_t>handle_from(handle)
    s._dev = ordinal
    s.event_type = et
    return s


# --------------------------------------------------------------------------
# The notifier's hot calls (evx.aio): a watch per await, a read per wakeup.
# Creation, the file descriptor and destruction go through evx.capi.

cdef enum:
    NOTIFIER_READ_MAX_ = 1024   # tokens one notifier_read call can take

#: The most tokens one notifier_read call takes.
NOTIFIER_READ_MAX = NOTIFIER_READ_MAX_


def notifier_watch(notifier, event, uint64_t token, str op="evx.aio.wait"):
    """Watches ``event`` (an evx Event) on ``notifier`` (an evx_notifier_t
    handle as an int or a ctypes.c_void_p) under ``token``
    (evx_notifier_watch). A closed event is given to the library, which
    refuses it with EVX_ERROR_INVALID_HANDLE and its message."""
    if not isinstance(event, EventCore):
        raise TypeError("%s() needs an evx.Event, not %s" % (op, type(event).__name__))
    cdef evx_notifier_t n = <evx_notifier_t>handle_from(notifier)
    cdef evx_event_t e = <evx_event_t>(<EventCore>event).h
    cdef evx_status_t st
    if g_release_all:
        with nogil:
            st = evx_notifier_watch(n, e, token)
    else:
        st = evx_notifier_watch(n, e, token)
    if st:
        raise failure(st, op)


def notifier_watch_fence(notifier, fence, uint64_t value, uint64_t token,
                         str op="evx.aio.wait_fence"):
    """Watches ``fence`` (an evx_fence_t handle as an int) reaching
    ``value`` on ``notifier`` under ``token`` (evx_notifier_watch_fence):
    the hot call of ``await fence.wait_async(v)``, as notifier_watch is of
    an event's."""
    cdef evx_notifier_t n = <evx_notifier_t>handle_from(notifier)
    cdef evx_fence_t f = <evx_fence_t>handle_from(fence)
    cdef evx_status_t st
    if g_release_all:
        with nogil:
            st = evx_notifier_watch_fence(n, f, value, token)
    else:
        st = evx_notifier_watch_fence(n, f, value, token)
    if st:
        raise failure(st, op)


cdef tuple read_tokens(notifier, uint32_t capacity, bint checked, str op):
    """Both reads: (tokens, status of the call)."""
    cdef evx_notifier_t n = <evx_notifier_t>handle_from(notifier)
    cdef uint64_t buf[NOTIFIER_READ_MAX_]
    cdef uint32_t count = 0
    cdef uint32_t i
    cdef evx_status_t st
    if capacity > NOTIFIER_READ_MAX_:
        raise ValueError("%s: capacity %d is over NOTIFIER_READ_MAX (%d)"
                         % (op, capacity, NOTIFIER_READ_MAX_))
    if g_release_all:
        with nogil:
            st = (evx_notifier_read_checked(n, buf, capacity, &count) if checked
                  else evx_notifier_read(n, buf, capacity, &count))
    else:
        st = (evx_notifier_read_checked(n, buf, capacity, &count) if checked
              else evx_notifier_read(n, buf, capacity, &count))
    return [buf[i] for i in range(count)], st


def notifier_read(notifier, uint32_t capacity):
    """Up to ``capacity`` (at most NOTIFIER_READ_MAX) tokens of completed
    watches, as a list (evx_notifier_read; it never waits)."""
    tokens, st = read_tokens(notifier, capacity, False, "notifier_read")
    if st:
        raise failure(st, "evx.aio: evx_notifier_read")
    return tokens


def notifier_read_checked(notifier, uint32_t capacity, str op="evx.aio.wait"):
    """As notifier_read, with evx_notifier_read_checked: ``(tokens, err)``,
    where ``err`` is None, or the CudaError (not raised) of a host function
    that failed before the last token's event, chained to the function's
    own exception; the read stopped after that token. Other failures of
    the call raise."""
    tokens, st = read_tokens(notifier, capacity, True, "notifier_read_checked")
    if st and not tokens:
        raise failure(st, "evx.aio: evx_notifier_read_checked")
    return tokens, (failure(st, op) if st else None)


# --------------------------------------------------------------------------
# timed: one C timer (evx_timer_*) per block
#
# The C timer owns the timing: its start and stop marks, the wait for the
# stop, the milliseconds, and ILLEGAL_STATE with its message for a misuse
# of its order. A timed object adds only what a with-block needs (one block
# per object, the stream kept alive). A freed timer
# is kept by its thread (in C) for the next block, with its driver events,
# so a loop of blocks makes no driver object after the first; nothing here
# is global.

cdef enum:
    T_NEW, T_RUNNING, T_STOPPED, T_STOP_FAILED


@cython.final
@cython.freelist(16)
cdef class timed:
    """timed(stream)

    ``with evx.timed(stream) as t: ...`` starts a timer (evx_timer_*) on
    the stream when the block starts and stops it when the block ends; the
    first read of ``t.elapsed_ms`` waits for the stop mark and gives the
    milliseconds between them (later reads give the same number without a
    call).

    ``stream`` is an evx Stream or anything Stream.wrap accepts (borrowed
    for the block). A timed object times one block. Its timer is destroyed
    when the timed object is garbage and kept by the thread for its next
    block, so a block makes no driver object.

    A block on a stream being captured into a CUDA graph is timed inside
    the graph (docs/graphs.md): each read of ``t.elapsed_ms`` gives the time
    of the graph's last launch, and raises ``CudaError`` (ILLEGAL_STATE)
    before the first launch.
    """

    cdef StreamCore stream      # kept: the marks are on it
    cdef object wrapped         # the object a borrowed stream was made from
    cdef evx_timer_t t          # from __enter__ on; destroyed at the end
    cdef int dev
    cdef bint own               # the stream was wrapped here: closed at the end
    cdef unsigned char state

    def __cinit__(self, stream):
        if isinstance(stream, StreamCore):
            self.stream = <StreamCore>stream
        else:
            # Borrowed as Stream.wrap(stream) would, for the block only: an
            # evx stream handle of the core's own class, with the object
            # kept referenced until the timed object is gone.
            h, dev, _ = g_wrap(stream, None, "evx.timed")
            s = new_core(StreamCore, StreamCore)
            (<StreamCore>s).h = handle_from(h)
            (<StreamCore>s)._dev = dev
            (<StreamCore>s).event_type = EventCore
            self.stream = <StreamCore>s
            self.wrapped = stream
            self.own = True
        self.dev = self.stream._dev

    cdef int close_borrowed(self) except -1:
        """Ends the stream wrapped for the block and drops the object."""
        self.wrapped = None
        self.stream.close()
        return 0

    def __dealloc__(self):
        if self.t != NULL:
            evx_timer_destroy(self.t)
            self.t = NULL

    @property
    def _timer(self):
        """The C timer's handle (an int), or None before the block."""
        return PyLong_FromVoidPtr(<void *>self.t) if self.t != NULL else None

    def __enter__(self):
        cdef evx_timer_t t = NULL
        cdef evx_status_t st
        cdef evx_stream_t s = <evx_stream_t>self.stream.h
        if self.state != T_NEW:
            # As evx_timer_*: a misuse of a timer's order is ILLEGAL_STATE.
            raise misuse("evx.timed.__enter__",
                         "this evx.timed object was entered already; it times one block, "
                         "make a new one")
        if s == NULL:
            raise gone(self.stream, "evx.timed", "the stream")
        with nogil:
            st = evx_device_create_timer(self.dev, &t)
            if st == EVX_SUCCESS:
                st = evx_timer_start(t, s)
                if st != EVX_SUCCESS:
                    evx_timer_destroy(t)        # leaves the start's message
                    t = NULL
        if st:
            raise failure(st, "evx.timed")
        self.t = t
        self.state = T_RUNNING
        return self

    def __exit__(self, exc_type, exc, tb):
        cdef evx_stream_t s = <evx_stream_t>self.stream.h
        cdef evx_status_t st = EVX_SUCCESS
        if self.state != T_RUNNING:
            raise misuse("evx.timed.__exit__", "__exit__ without __enter__ (as "
                         "evx_timer_stop on a timer not started)")
        if s == NULL:
            err = gone(self.stream, "evx.timed", "the stream")
        else:
            with nogil:
                st = evx_timer_stop(self.t, s)
            err = failure(st, "evx.timed") if st else None
        if err is None:
            self.state = T_STOPPED
            if self.own:
                self.close_borrowed()
            return False
        self.state = T_STOP_FAILED
        if exc_type is not None:      # the block's own exception wins
            if self.own:
                self.close_borrowed()
            return False
        if self.own:
            try:
                self.close_borrowed()
            except Exception:
                pass
        raise err

    @property
    def elapsed_ms(self):
        """Milliseconds from the start of the block to its end (on the GPU
        timeline); synchronizes with the stop mark on first read."""
        cdef float ms = 0.0
        cdef evx_status_t st
        cdef evx_timer_t t = self.t
        if self.state == T_STOP_FAILED:
            raise misuse("evx.timed.elapsed_ms", "the stop mark failed, so there is no "
                         "time (as evx_timer_elapsed on a timer started but not stopped)")
        if self.state != T_STOPPED:
            raise misuse("evx.timed.elapsed_ms", "known once the with-block has ended (as "
                         "evx_timer_elapsed on a timer not started and stopped)")
        with nogil:
            st = evx_timer_synchronize(t, &ms)
        if st:
            raise failure(st, "evx.timed.elapsed_ms")
        # Not kept: a block captured into a graph has each launch's time
        # (its marks are recorded again by every launch), and asking the
        # stream at the block's end whether it was being captured would put
        # a driver call on every block. Once the stop mark is done, a read
        # is a synchronize that returns at once and an elapsed time.
        return ms
