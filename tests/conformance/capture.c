/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/* The capture status of a stream (evx/capture.h). The host emulation does
 * not model stream capture (docs/conformance.md): there every stream
 * answers NONE, and the case that begins a capture is skipped, saying why;
 * on a GPU it runs. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "util.h"

static void t_not_capturing(void)
{
    evx_stream_t own = NULL, borrowed = NULL, legacy = NULL, per_thread = NULL;
    evx_capture_status_t c;
    void *native = NULL;

    REQUIRE((own = make_stream(0)) != NULL);
    REQUIRE_OK(evx_stream_get_native(own, &native));
    REQUIRE_OK(evx_stream_wrap_external(0, native, &borrowed));
    REQUIRE_OK(evx_stream_wrap_external(0, EVX_STREAM_LEGACY, &legacy));
    REQUIRE_OK(evx_stream_wrap_external(0, EVX_STREAM_PER_THREAD, &per_thread));
    c = (evx_capture_status_t)77;
    EXPECT_OK(evx_stream_get_capture_status(own, &c));
    EXPECTF(c == EVX_CAPTURE_STATUS_NONE, "owned stream: %d", (int)c);
    c = (evx_capture_status_t)77;
    EXPECT_OK(evx_stream_get_capture_status(borrowed, &c));
    EXPECTF(c == EVX_CAPTURE_STATUS_NONE, "borrowed stream: %d", (int)c);
    c = (evx_capture_status_t)77;
    EXPECT_OK(evx_stream_get_capture_status(legacy, &c));
    EXPECTF(c == EVX_CAPTURE_STATUS_NONE, "legacy default stream: %d", (int)c);
    c = (evx_capture_status_t)77;
    EXPECT_OK(evx_stream_get_capture_status(per_thread, &c));
    EXPECTF(c == EVX_CAPTURE_STATUS_NONE, "per-thread default stream: %d", (int)c);
    /* the answer is the same with work queued */
    EXPECT_OK(evx_stream_launch_host_func(own, host_sleep_ms, (void *)(intptr_t)20));
    EXPECT_OK(evx_stream_get_capture_status(borrowed, &c));
    EXPECT(c == EVX_CAPTURE_STATUS_NONE);
    EXPECT_OK(evx_stream_synchronize(own));
out:
    drop_stream(&per_thread);
    drop_stream(&legacy);
    drop_stream(&borrowed);
    drop_stream(&own);
}

static void t_bad_input(void)
{
    evx_stream_t s = NULL;
    evx_event_t e = NULL;
    evx_capture_status_t c = EVX_CAPTURE_STATUS_NONE;

    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((e = make_event(0, 0)) != NULL);
    EXPECT_FAIL(evx_stream_get_capture_status(s, NULL), EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_stream_get_capture_status(NULL, &c), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_stream_get_capture_status(AS_STREAM(e), &c), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_stream_get_capture_status(FORGE(evx_stream_t, 0x1234), &c),
                EVX_ERROR_INVALID_HANDLE);
out:
    drop_event(&e);
    drop_stream(&s);
}

/* GPU only: a capture begun with the raw driver on a stream evx borrows is
 * seen as ACTIVE, and as NONE once ended. */
static void t_active(void)
{
    const conf_cu *cu = conf_cu_get();
    evx_stream_t own = NULL, borrowed = NULL;
    evx_capture_status_t c;
    void *native = NULL;
    CUgraph graph = NULL;
    int capturing = 0;

    if (cu == NULL)
        return;
    if (cu->stream_begin_capture == NULL || cu->stream_end_capture == NULL ||
        cu->graph_destroy == NULL) {
        conf_skip("the driver has no cuStreamBeginCapture/cuStreamEndCapture/"
                  "cuGraphDestroy: the host emulation does not model stream "
                  "capture (GPU-only case, docs/conformance.md)");
        return;
    }
    REQUIRE((own = make_stream(0)) != NULL);
    REQUIRE_OK(evx_stream_get_native(own, &native));
    REQUIRE_OK(evx_stream_wrap_external(0, native, &borrowed));
    REQUIRE(cu->stream_begin_capture((CUstream)native,
                                     CU_STREAM_CAPTURE_MODE_RELAXED) == CUDA_SUCCESS);
    capturing = 1;
    c = (evx_capture_status_t)77;
    EXPECT_OK(evx_stream_get_capture_status(own, &c));
    EXPECTF(c == EVX_CAPTURE_STATUS_ACTIVE, "owned stream while capturing: %d", (int)c);
    c = (evx_capture_status_t)77;
    EXPECT_OK(evx_stream_get_capture_status(borrowed, &c));
    EXPECTF(c == EVX_CAPTURE_STATUS_ACTIVE, "borrowed stream while capturing: %d",
            (int)c);
    EXPECT(cu->stream_end_capture((CUstream)native, &graph) == CUDA_SUCCESS);
    capturing = 0;
    c = (evx_capture_status_t)77;
    EXPECT_OK(evx_stream_get_capture_status(own, &c));
    EXPECTF(c == EVX_CAPTURE_STATUS_NONE, "after the capture ended: %d", (int)c);
out:
    if (capturing)
        cu->stream_end_capture((CUstream)native, &graph);
    if (graph != NULL)
        cu->graph_destroy(graph);
    drop_stream(&borrowed);
    drop_stream(&own);
}

/* For t_forbidden: on the real driver a relaxed capture of `native`
 * begins and `e` is recorded in it; on the emulation `e` is recorded. */
static int begin_forbidden(const conf_cu *cu, int real, CUstream native, evx_stream_t s,
                           evx_event_t e, int *capturing)
{
    if (real) {
        if (!EXPECT(cu->stream_begin_capture(native, CU_STREAM_CAPTURE_MODE_RELAXED) ==
                    CUDA_SUCCESS))
            return 0;
        *capturing = 1;
    }
    return EXPECT_OK(evx_event_record(e, s));
}

/* Ends the capture the forbidden call invalidated (the driver refuses the
 * end then, which is expected) and frees a graph if one came back. */
static void end_forbidden(const conf_cu *cu, CUstream native, int *capturing)
{
    CUgraph graph = NULL;
    if (!*capturing)
        return;
    cu->stream_end_capture(native, &graph);
    if (graph != NULL)
        cu->graph_destroy(graph);
    *capturing = 0;
}

/* Calls the driver forbids during a capture return the driver's status with
 * a message that says a capture is in progress. On a GPU a real capture:
 * query and synchronize of an event recorded in it (CAPTURED_EVENT), query
 * of the capturing stream (STREAM_CAPTURE_UNSUPPORTED, which also
 * invalidates the capture). The host emulation has no capture: there the
 * same driver statuses are injected (evx_host_set_fault) into the same
 * calls, and the same checks run. */
static void t_forbidden(void)
{
    const conf_cu *cu = conf_cu_get();
    const host_debug *h = host_debug_get();
    evx_stream_t s = NULL;
    evx_event_t e = NULL;
    void *native = NULL;
    CUgraph graph = NULL;
    int real, capturing = 0;
    const char *m;

    if (cu == NULL)
        return;
    real = cu->stream_begin_capture != NULL && cu->stream_end_capture != NULL &&
           cu->graph_destroy != NULL;
    if (!real && h == NULL) {
        conf_skip("neither stream capture nor fault injection in this driver");
        return;
    }
    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((e = make_event(0, EVX_EVENT_DEFAULT)) != NULL);
    REQUIRE_OK(evx_stream_get_native(s, &native));
    /* On the real driver the first forbidden call also invalidates the
     * capture, and later calls in it then get other statuses (a synchronize
     * after the query: INVALID_VALUE, seen on an H200): each forbidden call
     * is made in a capture of its own. */

    REQUIRE(begin_forbidden(cu, real, (CUstream)native, s, e, &capturing));
    if (!real)
        EXPECT(h->set_fault("cuEventQuery", 1, CUDA_ERROR_CAPTURED_EVENT) == 0);
    EXPECT_FAIL(evx_event_query(e), EVX_ERROR_CAPTURED_EVENT);
    m = evx_last_error_message();
    EXPECTF(str_has(m, "cuEventQuery") && str_has(m, "captured into a graph"),
            "message: %s", m);
    end_forbidden(cu, (CUstream)native, &capturing);

    REQUIRE(begin_forbidden(cu, real, (CUstream)native, s, e, &capturing));
    if (!real)
        EXPECT(h->set_fault("cuEventSynchronize", 1, CUDA_ERROR_CAPTURED_EVENT) ==
               0);
    EXPECT_FAIL(evx_event_synchronize(e), EVX_ERROR_CAPTURED_EVENT);
    m = evx_last_error_message();
    EXPECTF(str_has(m, "cuEventSynchronize") && str_has(m, "captured into a graph"),
            "message: %s", m);
    end_forbidden(cu, (CUstream)native, &capturing);

    REQUIRE(begin_forbidden(cu, real, (CUstream)native, s, e, &capturing));
    if (!real)
        EXPECT(h->set_fault("cuStreamQuery", 1,
                            CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) == 0);
    EXPECT_FAIL(evx_stream_query(s), EVX_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    m = evx_last_error_message();
    EXPECTF(str_has(m, "cuStreamQuery") && str_has(m, "capture is in progress") &&
                str_has(m, "cuStreamIsCapturing says"),
            "message: %s", m);
    conf_note("%s", m);
    end_forbidden(cu, (CUstream)native, &capturing);
out:
    if (h != NULL && !real)
        h->set_fault(NULL, 0, 0);
    if (capturing) {
        /* invalidated by the stream query: the driver may refuse the end */
        cu->stream_end_capture((CUstream)native, &graph);
        if (graph != NULL)
            cu->graph_destroy(graph);
    }
    drop_event(&e);
    drop_stream(&s);
}

/* cuGraphInstantiate and cuGraphExecDestroy work on the current context,
 * and evx leaves none current: the cases make device 0's primary context
 * current around them, and leave as they found it. */
static int primary_push(const conf_cu *cu)
{
    CUcontext ctx = NULL;
    if (cu->primary_retain(&ctx, 0) != CUDA_SUCCESS)
        return 0;
    if (cu->ctx_push_current == NULL || cu->ctx_push_current(ctx) != CUDA_SUCCESS) {
        cu->primary_release(0);
        return 0;
    }
    return 1;
}

static void primary_pop(const conf_cu *cu)
{
    CUcontext ctx = NULL;
    cu->ctx_pop_current(&ctx);
    cu->primary_release(0);
}

static int have_graphs(const conf_cu *cu)
{
    if (cu->stream_begin_capture != NULL && cu->stream_end_capture != NULL &&
        cu->graph_destroy != NULL && cu->graph_instantiate != NULL &&
        cu->graph_launch != NULL && cu->graph_exec_destroy != NULL &&
        cu->stream_is_capturing != NULL)
        return 1;
    conf_skip("the driver has no stream capture or graphs (cuStreamBeginCapture, "
              "cuGraphInstantiateWithFlags, cuGraphLaunch ...): the host "
              "emulation does not model them (GPU-only case, docs/conformance.md)");
    return 0;
}

/* GPU only: external event nodes in a captured graph, replayed several
 * times and timed by evx. The graph waits for an event recorded outside it
 * (an external wait node, on `pre`), records `a`, runs a host function that
 * sleeps 5 ms, records `b` (external record nodes). Each launch: `pre` is
 * recorded behind a closed gate on another stream, so the launched graph
 * must not reach `b` until the gate opens; then evx times a..b. */
static void t_external_nodes(void)
{
    const conf_cu *cu = conf_cu_get();
    evx_stream_t s = NULL, other = NULL;
    evx_event_t pre = NULL, a = NULL, b = NULL;
    void *native = NULL;
    CUgraph graph = NULL;
    CUgraphExec exec = NULL;
    CUresult r;
    int capturing = 0, i, pushed = 0;
    float ms = -1.0f;

    if (cu == NULL || !have_graphs(cu))
        return;
    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((other = make_stream(0)) != NULL);
    REQUIRE((pre = make_event(0, EVX_EVENT_DISABLE_TIMING)) != NULL);
    REQUIRE((a = make_event(0, EVX_EVENT_DEFAULT)) != NULL);
    REQUIRE((b = make_event(0, EVX_EVENT_DEFAULT)) != NULL);
    REQUIRE_OK(evx_stream_get_native(s, &native));
    /* recorded once before the capture, so that the wait below hands the
     * driver an event of this life with no renewal (docs/design.md) */
    REQUIRE_OK(evx_event_record(pre, other));
    REQUIRE_OK(evx_event_synchronize(pre));
    REQUIRE(cu->stream_begin_capture((CUstream)native,
                                     CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) ==
            CUDA_SUCCESS);
    capturing = 1;
    REQUIRE_OK(evx_stream_wait_event(s, pre, EVX_EVENT_WAIT_EXTERNAL));
    REQUIRE_OK(evx_event_record_with_flags(a, s, EVX_EVENT_RECORD_EXTERNAL));
    REQUIRE_OK(evx_stream_launch_host_func(s, host_sleep_ms, (void *)(intptr_t)5));
    REQUIRE_OK(evx_event_record_with_flags(b, s, EVX_EVENT_RECORD_EXTERNAL));
    r = cu->stream_end_capture((CUstream)native, &graph);
    capturing = 0;
    REQUIRE(EXPECTF(r == CUDA_SUCCESS && graph != NULL,
                    "cuStreamEndCapture -> %d", (int)r));
    REQUIRE(EXPECTF((pushed = primary_push(cu)) != 0, "primary context current"));
    r = cu->graph_instantiate(&exec, graph, 0);
    REQUIRE(EXPECTF(r == CUDA_SUCCESS, "cuGraphInstantiateWithFlags -> %d", (int)r));
    for (i = 0; i < 5; i++) {
        conf_gate *g = gate_new();
        REQUIRE(g != NULL);
        REQUIRE_OK(gate_launch(other, g));
        REQUIRE_OK(evx_event_record(pre, other));
        r = cu->graph_launch(exec, (CUstream)native);
        if (!EXPECTF(r == CUDA_SUCCESS, "cuGraphLaunch %d -> %d", i, (int)r)) {
            gate_open(g);
            goto out;
        }
        sleep_ms(30);
        EXPECTF(evx_event_query(b) == EVX_ERROR_NOT_READY,
                "launch %d: the graph's record of b did not wait for the "
                "external wait node's event", i);
        gate_open(g);
        EXPECT_OK(evx_event_synchronize(b));
        ms = -1.0f;
        EXPECT_OK(evx_event_elapsed_time(&ms, a, b));
        EXPECTF(ms >= 4.0f, "launch %d: a..b %f ms, the graph sleeps 5 ms", i,
                (double)ms);
    }
    conf_note("last replay: %f ms between the external record nodes", (double)ms);
    EXPECT_OK(evx_stream_synchronize(s));
out:
    if (capturing) {
        cu->stream_end_capture((CUstream)native, &graph);
    }
    if (exec != NULL)
        EXPECT(cu->graph_exec_destroy(exec) == CUDA_SUCCESS);
    if (graph != NULL)
        cu->graph_destroy(graph);
    if (pushed)
        primary_pop(cu);
    if (s != NULL)
        evx_stream_synchronize(s);
    drop_event(&pre);
    drop_event(&a);
    drop_event(&b);
    drop_stream(&other);
    drop_stream(&s);
}

/* What a worker of t_global_mode does and the first thing that failed. */
typedef struct capture_worker {
    pthread_t tid;
    evx_stream_t s;
    evx_notifier_t n; /* made and destroyed by the main thread, outside the capture */
    int callbacks;    /* run by n's callback watches */
    const conf_cu *cu;
    CUstream captured; /* the stream the main thread captures */
    char failed[256];
} capture_worker;

/* Each call must succeed and leave the other thread's capture ACTIVE (asked
 * with cuStreamIsCapturing, which any thread may call): the first call
 * after which it is not is named. */
#define WORKER_OK(w, call) \
    do { \
        CUstreamCaptureStatus cs_ = CU_STREAM_CAPTURE_STATUS_NONE; \
        evx_status_t st_ = (call); \
        if (st_ != EVX_SUCCESS) { \
            snprintf((w)->failed, sizeof (w)->failed, "%s -> %s: %s", #call, \
                     evx_status_name(st_), evx_last_error_message()); \
            return NULL; \
        } \
        if ((w)->cu->stream_is_capturing((w)->captured, &cs_) != CUDA_SUCCESS || \
            cs_ != CU_STREAM_CAPTURE_STATUS_ACTIVE) { \
            snprintf((w)->failed, sizeof (w)->failed, \
                     "%s succeeded, and the capture is no longer active (status %d)", \
                     #call, (int)cs_); \
            return NULL; \
        } \
    } while (0)

static void worker_callback(void *user_data)
{
    __atomic_fetch_add((int *)user_data, 1, __ATOMIC_SEQ_CST);
}

static void *capture_worker_main(void *arg)
{
    capture_worker *w = (capture_worker *)arg;
    evx_event_pool_options_t o;
    evx_event_pool_t pool = NULL;
    evx_timer_t t = NULL;
    evx_event_t e = NULL;
    evx_status_t st;
    uint64_t tokens[100], pending = 1;
    uint32_t got = 0, c;
    int i, tries;

    memset(&o, 0, sizeof o);
    o.struct_size = (uint32_t)sizeof o;
    o.capacity = 4;
    WORKER_OK(w, evx_device_create_event_pool(0, &o, &pool));
    WORKER_OK(w, evx_device_create_timer(0, &t));
    for (i = 0; i < 100; i++) {
        WORKER_OK(w, evx_device_create_event(0, EVX_EVENT_DEFAULT, &e));
        WORKER_OK(w, evx_event_record(e, w->s));
        /* the notifier's pump delivers these, mostly from idle streams */
        WORKER_OK(w, evx_notifier_watch(w->n, e, (uint64_t)i));
        WORKER_OK(w, evx_notifier_watch_callback(w->n, e, worker_callback, &w->callbacks));
        WORKER_OK(w, evx_event_destroy(e));
        /* A pool hands out only events whose work has completed, and says
         * "exhausted" rather than wait: its released events' records may
         * still be running for a moment (each query of them is one more
         * call that must leave the capture valid). */
        for (tries = 0; tries < 100000; tries++) {
            st = evx_event_pool_acquire(pool, &e);
            if (st != EVX_ERROR_OUT_OF_MEMORY)
                break;
            sched_yield();
        }
        WORKER_OK(w, st);
        WORKER_OK(w, evx_event_record(e, w->s));
        WORKER_OK(w, evx_event_pool_release(pool, e));
        WORKER_OK(w, evx_timer_start(t, w->s));
        WORKER_OK(w, evx_timer_stop(t, w->s));
    }
    WORKER_OK(w, evx_timer_destroy(t));
    WORKER_OK(w, evx_event_pool_destroy(pool));
    /* every watch delivered (the counts and reads make no driver call) */
    for (tries = 0; tries < 5000 && (pending != 0 || got < 100); tries++) {
        WORKER_OK(w, evx_notifier_read(w->n, tokens + got, 100 - got, &c));
        got += c;
        WORKER_OK(w, evx_notifier_get_counts(w->n, &pending, NULL));
        sleep_ms(1);
    }
    if (got != 100 || pending != 0 || __atomic_load_n(&w->callbacks, __ATOMIC_SEQ_CST) != 100)
        snprintf(w->failed, sizeof w->failed,
                 "%u of 100 tokens read, %d of 100 callbacks ran, %llu watches pending",
                 got, __atomic_load_n(&w->callbacks, __ATOMIC_SEQ_CST),
                 (unsigned long long)pending);
    return NULL;
}

/* GPU only: evx calls on other threads (create, record and destroy events,
 * pools, timers, on streams of their own; no synchronize or query, which the
 * driver forbids from every thread during a global-mode capture; watches of
 * a notifier, whose pump thread works meanwhile) while this thread holds a
 * global-mode capture leave the capture valid: cuStreamIsCapturing never
 * says INVALIDATED, cuStreamEndCapture succeeds, the graph runs, and every
 * watch is delivered once. */
static void t_global_mode(void)
{
    enum { NW = 4 };
    const conf_cu *cu = conf_cu_get();
    capture_worker w[NW];
    evx_stream_t s = NULL;
    void *native = NULL;
    CUgraph graph = NULL;
    CUgraphExec exec = NULL;
    CUstreamCaptureStatus cs;
    CUresult r;
    int capturing = 0, started = 0, i, polls = 0, flag = 0, pushed = 0;

    memset(w, 0, sizeof w);
    if (cu == NULL || !have_graphs(cu))
        return;
    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE_OK(evx_stream_get_native(s, &native));
    for (i = 0; i < NW; i++) {
        REQUIRE((w[i].s = make_stream(0)) != NULL);
        REQUIRE_OK(evx_notifier_create(NULL, &w[i].n));
        w[i].cu = cu;
        w[i].captured = (CUstream)native;
    }
    REQUIRE(cu->stream_begin_capture((CUstream)native,
                                     CU_STREAM_CAPTURE_MODE_GLOBAL) ==
            CUDA_SUCCESS);
    capturing = 1;
    REQUIRE_OK(evx_stream_launch_host_func(s, host_set_flag, &flag));
    for (i = 0; i < NW; i++) {
        if (!EXPECT(pthread_create(&w[i].tid, NULL, capture_worker_main, &w[i]) == 0))
            break;
        started++;
    }
    for (i = 0; i < 200; i++) {
        cs = CU_STREAM_CAPTURE_STATUS_NONE;
        r = cu->stream_is_capturing((CUstream)native, &cs);
        polls++;
        if (!EXPECTF(r == CUDA_SUCCESS && cs == CU_STREAM_CAPTURE_STATUS_ACTIVE,
                     "poll %d: cuStreamIsCapturing -> %d, status %d", i, (int)r,
                     (int)cs))
            break;
        sleep_ms(1);
    }
    for (i = 0; i < started; i++)
        pthread_join(w[i].tid, NULL);
    started = 0;
    for (i = 0; i < NW; i++)
        EXPECTF(w[i].failed[0] == 0, "worker %d: %s", i, w[i].failed);
    r = cu->stream_end_capture((CUstream)native, &graph);
    capturing = 0;
    REQUIRE(EXPECTF(r == CUDA_SUCCESS && graph != NULL,
                    "cuStreamEndCapture after the workers -> %d", (int)r));
    EXPECT(!flag_get(&flag)); /* captured, not run */
    REQUIRE(EXPECTF((pushed = primary_push(cu)) != 0, "primary context current"));
    r = cu->graph_instantiate(&exec, graph, 0);
    REQUIRE(EXPECTF(r == CUDA_SUCCESS, "cuGraphInstantiateWithFlags -> %d", (int)r));
    REQUIRE(EXPECTF(cu->graph_launch(exec, (CUstream)native) == CUDA_SUCCESS,
                    "cuGraphLaunch"));
    EXPECT_OK(evx_stream_synchronize(s));
    EXPECT(flag_get(&flag));
    conf_note("%d polls of cuStreamIsCapturing while %d threads worked", polls, NW);
out:
    for (i = 0; i < started; i++)
        pthread_join(w[i].tid, NULL);
    if (capturing)
        cu->stream_end_capture((CUstream)native, &graph);
    if (exec != NULL)
        EXPECT(cu->graph_exec_destroy(exec) == CUDA_SUCCESS);
    if (graph != NULL)
        cu->graph_destroy(graph);
    if (pushed)
        primary_pop(cu);
    for (i = 0; i < NW; i++) {
        if (w[i].n != NULL)
            EXPECT_OK(evx_notifier_destroy(w[i].n));
        drop_stream(&w[i].s);
    }
    drop_stream(&s);
}

const conf_case conf_capture_cases[] = {
    {"capture.not_capturing", t_not_capturing},
    {"capture.bad_input", t_bad_input},
    {"capture.active_gpu_only", t_active},
    {"capture.forbidden_calls", t_forbidden},
    {"capture.external_nodes_gpu_only", t_external_nodes},
    {"capture.global_mode_threads_gpu_only", t_global_mode},
    {NULL, NULL},
};
