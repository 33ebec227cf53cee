/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 *
 * evx._speedups: the hot core of the Python layer, compiled.
 *
 * The same interface as _pycore.py, which documents it (and the GIL policy)
 * and is the reference: EventCore and StreamCore (the base classes of
 * evx.Event and evx.Stream) with their hot methods, create_event, new_event,
 * new_stream, timed, clear_timers and timer_cache_info. A change to one is a
 * change to the other; the Python tests run against both.
 *
 * It does not link libevx. bind_library() is given the ctypes library the
 * package opened (EVX_LIBRARY and the rest of _loader.py's search) and looks
 * the functions up in that same dlopen handle, so the compiled and the
 * ctypes paths always call one copy of the library, one handle table.
 *
 * Every C call is made either holding the GIL (calls that never wait:
 * create and destroy of events, queries, elapsed time) or releasing it
 * (everything that can wait), as _pycore.py explains; with
 * EVX_PYTHON_RELEASE_GIL=1 (the package passes lib as gil_lib) every call
 * releases it. The objects' own state (a handle, a timed block's state, the
 * timer cache) is only touched with the GIL held.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <dlfcn.h>
#include <string.h>

#include "evx/evx.h"

/* ------------------------------------------------------------------------
 * The library's functions, looked up in the handle the package opened. The
 * pointer types come from the prototypes in the headers. */

#define EVX_SPEEDUP_FUNCS(X)                                                  \
    X(evx_version)                                                            \
    X(evx_device_create_event)                                                \
    X(evx_event_destroy)                                                      \
    X(evx_event_record)                                                       \
    X(evx_event_query)                                                        \
    X(evx_event_synchronize)                                                  \
    X(evx_event_elapsed_time)                                                 \
    X(evx_stream_wait_event)                                                  \
    X(evx_stream_synchronize)                                                 \
    X(evx_stream_query)                                                       \
    X(evx_stream_destroy)                                                     \
    X(evx_device_create_timer)                                                \
    X(evx_timer_destroy)                                                      \
    X(evx_timer_start)                                                        \
    X(evx_timer_stop)                                                         \
    X(evx_timer_synchronize)

#define DECLARE_FN(name) static __typeof__(&name) p_##name;
EVX_SPEEDUP_FUNCS(DECLARE_FN)
#undef DECLARE_FN

static int g_library;           /* bind_library() succeeded */
static int g_bound;             /* bind_types() too: ready */
static int g_release_all;          /* EVX_PYTHON_RELEASE_GIL=1 */
static PyObject *g_error;          /* error(status) -> the exception to raise */
static PyTypeObject *g_event_type; /* evx.Event */
static PyTypeObject *g_stream_type;/* evx.Stream */
static PyObject *g_wrap_stream;    /* evx.Stream.wrap */

/* Devices whose first event has been made: their events are made holding
 * the GIL (the first retains the primary context and may take long).
 * Ordinals past the table always release it. */
#define WARM_DEVICES 256
static unsigned char g_warm[WARM_DEVICES];

#define CALL_RELEASING(st, call)                                              \
    do {                                                                      \
        Py_BEGIN_ALLOW_THREADS(st) = (call);                                  \
        Py_END_ALLOW_THREADS                                                  \
    } while (0)

#define CALL_HOLDING(st, call)                                                \
    do {                                                                      \
        if (g_release_all)                                                    \
            CALL_RELEASING(st, call);                                         \
        else                                                                  \
            (st) = (call);                                                    \
    } while (0)

static PyObject *not_bound(void)
{
    PyErr_SetString(PyExc_RuntimeError,
                    "evx._speedups is not bound (bind_library(), then bind_types())");
    return NULL;
}

/* Raises error(status): a CudaError carrying the library's thread-local
 * message, read by the package on this same thread. */
static PyObject *raise_status(evx_status_t st)
{
    PyObject *exc = PyObject_CallFunction(g_error, "i", (int)st);
    if (exc != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
    return NULL;
}

/* ------------------------------------------------------------------------
 * EventCore and StreamCore: one layout, two types. */

typedef struct {
    PyObject_HEAD
    void *h;             /* the evx handle; NULL once closed */
    int dev;
    PyObject *weakrefs;
} CoreObject;

static PyTypeObject EventCoreType;
static PyTypeObject StreamCoreType;

#define IS_EVENT(o) PyObject_TypeCheck((o), &EventCoreType)
#define IS_STREAM(o) PyObject_TypeCheck((o), &StreamCoreType)

/* A handle from what the package passes: an int, a ctypes.c_void_p (its
 * .value) or None. */
static int handle_from(PyObject *v, void **out)
{
    PyObject *value = NULL;
    if (v == Py_None) {
        *out = NULL;
        return 0;
    }
    if (!PyLong_Check(v)) {
        value = PyObject_GetAttrString(v, "value");    /* c_void_p */
        if (value == NULL) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError,
                         "an evx handle is an int, a ctypes.c_void_p or None, "
                         "not %.100s", Py_TYPE(v)->tp_name);
            return -1;
        }
        if (value == Py_None) {
            Py_DECREF(value);
            *out = NULL;
            return 0;
        }
        v = value;
    }
    *out = PyLong_AsVoidPtr(v);
    Py_XDECREF(value);
    return (*out == NULL && PyErr_Occurred()) ? -1 : 0;
}

static PyObject *core_get_h(CoreObject *self, void *closure)
{
    (void)closure;
    if (self->h == NULL)
        Py_RETURN_NONE;
    return PyLong_FromVoidPtr(self->h);
}

static int core_set_h(CoreObject *self, PyObject *v, void *closure)
{
    (void)closure;
    if (v == NULL) {
        PyErr_SetString(PyExc_AttributeError, "_h cannot be deleted");
        return -1;
    }
    return handle_from(v, &self->h);
}

static PyObject *core_get_closed(CoreObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(self->h == NULL);
}

static PyObject *core_enter(PyObject *self, PyObject *unused)
{
    (void)unused;
    Py_INCREF(self);
    return self;
}

/* Destroys the handle, if any, and forgets it: close() raises the status,
 * dealloc ignores it. */
static evx_status_t event_release(CoreObject *self)
{
    void *h = self->h;
    evx_status_t st = EVX_SUCCESS;
    if (h != NULL && g_bound) {
        self->h = NULL;
        CALL_HOLDING(st, p_evx_event_destroy((evx_event_t)h));
    }
    return st;
}

static evx_status_t stream_release(CoreObject *self)
{
    void *h = self->h;
    evx_status_t st = EVX_SUCCESS;
    if (h != NULL && g_bound) {
        self->h = NULL;
        CALL_RELEASING(st, p_evx_stream_destroy((evx_stream_t)h));
    }
    return st;
}

/* A query's answer as is_done gives it. */
static PyObject *done_or_raise(evx_status_t st)
{
    if (st == EVX_SUCCESS)
        Py_RETURN_TRUE;
    if (st == EVX_ERROR_NOT_READY)
        Py_RETURN_FALSE;
    return raise_status(st);
}

/* Dealloc destroys the handle after a subclass's slots are cleared; that
 * order is safe because destroying a borrowed stream's handle never touches
 * the driver stream (evx only forgets it), and an owned one has no owner. */
static void event_dealloc(PyObject *self)
{
    (void)event_release((CoreObject *)self);
    if (((CoreObject *)self)->weakrefs != NULL)
        PyObject_ClearWeakRefs(self);
    Py_TYPE(self)->tp_free(self);
}

static void stream_dealloc(PyObject *self)
{
    (void)stream_release((CoreObject *)self);
    if (((CoreObject *)self)->weakrefs != NULL)
        PyObject_ClearWeakRefs(self);
    Py_TYPE(self)->tp_free(self);
}

static PyObject *new_core(PyTypeObject *type, void *h, int dev)
{
    CoreObject *o = (CoreObject *)type->tp_alloc(type, 0);
    if (o == NULL)
        return NULL;
    o->h = h;
    o->dev = dev;
    return (PyObject *)o;
}

/* An evx.Event of a new driver-backed event. */
static PyObject *make_event(int dev, unsigned flags)
{
    evx_event_t h = NULL;
    evx_status_t st;
    PyObject *ev;
    if (dev >= 0 && dev < WARM_DEVICES && g_warm[dev]) {
        CALL_HOLDING(st, p_evx_device_create_event(dev, flags, &h));
    } else {
        CALL_RELEASING(st, p_evx_device_create_event(dev, flags, &h));
        if (!st && dev >= 0 && dev < WARM_DEVICES)
            g_warm[dev] = 1;
    }
    if (st)
        return raise_status(st);
    ev = new_core(g_event_type, (void *)h, dev);
    if (ev == NULL) {
        CALL_HOLDING(st, p_evx_event_destroy(h));
        (void)st;
    }
    return ev;
}

/* --- EventCore ----------------------------------------------------------- */

static PyObject *event_record(CoreObject *self, PyObject *stream)
{
    evx_status_t st;
    if (!IS_STREAM(stream)) {
        PyErr_SetString(PyExc_TypeError, "Event.record() needs an evx.Stream "
                                         "(wrap others with evx.Stream.wrap)");
        return NULL;
    }
    CALL_RELEASING(st, p_evx_event_record((evx_event_t)self->h,
                                          (evx_stream_t)((CoreObject *)stream)->h));
    if (st)
        return raise_status(st);
    Py_RETURN_NONE;
}

static PyObject *event_sync(CoreObject *self, PyObject *unused)
{
    evx_status_t st;
    (void)unused;
    CALL_RELEASING(st, p_evx_event_synchronize((evx_event_t)self->h));
    if (st)
        return raise_status(st);
    Py_RETURN_NONE;
}

static PyObject *event_get_is_done(CoreObject *self, void *closure)
{
    evx_status_t st;
    (void)closure;
    CALL_HOLDING(st, p_evx_event_query((evx_event_t)self->h));
    return done_or_raise(st);
}

static PyObject *elapsed(CoreObject *start, CoreObject *end)
{
    float ms = 0.0f;
    evx_status_t st;
    CALL_HOLDING(st, p_evx_event_elapsed_time(&ms, (evx_event_t)start->h,
                                              (evx_event_t)end->h));
    if (st)
        return raise_status(st);
    return PyFloat_FromDouble((double)ms);
}

/* end - start */
static PyObject *event_subtract(PyObject *end, PyObject *start)
{
    if (!IS_EVENT(end) || !IS_EVENT(start))
        Py_RETURN_NOTIMPLEMENTED;
    return elapsed((CoreObject *)start, (CoreObject *)end);
}

static PyObject *event_elapsed_since(CoreObject *self, PyObject *start)
{
    if (!IS_EVENT(start)) {
        PyErr_SetString(PyExc_TypeError, "elapsed_since() needs an evx.Event");
        return NULL;
    }
    return elapsed((CoreObject *)start, self);
}

static PyObject *event_close(CoreObject *self, PyObject *unused)
{
    evx_status_t st = event_release(self);
    (void)unused;
    if (st)
        return raise_status(st);
    Py_RETURN_NONE;
}

static PyObject *event_exit(CoreObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)args;
    (void)nargs;
    if (event_close(self, NULL) == NULL)
        return NULL;
    Py_RETURN_FALSE;
}

/* --- StreamCore ---------------------------------------------------------- */

static PyObject *stream_record(CoreObject *self, PyObject *const *args, Py_ssize_t nargs,
                               PyObject *kwnames)
{
    PyObject *event = Py_None;
    evx_status_t st;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    if (nargs + nkw > 1) {
        PyErr_SetString(PyExc_TypeError, "Stream.record() takes at most one "
                                         "argument (event)");
        return NULL;
    }
    if (nargs == 1) {
        event = args[0];
    } else if (nkw == 1) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, 0);
        if (!PyUnicode_Check(name) || PyUnicode_CompareWithASCIIString(name, "event") != 0) {
            PyErr_Format(PyExc_TypeError, "Stream.record() got an unexpected "
                                          "keyword argument %R", name);
            return NULL;
        }
        event = args[0];
    }
    if (event == Py_None) {
        event = make_event(self->dev, EVX_EVENT_DEFAULT);
        if (event == NULL)
            return NULL;
    } else if (IS_EVENT(event)) {
        Py_INCREF(event);
    } else {
        PyErr_SetString(PyExc_TypeError, "Stream.record() needs an evx.Event or None");
        return NULL;
    }
    CALL_RELEASING(st, p_evx_event_record((evx_event_t)((CoreObject *)event)->h,
                                          (evx_stream_t)self->h));
    if (st) {
        Py_DECREF(event);
        return raise_status(st);
    }
    return event;
}

static PyObject *stream_wait(CoreObject *self, PyObject *what)
{
    evx_status_t st;
    if (IS_EVENT(what)) {
        CALL_RELEASING(st, p_evx_stream_wait_event((evx_stream_t)self->h,
                                                   (evx_event_t)((CoreObject *)what)->h, 0));
        if (st)
            return raise_status(st);
        Py_RETURN_NONE;
    }
    if (IS_STREAM(what)) {
        CoreObject *other = (CoreObject *)what;
        CoreObject *tmp;
        evx_status_t st2;
        if (other == self)
            Py_RETURN_NONE;
        tmp = (CoreObject *)make_event(other->dev, EVX_EVENT_DISABLE_TIMING);
        if (tmp == NULL)
            return NULL;
        CALL_RELEASING(st, p_evx_event_record((evx_event_t)tmp->h, (evx_stream_t)other->h));
        if (!st)
            CALL_RELEASING(st, p_evx_stream_wait_event((evx_stream_t)self->h,
                                                       (evx_event_t)tmp->h, 0));
        if (st)
            raise_status(st);     /* the first failure is the one reported */
        st2 = event_release(tmp);
        Py_DECREF(tmp);
        if (st)
            return NULL;
        if (st2)
            return raise_status(st2);
        Py_RETURN_NONE;
    }
    PyErr_Format(PyExc_TypeError, "Stream.wait() needs an evx.Event or an evx.Stream, not %.100s",
                 Py_TYPE(what)->tp_name);
    return NULL;
}

static PyObject *stream_sync(CoreObject *self, PyObject *unused)
{
    evx_status_t st;
    (void)unused;
    CALL_RELEASING(st, p_evx_stream_synchronize((evx_stream_t)self->h));
    if (st)
        return raise_status(st);
    Py_RETURN_NONE;
}

static PyObject *stream_get_is_done(CoreObject *self, void *closure)
{
    evx_status_t st;
    (void)closure;
    CALL_HOLDING(st, p_evx_stream_query((evx_stream_t)self->h));
    return done_or_raise(st);
}

static PyObject *stream_close(CoreObject *self, PyObject *unused)
{
    evx_status_t st = stream_release(self);
    (void)unused;
    if (st)
        return raise_status(st);
    Py_RETURN_NONE;
}

/* __exit__ calls the close method by name: evx.Stream's override also drops
 * the reference to a wrapped object. */
static PyObject *stream_exit(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *r;
    (void)args;
    (void)nargs;
    r = PyObject_CallMethod(self, "close", NULL);
    if (r == NULL)
        return NULL;
    Py_DECREF(r);
    Py_RETURN_FALSE;
}

/* --- the two types ------------------------------------------------------- */

static PyGetSetDef event_getset[] = {
    {"_h", (getter)core_get_h, (setter)core_set_h,
     "The evx handle as an int, or None once closed.", NULL},
    {"closed", (getter)core_get_closed, NULL, "True once closed.", NULL},
    {"is_done", (getter)event_get_is_done, NULL,
     "True when the recorded work has completed (or the event was never\n"
     "recorded), False while it is pending. Errors raise CudaError.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyGetSetDef stream_getset[] = {
    {"_h", (getter)core_get_h, (setter)core_set_h,
     "The evx handle as an int, or None once closed.", NULL},
    {"closed", (getter)core_get_closed, NULL, "True once closed.", NULL},
    {"is_done", (getter)stream_get_is_done, NULL,
     "True when all queued work has completed, False while busy. Errors\n"
     "raise CudaError.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef core_members[] = {
    {"_dev", T_INT, offsetof(CoreObject, dev), READONLY, "The device ordinal."},
    {NULL, 0, 0, 0, NULL},
};

static PyMethodDef event_methods[] = {
    {"record", (PyCFunction)event_record, METH_O,
     "record(stream)\n--\n\nRecords the event on stream (an evx Stream of the "
     "event's device)."},
    {"sync", (PyCFunction)event_sync, METH_NOARGS,
     "sync()\n--\n\nWaits until the recorded work has completed."},
    {"elapsed_since", (PyCFunction)event_elapsed_since, METH_O,
     "elapsed_since(start)\n--\n\nThe same as self - start: milliseconds from "
     "start to this event."},
    {"close", (PyCFunction)event_close, METH_NOARGS,
     "close()\n--\n\nDestroys the evx event (an event from a pool goes back "
     "to the pool).\nPending work is not waited for. A second close does nothing."},
    {"__enter__", (PyCFunction)core_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)(void (*)(void))event_exit, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef stream_methods[] = {
    {"record", (PyCFunction)(void (*)(void))stream_record, METH_FASTCALL | METH_KEYWORDS,
     "record(event=None)\n--\n\nRecords event (a new timing event when None) on "
     "this stream;\nreturns the event."},
    {"wait", (PyCFunction)stream_wait, METH_O,
     "wait(event_or_stream)\n--\n\nMakes future work on this stream wait for "
     "an Event, or for all\nwork queued so far on another Stream (through a "
     "temporary event\nrecorded there). Does not block the thread."},
    {"sync", (PyCFunction)stream_sync, METH_NOARGS,
     "sync()\n--\n\nWaits until all work queued on the stream has completed."},
    {"close", (PyCFunction)stream_close, METH_NOARGS,
     "close()\n--\n\nEnds the evx stream (destroying the driver stream only "
     "if evx owns it).\nA second close does nothing."},
    {"__enter__", (PyCFunction)core_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)(void (*)(void))stream_exit, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL},
};

static PyNumberMethods event_as_number = {
    .nb_subtract = event_subtract,
};

static PyTypeObject EventCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "evx._speedups.EventCore",
    .tp_basicsize = sizeof(CoreObject),
    .tp_dealloc = event_dealloc,
    .tp_as_number = &event_as_number,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "The compiled core of evx.Event.",
    .tp_weaklistoffset = offsetof(CoreObject, weakrefs),
    .tp_methods = event_methods,
    .tp_members = core_members,
    .tp_getset = event_getset,
};

static PyTypeObject StreamCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "evx._speedups.StreamCore",
    .tp_basicsize = sizeof(CoreObject),
    .tp_dealloc = stream_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "The compiled core of evx.Stream.",
    .tp_weaklistoffset = offsetof(CoreObject, weakrefs),
    .tp_methods = stream_methods,
    .tp_members = core_members,
    .tp_getset = stream_getset,
};

/* ------------------------------------------------------------------------
 * timed and its timer cache */

#define TIMER_CACHE_MAX 16      /* idle timers kept per device */
#define TIMER_CACHE_DEVICES 16  /* devices with a cache; others make and destroy */

static struct {
    int dev;                    /* -1: entry unused */
    int n;
    evx_timer_t t[TIMER_CACHE_MAX];
} g_timers[TIMER_CACHE_DEVICES];
static unsigned long long g_timers_made;

static int timer_entry(int dev, int claim)
{
    int i;
    for (i = 0; i < TIMER_CACHE_DEVICES; i++)
        if (g_timers[i].dev == dev)
            return i;
    if (claim)
        for (i = 0; i < TIMER_CACHE_DEVICES; i++)
            if (g_timers[i].dev < 0) {
                g_timers[i].dev = dev;
                g_timers[i].n = 0;
                return i;
            }
    return -1;
}

/* A timer of the device: from the cache, or made. Raises on failure. */
static int timer_take(int dev, evx_timer_t *out)
{
    evx_status_t st;
    int i = timer_entry(dev, 0);
    if (i >= 0 && g_timers[i].n > 0) {
        *out = g_timers[i].t[--g_timers[i].n];
        return 0;
    }
    CALL_RELEASING(st, p_evx_device_create_timer(dev, out));
    if (st) {
        raise_status(st);
        return -1;
    }
    g_timers_made++;
    return 0;
}

static void timer_put(int dev, evx_timer_t t)
{
    evx_status_t st;
    int i = timer_entry(dev, 1);
    if (i >= 0 && g_timers[i].n < TIMER_CACHE_MAX) {
        g_timers[i].t[g_timers[i].n++] = t;
        return;
    }
    CALL_RELEASING(st, p_evx_timer_destroy(t));
    (void)st;
}

enum { T_NEW, T_RUNNING, T_STOPPED, T_STOP_FAILED, T_READ };

/* __enter__ and __exit__ with nothing allocated per block.
 *
 * A with-block looks both methods up on the type and binds them to the
 * object (_PyObject_LookupSpecial, CPython 3.8-3.13). Ordinary methods would
 * make and free two method objects per block, and timed objects come and go
 * once per block too; together that was most of what evx.timed cost beyond
 * its three C calls. So:
 *
 * - timed's __enter__ and __exit__ are slots (TimedSlot, descriptors marked
 *   Py_TPFLAGS_METHOD_DESCRIPTOR, so t.__exit__(...) and CPython 3.14's
 *   with-blocks call them unbound with no binding at all);
 * - binding one gives a view (TimedView) that lives inside the timed object.
 *   A view is alive (count > 0) only while somebody holds it, and while alive
 *   it holds one reference to its timed object, so it never outlives the
 *   memory it lives in. When its count falls to zero, its dealloc drops that
 *   reference and frees nothing. Views are not tracked by the garbage
 *   collector, so a reference cycle through a held view (t.__exit__ stored in
 *   something t refers to) is not collected;
 * - dead timed objects are kept on a short free list and made alive again.
 *
 * The free-threaded build binds with an ordinary method object instead: there
 * a view's count could not be read safely. */

typedef struct TimedObject TimedObject;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;  /* view_enter or view_exit */
    TimedObject *owner;         /* referenced while the view is alive */
} TimedView;

struct TimedObject {
    PyObject_HEAD
    PyObject *stream;     /* the evx Stream; kept: the marks are on it */
    evx_timer_t timer;    /* from __enter__ on; back to the cache in dealloc */
    float ms;
    int dev;
    unsigned char own;    /* the stream was wrapped here: closed at the end */
    unsigned char state;
    TimedView enter_view; /* count 0 unless bound (see above) */
    TimedView exit_view;
};

static PyTypeObject TimedType;
static PyTypeObject TimedViewType;

#define TIMED_FREE_MAX 16
static TimedObject *g_timed_free[TIMED_FREE_MAX];
static int g_timed_nfree;

static PyObject *view_enter(PyObject *v, PyObject *const *args, size_t nargsf,
                            PyObject *kwnames);
static PyObject *view_exit(PyObject *v, PyObject *const *args, size_t nargsf,
                           PyObject *kwnames);

static void view_init(TimedView *v, TimedObject *owner, vectorcallfunc call)
{
    memset(v, 0, sizeof *v);            /* count 0: not alive */
    Py_SET_TYPE((PyObject *)v, &TimedViewType);
    v->vectorcall = call;
    v->owner = owner;
}

static PyObject *timed_make(PyObject *stream)
{
    TimedObject *t;
    int own = 0;
    if (!g_bound)
        return not_bound();
    if (IS_STREAM(stream)) {
        Py_INCREF(stream);
    } else {
        stream = PyObject_CallOneArg(g_wrap_stream, stream);
        if (stream == NULL)
            return NULL;
        if (!IS_STREAM(stream)) {
            Py_DECREF(stream);
            PyErr_SetString(PyExc_TypeError, "Stream.wrap() did not return an evx.Stream");
            return NULL;
        }
        own = 1;
    }
    if (g_timed_nfree > 0) {            /* its views are dead: count 0 */
        t = g_timed_free[--g_timed_nfree];
        (void)PyObject_Init((PyObject *)t, &TimedType);
    } else {
        t = PyObject_GC_New(TimedObject, &TimedType);
        if (t == NULL) {
            Py_DECREF(stream);
            return NULL;
        }
        view_init(&t->enter_view, t, view_enter);
        view_init(&t->exit_view, t, view_exit);
    }
    t->stream = stream;
    t->timer = NULL;
    t->ms = 0.0f;
    t->dev = ((CoreObject *)stream)->dev;
    t->own = (unsigned char)own;
    t->state = T_NEW;
    PyObject_GC_Track(t);
    return (PyObject *)t;
}

static PyObject *timed_vectorcall(PyObject *type, PyObject *const *args, size_t nargsf,
                                  PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    (void)type;
    if (nargs + nkw != 1) {
        PyErr_SetString(PyExc_TypeError, "timed() takes one argument (stream)");
        return NULL;
    }
    if (nkw == 1) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, 0);
        if (!PyUnicode_Check(name) || PyUnicode_CompareWithASCIIString(name, "stream") != 0) {
            PyErr_Format(PyExc_TypeError, "timed() got an unexpected keyword argument %R",
                         name);
            return NULL;
        }
    }
    return timed_make(args[0]);
}

static PyObject *timed_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"stream", NULL};
    PyObject *stream;
    (void)type;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O:timed", kwlist, &stream))
        return NULL;
    return timed_make(stream);
}

static PyObject *close_own_stream(TimedObject *self)
{
    if (self->own) {
        PyObject *r = PyObject_CallMethod(self->stream, "close", NULL);
        if (r == NULL)
            return NULL;
        Py_DECREF(r);
    }
    return Py_None;       /* borrowed: only compared with NULL */
}

static PyObject *timed_enter(TimedObject *self)
{
    evx_timer_t t;
    evx_status_t st;
    if (self->state != T_NEW) {
        PyErr_SetString(PyExc_RuntimeError, "an evx.timed object times one block; make a new one");
        return NULL;
    }
    if (timer_take(self->dev, &t) < 0)
        return NULL;
    CALL_RELEASING(st, p_evx_timer_start(t, (evx_stream_t)((CoreObject *)self->stream)->h));
    if (st) {
        raise_status(st);
        timer_put(self->dev, t);
        return NULL;
    }
    self->timer = t;
    self->state = T_RUNNING;
    Py_INCREF(self);
    return (PyObject *)self;
}

/* __exit__(exc_type, exc, tb) */
static PyObject *timed_exit(TimedObject *self, PyObject *exc_type)
{
    evx_status_t st;
    int exc_pending = exc_type != Py_None;
    if (self->state != T_RUNNING) {
        PyErr_SetString(PyExc_RuntimeError, "evx.timed: __exit__ without __enter__");
        return NULL;
    }
    CALL_RELEASING(st, p_evx_timer_stop(self->timer,
                                        (evx_stream_t)((CoreObject *)self->stream)->h));
    if (st) {
        self->state = T_STOP_FAILED;
        raise_status(st);
        if (exc_pending) {      /* the block's own exception wins */
            PyErr_Clear();
            if (close_own_stream(self) == NULL)
                return NULL;
            Py_RETURN_FALSE;
        }
        if (self->own) {
            PyObject *et, *ev, *tb;
            PyErr_Fetch(&et, &ev, &tb);
            if (close_own_stream(self) == NULL)
                PyErr_Clear();
            PyErr_Restore(et, ev, tb);
        }
        return NULL;
    }
    self->state = T_STOPPED;
    if (close_own_stream(self) == NULL)
        return NULL;
    Py_RETURN_FALSE;
}

static int method_args(const char *name, size_t nargsf, Py_ssize_t want, PyObject *kwnames)
{
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0) {
        PyErr_Format(PyExc_TypeError, "evx.timed.%s() takes no keyword arguments", name);
        return -1;
    }
    if (n != want) {
        PyErr_Format(PyExc_TypeError, "evx.timed.%s() takes %zd arguments (%zd given)", name,
                     want, n);
        return -1;
    }
    return 0;
}

static PyObject *view_enter(PyObject *v, PyObject *const *args, size_t nargsf,
                            PyObject *kwnames)
{
    (void)args;
    if (method_args("__enter__", nargsf, 0, kwnames) < 0)
        return NULL;
    return timed_enter(((TimedView *)v)->owner);
}

static PyObject *view_exit(PyObject *v, PyObject *const *args, size_t nargsf,
                           PyObject *kwnames)
{
    if (method_args("__exit__", nargsf, 3, kwnames) < 0)
        return NULL;
    return timed_exit(((TimedView *)v)->owner, args[0]);
}

static void view_dealloc(PyObject *v)
{
    Py_DECREF(((TimedView *)v)->owner);  /* its memory is the owner's */
}

static const char *view_name(TimedView *v)
{
    return v->vectorcall == view_enter ? "__enter__" : "__exit__";
}

static PyObject *view_repr(PyObject *v)
{
    return PyUnicode_FromFormat("<bound method evx.timed.%s of %R>", view_name((TimedView *)v),
                                (PyObject *)((TimedView *)v)->owner);
}

static PyObject *view_get_self(PyObject *v, void *closure)
{
    (void)closure;
    Py_INCREF(((TimedView *)v)->owner);
    return (PyObject *)((TimedView *)v)->owner;
}

static PyObject *view_get_name(PyObject *v, void *closure)
{
    (void)closure;
    return PyUnicode_FromString(view_name((TimedView *)v));
}

static PyGetSetDef view_getset[] = {
    {"__self__", view_get_self, NULL, NULL, NULL},
    {"__name__", view_get_name, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject TimedViewType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "evx._speedups.timed_method",
    .tp_basicsize = sizeof(TimedView),
    .tp_dealloc = view_dealloc,
    .tp_vectorcall_offset = offsetof(TimedView, vectorcall),
    .tp_repr = view_repr,
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "evx.timed.__enter__ or __exit__, bound to a timed object.",
    .tp_getset = view_getset,
};

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;  /* slot_call */
    Py_ssize_t view_offset;     /* of the view in TimedObject */
    const char *name;
} TimedSlot;

/* timed.__enter__(t) and timed.__exit__(t, exc_type, exc, tb) */
static PyObject *slot_call(PyObject *s, PyObject *const *args, size_t nargsf,
                           PyObject *kwnames)
{
    TimedSlot *slot = (TimedSlot *)s;
    TimedView *v;
    if (PyVectorcall_NARGS(nargsf) < 1 || !Py_IS_TYPE(args[0], &TimedType)) {
        PyErr_Format(PyExc_TypeError, "evx.timed.%s() needs an evx.timed object", slot->name);
        return NULL;
    }
    v = (TimedView *)((char *)args[0] + slot->view_offset);
    return v->vectorcall((PyObject *)v, args + 1, PyVectorcall_NARGS(nargsf) - 1, kwnames);
}

static PyObject *slot_get(PyObject *s, PyObject *obj, PyObject *type)
{
    TimedView *v;
    (void)type;
    if (obj == NULL) {
        Py_INCREF(s);
        return s;
    }
    if (!Py_IS_TYPE(obj, &TimedType)) {
        PyErr_Format(PyExc_TypeError, "evx.timed.%s binds to evx.timed objects only",
                     ((TimedSlot *)s)->name);
        return NULL;
    }
#ifdef Py_GIL_DISABLED
    (void)v;
    return PyMethod_New(s, obj);
#else
    v = (TimedView *)((char *)obj + ((TimedSlot *)s)->view_offset);
    if (Py_REFCNT(v) == 0) {            /* comes alive, holding its owner */
        (void)PyObject_Init((PyObject *)v, &TimedViewType);
        Py_INCREF(obj);
    } else {
        Py_INCREF(v);
    }
    return (PyObject *)v;
#endif
}

static PyObject *slot_repr(PyObject *s)
{
    return PyUnicode_FromFormat("<method '%s' of 'evx.timed' objects>", ((TimedSlot *)s)->name);
}

static PyObject *slot_get_name(PyObject *s, void *closure)
{
    (void)closure;
    return PyUnicode_FromString(((TimedSlot *)s)->name);
}

static PyGetSetDef slot_getset[] = {
    {"__name__", slot_get_name, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject TimedSlotType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "evx._speedups.timed_slot",
    .tp_basicsize = sizeof(TimedSlot),
    .tp_vectorcall_offset = offsetof(TimedSlot, vectorcall),
    .tp_repr = slot_repr,
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "evx.timed.__enter__ or __exit__, unbound.",
    .tp_getset = slot_getset,
    .tp_descr_get = slot_get,
};

static TimedSlot g_enter_slot = {
    PyObject_HEAD_INIT(&TimedSlotType) slot_call, offsetof(TimedObject, enter_view), "__enter__"};
static TimedSlot g_exit_slot = {
    PyObject_HEAD_INIT(&TimedSlotType) slot_call, offsetof(TimedObject, exit_view), "__exit__"};

static PyObject *timed_get_elapsed_ms(TimedObject *self, void *closure)
{
    float ms = 0.0f;
    evx_status_t st;
    (void)closure;
    switch (self->state) {
    case T_READ:
        return PyFloat_FromDouble((double)self->ms);
    case T_STOPPED:
        CALL_RELEASING(st, p_evx_timer_synchronize(self->timer, &ms));
        if (st)
            return raise_status(st);
        if (self->state == T_STOPPED) {   /* another thread may have read it */
            self->ms = ms;
            self->state = T_READ;
        }
        return PyFloat_FromDouble((double)self->ms);
    case T_STOP_FAILED:
        PyErr_SetString(PyExc_RuntimeError, "evx.timed: the stop mark failed; no time");
        return NULL;
    default:
        PyErr_SetString(PyExc_RuntimeError,
                        "evx.timed: elapsed_ms is known once the with-block has ended");
        return NULL;
    }
}

static int timed_traverse(TimedObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->stream);
    return 0;
}

static int timed_clear(TimedObject *self)
{
    Py_CLEAR(self->stream);
    return 0;
}

static void timed_dealloc(TimedObject *self)
{
    PyObject_GC_UnTrack(self);
    if (self->timer != NULL && g_bound)
        timer_put(self->dev, self->timer);
    self->timer = NULL;
    Py_CLEAR(self->stream);
    if (g_timed_nfree < TIMED_FREE_MAX) {
        g_timed_free[g_timed_nfree++] = self;
        return;
    }
    PyObject_GC_Del(self);
}

/* Frees the free list (at interpreter exit, with the timers). */
static void timed_free_list_clear(void)
{
    while (g_timed_nfree > 0)
        PyObject_GC_Del(g_timed_free[--g_timed_nfree]);
}

static PyGetSetDef timed_getset[] = {
    {"elapsed_ms", (getter)timed_get_elapsed_ms, NULL,
     "Milliseconds from the start of the block to its end (on the GPU\n"
     "timeline); synchronizes with the stop mark on first read.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject TimedType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "evx.timed",
    .tp_basicsize = sizeof(TimedObject),
    .tp_dealloc = (destructor)timed_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc =
        "timed(stream)\n--\n\n"
        "``with evx.timed(stream) as t: ...`` marks a start and a stop on the\n"
        "stream around the block (evx_timer_start / evx_timer_stop); the first\n"
        "read of ``t.elapsed_ms`` waits for the stop mark and gives the\n"
        "milliseconds (later reads give the same number without a call).\n\n"
        "``stream`` is an evx Stream or anything Stream.wrap accepts (borrowed\n"
        "for the block). A timed object times one block. The C timers are\n"
        "reused: one is taken when the block starts and given back when the\n"
        "timed object is garbage, so a block makes no driver object.",
    .tp_traverse = (traverseproc)timed_traverse,
    .tp_clear = (inquiry)timed_clear,
    .tp_getset = timed_getset,
    .tp_new = timed_new,
};

/* Puts __enter__ and __exit__ in timed's dictionary (before PyType_Ready). */
static int timed_type_dict(void)
{
    PyObject *d = PyDict_New();
    if (d == NULL)
        return -1;
    if (PyDict_SetItemString(d, "__enter__", (PyObject *)&g_enter_slot) < 0 ||
        PyDict_SetItemString(d, "__exit__", (PyObject *)&g_exit_slot) < 0) {
        Py_DECREF(d);
        return -1;
    }
    TimedType.tp_dict = d;
    return 0;
}

/* ------------------------------------------------------------------------
 * Module functions */

static int lookup_all(void *lib)
{
#define LOOKUP_FN(name)                                                       \
    do {                                                                      \
        void *sym = dlsym(lib, #name);                                        \
        if (sym == NULL) {                                                    \
            PyErr_Format(PyExc_ImportError,                                   \
                         "evx._speedups: the loaded libevx has no %s", #name); \
            return -1;                                                        \
        }                                                                     \
        memcpy(&p_##name, &sym, sizeof sym);                                  \
    } while (0);
    EVX_SPEEDUP_FUNCS(LOOKUP_FN)
#undef LOOKUP_FN
    return 0;
}

/* bind_library(lib, gil_lib): the functions, from the ctypes library's
 * dlopen handle; the version check. */
static PyObject *mod_bind_library(PyObject *mod, PyObject *args)
{
    PyObject *lib, *gil_lib, *handle;
    void *dl;
    unsigned version;
    (void)mod;
    if (!PyArg_ParseTuple(args, "OO:bind_library", &lib, &gil_lib))
        return NULL;
    if (g_bound) {
        PyErr_SetString(PyExc_RuntimeError, "evx._speedups is already bound");
        return NULL;
    }
    handle = PyObject_GetAttrString(lib, "_handle");   /* ctypes.CDLL */
    if (handle == NULL)
        return NULL;
    dl = PyLong_AsVoidPtr(handle);
    Py_DECREF(handle);
    if (dl == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "bind_library(): the library has no dlopen handle");
        return NULL;
    }
    if (lookup_all(dl) < 0)
        return NULL;
    version = p_evx_version();
    if (version / 10000 != EVX_VERSION_MAJOR ||
        version < (unsigned)(EVX_VERSION_MAJOR * 10000 + EVX_VERSION_MINOR * 100)) {
        PyErr_Format(PyExc_ImportError,
                     "evx._speedups was built for libevx %d.%d and later %d.x; "
                     "the loaded library is %u.%u.%u",
                     EVX_VERSION_MAJOR, EVX_VERSION_MINOR, EVX_VERSION_MAJOR,
                     version / 10000, version / 100 % 100, version % 100);
        return NULL;
    }
    g_release_all = gil_lib == lib;
    g_library = 1;
    Py_RETURN_NONE;
}

/* bind_types(error, event_type, stream_type, wrap_stream) */
static PyObject *mod_bind_types(PyObject *mod, PyObject *args)
{
    PyObject *error, *event_type, *stream_type, *wrap;
    (void)mod;
    if (!PyArg_ParseTuple(args, "OO!O!O:bind_types", &error, &PyType_Type, &event_type,
                          &PyType_Type, &stream_type, &wrap))
        return NULL;
    if (!g_library || g_bound) {
        PyErr_SetString(PyExc_RuntimeError,
                        "evx._speedups: bind_types() comes once, after bind_library()");
        return NULL;
    }
    if (!PyType_IsSubtype((PyTypeObject *)event_type, &EventCoreType) ||
        !PyType_IsSubtype((PyTypeObject *)stream_type, &StreamCoreType)) {
        PyErr_SetString(PyExc_TypeError,
                        "bind_types(): the event and stream types must derive from "
                        "EventCore and StreamCore");
        return NULL;
    }
    Py_INCREF(error);
    Py_INCREF(event_type);
    Py_INCREF(stream_type);
    Py_INCREF(wrap);
    g_error = error;
    g_event_type = (PyTypeObject *)event_type;
    g_stream_type = (PyTypeObject *)stream_type;
    g_wrap_stream = wrap;
    g_bound = 1;
    Py_RETURN_NONE;
}

static int int_arg(PyObject *v, const char *what, int *out)
{
    long x;
    if (PyBool_Check(v) || !PyLong_Check(v)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int", what);
        return -1;
    }
    x = PyLong_AsLong(v);
    if (x == -1 && PyErr_Occurred())
        return -1;
    if (x < -2147483647L - 1 || x > 2147483647L) {
        PyErr_Format(PyExc_OverflowError, "%s %ld does not fit a C int", what, x);
        return -1;
    }
    *out = (int)x;
    return 0;
}

static PyObject *mod_create_event(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    int dev, flags;
    (void)mod;
    if (!g_bound)
        return not_bound();
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "create_event(ordinal, flags)");
        return NULL;
    }
    if (int_arg(args[0], "the device ordinal", &dev) < 0 ||
        int_arg(args[1], "the event flags", &flags) < 0)
        return NULL;
    return make_event(dev, (unsigned)flags);
}

static PyObject *new_from(PyTypeObject *type, PyObject *const *args, Py_ssize_t nargs,
                          const char *name)
{
    void *h;
    int dev;
    if (!g_bound)
        return not_bound();
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "%s(handle, ordinal)", name);
        return NULL;
    }
    if (handle_from(args[0], &h) < 0 || int_arg(args[1], "the device ordinal", &dev) < 0)
        return NULL;
    return new_core(type, h, dev);
}

static PyObject *mod_new_event(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    (void)mod;
    return new_from(g_event_type, args, nargs, "new_event");
}

static PyObject *mod_new_stream(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    (void)mod;
    return new_from(g_stream_type, args, nargs, "new_stream");
}

static PyObject *mod_clear_timers(PyObject *mod, PyObject *unused)
{
    int i;
    (void)mod;
    (void)unused;
    if (!g_bound)
        Py_RETURN_NONE;
    for (i = 0; i < TIMER_CACHE_DEVICES; i++)
        while (g_timers[i].dev >= 0 && g_timers[i].n > 0) {
            evx_timer_t t = g_timers[i].t[--g_timers[i].n];
            evx_status_t st;
            CALL_RELEASING(st, p_evx_timer_destroy(t));
            (void)st;
        }
    timed_free_list_clear();
    Py_RETURN_NONE;
}

static PyObject *mod_timer_cache_info(PyObject *mod, PyObject *unused)
{
    PyObject *idle = PyDict_New(), *r;
    int i;
    (void)mod;
    (void)unused;
    if (idle == NULL)
        return NULL;
    for (i = 0; i < TIMER_CACHE_DEVICES; i++) {
        if (g_timers[i].dev >= 0) {
            PyObject *k = PyLong_FromLong(g_timers[i].dev);
            PyObject *v = PyLong_FromLong(g_timers[i].n);
            int bad = k == NULL || v == NULL || PyDict_SetItem(idle, k, v) < 0;
            Py_XDECREF(k);
            Py_XDECREF(v);
            if (bad) {
                Py_DECREF(idle);
                return NULL;
            }
        }
    }
    r = Py_BuildValue("(KO)", g_timers_made, idle);
    Py_DECREF(idle);
    return r;
}

static PyMethodDef module_methods[] = {
    {"bind_library", mod_bind_library, METH_VARARGS,
     "bind_library(lib, gil_lib)\n--\n\n"
     "Binds the core to the library the package opened (see _pycore.py)."},
    {"bind_types", mod_bind_types, METH_VARARGS,
     "bind_types(error, event_type, stream_type, wrap_stream)\n--\n\n"
     "Gives the core the package's classes and error factory (see _pycore.py)."},
    {"create_event", (PyCFunction)(void (*)(void))mod_create_event, METH_FASTCALL,
     "create_event(ordinal, flags)\n--\n\nA new evx.Event of a device."},
    {"new_event", (PyCFunction)(void (*)(void))mod_new_event, METH_FASTCALL,
     "new_event(handle, ordinal)\n--\n\nAn evx.Event owning an existing handle."},
    {"new_stream", (PyCFunction)(void (*)(void))mod_new_stream, METH_FASTCALL,
     "new_stream(handle, ordinal)\n--\n\nAn evx.Stream owning an existing handle."},
    {"clear_timers", mod_clear_timers, METH_NOARGS,
     "clear_timers()\n--\n\nDestroys the idle timers (at interpreter exit)."},
    {"timer_cache_info", mod_timer_cache_info, METH_NOARGS,
     "timer_cache_info()\n--\n\n(timers made so far, {device: timers idle in "
     "the cache})."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef speedups_module = {
    PyModuleDef_HEAD_INIT,
    "evx._speedups",
    "The compiled hot core of evx's Python layer (see _pycore.py).",
    -1,
    module_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__speedups(void)
{
    PyObject *m;
    int i;
    for (i = 0; i < TIMER_CACHE_DEVICES; i++)
        g_timers[i].dev = -1;
    TimedType.tp_vectorcall = timed_vectorcall;
    if (PyType_Ready(&EventCoreType) < 0 || PyType_Ready(&StreamCoreType) < 0 ||
        PyType_Ready(&TimedViewType) < 0 || PyType_Ready(&TimedSlotType) < 0 ||
        timed_type_dict() < 0 || PyType_Ready(&TimedType) < 0)
        return NULL;
    m = PyModule_Create(&speedups_module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&EventCoreType);
    Py_INCREF(&StreamCoreType);
    Py_INCREF(&TimedType);
    if (PyModule_AddObject(m, "EventCore", (PyObject *)&EventCoreType) < 0 ||
        PyModule_AddObject(m, "StreamCore", (PyObject *)&StreamCoreType) < 0 ||
        PyModule_AddObject(m, "timed", (PyObject *)&TimedType) < 0 ||
        PyModule_AddStringConstant(m, "IMPLEMENTATION", "speedups") < 0 ||
        PyModule_AddIntConstant(m, "TIMER_CACHE_MAX", TIMER_CACHE_MAX) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
