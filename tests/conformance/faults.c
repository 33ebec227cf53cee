/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/* Injected driver faults (host emulation only; see docs/robustness.md).
 *
 * For each public call that reaches the driver, the walk below makes each of
 * that call's driver calls fail in turn: for every driver entry point evx
 * uses, the 1st, 2nd, ... call of it inside the public call fails (through
 * evx_host_set_fault), until the public call makes no further call of it
 * (evx_host_faults_fired tells). After each injected fault:
 *   - the status is the injected one, evx_last_error() agrees and the
 *     message names the failing driver call; or, for the few faults evx
 *     deliberately rides out (table `tolerated`, each with its reason),
 *     EVX_SUCCESS with the call's work done;
 *   - the calling thread's current context is what it was before the call;
 *   - the handles stay consistent (a failed create leaves its out-pointer
 *     NULL; a destroy leaves the handle dead whatever the driver said; a
 *     failed record leaves the event as it was);
 *   - after the case's objects are destroyed and evx_device_trim, the
 *     emulation's live driver objects are back to the walk's baseline. A
 *     destroy the driver refused leaves exactly that one driver object
 *     alive, which the test then destroys itself (and checks it was alive);
 *   - the same call succeeds again once the fault is gone.
 * Load-time and first-use driver calls (cuInit, cuDeviceGet, the primary
 * context, the priority range) run once per process: they are walked in
 * child processes. */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "util.h"

/* Every driver entry point evx looks up (src/driver.cpp), with the status
 * its injected fault returns. */
typedef struct entry {
    const char *name;
    CUresult status;
} entry;

static const entry entries[] = {
    {"cuCtxGetCurrent", CUDA_ERROR_INVALID_CONTEXT},
    {"cuCtxPushCurrent", CUDA_ERROR_INVALID_CONTEXT},
    {"cuCtxPopCurrent", CUDA_ERROR_INVALID_CONTEXT},
    {"cuEventCreate", CUDA_ERROR_OUT_OF_MEMORY},
    {"cuEventDestroy", CUDA_ERROR_LAUNCH_FAILED},
    {"cuEventRecord", CUDA_ERROR_LAUNCH_FAILED},
    {"cuEventRecordWithFlags", CUDA_ERROR_LAUNCH_FAILED},
    {"cuEventQuery", CUDA_ERROR_LAUNCH_FAILED},
    {"cuEventSynchronize", CUDA_ERROR_LAUNCH_FAILED},
    {"cuEventElapsedTime", CUDA_ERROR_LAUNCH_FAILED},
    {"cuStreamCreateWithPriority", CUDA_ERROR_OUT_OF_MEMORY},
    {"cuStreamDestroy", CUDA_ERROR_LAUNCH_FAILED},
    {"cuStreamWaitEvent", CUDA_ERROR_LAUNCH_FAILED},
    {"cuStreamQuery", CUDA_ERROR_LAUNCH_FAILED},
    {"cuStreamSynchronize", CUDA_ERROR_LAUNCH_FAILED},
    {"cuStreamGetPriority", CUDA_ERROR_LAUNCH_FAILED},
    {"cuStreamGetFlags", CUDA_ERROR_LAUNCH_FAILED},
    {"cuLaunchHostFunc", CUDA_ERROR_OUT_OF_MEMORY},
    {"cuStreamGetDevice", CUDA_ERROR_LAUNCH_FAILED},
    {"cuStreamGetCtx", CUDA_ERROR_LAUNCH_FAILED},
    {"cuCtxGetDevice", CUDA_ERROR_LAUNCH_FAILED},
    {"cuStreamIsCapturing", CUDA_ERROR_LAUNCH_FAILED},
    /* A host function that can fail, launched into a capture. */
    {"cuStreamGetCaptureInfo", CUDA_ERROR_LAUNCH_FAILED},
    {"cuUserObjectCreate", CUDA_ERROR_OUT_OF_MEMORY},
    {"cuGraphRetainUserObject", CUDA_ERROR_OUT_OF_MEMORY},
    /* Reached only after cuGraphRetainUserObject failed (one fault at a
     * time never gets there). */
    {"cuUserObjectRelease", CUDA_ERROR_LAUNCH_FAILED},
    /* Reached once per process (child processes below). */
    {"cuDevicePrimaryCtxRetain", CUDA_ERROR_OUT_OF_MEMORY},
    {"cuCtxGetStreamPriorityRange", CUDA_ERROR_INVALID_CONTEXT},
};
enum { NENTRIES = sizeof entries / sizeof entries[0], MAX_NTH = 8 };

/* Faults evx rides out on purpose: the call still returns EVX_SUCCESS with
 * its work done. "op" is the walk's name of the public call. */
#define DESTROY_WITHOUT_CONTEXT \
    "the driver event is destroyed without its context made current"

typedef struct tolerated {
    const char *op;
    const char *entry;
    const char *why;
} tolerated;

static const tolerated tolerated_faults[] = {
    {"evx_stream_destroy", "cuCtxGetCurrent",
     "the stream is destroyed without its context made current (a stream "
     "names its context); only cuStreamDestroy's own status is returned"},
    {"evx_stream_destroy", "cuCtxPushCurrent",
     "as for cuCtxGetCurrent: the destroy goes ahead without the push"},
    {"evx_event_pool_release", "cuEventQuery",
     "a released event the driver cannot query is not kept: it is destroyed "
     "and the pool makes a new one when needed"},
    /* Destroying driver events: cuEventDestroy needs no current context
     * (an event names its own), so a failing context call before it is
     * ridden out; the destroy's own refusal is reported. */
    {"evx_event_pool_destroy", "cuCtxGetCurrent", DESTROY_WITHOUT_CONTEXT},
    {"evx_event_pool_destroy", "cuCtxPushCurrent", DESTROY_WITHOUT_CONTEXT},
    {"evx_device_trim", "cuCtxGetCurrent", DESTROY_WITHOUT_CONTEXT},
    {"evx_device_trim", "cuCtxPushCurrent", DESTROY_WITHOUT_CONTEXT},
    {"evx_stream_wait_event", "cuCtxGetCurrent", DESTROY_WITHOUT_CONTEXT},
    {"evx_stream_wait_event", "cuCtxPushCurrent", DESTROY_WITHOUT_CONTEXT},
    {"evx_event_get_native", "cuCtxGetCurrent", DESTROY_WITHOUT_CONTEXT},
    {"evx_event_get_native", "cuCtxPushCurrent", DESTROY_WITHOUT_CONTEXT},
    {NULL, NULL, NULL},
};

/* A failing cuCtxPopCurrent (the pop of a context evx pushed for the call,
 * after the driver call it was pushed for) is reported like any other
 * fault: the call returns its status with a message naming it. The pushed
 * context stays on the caller's stack (the message says so); the walk
 * checks it is device's primary context or the step's own, and pops it.
 * A create gives back what it made (its out-pointer stays NULL); the calls
 * below did work that cannot be taken back, which stands: the record is
 * counted, the host function runs, the wait is queued, the object is
 * destroyed. */
static const char *const pop_work_stands[] = {
    "evx_event_record(default stream)",
    "evx_stream_wait_event(default stream)",
    "evx_stream_query(default stream)",
    "evx_stream_synchronize(default stream)",
    "evx_stream_launch_host_func(default stream)",
    "evx_stream_launch_host_func_status(default stream)",
    "evx_stream_launch_host_func_status(capturing stream)",
    "evx_stream_destroy",
    "evx_event_pool_destroy",
    "evx_device_trim",
    NULL,
};
static long pop_reported;

static int work_stands_after_pop(const char *op)
{
    const char *const *p;
    for (p = pop_work_stands; *p != NULL; p++)
        if (strcmp(*p, op) == 0)
            return 1;
    return 0;
}

static const char *tolerated_why(const char *op, const char *entry_name)
{
    const tolerated *t;
    for (t = tolerated_faults; t->op != NULL; t++)
        if (strcmp(t->op, op) == 0 && strcmp(t->entry, entry_name) == 0)
            return t->why;
    return NULL;
}

/* ---- the objects one step of the walk works on --------------------------- */

enum { NNATIVE = 8 };

typedef struct fctx {
    int dev;
    evx_stream_t s, dflt, out_s, gone_s;
    evx_event_t e, e2, out_e;
    evx_event_pool_t pool;
    evx_timer_t timer;
    evx_timeline_t tl;
    CUcontext ctx; /* a context made with cuCtxCreate, and its stream cs */
    CUstream cs;
    void *cap_native; /* s, being captured (setup_capturing) until ended */
    float ms[4];
    uint32_t n;
    int flag;
    /* Driver objects the step saw, for a destroy the driver refused. */
    void *ev_native[NNATIVE];
    int nev;
    void *st_native[NNATIVE];
    int nst;
} fctx;

static void keep_event_native(fctx *c, evx_event_t e)
{
    void *n = NULL;
    if (e != NULL && c->nev < NNATIVE &&
        EXPECT_OK(evx_event_get_native(e, &n)))
        c->ev_native[c->nev++] = n;
}

static void keep_stream_native(fctx *c, evx_stream_t s)
{
    void *n = NULL;
    if (s != NULL && c->nst < NNATIVE &&
        EXPECT_OK(evx_stream_get_native(s, &n)))
        c->st_native[c->nst++] = n;
}

static int setup_stream(fctx *c)
{
    return EXPECT_OK(evx_device_create_stream(c->dev, EVX_STREAM_NON_BLOCKING,
                                              0, &c->s));
}

static int setup_default(fctx *c)
{
    return EXPECT_OK(evx_stream_wrap_external(c->dev, NULL, &c->dflt));
}

/* A recorded, complete event e on stream s. */
static int setup_recorded(fctx *c)
{
    return setup_stream(c) &&
           EXPECT_OK(evx_device_create_event(c->dev, 0, &c->e)) &&
           EXPECT_OK(evx_event_record(c->e, c->s)) &&
           EXPECT_OK(evx_event_synchronize(c->e));
}

/* Two recorded, complete events e, e2 on s. */
static int setup_two_recorded(fctx *c)
{
    return setup_recorded(c) &&
           EXPECT_OK(evx_device_create_event(c->dev, 0, &c->e2)) &&
           EXPECT_OK(evx_event_record(c->e2, c->s)) &&
           EXPECT_OK(evx_event_synchronize(c->e2));
}

static int setup_pool(fctx *c, uint32_t capacity, uint32_t prewarm)
{
    evx_event_pool_options_t o;
    memset(&o, 0, sizeof o);
    o.struct_size = (uint32_t)sizeof o;
    o.capacity = capacity;
    o.prewarm = prewarm;
    return EXPECT_OK(evx_device_create_event_pool(c->dev, &o, &c->pool));
}

/* e: an event from the pool whose driver event was recorded in an earlier
 * use (a "former" event: evx renews it before handing it out raw). */
static int setup_former_pool_event(fctx *c)
{
    evx_event_t first = NULL;
    if (!setup_stream(c) || !setup_pool(c, 1, 1) ||
        !EXPECT_OK(evx_event_pool_acquire(c->pool, &first)))
        return 0;
    keep_event_native(c, first);
    if (!EXPECT_OK(evx_event_record(first, c->s)) ||
        !EXPECT_OK(evx_event_synchronize(first)) ||
        !EXPECT_OK(evx_event_pool_release(c->pool, first)))
        return 0;
    return EXPECT_OK(evx_event_pool_acquire(c->pool, &c->e));
}

static void end_capture(fctx *c, CUgraph *graph);

static void drop_all(fctx *c)
{
    end_capture(c, NULL);
    if (c->e != NULL && c->pool != NULL)
        EXPECT_OK(evx_event_pool_release(c->pool, c->e));
    else
        drop_event(&c->e);
    c->e = NULL;
    drop_event(&c->e2);
    drop_event(&c->out_e);
    drop_pool(&c->pool);
    drop_timer(&c->timer);
    drop_timeline(&c->tl);
    /* Work queued by the step (host functions writing into *c) is done
     * before *c goes. */
    if (c->s != NULL)
        EXPECT_OK(evx_stream_synchronize(c->s));
    if (c->dflt != NULL)
        EXPECT_OK(evx_stream_synchronize(c->dflt));
    drop_stream(&c->s);
    drop_stream(&c->dflt);
    drop_stream(&c->out_s);
    if (c->ctx != NULL)
        conf_ctx_drop(&c->ctx, &c->cs);
}

/* ---- the public calls walked --------------------------------------------- */

typedef struct fop {
    const char *name;
    int (*setup)(fctx *c);                 /* 1 when ready */
    evx_status_t (*run)(fctx *c);
    /* Handle consistency after the run; `failed`: the run did not succeed. */
    void (*verify)(fctx *c, int failed);
} fop;

static int no_setup(fctx *c)
{
    /* The calling thread's cached driver events go: creates reach the
     * driver. */
    return EXPECT_OK(evx_device_trim(c->dev));
}

/* A failed create leaves its out-pointer NULL; a successful one sets it. */
static void null_iff_failed(const void *out, int failed, const char *what)
{
    if (failed)
        EXPECTF(out == NULL, "a failed call set the %s to %p", what, out);
    else
        EXPECTF(out != NULL, "a successful call left the %s NULL", what);
}

static void out_event_null_on_failure(fctx *c, int failed)
{
    null_iff_failed(c->out_e, failed, "event");
}

static void out_stream_null_on_failure(fctx *c, int failed)
{
    null_iff_failed(c->out_s, failed, "stream");
}

static void nothing_to_verify(fctx *c, int failed)
{
    (void)c;
    (void)failed;
}

/* evx_device_create_event */
static evx_status_t run_create_event(fctx *c)
{
    return evx_device_create_event(c->dev, 0, &c->out_e);
}

static evx_status_t run_create_ipc_event(fctx *c)
{
    return evx_device_create_event(
        c->dev, EVX_EVENT_DISABLE_TIMING | EVX_EVENT_INTERPROCESS, &c->out_e);
}

/* evx_device_create_stream */
static evx_status_t run_create_stream(fctx *c)
{
    return evx_device_create_stream(c->dev, EVX_STREAM_NON_BLOCKING, 0,
                                    &c->out_s);
}

/* evx_stream_destroy: the handle is dead whatever the driver said. */
static int setup_destroy_stream(fctx *c)
{
    if (!setup_stream(c))
        return 0;
    keep_stream_native(c, c->s);
    return 1;
}

static evx_status_t run_destroy_stream(fctx *c)
{
    evx_status_t st = evx_stream_destroy(c->s);
    c->gone_s = c->s; /* checked below */
    c->s = NULL;
    return st;
}

static void verify_stream_dead(fctx *c, int failed)
{
    (void)failed;
    EXPECTF(evx_stream_query(c->gone_s) == EVX_ERROR_INVALID_HANDLE,
            "the destroyed stream's handle still answers");
}

/* evx_stream_wrap_external, of a stream evx made and of the legacy default
 * stream. */
static int setup_wrap_native(fctx *c)
{
    return setup_stream(c);
}

static evx_status_t run_wrap_native(fctx *c)
{
    void *native = NULL;
    evx_status_t st = evx_stream_get_native(c->s, &native);
    return st ? st : evx_stream_wrap_external(c->dev, native, &c->out_s);
}

static evx_status_t run_wrap_native_from_stream(fctx *c)
{
    void *native = NULL;
    evx_status_t st = evx_stream_get_native(c->s, &native);
    return st ? st
              : evx_stream_wrap_external(EVX_DEVICE_FROM_STREAM, native,
                                         &c->out_s);
}

static evx_status_t run_wrap_default(fctx *c)
{
    return evx_stream_wrap_external(c->dev, NULL, &c->out_s);
}

/* evx_event_record / _with_flags: a failed record leaves a never-recorded
 * event never recorded. */
static int setup_record(fctx *c)
{
    return setup_stream(c) && setup_default(c) &&
           EXPECT_OK(evx_device_create_event(c->dev, 0, &c->e));
}

/* s: a borrowed stream of a context made with cuCtxCreate, e a new event
 * (of the primary context): the record moves e there (contexts.cpp). */
static int setup_record_created(fctx *c)
{
    return conf_ctx_make(c->dev, &c->ctx, &c->cs) &&
           EXPECT_OK(evx_stream_wrap_external(c->dev, c->cs, &c->s)) &&
           EXPECT_OK(evx_device_create_event(c->dev, 0, &c->e));
}

static evx_status_t run_record(fctx *c)
{
    return evx_event_record(c->e, c->s);
}

static evx_status_t run_record_default(fctx *c)
{
    return evx_event_record(c->e, c->dflt);
}

static evx_status_t run_record_flags(fctx *c)
{
    return evx_event_record_with_flags(c->e, c->s, 0);
}

static void verify_still_unrecorded(fctx *c, int failed)
{
    float ms = 0;
    if (!failed)
        return;
    /* Never recorded: complete, and no elapsed time. */
    EXPECT_OK(evx_event_query(c->e));
    EXPECT_STATUS(evx_event_elapsed_time(&ms, c->e, c->e),
                  EVX_ERROR_INVALID_HANDLE);
}

/* evx_stream_wait_event, with a plain recorded event and with a former
 * pool event (which evx renews first: cuEventCreate + cuEventDestroy). */
static int setup_wait(fctx *c)
{
    return setup_recorded(c) && setup_default(c);
}

static evx_status_t run_wait(fctx *c)
{
    return evx_stream_wait_event(c->s, c->e, 0);
}

static evx_status_t run_wait_default(fctx *c)
{
    return evx_stream_wait_event(c->dflt, c->e, 0);
}

static evx_status_t run_wait_former(fctx *c)
{
    return evx_stream_wait_event(c->s, c->e, 0);
}

/* evx_event_get_native of a former pool event. */
static evx_status_t run_native_former(fctx *c)
{
    void *native = NULL;
    evx_status_t st = evx_event_get_native(c->e, &native);
    if (st == EVX_SUCCESS && c->nev < NNATIVE)
        c->ev_native[c->nev++] = native;
    return st;
}

/* evx_event_query / synchronize / elapsed_time */
static evx_status_t run_event_query(fctx *c) { return evx_event_query(c->e); }

static evx_status_t run_event_sync(fctx *c)
{
    return evx_event_synchronize(c->e);
}

static evx_status_t run_elapsed(fctx *c)
{
    return evx_event_elapsed_time(&c->ms[0], c->e, c->e2);
}

/* Stream calls, on a stream evx made and on the legacy default stream. */
static int setup_streams(fctx *c)
{
    return setup_stream(c) && setup_default(c);
}

static evx_status_t run_stream_query(fctx *c) { return evx_stream_query(c->s); }

static evx_status_t run_stream_query_default(fctx *c)
{
    return evx_stream_query(c->dflt);
}

static evx_status_t run_stream_sync(fctx *c)
{
    return evx_stream_synchronize(c->s);
}

static evx_status_t run_stream_sync_default(fctx *c)
{
    return evx_stream_synchronize(c->dflt);
}

static evx_status_t run_host_func(fctx *c)
{
    return evx_stream_launch_host_func(c->s, host_set_flag, &c->flag);
}

static evx_status_t run_host_func_default(fctx *c)
{
    return evx_stream_launch_host_func(c->dflt, host_set_flag, &c->flag);
}

static evx_status_t host_flag_status(void *user_data)
{
    host_set_flag(user_data);
    return EVX_SUCCESS;
}

static evx_status_t run_host_func_status(fctx *c)
{
    return evx_stream_launch_host_func_status(c->s, host_flag_status, &c->flag,
                                              NULL);
}

static evx_status_t run_host_func_status_default(fctx *c)
{
    return evx_stream_launch_host_func_status(c->dflt, host_flag_status,
                                              &c->flag, NULL);
}

/* A stream being captured: the host function becomes a graph node. */
static int setup_capturing(fctx *c)
{
    const conf_cu *cu = conf_cu_get();
    void *native = NULL;
    if (!setup_stream(c) || !EXPECT_OK(evx_stream_get_native(c->s, &native)))
        return 0;
    if (!EXPECT(cu->stream_begin_capture((CUstream)native,
                                         CU_STREAM_CAPTURE_MODE_RELAXED) == CUDA_SUCCESS))
        return 0;
    c->cap_native = native;
    return 1;
}

/* Ends the capture begun by setup_capturing, if still on: the graph into
 * *graph, or destroyed when graph is NULL. */
static void end_capture(fctx *c, CUgraph *graph)
{
    const conf_cu *cu = conf_cu_get();
    CUgraph g = NULL;
    if (c->cap_native == NULL)
        return;
    EXPECT(cu->stream_end_capture((CUstream)c->cap_native, &g) == CUDA_SUCCESS);
    c->cap_native = NULL;
    if (graph != NULL)
        *graph = g;
    else if (g != NULL)
        EXPECT(cu->graph_destroy(g) == CUDA_SUCCESS);
}

/* The graph runs the host function once per launch, unless the launch into
 * the capture failed; its destroy frees evx's record (the leak check). */
static void verify_captured_host_func(fctx *c, int failed)
{
    const conf_cu *cu = conf_cu_get();
    CUgraph g = NULL;
    CUgraphExec x = NULL;
    CUcontext ctx = NULL;
    void *native = NULL;
    end_capture(c, &g);
    if (!EXPECT(g != NULL) || !EXPECT_OK(evx_stream_get_native(c->s, &native)))
        return;
    EXPECTF(flag_get(&c->flag) == 0, "a captured host function ran at capture");
    /* Instantiation needs the graph's context current. */
    if (EXPECT(cu->primary_retain(&ctx, conf_cu_device(c->dev)) == CUDA_SUCCESS)) {
        EXPECT(cu->ctx_push_current(ctx) == CUDA_SUCCESS);
        if (EXPECT(cu->graph_instantiate(&x, g, 0) == CUDA_SUCCESS)) {
            EXPECT(cu->graph_launch(x, (CUstream)native) == CUDA_SUCCESS);
            EXPECT(cu->stream_synchronize((CUstream)native) == CUDA_SUCCESS);
            EXPECT(cu->graph_exec_destroy(x) == CUDA_SUCCESS);
        }
        EXPECT(cu->ctx_pop_current(&ctx) == CUDA_SUCCESS);
        EXPECT(cu->primary_release(conf_cu_device(c->dev)) == CUDA_SUCCESS);
    }
    EXPECT(cu->graph_destroy(g) == CUDA_SUCCESS);
    EXPECTF(flag_get(&c->flag) == (failed ? 0 : 1),
            "the graph's launch %s the host function, the launch into the capture %s",
            flag_get(&c->flag) ? "ran" : "did not run", failed ? "failed" : "succeeded");
}

static void verify_host_func(fctx *c, int failed)
{
    EXPECT_OK(evx_stream_synchronize(failed ? c->s : c->s));
    if (c->dflt != NULL)
        EXPECT_OK(evx_stream_synchronize(c->dflt));
    EXPECTF(flag_get(&c->flag) == (failed ? 0 : 1),
            "the host function %s, the launch %s", flag_get(&c->flag)
                ? "ran" : "did not run", failed ? "failed" : "succeeded");
}

/* Pools */
static int setup_empty_pool(fctx *c) { return setup_pool(c, 2, 0); }

static evx_status_t run_pool_create(fctx *c)
{
    evx_event_pool_options_t o;
    memset(&o, 0, sizeof o);
    o.struct_size = (uint32_t)sizeof o;
    o.capacity = 3;
    o.prewarm = 2;
    return evx_device_create_event_pool(c->dev, &o, &c->pool);
}

static void verify_pool_null_on_failure(fctx *c, int failed)
{
    null_iff_failed(c->pool, failed, "pool");
}

static evx_status_t run_pool_prewarm(fctx *c)
{
    return evx_event_pool_prewarm(c->pool, 2);
}

static evx_status_t run_pool_acquire(fctx *c)
{
    return evx_event_pool_acquire(c->pool, &c->e);
}

static void verify_acquire(fctx *c, int failed)
{
    null_iff_failed(c->e, failed, "event");
}

/* A pool event recorded on a stream whose host function holds it: its
 * release asks the driver whether it is complete. */
static int setup_release(fctx *c)
{
    return setup_stream(c) && setup_pool(c, 2, 1) &&
           EXPECT_OK(evx_event_pool_acquire(c->pool, &c->e)) &&
           EXPECT_OK(evx_stream_launch_host_func(c->s, host_sleep_ms,
                                                 (void *)(intptr_t)20)) &&
           EXPECT_OK(evx_event_record(c->e, c->s));
}

static evx_status_t run_pool_release(fctx *c)
{
    evx_status_t st = evx_event_pool_release(c->pool, c->e);
    if (st == EVX_SUCCESS)
        c->e = NULL;
    return st;
}

static void verify_pool_holds(fctx *c, int failed)
{
    evx_event_pool_stats_t s;
    memset(&s, 0, sizeof s);
    s.struct_size = (uint32_t)sizeof s;
    (void)failed;
    if (EXPECT_OK(evx_event_pool_get_stats(c->pool, &s)))
        EXPECTF(s.idle + s.pending + s.in_use <= s.capacity,
                "pool holds %u idle + %u pending + %u in use > capacity %u",
                s.idle, s.pending, s.in_use, s.capacity);
}

static int setup_pool_destroy(fctx *c)
{
    evx_event_t a = NULL, b = NULL;
    if (!setup_pool(c, 2, 0) ||
        !EXPECT_OK(evx_event_pool_acquire(c->pool, &a)) ||
        !EXPECT_OK(evx_event_pool_acquire(c->pool, &b)))
        return 0;
    keep_event_native(c, a);
    keep_event_native(c, b);
    return EXPECT_OK(evx_event_pool_release(c->pool, a)) &&
           EXPECT_OK(evx_event_pool_release(c->pool, b));
}

static evx_status_t run_pool_destroy(fctx *c)
{
    evx_status_t st = evx_event_pool_destroy(c->pool);
    c->pool = NULL; /* dead whatever the driver said */
    return st;
}

/* evx_device_trim of a cached event. */
static int setup_trim(fctx *c)
{
    evx_event_t a = NULL;
    if (!EXPECT_OK(evx_device_trim(c->dev)) ||
        !EXPECT_OK(evx_device_create_event(c->dev, 0, &a)))
        return 0;
    keep_event_native(c, a);
    return EXPECT_OK(evx_event_destroy(a));
}

static evx_status_t run_trim(fctx *c) { return evx_device_trim(c->dev); }

/* Timers */
static evx_status_t run_timer_create(fctx *c)
{
    return evx_device_create_timer(c->dev, &c->timer);
}

static void verify_timer_null_on_failure(fctx *c, int failed)
{
    null_iff_failed(c->timer, failed, "timer");
}

static int setup_timer(fctx *c)
{
    return setup_streams(c) && EXPECT_OK(evx_device_create_timer(c->dev, &c->timer));
}

static int setup_timer_started(fctx *c)
{
    return setup_timer(c) && EXPECT_OK(evx_timer_start(c->timer, c->s));
}

static int setup_timer_done(fctx *c)
{
    return setup_timer_started(c) &&
           EXPECT_OK(evx_timer_stop(c->timer, c->s)) &&
           EXPECT_OK(evx_stream_synchronize(c->s));
}

static evx_status_t run_timer_start(fctx *c)
{
    return evx_timer_start(c->timer, c->s);
}

static evx_status_t run_timer_start_default(fctx *c)
{
    return evx_timer_start(c->timer, c->dflt);
}

static evx_status_t run_timer_stop(fctx *c)
{
    return evx_timer_stop(c->timer, c->s);
}

static evx_status_t run_timer_elapsed(fctx *c)
{
    return evx_timer_elapsed(c->timer, &c->ms[0]);
}

static evx_status_t run_timer_sync(fctx *c)
{
    return evx_timer_synchronize(c->timer, &c->ms[0]);
}

static void verify_timer_unstarted(fctx *c, int failed)
{
    float ms;
    if (failed)
        EXPECT_STATUS(evx_timer_elapsed(c->timer, &ms),
                      EVX_ERROR_ILLEGAL_STATE);
}

/* Timelines */
static int setup_timeline(fctx *c)
{
    return setup_streams(c) && EXPECT_OK(evx_device_trim(c->dev)) &&
           EXPECT_OK(evx_device_create_timeline(c->dev, 4, &c->tl));
}

static int setup_timeline_marked(fctx *c)
{
    return setup_timeline(c) &&
           EXPECT_OK(evx_timeline_mark(c->tl, c->s, NULL)) &&
           EXPECT_OK(evx_timeline_mark(c->tl, c->s, NULL)) &&
           EXPECT_OK(evx_timeline_synchronize(c->tl));
}

static evx_status_t run_timeline_mark(fctx *c)
{
    return evx_timeline_mark(c->tl, c->s, &c->n);
}

static void verify_timeline_count(fctx *c, int failed)
{
    uint32_t n = 99;
    if (EXPECT_OK(evx_timeline_count(c->tl, &n)))
        EXPECTF(n == (failed ? 0u : 1u), "count %u after a %s mark", n,
                failed ? "failed" : "successful");
}

static evx_status_t run_timeline_intervals(fctx *c)
{
    return evx_timeline_intervals(c->tl, c->ms, 4, &c->n);
}

static void verify_intervals(fctx *c, int failed)
{
    EXPECTF(c->n == (failed ? 0u : 1u), "written %u after %s", c->n,
            failed ? "a failure" : "success");
}

static evx_status_t run_timeline_sync(fctx *c)
{
    return evx_timeline_synchronize(c->tl);
}

static const fop ops[] = {
    {"evx_device_create_event", no_setup, run_create_event,
     out_event_null_on_failure},
    {"evx_device_create_event(interprocess)", no_setup, run_create_ipc_event,
     out_event_null_on_failure},
    {"evx_device_create_stream", no_setup, run_create_stream,
     out_stream_null_on_failure},
    {"evx_stream_destroy", setup_destroy_stream, run_destroy_stream,
     verify_stream_dead},
    {"evx_stream_wrap_external(device, native)", setup_wrap_native,
     run_wrap_native, out_stream_null_on_failure},
    {"evx_stream_wrap_external(FROM_STREAM, native)", setup_wrap_native,
     run_wrap_native_from_stream, out_stream_null_on_failure},
    {"evx_stream_wrap_external(device, NULL)", no_setup, run_wrap_default,
     out_stream_null_on_failure},
    {"evx_event_record", setup_record, run_record, verify_still_unrecorded},
    {"evx_event_record(default stream)", setup_record, run_record_default,
     verify_still_unrecorded},
    {"evx_event_record(stream of a created context)", setup_record_created,
     run_record, verify_still_unrecorded},
    {"evx_event_record_with_flags", setup_record, run_record_flags,
     verify_still_unrecorded},
    {"evx_stream_wait_event", setup_wait, run_wait, nothing_to_verify},
    {"evx_stream_wait_event(default stream)", setup_wait, run_wait_default,
     nothing_to_verify},
    {"evx_stream_wait_event(former pool event)", setup_former_pool_event,
     run_wait_former, nothing_to_verify},
    {"evx_event_get_native(former pool event)", setup_former_pool_event,
     run_native_former, nothing_to_verify},
    {"evx_event_query", setup_recorded, run_event_query, nothing_to_verify},
    {"evx_event_synchronize", setup_recorded, run_event_sync,
     nothing_to_verify},
    {"evx_event_elapsed_time", setup_two_recorded, run_elapsed,
     nothing_to_verify},
    {"evx_stream_query", setup_streams, run_stream_query, nothing_to_verify},
    {"evx_stream_query(default stream)", setup_streams,
     run_stream_query_default, nothing_to_verify},
    {"evx_stream_synchronize", setup_streams, run_stream_sync,
     nothing_to_verify},
    {"evx_stream_synchronize(default stream)", setup_streams,
     run_stream_sync_default, nothing_to_verify},
    {"evx_stream_launch_host_func", setup_streams, run_host_func,
     verify_host_func},
    {"evx_stream_launch_host_func(default stream)", setup_streams,
     run_host_func_default, verify_host_func},
    {"evx_stream_launch_host_func_status", setup_streams, run_host_func_status,
     verify_host_func},
    {"evx_stream_launch_host_func_status(default stream)", setup_streams,
     run_host_func_status_default, verify_host_func},
    {"evx_stream_launch_host_func_status(capturing stream)", setup_capturing,
     run_host_func_status, verify_captured_host_func},
    {"evx_device_create_event_pool", no_setup, run_pool_create,
     verify_pool_null_on_failure},
    {"evx_event_pool_prewarm", setup_empty_pool, run_pool_prewarm,
     verify_pool_holds},
    {"evx_event_pool_acquire", setup_empty_pool, run_pool_acquire,
     verify_acquire},
    {"evx_event_pool_release", setup_release, run_pool_release,
     verify_pool_holds},
    {"evx_event_pool_destroy", setup_pool_destroy, run_pool_destroy,
     nothing_to_verify},
    {"evx_device_trim", setup_trim, run_trim, nothing_to_verify},
    {"evx_device_create_timer", no_setup, run_timer_create,
     verify_timer_null_on_failure},
    {"evx_timer_start", setup_timer, run_timer_start, verify_timer_unstarted},
    {"evx_timer_start(default stream)", setup_timer, run_timer_start_default,
     verify_timer_unstarted},
    {"evx_timer_stop", setup_timer_started, run_timer_stop,
     nothing_to_verify},
    {"evx_timer_elapsed", setup_timer_done, run_timer_elapsed,
     nothing_to_verify},
    {"evx_timer_synchronize", setup_timer_done, run_timer_sync,
     nothing_to_verify},
    {"evx_timeline_mark", setup_timeline, run_timeline_mark,
     verify_timeline_count},
    {"evx_timeline_intervals", setup_timeline_marked, run_timeline_intervals,
     verify_intervals},
    {"evx_timeline_synchronize", setup_timeline_marked, run_timeline_sync,
     nothing_to_verify},
    {NULL, NULL, NULL, NULL},
};

/* ---- the walk ------------------------------------------------------------ */

/* Faults injected per public call and driver entry point, printed (-v) and
 * summed for docs/robustness.md. */
static long total_injected;
static int sites_reached;

/* The walk's name of the public call, without the "(...)" variant. */
static void base_name(const char *op, char *out, size_t cap)
{
    size_t n = strcspn(op, "(");
    if (n >= cap)
        n = cap - 1;
    memcpy(out, op, n);
    out[n] = '\0';
}

/* Destroys the driver objects the step saw that are still alive (only a
 * destroy the driver refused leaves one); returns how many there were. */
static int destroy_leftovers(fctx *c)
{
    const conf_cu *cu = conf_cu_get();
    int i, alive = 0;
    for (i = 0; i < c->nev; i++)
        if (cu->event_destroy((CUevent)c->ev_native[i]) == CUDA_SUCCESS)
            alive++;
    for (i = 0; i < c->nst; i++)
        if (cu->stream_destroy((CUstream)c->st_native[i]) == CUDA_SUCCESS)
            alive++;
    return alive;
}

static void trim_all(void)
{
    int d;
    for (d = 0; d < conf_device_count(); d++)
        EXPECT_OK(evx_device_trim(d));
}

static CUcontext current_ctx(void)
{
    CUcontext cur = NULL;
    EXPECT(conf_cu_get()->ctx_get_current(&cur) == CUDA_SUCCESS);
    return cur;
}

static CUcontext primary_ctx(int dev)
{
    const conf_cu *cu = conf_cu_get();
    CUcontext c = NULL;
    CUdevice d = conf_cu_device(dev);
    /* The primary context's value never changes; evx holds a retain. */
    if (EXPECT(cu->primary_retain(&c, d) == CUDA_SUCCESS))
        EXPECT(cu->primary_release(d) == CUDA_SUCCESS);
    return c;
}

/* One step: fail the nth call of entry `en` inside op `op`. Returns 0 when
 * the op made fewer than nth calls of it (nothing fired), else 1. */
static int fault_step(const host_debug *h, const fop *op, const entry *en,
                      int nth, int dev, const evx_host_live *base)
{
    fctx c;
    evx_status_t st;
    long long fired0;
    CUcontext before;
    char where[256], opname[96];
    const char *msg, *why;
    int fired, alive, is_pop, undone;

    memset(&c, 0, sizeof c);
    c.dev = dev;
    if (!op->setup(&c)) {
        EXPECTF(0, "%s: setup failed", op->name);
        drop_all(&c);
        return 0;
    }
    before = current_ctx();
    evx_clear_last_error();
    fired0 = h->faults_fired();
    EXPECT(h->set_fault(en->name, nth, (int)en->status) == 0);
    st = op->run(&c);
    fired = h->faults_fired() != fired0;
    h->set_fault(NULL, 0, 0);
    if (!fired) {
        /* Nothing failed: the op's own success path. */
        EXPECTF(st == EVX_SUCCESS, "%s without a fault -> %s: %s", op->name,
                evx_status_name(st), evx_last_error_message());
        drop_all(&c);
        return 0;
    }
    total_injected++;
    if (nth == 1)
        sites_reached++;
    snprintf(where, sizeof where, "%s with call %d of %s failing (%s)",
             op->name, nth, en->name, evx_status_name((evx_status_t)en->status));
    base_name(op->name, opname, sizeof opname);
    msg = evx_last_error_message();
    why = tolerated_why(opname, en->name);
    is_pop = strcmp(en->name, "cuCtxPopCurrent") == 0;
    undone = st != EVX_SUCCESS && !(is_pop && work_stands_after_pop(op->name));
    if (is_pop) {
        /* The pushed context stays on top; the status says so. */
        CUcontext top = current_ctx(), popped = NULL;
        pop_reported += st == (evx_status_t)en->status;
        EXPECTF(st == (evx_status_t)en->status, "%s: returned %s: %s", where,
                evx_status_name(st), msg);
        EXPECTF(evx_last_error() == st, "%s: evx_last_error() is %s", where,
                evx_status_name(evx_last_error()));
        EXPECTF(msg != NULL && strstr(msg, "cuCtxPopCurrent") != NULL &&
                    strstr(msg, "stays current") != NULL,
                "%s: the message does not name cuCtxPopCurrent and the context "
                "left current: \"%s\"", where, msg ? msg : "(null)");
        EXPECTF(top != before && (top == primary_ctx(dev) || top == c.ctx),
                "%s: the current context is %p (before %p), not device %d's "
                "primary context nor the context evx made current for the "
                "step's stream", where, (void *)top, (void *)before, dev);
        EXPECT(conf_cu_get()->ctx_pop_current(&popped) == CUDA_SUCCESS);
    } else if (st == EVX_SUCCESS && why != NULL) {
        conf_note("%s: EVX_SUCCESS, tolerated: %s", where, why);
    } else if (EXPECTF(st == (evx_status_t)en->status, "%s: returned %s: %s",
                       where, evx_status_name(st), msg)) {
        EXPECTF(evx_last_error() == st, "%s: evx_last_error() is %s", where,
                evx_status_name(evx_last_error()));
        EXPECTF(msg != NULL && strstr(msg, en->name) != NULL,
                "%s: the message does not name %s: \"%s\"", where, en->name,
                msg ? msg : "(null)");
    }
    EXPECTF(current_ctx() == before,
            "%s: the calling thread's current context changed", where);
    op->verify(&c, undone);
    drop_all(&c);
    /* Only a destroy the driver refused may leave a driver object: exactly
     * the one refused, which the test then destroys itself. */
    if (strcmp(en->name, "cuEventDestroy") == 0 ||
        strcmp(en->name, "cuStreamDestroy") == 0) {
        trim_all();
        alive = destroy_leftovers(&c);
        EXPECTF(alive == 1,
                "%s: %d driver object(s) of the step outlived evx's "
                "teardown, expected exactly the one refused", where, alive);
    }
    live_expect_back(base, where);
    if (conf_verbose())
        printf("    fault: %-48s %-28s call %d -> %s\n", op->name, en->name,
               nth, st == EVX_SUCCESS ? "EVX_SUCCESS (tolerated)"
                                      : evx_status_name(st));
    return 1;
}

static void walk(int dev)
{
    const host_debug *h = host_debug_get();
    evx_host_live base;
    const fop *op;
    int i, nth;
    char where[160];

    if (!host_live_start(&base) || h == NULL) {
        conf_skip("the driver is not the host emulation: only it can be "
                  "made to fail");
        return;
    }
    for (op = ops; op->name != NULL; op++) {
        for (i = 0; i < NENTRIES; i++) {
            for (nth = 1; nth <= MAX_NTH; nth++)
                if (!fault_step(h, op, &entries[i], nth, dev, &base))
                    break;
            EXPECTF(nth <= MAX_NTH, "%s makes more than %d calls of %s",
                    op->name, MAX_NTH, entries[i].name);
        }
        /* Works again with no fault. */
        {
            fctx c;
            memset(&c, 0, sizeof c);
            c.dev = dev;
            snprintf(where, sizeof where, "%s after the faults", op->name);
            if (op->setup(&c))
                EXPECTF(op->run(&c) == EVX_SUCCESS, "%s: %s", where,
                        evx_last_error_message());
            drop_all(&c);
            live_expect_back(&base, where);
        }
    }
}

static void walk_and_count(int dev)
{
    total_injected = 0;
    sites_reached = 0;
    pop_reported = 0;
    walk(dev);
    conf_note("%ld faults injected at %d (public call, driver entry point) "
              "pairs of device %d; %ld of them failing cuCtxPopCurrent, each "
              "reported", total_injected, sites_reached, dev, pop_reported);
}

static void t_walk(void) { walk_and_count(0); }

static void t_walk_second_device(void)
{
    NEED_DEVICES(2);
    walk_and_count(1);
}

/* ---- load and first use, in child processes ----------------------------- */

#define CHILD_EXPECT(cond, ...) \
    do { \
        if (!(cond)) { \
            printf("    child: %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            printf(__VA_ARGS__); \
            printf("\n"); \
            fails++; \
        } \
    } while (0)

/* Whether the message names the driver call and the status is the last
 * error. */
static int child_reported(evx_status_t st, evx_status_t want,
                          const char *call)
{
    int fails = 0;
    const char *m = evx_last_error_message();
    CHILD_EXPECT(st == want, "returned %s, want %s: %s", evx_status_name(st),
                 evx_status_name(want), m);
    CHILD_EXPECT(evx_last_error() == st, "evx_last_error() is %s",
                 evx_status_name(evx_last_error()));
    CHILD_EXPECT(m != NULL && strstr(m, call) != NULL,
                 "the message does not name %s: %s", call, m ? m : "(null)");
    return fails;
}

/* EVX_HOST_FAULT (set by the parent) fails one driver call made while evx
 * opens the driver. Exit 0: evx_driver_open returned the fault's status
 * (EVX_FAULT_WANT) naming EVX_FAULT_CALL, and returns it again (loading is
 * tried once); 3: no fault fired (the load made fewer such calls); 4: the
 * fault fired in the lookup of an optional entry point, which evx then
 * treats as absent, and the driver works; 1: anything else. */
static int child_load(void)
{
    const char *call = getenv("EVX_FAULT_CALL");
    const char *want_s = getenv("EVX_FAULT_WANT");
    evx_status_t st = evx_driver_open();
    evx_status_t want = want_s ? (evx_status_t)atoi(want_s) : -1;
    const host_debug *h;
    int fails = 0, n = -1;
    if (call == NULL || want_s == NULL)
        return 2;
    if (st != EVX_SUCCESS) {
        fails += child_reported(st, want, call);
        if (fails)
            printf("    child: %s failing: evx_driver_open -> %s: %s\n", call,
                   evx_status_name(st), evx_last_error_message());
        CHILD_EXPECT(evx_driver_open() == st, "a second open differs");
        CHILD_EXPECT(evx_device_count(&n) == st, "evx_device_count differs");
        return fails ? 1 : 0;
    }
    h = host_debug_get();
    if (h == NULL)
        return 1;
    if (h->faults_fired() == 0)
        return 3;
    /* Fired and the driver opened: an optional entry point was missed. */
    {
        evx_stream_t s = NULL, w = NULL;
        void *native = NULL;
        int dev = -1;
        CHILD_EXPECT(strcmp(call, "cuGetProcAddress") == 0,
                     "%s failed but the driver opened", call);
        CHILD_EXPECT(evx_device_create_stream(0, 0, 0, &s) == EVX_SUCCESS,
                     "%s", evx_last_error_message());
        CHILD_EXPECT(evx_stream_get_native(s, &native) == EVX_SUCCESS, "%s",
                     evx_last_error_message());
        CHILD_EXPECT(evx_stream_wrap_external(EVX_DEVICE_FROM_STREAM, native,
                                              &w) == EVX_SUCCESS,
                     "%s", evx_last_error_message());
        CHILD_EXPECT(evx_stream_get_device(w, &dev) == EVX_SUCCESS &&
                         dev == 0, "device %d", dev);
        evx_stream_destroy(w);
        evx_stream_destroy(s);
    }
    return fails ? 1 : 4;
}

/* The driver calls evx makes once per device: the primary context's retain
 * and the stream priority range. Each fails once; the public call returns
 * the status naming the call, leaves its out-pointer NULL, and succeeds
 * when called again. */
static int child_first_use(void)
{
    const host_debug *h;
    evx_host_live live;
    evx_event_t e = JUNK(evx_event_t);
    evx_stream_t s = JUNK(evx_stream_t);
    int fails = 0, least = 0, greatest = 0, n = 0;
    evx_status_t st;

    if (evx_driver_open() != EVX_SUCCESS || (h = host_debug_get()) == NULL)
        return 2;
    (void)evx_device_count(&n);
    h->get_live(&live);
    CHILD_EXPECT(live.contexts == 0, "%lld contexts retained before any use",
                 live.contexts);

    h->set_fault("cuDevicePrimaryCtxRetain", 1, CUDA_ERROR_OUT_OF_MEMORY);
    st = evx_device_create_event(0, 0, &e);
    fails += child_reported(st, EVX_ERROR_OUT_OF_MEMORY,
                            "cuDevicePrimaryCtxRetain");
    CHILD_EXPECT(e == NULL, "event %p after a failed create", (void *)e);
    h->get_live(&live);
    CHILD_EXPECT(live.contexts == 0 && live.events == 0,
                 "contexts %lld, events %lld after the failure", live.contexts,
                 live.events);
    CHILD_EXPECT(evx_device_create_event(0, 0, &e) == EVX_SUCCESS, "%s",
                 evx_last_error_message());

    h->set_fault("cuCtxGetStreamPriorityRange", 1, CUDA_ERROR_INVALID_CONTEXT);
    st = evx_device_create_stream(0, 0, 0, &s);
    fails += child_reported(st, EVX_ERROR_INVALID_CONTEXT,
                            "cuCtxGetStreamPriorityRange");
    CHILD_EXPECT(s == NULL, "stream %p after a failed create", (void *)s);
    CHILD_EXPECT(evx_device_create_stream(0, 0, 0, &s) == EVX_SUCCESS, "%s",
                 evx_last_error_message());
    CHILD_EXPECT(evx_device_stream_priority_range(0, &least, &greatest) ==
                     EVX_SUCCESS && greatest <= least,
                 "range [%d, %d]", greatest, least);

    if (n >= 2) {
        /* Device 1: its retain fails under evx_device_stream_priority_range. */
        h->set_fault("cuDevicePrimaryCtxRetain", 1, CUDA_ERROR_OUT_OF_MEMORY);
        st = evx_device_stream_priority_range(1, &least, &greatest);
        fails += child_reported(st, EVX_ERROR_OUT_OF_MEMORY,
                                "cuDevicePrimaryCtxRetain");
        CHILD_EXPECT(evx_device_stream_priority_range(1, &least, &greatest) ==
                         EVX_SUCCESS, "%s", evx_last_error_message());
    }
    h->set_fault(NULL, 0, 0);
    CHILD_EXPECT(evx_event_destroy(e) == EVX_SUCCESS, "%s",
                 evx_last_error_message());
    CHILD_EXPECT(evx_stream_destroy(s) == EVX_SUCCESS, "%s",
                 evx_last_error_message());
    CHILD_EXPECT(evx_device_trim(0) == EVX_SUCCESS, "%s",
                 evx_last_error_message());
    h->get_live(&live);
    CHILD_EXPECT(live.events == 0 && live.streams == 0 &&
                     live.contexts == (n >= 2 ? 2 : 1),
                 "events %lld, streams %lld, contexts %lld at the end",
                 live.events, live.streams, live.contexts);
    return fails ? 1 : 0;
}

int conf_fault_child(const char *mode)
{
    if (strcmp(mode, "fault-load") == 0)
        return child_load();
    if (strcmp(mode, "fault-first-use") == 0)
        return child_first_use();
    fprintf(stderr, "unknown child mode %s\n", mode);
    return 2;
}

static int need_emulation(void)
{
    if (host_debug_get() != NULL)
        return 1;
    conf_skip("the driver is not the host emulation: only it can be made to "
              "fail");
    return 0;
}

/* The driver calls of evx_driver_open, each failing in turn. */
static void t_load(void)
{
    static const entry load_entries[] = {
        {"cuDriverGetVersion", CUDA_ERROR_INVALID_VALUE},
        {"cuGetProcAddress", CUDA_ERROR_INVALID_VALUE},
        {"cuInit", CUDA_ERROR_NO_DEVICE},
        {"cuDeviceGetCount", CUDA_ERROR_LAUNCH_FAILED},
        {"cuDeviceGet", CUDA_ERROR_INVALID_DEVICE},
    };
    char fault[128], want[32], call[64];
    const char *vars[4] = {fault, want, call, NULL};
    size_t i;
    int nth, rc, injected = 0, optional = 0;
    if (!need_emulation())
        return;
    for (i = 0; i < sizeof load_entries / sizeof load_entries[0]; i++) {
        const entry *en = &load_entries[i];
        /* A failing cuGetProcAddress is reported as the load's own
         * status, naming the lookup. */
        const evx_status_t w =
            strcmp(en->name, "cuGetProcAddress") == 0
                ? EVX_ERROR_NOT_INITIALIZED : (evx_status_t)en->status;
        for (nth = 1; nth <= 64; nth++) {
            snprintf(fault, sizeof fault, "EVX_HOST_FAULT=%s:%d:%d", en->name,
                     nth, (int)en->status);
            snprintf(want, sizeof want, "EVX_FAULT_WANT=%d", (int)w);
            snprintf(call, sizeof call, "EVX_FAULT_CALL=%s", en->name);
            rc = run_child_env("fault-load", vars);
            if (rc == 3)
                break;
            if (!EXPECTF(rc == 0 || rc == 4, "%s: the child exited %d", fault,
                         rc))
                break;
            injected++;
            optional += rc == 4;
        }
        EXPECTF(nth > 1, "no call of %s while opening the driver", en->name);
    }
    conf_note("%d faults injected while opening the driver, %d of them in "
              "lookups of optional entry points (treated as absent)",
              injected, optional);
}

static void t_first_use(void)
{
    int rc;
    if (!need_emulation())
        return;
    rc = run_child_env("fault-first-use", (const char *const[]){NULL});
    EXPECTF(rc == 0, "the child exited %d", rc);
}

const conf_case conf_fault_cases[] = {
    {"faults.every_call_site", t_walk},
    {"faults.every_call_site_device1", t_walk_second_device},
    {"faults.driver_open", t_load},
    {"faults.first_use_of_a_device", t_first_use},
    {NULL, NULL},
};
