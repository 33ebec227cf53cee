# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""The hot core of the Python layer, in ctypes.

This module and the compiled ``evx._speedups`` (``_speedups.c``) are two
implementations of one interface, as CPython's ``_pyio`` and ``_io`` are:
the event and stream base classes with their hot methods, event creation,
and ``timed``. The package uses ``_speedups`` when it is built and this
module otherwise (``evx.implementation`` says which); the tests run against
both. A change to one is a change to the other.

The interface:

- ``bind_library(lib, gil_lib)``: the library the package opened. ``lib``
  releases the GIL during calls (``ctypes.CDLL``), ``gil_lib`` keeps it
  (``ctypes.PyDLL``, or ``lib`` itself with EVX_PYTHON_RELEASE_GIL=1).
- ``bind_types(error, event_type, stream_type, wrap_stream)``: called once
  the package has defined its subclasses ``Event`` and ``Stream`` of
  ``EventCore`` and ``StreamCore``; ``error(status)`` makes the exception to
  raise; ``wrap_stream(obj)`` is ``Stream.wrap``.
- ``EventCore`` / ``StreamCore``: ``_h`` (the handle: None once closed; a
  ``c_void_p`` here, an int in ``_speedups``; the package passes it only to
  typed ``capi`` functions, which take both), ``_dev``, ``closed``,
  ``close()``, the context manager, and the hot methods.
- ``create_event(ordinal, flags)``, ``new_event(handle, ordinal)``,
  ``new_stream(handle, ordinal)``: objects of the bound subclasses.
- ``timed``, ``clear_timers()``, ``timer_cache_info()``.

The GIL: every call that can wait (synchronize, record: the driver may block
on a full queue, and anything queued behind a host function, which needs the
GIL to run its Python code) goes through ``lib``, which releases it. The
calls that never wait, neither on the GPU nor on a lock that a thread waiting
for the GIL could hold, keep it: releasing and retaking it costs more than
the call. They are the queries and elapsed time (which answers NOT_READY
instead of waiting), and the creation and destruction of events: evx takes an
event from its reuse cache or calls cuEventCreate, and gives it back or calls
cuEventDestroy, none of which waits for GPU work or for a host function. The
one slow step is a device's first use, which retains its primary context
(hundreds of milliseconds on a GPU); so events of a device are made through
the releasing binding until one has been made.

The functions are bound without argtypes: ctypes then converts each
argument through its type's from_param, 100-150 ns per argument, more than
the C call itself. So they are only ever called with handles (``c_void_p``
objects or None: evx never dereferences a handle, so a wrong one is an
INVALID_HANDLE status, never a crash), ``byref()`` of ctypes objects made
here, and ints that fit a C int. Out-parameters are per call: a module-level
buffer is not safe even under the GIL, because a thread switch, a signal
handler or a ``__del__`` can come between the call that fills it and the
read that empties it.
"""

import ctypes as _ct

from . import _capi

IMPLEMENTATION = "ctypes"

_c_void_p = _ct.c_void_p
_c_float = _ct.c_float
_byref = _ct.byref
_object_new = object.__new__

_NOT_READY = _capi.EVX_ERROR_NOT_READY
_DISABLE_TIMING = _capi.EVX_EVENT_DISABLE_TIMING

# Set by bind().
_error = None
_Event = None
_Stream = None
_wrap_stream = None
_ev_create_gil = _ev_create = _ev_destroy = _ev_record = _ev_query = None
_ev_sync = _ev_elapsed = None
_st_wait = _st_sync = _st_query = _st_destroy = None
_tm_create = _tm_destroy = _tm_start = _tm_stop = _tm_sync = None

# Devices whose first event has been made (so their events are made through
# the GIL-holding binding).
_warm = set()


def bind_library(lib, gil_lib):
    global _ev_create_gil, _ev_create, _ev_destroy, _ev_record, _ev_query
    global _ev_sync, _ev_elapsed, _st_wait, _st_sync, _st_query, _st_destroy
    global _tm_create, _tm_destroy, _tm_start, _tm_stop, _tm_sync

    def bare(l, name):
        fn = l[name]        # a fresh function object, not capi's typed one
        fn.restype = _capi.evx_status_t
        return fn
    _ev_create_gil = bare(gil_lib, "evx_device_create_event")
    _ev_destroy = bare(gil_lib, "evx_event_destroy")
    _ev_query = bare(gil_lib, "evx_event_query")
    _ev_elapsed = bare(gil_lib, "evx_event_elapsed_time")
    _st_query = bare(gil_lib, "evx_stream_query")
    _ev_create = bare(lib, "evx_device_create_event")
    _ev_record = bare(lib, "evx_event_record")
    _ev_sync = bare(lib, "evx_event_synchronize")
    _st_wait = bare(lib, "evx_stream_wait_event")
    _st_sync = bare(lib, "evx_stream_synchronize")
    _st_destroy = bare(lib, "evx_stream_destroy")
    _tm_create = bare(lib, "evx_device_create_timer")
    _tm_destroy = bare(lib, "evx_timer_destroy")
    _tm_start = bare(lib, "evx_timer_start")
    _tm_stop = bare(lib, "evx_timer_stop")
    _tm_sync = bare(lib, "evx_timer_synchronize")
    EventCore._destroy = _ev_destroy
    StreamCore._destroy = _st_destroy


def set_error(error):
    """``error(status)`` makes the exception every failure here raises."""
    global _error
    _error = error


def bind_types(error, event_type, stream_type, wrap_stream):
    global _Event, _Stream, _wrap_stream
    if not (issubclass(event_type, EventCore) and issubclass(stream_type, StreamCore)):
        raise TypeError("bind_types(): the event and stream types must derive "
                        "from EventCore and StreamCore")
    set_error(error)
    _Event, _Stream, _wrap_stream = event_type, stream_type, wrap_stream


def _as_handle(h):
    if h is None or type(h) is _c_void_p:
        return h
    return _c_void_p(h)


def create_event(ordinal, flags):
    h = _c_void_p()
    if ordinal in _warm:
        st = _ev_create_gil(ordinal, flags, _byref(h))
    else:
        st = _ev_create(ordinal, flags, _byref(h))
        if not st:
            _warm.add(ordinal)
    if st:
        raise _error(st)
    ev = _object_new(_Event)
    ev._h = h
    ev._dev = ordinal
    return ev


def new_event(handle, ordinal):
    ev = _object_new(_Event)
    ev._h = _as_handle(handle)
    ev._dev = ordinal
    return ev


def new_stream(handle, ordinal):
    s = _object_new(_Stream)
    s._h = _as_handle(handle)
    s._dev = ordinal
    return s


def _done(st):
    """A query's answer as is_done gives it."""
    if st:
        if st == _NOT_READY:
            return False
        raise _error(st)
    return True


class Owned:
    """What every object that owns one evx handle in ``_h`` shares, here and
    in the package's Timeline and EventPool: ``close()`` (a second close
    does nothing), ``closed``, the context manager, and a ``__del__`` that
    never raises, also at interpreter exit. ``_destroy`` is the destroy
    function (set by bind_library() for the two cores here)."""

    __slots__ = ()
    _destroy = None

    @property
    def closed(self):
        return self._h is None

    def close(self):
        h = self._h
        if h is not None:
            self._h = None
            st = self._destroy(h)
            if st:
                raise _error(st)

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


class EventCore(Owned):
    __slots__ = ("_h", "_dev", "__weakref__")

    def record(self, stream):
        if not isinstance(stream, StreamCore):
            raise TypeError("Event.record() needs an evx.Stream (wrap others "
                            "with evx.Stream.wrap)")
        st = _ev_record(self._h, stream._h)
        if st:
            raise _error(st)

    @property
    def is_done(self):
        return _done(_ev_query(self._h))

    def sync(self):
        st = _ev_sync(self._h)
        if st:
            raise _error(st)

    def __sub__(self, other):
        if not isinstance(other, EventCore):
            return NotImplemented
        ms = _c_float()
        st = _ev_elapsed(_byref(ms), other._h, self._h)
        if st:
            raise _error(st)
        return ms.value

    def elapsed_since(self, start):
        if not isinstance(start, EventCore):
            raise TypeError("elapsed_since() needs an evx.Event")
        return self.__sub__(start)


class StreamCore(Owned):
    __slots__ = ("_h", "_dev", "__weakref__")

    def record(self, event=None):
        if event is None:
            event = create_event(self._dev, 0)
        elif not isinstance(event, EventCore):
            raise TypeError("Stream.record() needs an evx.Event or None")
        st = _ev_record(event._h, self._h)
        if st:
            raise _error(st)
        return event

    def wait(self, event_or_stream):
        if isinstance(event_or_stream, EventCore):
            st = _st_wait(self._h, event_or_stream._h, 0)
            if st:
                raise _error(st)
            return
        if isinstance(event_or_stream, StreamCore):
            if event_or_stream is self:
                return
            tmp = create_event(event_or_stream._dev, _DISABLE_TIMING)
            try:
                st = _ev_record(tmp._h, event_or_stream._h)
                if st:
                    raise _error(st)
                st = _st_wait(self._h, tmp._h, 0)
                if st:
                    raise _error(st)
            finally:
                tmp.close()
            return
        raise TypeError("Stream.wait() needs an evx.Event or an evx.Stream, "
                        "not %s" % type(event_or_stream).__name__)

    def sync(self):
        st = _st_sync(self._h)
        if st:
            raise _error(st)

    @property
    def is_done(self):
        return _done(_st_query(self._h))


# --------------------------------------------------------------------------
# timed

# Timers ready for reuse, per device ordinal: lists of (handle, c_float,
# byref(c_float)), the float being the timer's own out-parameter for
# evx_timer_synchronize. A timed object takes one in __enter__ and owns it
# until it is garbage (so reading elapsed_ms from several threads at once is
# safe); its __del__ puts it back.
_timer_cache = {}
TIMER_CACHE_MAX = 16
_timers_made = [0]


def timer_cache_info():
    """``(timers made so far, {device: timers idle in the cache})``."""
    return _timers_made[0], {d: len(l) for d, l in _timer_cache.items()}


def clear_timers():
    """Destroys the idle timers (at interpreter exit)."""
    for lst in list(_timer_cache.values()):
        while lst:
            _tm_destroy(lst.pop()[0])


def _timer_new(ordinal):
    h = _c_void_p()
    st = _tm_create(ordinal, _byref(h))
    if st:
        raise _error(st)
    _timers_made[0] += 1
    ms = _c_float()
    return (h, ms, _byref(ms))


def _timer_put(ordinal, t):
    lst = _timer_cache.get(ordinal)
    if lst is None:
        lst = _timer_cache.setdefault(ordinal, [])
    if len(lst) < TIMER_CACHE_MAX:
        lst.append(t)
    else:
        _tm_destroy(t[0])


class timed:
    # _state: 0 new, 1 running, 2 stopped, 3 the stop failed, 4 read (_ms set)
    # _s: the evx Stream (kept referenced: the timer's marks are on it)
    # _own: whether _s was wrapped here, to be closed when the block ends
    # _t: the timer, a _timer_cache entry, set from __enter__ on
    __slots__ = ("_s", "_own", "_state", "_t", "_ms")

    def __init__(self, stream):
        if isinstance(stream, StreamCore):
            self._s = stream
            self._own = False
        else:
            self._s = _wrap_stream(stream)
            self._own = True
        self._state = 0

    def __enter__(self):
        if self._state:
            raise RuntimeError("an evx.timed object times one block; make a "
                               "new one")
        s = self._s
        try:
            t = _timer_cache[s._dev].pop()
        except (IndexError, KeyError):
            t = _timer_new(s._dev)
        st = _tm_start(t[0], s._h)
        if st:
            err = _error(st)
            _timer_put(s._dev, t)
            raise err
        self._t = t
        self._state = 1
        return self

    def __exit__(self, exc_type, exc, tb):
        s = self._s
        st = _tm_stop(self._t[0], s._h)
        if st:
            self._state = 3
            err = _error(st)
            if self._own:
                s.close()
            if exc_type is None:
                raise err
            return False
        self._state = 2
        if self._own:
            s.close()
        return False

    @property
    def elapsed_ms(self):
        state = self._state
        if state == 4:
            return self._ms
        if state == 2:
            t = self._t
            st = _tm_sync(t[0], t[2])
            if st:
                raise _error(st)
            ms = self._ms = t[1].value
            self._state = 4
            return ms
        if state == 3:
            raise RuntimeError("evx.timed: the stop mark failed; no time")
        raise RuntimeError("evx.timed: elapsed_ms is known once the "
                           "with-block has ended")

    def __del__(self, _cache=_timer_cache, _max=TIMER_CACHE_MAX):
        # _timer_put, inlined (and safe at interpreter teardown)
        try:
            t = self._t
            lst = _cache.get(self._s._dev)
            if lst is None:
                lst = _cache.setdefault(self._s._dev, [])
            if len(lst) < _max:
                lst.append(t)
            else:
                _tm_destroy(t[0])
        except Exception:          # never entered (no _t), or at teardown
            pass
