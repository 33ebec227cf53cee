/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/* The capture status of a stream (evx/capture.h), evx's calls on captured
 * streams, and the driver's capture rules and graphs, which evx relies on
 * (begun and ended with the raw driver). Every case runs on the real
 * driver and on the host emulation, which models stream capture. */
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

static evx_status_t capture_host_fn(void *user_data)
{
    (void)user_data;
    return EVX_SUCCESS;
}

/* A capture begun with the raw driver on a stream evx borrows is seen as
 * ACTIVE, and as NONE once ended. */
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
    if (!conf_have_graphs(cu))
        return;
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
    /* A host function that can fail is captured as a host node of the
     * graph (docs/host-functions.md; hostfn.graph_* check its launches). */
    EXPECT_OK(evx_stream_launch_host_func_status(own, capture_host_fn, NULL, NULL));
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

/* For t_forbidden: a relaxed capture of `native` begins and `e` is
 * recorded in it. */
static int begin_forbidden(const conf_cu *cu, CUstream native, evx_stream_t s, evx_event_t e,
                           int *capturing)
{
    if (!EXPECT(cu->stream_begin_capture(native, CU_STREAM_CAPTURE_MODE_RELAXED) ==
                CUDA_SUCCESS))
        return 0;
    *capturing = 1;
    return EXPECT_OK(evx_event_record(e, s));
}

/* Ends the capture (which the stream query invalidates: the driver refuses
 * the end then, which is expected) and frees a graph if one came back. */
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
 * a message that says a capture is in progress: query and synchronize of an
 * event recorded in it (CAPTURED_EVENT), query of the capturing stream
 * (STREAM_CAPTURE_UNSUPPORTED, which also invalidates the capture). Each
 * is made in a capture of its own. */
static void t_forbidden(void)
{
    const conf_cu *cu = conf_cu_get();
    evx_stream_t s = NULL;
    evx_event_t e = NULL;
    void *native = NULL;
    int capturing = 0;
    const char *m;

    if (cu == NULL || !conf_have_graphs(cu))
        return;
    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((e = make_event(0, EVX_EVENT_DEFAULT)) != NULL);
    REQUIRE_OK(evx_stream_get_native(s, &native));

    REQUIRE(begin_forbidden(cu, (CUstream)native, s, e, &capturing));
    EXPECT_FAIL(evx_event_query(e), EVX_ERROR_CAPTURED_EVENT);
    m = evx_last_error_message();
    EXPECTF(str_has(m, "cuEventQuery") && str_has(m, "captured into a graph"),
            "message: %s", m);
    end_forbidden(cu, (CUstream)native, &capturing);

    REQUIRE(begin_forbidden(cu, (CUstream)native, s, e, &capturing));
    EXPECT_FAIL(evx_event_synchronize(e), EVX_ERROR_CAPTURED_EVENT);
    m = evx_last_error_message();
    EXPECTF(str_has(m, "cuEventSynchronize") && str_has(m, "captured into a graph"),
            "message: %s", m);
    end_forbidden(cu, (CUstream)native, &capturing);

    REQUIRE(begin_forbidden(cu, (CUstream)native, s, e, &capturing));
    EXPECT_FAIL(evx_stream_query(s), EVX_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    m = evx_last_error_message();
    EXPECTF(str_has(m, "cuStreamQuery") && str_has(m, "capture is in progress") &&
                str_has(m, "cuStreamIsCapturing says"),
            "message: %s", m);
    conf_note("%s", m);
    end_forbidden(cu, (CUstream)native, &capturing);
out:
    end_forbidden(cu, (CUstream)native, &capturing);
    drop_event(&e);
    drop_stream(&s);
}

/* cuGraphInstantiate and cuGraphExecDestroy work on the current context,
 * and evx leaves none current: the cases make device 0's primary context
 * current around them, and leave as they found it. */
/* External event nodes in a captured graph, replayed several
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

    if (cu == NULL || !conf_have_graphs(cu))
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
    REQUIRE(EXPECTF((pushed = conf_primary_push(cu)) != 0, "primary context current"));
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
        conf_primary_pop(cu);
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
        if (got < 100) { /* a read of capacity 0 is bad input */
            WORKER_OK(w, evx_notifier_read(w->n, tokens + got, 100 - got, &c));
            got += c;
        }
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

/* evx calls on other threads (create, record and destroy events,
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
    if (cu == NULL || !conf_have_graphs(cu))
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
    REQUIRE(EXPECTF((pushed = conf_primary_push(cu)) != 0, "primary context current"));
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
        conf_primary_pop(cu);
    for (i = 0; i < NW; i++) {
        if (w[i].n != NULL)
            EXPECT_OK(evx_notifier_destroy(w[i].n));
        drop_stream(&w[i].s);
    }
    drop_stream(&s);
}

/* ---- the capture rules, with the raw driver (both drivers) ------------- */

#define EXPECT_CU_OK(call) EXPECTF((call) == CUDA_SUCCESS, "%s", #call)

#define EXPECT_CU(call, want) \
    do { \
        CUresult r_ = (call); \
        EXPECTF(r_ == (want), "%s -> %d, expected %d", #call, (int)r_, (int)(want)); \
    } while (0)

/* A stream's capture status, or -1 when the call failed. */
static int cap_status(const conf_cu *cu, CUstream s)
{
    CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
    return cu->stream_is_capturing(s, &cs) == CUDA_SUCCESS ? (int)cs : -1;
}

#define EXPECT_CAP(s, want) \
    do { \
        int cs_ = cap_status(cu, (s)); \
        EXPECTF(cs_ == (int)(want), "capture status of %s: %d, expected %d", #s, cs_, \
                (int)(want)); \
    } while (0)

static int g_count;

static void host_count(void *user_data)
{
    (void)user_data;
    __atomic_fetch_add(&g_count, 1, __ATOMIC_SEQ_CST);
}

/* Ends a capture whatever state it is in; frees the graph if one came back. */
static void end_any(const conf_cu *cu, CUstream s)
{
    CUgraph g = NULL;
    if (cap_status(cu, s) == CU_STREAM_CAPTURE_STATUS_NONE)
        return;
    cu->stream_end_capture(s, &g);
    if (g != NULL)
        cu->graph_destroy(g);
}

/* The raw objects of a case: device 0's primary context current, streams
 * (the first `blocking` of them without CU_STREAM_NON_BLOCKING), events. */
typedef struct raw_set {
    int pushed;
    CUcontext ctx;
    CUstream s[3];
    CUevent e[3];
} raw_set;

static int raw_open(const conf_cu *cu, raw_set *r, int blocking)
{
    int i;
    memset(r, 0, sizeof *r);
    if (!conf_have_graphs(cu) || cu->launch_host_func == NULL || cu->event_create == NULL ||
        cu->event_record == NULL || cu->stream_synchronize == NULL ||
        cu->thread_exchange_capture_mode == NULL) {
        if (cu->launch_host_func == NULL)
            conf_skip("the driver has no cuLaunchHostFunc");
        return 0;
    }
    if (!EXPECTF((r->pushed = conf_primary_push(cu)) != 0, "primary context current"))
        return 0;
    if (!EXPECT(cu->ctx_get_current(&r->ctx) == CUDA_SUCCESS))
        return 0;
    for (i = 0; i < 3; i++) {
        if (!EXPECT(cu->stream_create_with_priority(
                        &r->s[i], i < blocking ? 0 : CU_STREAM_NON_BLOCKING, 0) ==
                    CUDA_SUCCESS))
            return 0;
        if (!EXPECT(cu->event_create(&r->e[i], CU_EVENT_DEFAULT) == CUDA_SUCCESS))
            return 0;
    }
    return 1;
}

static void raw_close(const conf_cu *cu, raw_set *r)
{
    int i;
    for (i = 0; i < 3; i++)
        if (r->s[i] != NULL)
            end_any(cu, r->s[i]);
    for (i = 0; i < 3; i++) {
        if (r->s[i] != NULL) {
            EXPECT(cu->stream_synchronize(r->s[i]) == CUDA_SUCCESS);
            EXPECT(cu->stream_destroy(r->s[i]) == CUDA_SUCCESS);
        }
        if (r->e[i] != NULL)
            EXPECT(cu->event_destroy(r->e[i]) == CUDA_SUCCESS);
    }
    if (r->pushed)
        conf_primary_pop(cu);
}

/* Begin and end: where a capture may begin, what a second begin and an end
 * without a capture give, what cuStreamGetCaptureInfo says. */
static void t_begin_end(void)
{
    const conf_cu *cu = conf_cu_get();
    raw_set r;
    CUgraph g = NULL;
    CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t id = 0, id2 = 0;
    const CUgraphNode *deps = NULL;
    size_t n = 99;

    if (cu == NULL || !raw_open(cu, &r, 0))
        goto out;
    EXPECT_CU(cu->stream_begin_capture(CU_STREAM_LEGACY, CU_STREAM_CAPTURE_MODE_RELAXED),
              CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    EXPECT_CU(cu->stream_begin_capture(r.s[0], (CUstreamCaptureMode)7), CUDA_ERROR_INVALID_VALUE);
    EXPECT_CU(cu->stream_end_capture(r.s[0], &g), CUDA_ERROR_ILLEGAL_STATE);
    EXPECT(g == NULL);
    EXPECT_CU(cu->stream_begin_capture(r.s[0], CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    EXPECT_CU(cu->stream_begin_capture(r.s[0], CU_STREAM_CAPTURE_MODE_RELAXED),
              CUDA_ERROR_ILLEGAL_STATE);
    EXPECT_CAP(r.s[0], CU_STREAM_CAPTURE_STATUS_ACTIVE);
    EXPECT_CAP(r.s[1], CU_STREAM_CAPTURE_STATUS_NONE);
    if (cu->stream_get_capture_info != NULL) {
        EXPECT_CU(cu->stream_get_capture_info(r.s[0], &cs, &id, NULL, &deps, NULL, &n),
                  CUDA_SUCCESS);
        EXPECTF(cs == CU_STREAM_CAPTURE_STATUS_ACTIVE && id != 0 && n == 0,
                "capture info: status %d id %llu, %zu dependencies", (int)cs,
                (unsigned long long)id, n);
        g = NULL;
        EXPECT_CU(cu->stream_get_capture_info(r.s[0], &cs, NULL, &g, NULL, NULL, NULL),
                  CUDA_SUCCESS);
        EXPECTF(g != NULL, "capture info: no graph while capturing");
        g = NULL;
        EXPECT_CU(cu->launch_host_func(r.s[0], host_count, NULL), CUDA_SUCCESS);
        EXPECT_CU(cu->stream_get_capture_info(r.s[0], &cs, &id2, NULL, &deps, NULL, &n),
                  CUDA_SUCCESS);
        EXPECTF(id2 == id && n == 1 && deps != NULL && deps[0] != NULL,
                "after a host node: id %llu, %zu dependencies", (unsigned long long)id2, n);
    }
    EXPECT_CU(cu->stream_end_capture(r.s[0], &g), CUDA_SUCCESS);
    EXPECT(g != NULL);
    EXPECT_CAP(r.s[0], CU_STREAM_CAPTURE_STATUS_NONE);
    if (g != NULL)
        EXPECT_CU(cu->graph_destroy(g), CUDA_SUCCESS);
    /* an end with no place for the graph ends the capture all the same */
    EXPECT_CU(cu->stream_begin_capture(r.s[0], CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    EXPECT_CU(cu->stream_end_capture(r.s[0], NULL), CUDA_SUCCESS);
    EXPECT_CAP(r.s[0], CU_STREAM_CAPTURE_STATUS_NONE);
    /* the per-thread default stream may be captured */
    EXPECT_CU(cu->stream_begin_capture(CU_STREAM_PER_THREAD, CU_STREAM_CAPTURE_MODE_RELAXED),
              CUDA_SUCCESS);
    EXPECT_CAP(CU_STREAM_PER_THREAD, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    g = NULL;
    EXPECT_CU(cu->stream_end_capture(CU_STREAM_PER_THREAD, &g), CUDA_SUCCESS);
    if (g != NULL)
        EXPECT_CU(cu->graph_destroy(g), CUDA_SUCCESS);
out:
    if (cu != NULL)
        raw_close(cu, &r);
}

/* A call the driver forbids on a capturing stream invalidates its capture:
 * the stream then refuses work with STREAM_CAPTURE_INVALIDATED, the end
 * gives no graph, and the stream works again after it. */
static void t_invalidated(void)
{
    const conf_cu *cu = conf_cu_get();
    raw_set r;
    CUgraph g = NULL;
    int captured = 0, after = 0;

    if (cu == NULL || !raw_open(cu, &r, 0))
        goto out;
    EXPECT_CU(cu->stream_begin_capture(r.s[0], CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    EXPECT_CU(cu->launch_host_func(r.s[0], host_set_flag, &captured), CUDA_SUCCESS);
    EXPECT_CU(cu->stream_query(r.s[0]), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    EXPECT_CAP(r.s[0], CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    EXPECT_CU(cu->launch_host_func(r.s[0], host_set_flag, &captured),
              CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    EXPECT_CU(cu->event_record(r.e[0], r.s[0]), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    g = (CUgraph)&g;
    EXPECT_CU(cu->stream_end_capture(r.s[0], &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    EXPECTF(g == NULL, "the end of an invalidated capture gave a graph");
    g = NULL;
    EXPECT_CAP(r.s[0], CU_STREAM_CAPTURE_STATUS_NONE);
    EXPECT_CU(cu->launch_host_func(r.s[0], host_set_flag, &after), CUDA_SUCCESS);
    EXPECT_CU(cu->stream_synchronize(r.s[0]), CUDA_SUCCESS);
    EXPECT(flag_get(&after));
    EXPECT(!flag_get(&captured));
    /* a synchronize of the capturing stream is refused the same way */
    EXPECT_CU(cu->stream_begin_capture(r.s[0], CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    EXPECT_CU(cu->stream_synchronize(r.s[0]), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    EXPECT_CAP(r.s[0], CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    EXPECT_CU(cu->stream_end_capture(r.s[0], &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
out:
    if (cu != NULL)
        raw_close(cu, &r);
}

/* What a helper thread of the mode and thread cases does. */
typedef struct cap_thread {
    const conf_cu *cu;
    CUcontext ctx;
    CUstream s;
    int op;         /* 0: cuStreamQuery(s), 1: cuStreamEndCapture(s) */
    int relaxed;    /* the thread's mode relaxed around the call */
    CUresult result;
    CUgraph graph;
} cap_thread;

static void *cap_thread_main(void *arg)
{
    cap_thread *t = (cap_thread *)arg;
    CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
    t->cu->ctx_set_current(t->ctx);
    if (t->relaxed)
        t->cu->thread_exchange_capture_mode(&m);
    t->result = t->op == 0 ? t->cu->stream_query(t->s) : t->cu->stream_end_capture(t->s, &t->graph);
    if (t->relaxed)
        t->cu->thread_exchange_capture_mode(&m);
    t->cu->ctx_set_current(NULL);
    return NULL;
}

static CUresult on_thread(const conf_cu *cu, CUcontext ctx, CUstream s, int op, int relaxed,
                          CUgraph *graph)
{
    cap_thread t;
    pthread_t tid;
    memset(&t, 0, sizeof t);
    t.cu = cu;
    t.ctx = ctx;
    t.s = s;
    t.op = op;
    t.relaxed = relaxed;
    t.result = CUDA_ERROR_UNKNOWN;
    if (pthread_create(&tid, NULL, cap_thread_main, &t) != 0)
        return CUDA_ERROR_UNKNOWN;
    pthread_join(tid, NULL);
    if (graph != NULL)
        *graph = t.graph;
    else if (t.graph != NULL)
        cu->graph_destroy(t.graph);
    return t.result;
}

/* The capture modes (cuThreadExchangeStreamCaptureMode): a query of an
 * idle stream that is not captured, made while s[0] is captured, by another
 * thread or by the capturing one. */
static void t_mode_rules(void)
{
    const conf_cu *cu = conf_cu_get();
    raw_set r;
    CUgraph g = NULL;
    CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;

    if (cu == NULL || !raw_open(cu, &r, 0))
        goto out;
    /* global capture: another thread in global mode may not query */
    EXPECT_CU(cu->stream_begin_capture(r.s[0], CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    EXPECT_CU(on_thread(cu, r.ctx, r.s[1], 0, 0, NULL), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    EXPECT_CAP(r.s[0], CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    EXPECT_CU(cu->stream_end_capture(r.s[0], &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    /* ... and may in relaxed mode */
    EXPECT_CU(cu->stream_begin_capture(r.s[0], CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    EXPECT_CU(on_thread(cu, r.ctx, r.s[1], 0, 1, NULL), CUDA_SUCCESS);
    EXPECT_CAP(r.s[0], CU_STREAM_CAPTURE_STATUS_ACTIVE);
    /* the capturing thread may not, unless relaxed */
    m = CU_STREAM_CAPTURE_MODE_RELAXED;
    EXPECT_CU(cu->thread_exchange_capture_mode(&m), CUDA_SUCCESS);
    EXPECT_CU(cu->stream_query(r.s[1]), CUDA_SUCCESS);
    EXPECT_CU(cu->thread_exchange_capture_mode(&m), CUDA_SUCCESS);
    EXPECT(m == CU_STREAM_CAPTURE_MODE_RELAXED);
    EXPECT_CAP(r.s[0], CU_STREAM_CAPTURE_STATUS_ACTIVE);
    EXPECT_CU(cu->stream_query(r.s[1]), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    EXPECT_CAP(r.s[0], CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    EXPECT_CU(cu->stream_end_capture(r.s[0], &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    /* thread-local capture: other threads are free, the capturing one not */
    EXPECT_CU(cu->stream_begin_capture(r.s[0], CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
              CUDA_SUCCESS);
    EXPECT_CU(on_thread(cu, r.ctx, r.s[1], 0, 0, NULL), CUDA_SUCCESS);
    EXPECT_CAP(r.s[0], CU_STREAM_CAPTURE_STATUS_ACTIVE);
    EXPECT_CU(cu->stream_query(r.s[1]), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    EXPECT_CAP(r.s[0], CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    EXPECT_CU(cu->stream_end_capture(r.s[0], &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    /* relaxed capture: everyone is free */
    EXPECT_CU(cu->stream_begin_capture(r.s[0], CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    EXPECT_CU(on_thread(cu, r.ctx, r.s[1], 0, 0, NULL), CUDA_SUCCESS);
    EXPECT_CU(cu->stream_query(r.s[1]), CUDA_SUCCESS);
    EXPECT_CAP(r.s[0], CU_STREAM_CAPTURE_STATUS_ACTIVE);
    EXPECT_CU(cu->stream_end_capture(r.s[0], &g), CUDA_SUCCESS);
    if (g != NULL)
        cu->graph_destroy(g);
    g = NULL;
    /* the driver takes a mode it does not know (seen on an H100) */
    m = (CUstreamCaptureMode)9;
    EXPECT_CU(cu->thread_exchange_capture_mode(&m), CUDA_SUCCESS);
    EXPECT(m == CU_STREAM_CAPTURE_MODE_GLOBAL);
    m = CU_STREAM_CAPTURE_MODE_GLOBAL;
    EXPECT_CU(cu->thread_exchange_capture_mode(&m), CUDA_SUCCESS);
out:
    if (cu != NULL)
        raw_close(cu, &r);
}

/* A capture not begun relaxed ends on the thread that began it: the end on
 * another thread is WRONG_THREAD, and ends the capture with no graph (as an
 * H100 does). */
static void t_wrong_thread(void)
{
    const conf_cu *cu = conf_cu_get();
    raw_set r;
    CUgraph g = NULL;

    if (cu == NULL || !raw_open(cu, &r, 0))
        goto out;
    EXPECT_CU(cu->stream_begin_capture(r.s[0], CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
              CUDA_SUCCESS);
    EXPECT_CU(on_thread(cu, r.ctx, r.s[0], 1, 0, &g), CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
    EXPECT(g == NULL);
    EXPECT_CAP(r.s[0], CU_STREAM_CAPTURE_STATUS_NONE);
    EXPECT_CU(cu->stream_end_capture(r.s[0], &g), CUDA_ERROR_ILLEGAL_STATE);
    g = NULL;
    EXPECT_CU(cu->stream_begin_capture(r.s[0], CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    EXPECT_CU(on_thread(cu, r.ctx, r.s[0], 1, 0, &g), CUDA_SUCCESS);
    EXPECT(g != NULL);
    EXPECT_CAP(r.s[0], CU_STREAM_CAPTURE_STATUS_NONE);
    if (g != NULL)
        EXPECT_CU(cu->graph_destroy(g), CUDA_SUCCESS);
out:
    if (cu != NULL)
        raw_close(cu, &r);
}

/* Fork and join through events: a stream that waits for an event recorded
 * in a capture joins it; the capture ends only on its origin stream, and
 * only once every stream it forked into is joined back. The joined graph
 * runs each host node once per launch. */
static void t_fork_join(void)
{
    const conf_cu *cu = conf_cu_get();
    raw_set r;
    CUgraph g = NULL;
    CUgraphExec x = NULL;

    if (cu == NULL || !raw_open(cu, &r, 0))
        goto out;
    __atomic_store_n(&g_count, 0, __ATOMIC_SEQ_CST);
    /* unjoined */
    EXPECT_CU(cu->stream_begin_capture(r.s[0], CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    EXPECT_CU(cu->event_record(r.e[0], r.s[0]), CUDA_SUCCESS);
    EXPECT_CAP(r.s[1], CU_STREAM_CAPTURE_STATUS_NONE);
    EXPECT_CU(cu->stream_wait_event(r.s[1], r.e[0], 0), CUDA_SUCCESS);
    EXPECT_CAP(r.s[1], CU_STREAM_CAPTURE_STATUS_ACTIVE);
    EXPECT_CU(cu->launch_host_func(r.s[1], host_count, NULL), CUDA_SUCCESS);
    EXPECT_CU(cu->stream_end_capture(r.s[0], &g), CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
    EXPECT(g == NULL);
    EXPECT_CAP(r.s[0], CU_STREAM_CAPTURE_STATUS_NONE);
    EXPECT_CAP(r.s[1], CU_STREAM_CAPTURE_STATUS_NONE);
    /* joined */
    EXPECT_CU(cu->stream_begin_capture(r.s[0], CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    EXPECT_CU(cu->launch_host_func(r.s[0], host_count, NULL), CUDA_SUCCESS);
    EXPECT_CU(cu->event_record(r.e[0], r.s[0]), CUDA_SUCCESS);
    EXPECT_CU(cu->stream_wait_event(r.s[1], r.e[0], 0), CUDA_SUCCESS);
    EXPECT_CU(cu->launch_host_func(r.s[1], host_count, NULL), CUDA_SUCCESS);
    EXPECT_CU(cu->event_record(r.e[1], r.s[1]), CUDA_SUCCESS);
    EXPECT_CU(cu->stream_wait_event(r.s[0], r.e[1], 0), CUDA_SUCCESS);
    EXPECT_CU(cu->launch_host_func(r.s[0], host_count, NULL), CUDA_SUCCESS);
    EXPECT_CU(cu->stream_end_capture(r.s[0], &g), CUDA_SUCCESS);
    REQUIRE(g != NULL);
    EXPECT_CAP(r.s[1], CU_STREAM_CAPTURE_STATUS_NONE);
    EXPECT(__atomic_load_n(&g_count, __ATOMIC_SEQ_CST) == 0); /* captured, not run */
    EXPECT_CU(cu->graph_instantiate(&x, g, 0), CUDA_SUCCESS);
    REQUIRE(x != NULL);
    EXPECT_CU(cu->graph_launch(x, r.s[2]), CUDA_SUCCESS);
    EXPECT_CU(cu->graph_launch(x, r.s[2]), CUDA_SUCCESS);
    EXPECT_CU(cu->stream_synchronize(r.s[2]), CUDA_SUCCESS);
    EXPECTF(__atomic_load_n(&g_count, __ATOMIC_SEQ_CST) == 6, "%d host nodes ran, 6 expected",
            __atomic_load_n(&g_count, __ATOMIC_SEQ_CST));
    /* only the origin stream ends a capture */
    EXPECT_CU(cu->stream_begin_capture(r.s[0], CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    EXPECT_CU(cu->event_record(r.e[0], r.s[0]), CUDA_SUCCESS);
    EXPECT_CU(cu->stream_wait_event(r.s[1], r.e[0], 0), CUDA_SUCCESS);
    {
        CUgraph g2 = NULL;
        EXPECT_CU(cu->stream_end_capture(r.s[1], &g2), CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
        EXPECT(g2 == NULL);
        conf_note("after cuStreamEndCapture on the forked stream: origin %d, fork %d",
                  cap_status(cu, r.s[0]), cap_status(cu, r.s[1]));
    }
out:
    if (x != NULL)
        EXPECT_CU(cu->graph_exec_destroy(x), CUDA_SUCCESS);
    if (g != NULL)
        EXPECT_CU(cu->graph_destroy(g), CUDA_SUCCESS);
    if (cu != NULL)
        raw_close(cu, &r);
}

/* A capturing stream waits only for its own capture's events (ISOLATION
 * for one recorded outside, MERGE for another capture's); the EXTERNAL
 * flag makes a wait node of any event. */
static void t_isolation_merge(void)
{
    const conf_cu *cu = conf_cu_get();
    raw_set r;
    CUgraph g = NULL;

    if (cu == NULL || !raw_open(cu, &r, 0))
        goto out;
    EXPECT_CU(cu->event_record(r.e[2], r.s[2]), CUDA_SUCCESS);
    EXPECT_CU(cu->stream_synchronize(r.s[2]), CUDA_SUCCESS);
    EXPECT_CU(cu->stream_begin_capture(r.s[0], CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    /* a never-recorded event is nothing to wait for */
    EXPECT_CU(cu->stream_wait_event(r.s[0], r.e[1], 0), CUDA_SUCCESS);
    EXPECT_CAP(r.s[0], CU_STREAM_CAPTURE_STATUS_ACTIVE);
    EXPECT_CU(cu->stream_wait_event(r.s[0], r.e[2], CU_EVENT_WAIT_EXTERNAL), CUDA_SUCCESS);
    EXPECT_CAP(r.s[0], CU_STREAM_CAPTURE_STATUS_ACTIVE);
    EXPECT_CU(cu->stream_wait_event(r.s[0], r.e[2], 0), CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
    EXPECT_CAP(r.s[0], CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    EXPECT_CU(cu->stream_end_capture(r.s[0], &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    EXPECT_CU(cu->stream_begin_capture(r.s[0], CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    EXPECT_CU(cu->stream_begin_capture(r.s[1], CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    EXPECT_CU(cu->event_record(r.e[0], r.s[0]), CUDA_SUCCESS);
    EXPECT_CU(cu->stream_wait_event(r.s[1], r.e[0], 0), CUDA_ERROR_STREAM_CAPTURE_MERGE);
    conf_note("after the merge: capture statuses %d and %d", cap_status(cu, r.s[0]),
              cap_status(cu, r.s[1]));
out:
    if (cu != NULL)
        raw_close(cu, &r);
}

/* While a blocking stream is captured, the legacy default stream's implicit
 * dependency on it is refused (IMPLICIT), which invalidates the capture;
 * cuStreamIsCapturing of the legacy stream says IMPLICIT and leaves it
 * valid. A non-blocking stream's capture leaves the legacy stream free. */
static void t_legacy_implicit(void)
{
    const conf_cu *cu = conf_cu_get();
    raw_set r;
    CUgraph g = NULL;
    CUstreamCaptureStatus cs;

    if (cu == NULL || !raw_open(cu, &r, 1))
        goto out;
    EXPECT_CU(cu->stream_begin_capture(r.s[0], CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    EXPECT_CU(cu->stream_is_capturing(CU_STREAM_LEGACY, &cs), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    EXPECT_CAP(r.s[0], CU_STREAM_CAPTURE_STATUS_ACTIVE);
    EXPECT_CU(cu->event_record(r.e[0], CU_STREAM_LEGACY), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    EXPECT_CAP(r.s[0], CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    EXPECT_CU(cu->stream_end_capture(r.s[0], &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    /* so are a legacy synchronize and query, and a context synchronize, even
     * in relaxed mode */
    EXPECT_CU(cu->stream_begin_capture(r.s[0], CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    EXPECT_CU(cu->stream_synchronize(CU_STREAM_LEGACY), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    EXPECT_CAP(r.s[0], CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    EXPECT_CU(cu->stream_end_capture(r.s[0], &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    EXPECT_CU(cu->stream_begin_capture(r.s[0], CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    EXPECT_CU(cu->stream_query(CU_STREAM_LEGACY), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    EXPECT_CAP(r.s[0], CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    EXPECT_CU(cu->stream_end_capture(r.s[0], &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    if (cu->ctx_synchronize != NULL) {
        CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
        EXPECT_CU(cu->thread_exchange_capture_mode(&m), CUDA_SUCCESS);
        EXPECT_CU(cu->stream_begin_capture(r.s[0], CU_STREAM_CAPTURE_MODE_RELAXED),
                  CUDA_SUCCESS);
        EXPECT_CU(cu->ctx_synchronize(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
        EXPECT_CAP(r.s[0], CU_STREAM_CAPTURE_STATUS_INVALIDATED);
        EXPECT_CU(cu->stream_end_capture(r.s[0], &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
        EXPECT_CU(cu->thread_exchange_capture_mode(&m), CUDA_SUCCESS);
    }
    EXPECT_CU(cu->stream_begin_capture(r.s[1], CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    EXPECT_CU(cu->stream_is_capturing(CU_STREAM_LEGACY, &cs), CUDA_SUCCESS);
    EXPECT_CU(cu->event_record(r.e[0], CU_STREAM_LEGACY), CUDA_SUCCESS);
    EXPECT_CAP(r.s[1], CU_STREAM_CAPTURE_STATUS_ACTIVE);
    EXPECT_CU(cu->stream_end_capture(r.s[1], &g), CUDA_SUCCESS);
    if (g != NULL)
        EXPECT_CU(cu->graph_destroy(g), CUDA_SUCCESS);
    EXPECT_CU(cu->stream_synchronize(CU_STREAM_LEGACY), CUDA_SUCCESS);
out:
    if (cu != NULL)
        raw_close(cu, &r);
}

/* An event last recorded in a capture: a query (or synchronize) is
 * CAPTURED_EVENT and invalidates the capture; an elapsed time is
 * CAPTURED_EVENT and leaves it valid. Once that capture is invalidated or
 * ended, every use but a new record is INVALID_VALUE (as an H100 answers). */
static void t_captured_event(void)
{
    const conf_cu *cu = conf_cu_get();
    raw_set r;
    CUgraph g = NULL;
    float ms = 0.0f;

    if (cu == NULL || !raw_open(cu, &r, 0) || cu->event_synchronize == NULL)
        goto out;
    EXPECT_CU(cu->stream_begin_capture(r.s[0], CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    EXPECT_CU(cu->event_record(r.e[0], r.s[0]), CUDA_SUCCESS);
    EXPECT_CU(cu->event_query(r.e[0]), CUDA_ERROR_CAPTURED_EVENT);
    EXPECT_CAP(r.s[0], CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    EXPECT_CU(cu->event_synchronize(r.e[0]), CUDA_ERROR_INVALID_VALUE);
    EXPECT_CU(cu->event_query(r.e[0]), CUDA_ERROR_INVALID_VALUE);
    EXPECT_CU(cu->stream_end_capture(r.s[0], &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    EXPECT(g == NULL);
    EXPECT_CU(cu->event_query(r.e[0]), CUDA_ERROR_INVALID_VALUE);
    /* the synchronize invalidates the same way */
    EXPECT_CU(cu->stream_begin_capture(r.s[0], CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    EXPECT_CU(cu->event_record(r.e[1], r.s[0]), CUDA_SUCCESS);
    EXPECT_CU(cu->event_synchronize(r.e[1]), CUDA_ERROR_CAPTURED_EVENT);
    EXPECT_CAP(r.s[0], CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    EXPECT_CU(cu->stream_end_capture(r.s[0], &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    /* an elapsed time does not; after a good end the events are unusable */
    EXPECT_CU(cu->stream_begin_capture(r.s[0], CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    EXPECT_CU(cu->event_record(r.e[0], r.s[0]), CUDA_SUCCESS);
    EXPECT_CU(cu->event_record(r.e[1], r.s[0]), CUDA_SUCCESS);
    EXPECT_CU(cu->event_elapsed_time(&ms, r.e[0], r.e[1]), CUDA_ERROR_CAPTURED_EVENT);
    EXPECT_CAP(r.s[0], CU_STREAM_CAPTURE_STATUS_ACTIVE);
    EXPECT_CU(cu->stream_end_capture(r.s[0], &g), CUDA_SUCCESS);
    if (g != NULL)
        EXPECT_CU(cu->graph_destroy(g), CUDA_SUCCESS);
    g = NULL;
    EXPECT_CU(cu->event_query(r.e[0]), CUDA_ERROR_INVALID_VALUE);
    EXPECT_CU(cu->event_synchronize(r.e[0]), CUDA_ERROR_INVALID_VALUE);
    EXPECT_CU(cu->event_elapsed_time(&ms, r.e[0], r.e[1]), CUDA_ERROR_INVALID_VALUE);
    EXPECT_CU(cu->stream_wait_event(r.s[1], r.e[0], 0), CUDA_ERROR_INVALID_VALUE);
    /* a new record outside a capture makes it an event again */
    EXPECT_CU(cu->event_record(r.e[0], r.s[1]), CUDA_SUCCESS);
    EXPECT_CU(cu->event_synchronize(r.e[0]), CUDA_SUCCESS);
    EXPECT_CU(cu->event_query(r.e[0]), CUDA_SUCCESS);
out:
    if (cu != NULL)
        raw_close(cu, &r);
}

/* Graphs: instantiate flags, and external record nodes and host nodes run
 * at each launch; EXTERNAL record and wait outside a capture. */
static void t_graph_replay(void)
{
    const conf_cu *cu = conf_cu_get();
    raw_set r;
    CUgraph g = NULL;
    CUgraphExec x = NULL, x2_unused = NULL;
    float ms = -1.0f;
    int i;

    if (cu == NULL || !raw_open(cu, &r, 0) || cu->event_record_with_flags == NULL)
        goto out;
    __atomic_store_n(&g_count, 0, __ATOMIC_SEQ_CST);
    EXPECT_CU(cu->event_record_with_flags(r.e[0], r.s[0], CU_EVENT_RECORD_EXTERNAL),
              CUDA_ERROR_ILLEGAL_STATE);
    EXPECT_CU(cu->stream_begin_capture(r.s[0], CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    EXPECT_CU(cu->launch_host_func(r.s[0], host_count, NULL), CUDA_SUCCESS);
    EXPECT_CU(cu->event_record_with_flags(r.e[0], r.s[0], CU_EVENT_RECORD_EXTERNAL), CUDA_SUCCESS);
    EXPECT_CU(cu->launch_host_func(r.s[0], host_sleep_ms, (void *)(intptr_t)5), CUDA_SUCCESS);
    EXPECT_CU(cu->event_record_with_flags(r.e[1], r.s[0], CU_EVENT_RECORD_EXTERNAL), CUDA_SUCCESS);
    /* an external record is not a captured one: the event can be queried */
    EXPECT_CU(cu->event_query(r.e[1]), CUDA_SUCCESS);
    EXPECT_CU(cu->stream_end_capture(r.s[0], &g), CUDA_SUCCESS);
    REQUIRE(g != NULL);
    EXPECT_CU(cu->graph_instantiate(&x, g, 1ull << 40), CUDA_ERROR_INVALID_VALUE);
    EXPECT_CU(cu->graph_instantiate(&x, g, 0), CUDA_SUCCESS);
    REQUIRE(x != NULL);
    for (i = 0; i < 3; i++) {
        EXPECT_CU(cu->graph_launch(x, r.s[1]), CUDA_SUCCESS);
        EXPECT_CU(cu->stream_synchronize(r.s[1]), CUDA_SUCCESS);
        ms = -1.0f;
        EXPECT_CU(cu->event_elapsed_time(&ms, r.e[0], r.e[1]), CUDA_SUCCESS);
        EXPECTF(ms >= 4.0f, "launch %d: %f ms between the record nodes", i, (double)ms);
    }
    EXPECTF(__atomic_load_n(&g_count, __ATOMIC_SEQ_CST) == 3, "%d host nodes ran, 3 expected",
            __atomic_load_n(&g_count, __ATOMIC_SEQ_CST));
    /* a launch into a capturing stream is refused, and invalidates it */
    EXPECT_CU(cu->stream_begin_capture(r.s[2], CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    EXPECT_CU(cu->graph_launch(x, r.s[2]), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    EXPECT_CAP(r.s[2], CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    EXPECT(__atomic_load_n(&g_count, __ATOMIC_SEQ_CST) == 3);
    {
        CUgraph g2 = NULL;
        EXPECT_CU(cu->stream_end_capture(r.s[2], &g2), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
        EXPECT(g2 == NULL);
    }
    EXPECT_CU(cu->graph_launch(NULL, r.s[1]), CUDA_ERROR_INVALID_VALUE);
    EXPECT_CU(cu->graph_instantiate(&x2_unused, NULL, 0), CUDA_ERROR_INVALID_VALUE);
out:
    if (x != NULL)
        EXPECT_CU(cu->graph_exec_destroy(x), CUDA_SUCCESS);
    if (g != NULL)
        EXPECT_CU(cu->graph_destroy(g), CUDA_SUCCESS);
    if (cu != NULL)
        raw_close(cu, &r);
}

/* ---- timers and timelines under capture -------------------------------- */

/* A timeline's marks before, inside and after a capture: the marks made
 * while the stream is captured are nodes of the graph, recorded at each
 * launch; the intervals of the last launch are read with the usual calls.
 * A read before any launch is ILLEGAL_STATE, one while a launch is in
 * flight NOT_READY. */
static void t_timeline_in_graph(void)
{
    const conf_cu *cu = conf_cu_get();
    evx_stream_t s = NULL;
    evx_timeline_t tl = NULL;
    void *native = NULL;
    CUgraph graph = NULL;
    CUgraphExec exec = NULL;
    conf_gate *g = NULL;
    float ms[3] = {-1.0f, -1.0f, -1.0f};
    uint32_t n = 0, idx = 0;
    int capturing = 0, pushed = 0, launch;
    const char *m;

    if (cu == NULL || !conf_have_graphs(cu))
        return;
    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE_OK(evx_stream_get_native(s, &native));
    REQUIRE_OK(evx_device_create_timeline(0, 8, &tl));
    REQUIRE_OK(evx_timeline_mark(tl, s, NULL)); /* before the capture */
    REQUIRE(cu->stream_begin_capture((CUstream)native, CU_STREAM_CAPTURE_MODE_GLOBAL) ==
            CUDA_SUCCESS);
    capturing = 1;
    REQUIRE_OK(evx_timeline_mark(tl, s, &idx));
    EXPECT(idx == 1);
    REQUIRE_OK(evx_stream_launch_host_func(s, host_sleep_ms, (void *)(intptr_t)5));
    REQUIRE_OK(evx_timeline_mark(tl, s, NULL));
    EXPECT_FAIL(evx_timeline_intervals(tl, ms, 3, &n), EVX_ERROR_ILLEGAL_STATE);
    m = evx_last_error_message();
    EXPECTF(str_has(m, "mark 1") && str_has(m, "captured into a graph"), "message: %s", m);
    EXPECT(n == 0);
    REQUIRE(cu->stream_end_capture((CUstream)native, &graph) == CUDA_SUCCESS && graph != NULL);
    capturing = 0;
    EXPECT_FAIL(evx_timeline_synchronize(tl), EVX_ERROR_ILLEGAL_STATE);
    REQUIRE(EXPECTF((pushed = conf_primary_push(cu)) != 0, "primary context current"));
    REQUIRE(cu->graph_instantiate(&exec, graph, 0) == CUDA_SUCCESS);
    EXPECT_FAIL(evx_timeline_intervals(tl, ms, 3, &n), EVX_ERROR_ILLEGAL_STATE);
    for (launch = 0; launch < 3; launch++) {
        REQUIRE((g = gate_new()) != NULL);
        REQUIRE_OK(gate_launch(s, g));
        REQUIRE(cu->graph_launch(exec, (CUstream)native) == CUDA_SUCCESS);
        if (launch == 0)
            REQUIRE_OK(evx_timeline_mark(tl, s, NULL)); /* after the launch */
        EXPECT_STATUS(evx_timeline_intervals(tl, ms, 3, &n), EVX_ERROR_NOT_READY);
        gate_open(g);
        g = NULL;
        EXPECT_OK(evx_timeline_synchronize(tl));
        EXPECT_OK(evx_stream_synchronize(s));
        n = 0;
        EXPECT_OK(evx_timeline_intervals(tl, ms, 3, &n));
        /* the marks outside the graph were made once, before and after the
         * first launch: only then do all three intervals run forward */
        EXPECTF(n == 3 && ms[1] >= 4.0f && (launch > 0 || (ms[0] >= 0.0f && ms[2] >= 0.0f)),
                "launch %d: %u intervals %f %f %f ms (the graph sleeps 5 ms between "
                "its marks)", launch, n, (double)ms[0], (double)ms[1], (double)ms[2]);
    }
    conf_note("last launch: %f ms between the graph's marks", (double)ms[1]);
    /* after a reset, the graph's events stay the graph's: marks outside it
     * are read as usual, and a later launch does not change them */
    EXPECT_OK(evx_timeline_reset(tl));
    EXPECT_OK(evx_timeline_mark(tl, s, NULL));
    EXPECT_OK(evx_stream_launch_host_func(s, host_sleep_ms, (void *)(intptr_t)2));
    EXPECT_OK(evx_timeline_mark(tl, s, NULL));
    EXPECT_OK(evx_timeline_synchronize(tl));
    n = 0;
    EXPECT_OK(evx_timeline_intervals(tl, ms, 3, &n));
    EXPECTF(n == 1 && ms[0] >= 1.0f, "%u intervals, %f ms", n, (double)ms[0]);
    ms[1] = ms[0];
    REQUIRE(cu->graph_launch(exec, (CUstream)native) == CUDA_SUCCESS);
    EXPECT_OK(evx_stream_synchronize(s));
    n = 0;
    EXPECT_OK(evx_timeline_intervals(tl, ms, 3, &n));
    EXPECTF(n == 1 && ms[0] == ms[1], "after a launch: %u intervals, %f ms, was %f ms", n,
            (double)ms[0], (double)ms[1]);
out:
    if (g != NULL)
        gate_open(g);
    if (capturing)
        end_any(cu, (CUstream)native);
    if (s != NULL)
        evx_stream_synchronize(s);
    if (exec != NULL)
        EXPECT(cu->graph_exec_destroy(exec) == CUDA_SUCCESS);
    if (graph != NULL)
        cu->graph_destroy(graph);
    if (pushed)
        conf_primary_pop(cu);
    drop_timeline(&tl);
    drop_stream(&s);
}

/* A timer started and stopped on a captured stream: both marks are nodes
 * of the graph; its time is that of the last launch; before any launch it
 * is ILLEGAL_STATE. Used outside the graph again, it times as usual and
 * later launches leave that time alone. */
static void t_timer_in_graph(void)
{
    const conf_cu *cu = conf_cu_get();
    evx_stream_t s = NULL;
    evx_timer_t t = NULL;
    void *native = NULL;
    CUgraph graph = NULL;
    CUgraphExec exec = NULL;
    float ms = -1.0f, outside = -1.0f;
    int capturing = 0, pushed = 0, launch;
    const char *m;

    if (cu == NULL || !conf_have_graphs(cu))
        return;
    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE_OK(evx_stream_get_native(s, &native));
    REQUIRE_OK(evx_device_create_timer(0, &t));
    REQUIRE_OK(evx_timer_start(t, s)); /* a time from before the capture */
    REQUIRE_OK(evx_timer_stop(t, s));
    REQUIRE_OK(evx_timer_synchronize(t, &ms));
    REQUIRE(cu->stream_begin_capture((CUstream)native, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) ==
            CUDA_SUCCESS);
    capturing = 1;
    REQUIRE_OK(evx_timer_start(t, s));
    REQUIRE_OK(evx_stream_launch_host_func(s, host_sleep_ms, (void *)(intptr_t)5));
    REQUIRE_OK(evx_timer_stop(t, s));
    REQUIRE(cu->stream_end_capture((CUstream)native, &graph) == CUDA_SUCCESS && graph != NULL);
    capturing = 0;
    EXPECT_FAIL(evx_timer_elapsed(t, &ms), EVX_ERROR_ILLEGAL_STATE);
    m = evx_last_error_message();
    EXPECTF(str_has(m, "the start mark") && str_has(m, "captured into a graph"), "message: %s",
            m);
    EXPECT_FAIL(evx_timer_synchronize(t, &ms), EVX_ERROR_ILLEGAL_STATE);
    REQUIRE(EXPECTF((pushed = conf_primary_push(cu)) != 0, "primary context current"));
    REQUIRE(cu->graph_instantiate(&exec, graph, 0) == CUDA_SUCCESS);
    for (launch = 0; launch < 2; launch++) {
        REQUIRE(cu->graph_launch(exec, (CUstream)native) == CUDA_SUCCESS);
        ms = -1.0f;
        EXPECT_OK(evx_timer_synchronize(t, &ms));
        EXPECTF(ms >= 4.0f, "launch %d: %f ms (the graph sleeps 5 ms)", launch, (double)ms);
    }
    REQUIRE_OK(evx_timer_start(t, s));
    REQUIRE_OK(evx_stream_launch_host_func(s, host_sleep_ms, (void *)(intptr_t)1));
    REQUIRE_OK(evx_timer_stop(t, s));
    EXPECT_OK(evx_timer_synchronize(t, &outside));
    REQUIRE(cu->graph_launch(exec, (CUstream)native) == CUDA_SUCCESS);
    EXPECT_OK(evx_stream_synchronize(s));
    ms = -1.0f;
    EXPECT_OK(evx_timer_elapsed(t, &ms));
    EXPECTF(ms == outside, "after a launch: %f ms, was %f ms", (double)ms, (double)outside);
out:
    if (capturing)
        end_any(cu, (CUstream)native);
    if (s != NULL)
        evx_stream_synchronize(s);
    if (exec != NULL)
        EXPECT(cu->graph_exec_destroy(exec) == CUDA_SUCCESS);
    if (graph != NULL)
        cu->graph_destroy(graph);
    if (pushed)
        conf_primary_pop(cu);
    drop_timer(&t);
    drop_stream(&s);
}

/* ---- calls that take a stream, on a captured stream, in each mode ------ */

static const char *mode_name(CUstreamCaptureMode m)
{
    return m == CU_STREAM_CAPTURE_MODE_GLOBAL         ? "global"
           : m == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL ? "thread-local"
                                                      : "relaxed";
}

/* The driver's rules for the stream getters on a capturing stream (as an
 * H100 answers, in every mode): priority, context and capture status are
 * allowed; cuStreamGetDevice and cuStreamGetFlags are
 * STREAM_CAPTURE_UNSUPPORTED and invalidate the capture. evx's wrap relies
 * on the first and avoids the second (capture.wrap_*). */
static void getter_rules(CUstreamCaptureMode mode)
{
    const conf_cu *cu = conf_cu_get();
    raw_set r;
    CUgraph g = NULL;
    CUcontext ctx = NULL;
    CUgreenCtx green = NULL;
    CUevent ev = NULL;
    CUdevice dev = -1;
    unsigned flags = 77;
    int prio = 77;

    if (cu == NULL || !raw_open(cu, &r, 0))
        goto out;
    conf_note("mode %s", mode_name(mode));
    EXPECT_CU(cu->stream_begin_capture(r.s[0], mode), CUDA_SUCCESS);
    EXPECT_CU(cu->stream_get_priority(r.s[0], &prio), CUDA_SUCCESS);
    EXPECT(prio == 0);
    if (cu->stream_get_ctx != NULL) {
        EXPECT_CU(cu->stream_get_ctx(r.s[0], &ctx, &green), CUDA_SUCCESS);
        EXPECT(ctx == r.ctx);
    }
    EXPECT_CU(cu->ctx_get_current(&ctx), CUDA_SUCCESS);
    EXPECT_CU(cu->event_create(&ev, CU_EVENT_DEFAULT), CUDA_SUCCESS);
    if (ev != NULL)
        EXPECT_CU(cu->event_destroy(ev), CUDA_SUCCESS);
    EXPECT_CU(cu->ctx_push_current(r.ctx), CUDA_SUCCESS);
    EXPECT_CU(cu->ctx_pop_current(&ctx), CUDA_SUCCESS);
    EXPECT_CAP(r.s[0], CU_STREAM_CAPTURE_STATUS_ACTIVE);
    if (cu->stream_get_device != NULL) {
        EXPECT_CU(cu->stream_get_device(r.s[0], &dev), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
        EXPECT_CAP(r.s[0], CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    }
    end_any(cu, r.s[0]);
    if (cu->stream_get_flags != NULL) {
        EXPECT_CU(cu->stream_begin_capture(r.s[0], mode), CUDA_SUCCESS);
        EXPECT_CU(cu->stream_get_flags(r.s[0], &flags), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
        EXPECT_CAP(r.s[0], CU_STREAM_CAPTURE_STATUS_INVALIDATED);
        EXPECT_CU(cu->stream_end_capture(r.s[0], &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
        EXPECT(g == NULL);
        /* a stream that is not captured answers as usual meanwhile */
        EXPECT_CU(cu->stream_begin_capture(r.s[0], mode), CUDA_SUCCESS);
        EXPECT_CU(cu->stream_get_flags(r.s[1], &flags), CUDA_SUCCESS);
        EXPECT(flags == CU_STREAM_NON_BLOCKING);
        EXPECT_CAP(r.s[0], CU_STREAM_CAPTURE_STATUS_ACTIVE);
        EXPECT_CU(cu->stream_end_capture(r.s[0], &g), CUDA_SUCCESS);
        if (g != NULL)
            cu->graph_destroy(g);
    }
out:
    if (cu != NULL)
        raw_close(cu, &r);
}

static void t_getters_global(void) { getter_rules(CU_STREAM_CAPTURE_MODE_GLOBAL); }
static void t_getters_thread_local(void) { getter_rules(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL); }
static void t_getters_relaxed(void) { getter_rules(CU_STREAM_CAPTURE_MODE_RELAXED); }

/* "<call> -> <status> (<message>)" unless it returned `want`. */
#define EXPECT_IN(mode, call, want) \
    do { \
        evx_status_t st_ = (call); \
        EXPECTF(st_ == (want), "%s capture: %s -> %d, expected %d (%s)", mode_name(mode), \
                #call, (int)st_, (int)(want), st_ ? evx_last_error_message() : ""); \
    } while (0)
#define EXPECT_ACTIVE(mode, s) \
    do { \
        int cs_ = cap_status(cu, (s)); \
        EXPECTF(cs_ == CU_STREAM_CAPTURE_STATUS_ACTIVE, "%s capture: status %d at line %d", \
                mode_name(mode), cs_, __LINE__); \
    } while (0)

/* The objects of wrap_in_capture(). */
typedef struct wrap_set {
    evx_stream_t w[3];
    evx_event_t e, ext;
    evx_timer_t t;
    evx_timeline_t tl;
    evx_fence_t f;
} wrap_set;

static void wrap_close(wrap_set *o)
{
    int i;
    if (o->f != NULL)
        EXPECT_OK(evx_fence_destroy(o->f));
    drop_timeline(&o->tl);
    drop_timer(&o->t);
    drop_event(&o->ext);
    drop_event(&o->e);
    for (i = 0; i < 3; i++)
        drop_stream(&o->w[i]);
}

/* Inside the capture of `native`: the wraps (each way of naming the
 * device) and every call on the wrapped stream. */
static void calls_in_capture(const conf_cu *cu, CUstreamCaptureMode mode, CUstream native,
                             wrap_set *o)
{
    int dev = -1, prio = 77, owned = -1;
    unsigned flags = 77;
    void *nat = NULL;
    evx_capture_status_t c = (evx_capture_status_t)77;
    evx_status_t st;

    EXPECT_IN(mode, evx_stream_wrap_external(EVX_DEVICE_FROM_STREAM, native, &o->w[0]), 0);
    EXPECT_ACTIVE(mode, native);
    EXPECT_IN(mode, evx_stream_wrap_external(0, native, &o->w[1]), 0);
    EXPECT_IN(mode, evx_stream_wrap_external(EVX_DEVICE_CURRENT, native, &o->w[2]), 0);
    EXPECT_ACTIVE(mode, native);
    if (o->w[0] == NULL || o->w[1] == NULL || o->w[2] == NULL)
        return;
    EXPECT_IN(mode, evx_stream_get_device(o->w[0], &dev), 0);
    EXPECT(dev == 0);
    EXPECT_IN(mode, evx_stream_get_priority(o->w[1], &prio), 0);
    EXPECT(prio == 0);
    EXPECT_IN(mode, evx_stream_get_native(o->w[2], &nat), 0);
    EXPECT(nat == (void *)native);
    EXPECT_IN(mode, evx_stream_is_owned(o->w[0], &owned), 0);
    EXPECT(owned == 0);
    EXPECT_IN(mode, evx_stream_get_capture_status(o->w[0], &c), 0);
    EXPECT(c == EVX_CAPTURE_STATUS_ACTIVE);
    EXPECT_IN(mode, evx_stream_get_flags(o->w[0], &flags), EVX_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    EXPECTF(str_has(evx_last_error_message(), "cuStreamGetFlags") &&
                str_has(evx_last_error_message(), "capture is left as it was"),
            "message: %s", evx_last_error_message());
    EXPECT(flags == 77);
    EXPECT_ACTIVE(mode, native);
    EXPECT_IN(mode, evx_event_record(o->e, o->w[0]), 0);
    EXPECT_IN(mode, evx_stream_wait_event(o->w[1], o->e, EVX_EVENT_WAIT_DEFAULT), 0);
    EXPECT_IN(mode, evx_stream_wait_event(o->w[2], o->ext, EVX_EVENT_WAIT_EXTERNAL), 0);
    EXPECT_IN(mode, evx_event_record_with_flags(o->ext, o->w[0], EVX_EVENT_RECORD_EXTERNAL), 0);
    EXPECT_IN(mode, evx_stream_launch_host_func(o->w[1], host_count, NULL), 0);
    EXPECT_IN(mode, evx_stream_launch_host_func_status(o->w[2], capture_host_fn, NULL, NULL), 0);
    EXPECT_IN(mode, evx_timer_start(o->t, o->w[0]), 0);
    EXPECT_IN(mode, evx_timer_stop(o->t, o->w[1]), 0);
    EXPECT_IN(mode, evx_timeline_mark(o->tl, o->w[2], NULL), 0);
    EXPECT_ACTIVE(mode, native);
    if (o->f != NULL) {
        /* a memory-operation node of the graph, on both drivers; the
         * capture stays */
        st = evx_fence_signal(o->f, o->w[0], 1);
        conf_note("%s capture: evx_fence_signal -> %d", mode_name(mode), (int)st);
        st = evx_stream_wait_fence(o->w[1], o->f, 1);
        conf_note("%s capture: evx_stream_wait_fence -> %d", mode_name(mode), (int)st);
        EXPECT_ACTIVE(mode, native);
    }
    EXPECT_IN(mode, evx_stream_get_capture_status(o->w[2], &c), 0);
    EXPECT(c == EVX_CAPTURE_STATUS_ACTIVE);
}

/* A foreign stream (made with the raw driver) wrapped inside its capture,
 * as `with torch.cuda.graph(g): evx.Stream.wrap(...)` does: the wraps and
 * the calls on the wrapped stream work (its flags, which the driver
 * refuses to read during a capture, are STREAM_CAPTURE_UNSUPPORTED until it
 * ends), the capture stays active, ends with a graph, and the graph runs. */
static void wrap_in_capture(CUstreamCaptureMode mode)
{
    const conf_cu *cu = conf_cu_get();
    raw_set r;
    wrap_set o;
    CUgraph g = NULL;
    CUgraphExec x = NULL;
    unsigned flags = 77;
    evx_stream_t side = NULL;

    memset(&o, 0, sizeof o);
    if (cu == NULL || !raw_open(cu, &r, 0))
        goto out;
    REQUIRE((o.e = make_event(0, EVX_EVENT_DEFAULT)) != NULL);
    REQUIRE((o.ext = make_event(0, EVX_EVENT_DEFAULT)) != NULL);
    REQUIRE_OK(evx_device_create_timer(0, &o.t));
    REQUIRE_OK(evx_device_create_timeline(0, 4, &o.tl));
    if (evx_device_create_fence(0, 0, 0, &o.f) != EVX_SUCCESS)
        o.f = NULL; /* a driver without stream memory operations */
    REQUIRE((side = make_stream(0)) != NULL);
    REQUIRE_OK(evx_event_record(o.ext, side)); /* recorded outside the capture */
    REQUIRE_OK(evx_stream_synchronize(side));
    g_count = 0;
    REQUIRE(EXPECTF(cu->stream_begin_capture(r.s[0], mode) == CUDA_SUCCESS, "begin %s",
                    mode_name(mode)));
    calls_in_capture(cu, mode, r.s[0], &o);
    EXPECT_ACTIVE(mode, r.s[0]);
    EXPECTF(cu->stream_end_capture(r.s[0], &g) == CUDA_SUCCESS && g != NULL, "%s capture: end",
            mode_name(mode));
    if (o.w[0] != NULL) {
        EXPECT_IN(mode, evx_stream_get_flags(o.w[0], &flags), 0); /* read now */
        EXPECT(flags == EVX_STREAM_NON_BLOCKING);
    }
    if (g != NULL && EXPECT_CU_OK(cu->graph_instantiate(&x, g, 0))) {
        EXPECT_CU(cu->graph_launch(x, r.s[0]), CUDA_SUCCESS);
        EXPECT_CU(cu->stream_synchronize(r.s[0]), CUDA_SUCCESS);
        EXPECTF(__atomic_load_n(&g_count, __ATOMIC_SEQ_CST) == 1, "%s capture: %d runs",
                mode_name(mode), g_count);
        EXPECT_CU(cu->graph_exec_destroy(x), CUDA_SUCCESS);
    }
out:
    if (g != NULL)
        cu->graph_destroy(g);
    wrap_close(&o);
    drop_stream(&side);
    if (cu != NULL)
        raw_close(cu, &r);
}

static void t_wrap_global(void) { wrap_in_capture(CU_STREAM_CAPTURE_MODE_GLOBAL); }
static void t_wrap_thread_local(void) { wrap_in_capture(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL); }
static void t_wrap_relaxed(void) { wrap_in_capture(CU_STREAM_CAPTURE_MODE_RELAXED); }

/* The per-thread default stream captured: wrapping it (a default stream,
 * whose flags evx knows without asking) works in each mode and leaves the
 * capture active. */
static void t_wrap_per_thread(void)
{
    static const CUstreamCaptureMode modes[3] = {CU_STREAM_CAPTURE_MODE_GLOBAL,
                                                 CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                                                 CU_STREAM_CAPTURE_MODE_RELAXED};
    const conf_cu *cu = conf_cu_get();
    raw_set r;
    evx_stream_t w = NULL;
    unsigned flags = 77;
    int i, prio = 77;

    if (cu == NULL || !raw_open(cu, &r, 0))
        goto out;
    for (i = 0; i < 3; i++) {
        if (!EXPECT_CU_OK(cu->stream_begin_capture(CU_STREAM_PER_THREAD, modes[i])))
            break;
        EXPECT_IN(modes[i], evx_stream_wrap_external(0, EVX_STREAM_PER_THREAD, &w), 0);
        EXPECT_IN(modes[i], evx_stream_wrap_external(EVX_DEVICE_CURRENT, EVX_STREAM_PER_THREAD,
                                                     &w), 0);
        if (w != NULL) {
            EXPECT_IN(modes[i], evx_stream_get_flags(w, &flags), 0);
            EXPECT(flags == 0);
            EXPECT_IN(modes[i], evx_stream_get_priority(w, &prio), 0);
            EXPECT(prio == 0);
        }
        EXPECT_ACTIVE(modes[i], CU_STREAM_PER_THREAD);
        drop_stream(&w);
        end_any(cu, CU_STREAM_PER_THREAD);
    }
out:
    drop_stream(&w);
    if (cu != NULL)
        raw_close(cu, &r);
}

/* Reclaims the memory of fences destroyed before: returns how many are
 * pending, and checks that none is kept for good. */
static uint64_t reclaim_pending(uint64_t kept0)
{
    uint64_t pending = 0, kept = 0;
    EXPECT_OK(evx_fence_reclaim(&pending, &kept));
    EXPECTF(kept == kept0, "fences kept for good: %llu, before %llu", (unsigned long long)kept,
            (unsigned long long)kept0);
    return pending;
}

/* A fence used on `used` (and synchronized), destroyed while `captured`
 * captures in `mode`: the reclaim records nothing into the capture, which
 * stays active with no node to depend on and ends with a graph; the
 * memory comes back once the capture ended and `used` is synchronized. */
static void reclaim_across_capture(const conf_cu *cu, evx_stream_t used, CUstream captured,
                                   CUstreamCaptureMode mode, uint64_t pending0, uint64_t kept0)
{
    evx_fence_t f = NULL;
    CUgraph g = NULL;
    CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
    const CUgraphNode *deps = NULL;
    size_t n = 99;

    REQUIRE_OK(evx_device_create_fence(0, 0, 0, &f));
    REQUIRE_OK(evx_fence_signal(f, used, 1));
    REQUIRE_OK(evx_stream_synchronize(used));
    REQUIRE(cu->stream_begin_capture(captured, mode) == CUDA_SUCCESS);
    EXPECT_OK(evx_fence_destroy(f));
    f = NULL;
    EXPECT(reclaim_pending(kept0) == pending0 + 1);
    EXPECT(reclaim_pending(kept0) == pending0 + 1); /* tried again: still waits */
    EXPECT_CAP(captured, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    if (cu->stream_get_capture_info != NULL) {
        EXPECT_CU(cu->stream_get_capture_info(captured, &cs, NULL, NULL, &deps, NULL, &n),
                  CUDA_SUCCESS);
        EXPECTF(cs == CU_STREAM_CAPTURE_STATUS_ACTIVE && n == 0,
                "capture: status %d, %zu nodes to depend on (evx's mark?)", (int)cs, n);
    }
    EXPECT_CU(cu->stream_end_capture(captured, &g), CUDA_SUCCESS);
    if (g != NULL)
        EXPECT_CU(cu->graph_destroy(g), CUDA_SUCCESS);
    EXPECT(reclaim_pending(kept0) <= pending0 + 1); /* marked now */
    EXPECT_OK(evx_stream_synchronize(used));
    EXPECT(reclaim_pending(kept0) == pending0);
out:
    if (f != NULL)
        EXPECT_OK(evx_fence_destroy(f));
    end_any(cu, captured);
}

/* A fence destroyed while a stream it was used on takes part in a capture:
 * evx gives its memory back once an event it records on that stream has
 * completed, and records none while the capture lasts (the event would be
 * a node of the caller's graph, and evx's query of it would invalidate the
 * capture). The same for the legacy stream while a blocking stream of its
 * context captures (a record there invalidates the capture,
 * capture.legacy_implicit). Global mode, as PyTorch captures. */
static void t_fence_reclaim(void)
{
    const conf_cu *cu = conf_cu_get();
    raw_set r;
    evx_stream_t w = NULL, legacy = NULL;
    evx_fence_t probe = NULL;
    uint64_t pending0 = 0, kept0 = 0;

    if (cu == NULL || !raw_open(cu, &r, 1))
        goto out;
    if (evx_device_create_fence(0, 0, 0, &probe) != EVX_SUCCESS) {
        conf_skip("no fences: %s", evx_last_error_message());
        goto out;
    }
    EXPECT_OK(evx_fence_destroy(probe)); /* never used: given back at once */
    REQUIRE_OK(evx_stream_wrap_external(0, r.s[1], &w));
    REQUIRE_OK(evx_stream_wrap_external(0, EVX_STREAM_LEGACY, &legacy));
    EXPECT_OK(evx_fence_reclaim(&pending0, &kept0));
    reclaim_across_capture(cu, w, r.s[1], CU_STREAM_CAPTURE_MODE_GLOBAL, pending0, kept0);
    reclaim_across_capture(cu, legacy, r.s[0], CU_STREAM_CAPTURE_MODE_GLOBAL, pending0, kept0);
out:
    drop_stream(&legacy);
    drop_stream(&w);
    if (cu != NULL)
        raw_close(cu, &r);
}

const conf_case conf_capture_cases[] = {
    {"capture.not_capturing", t_not_capturing},
    {"capture.bad_input", t_bad_input},
    {"capture.active", t_active},
    {"capture.forbidden_calls", t_forbidden},
    {"capture.external_nodes", t_external_nodes},
    {"capture.global_mode_threads", t_global_mode},
    {"capture.begin_end", t_begin_end},
    {"capture.invalidated", t_invalidated},
    {"capture.mode_rules", t_mode_rules},
    {"capture.wrong_thread", t_wrong_thread},
    {"capture.fork_join", t_fork_join},
    {"capture.isolation_merge", t_isolation_merge},
    {"capture.legacy_implicit", t_legacy_implicit},
    {"capture.captured_event", t_captured_event},
    {"capture.graph_replay", t_graph_replay},
    {"capture.timeline_in_graph", t_timeline_in_graph},
    {"capture.timer_in_graph", t_timer_in_graph},
    {"capture.getters_global", t_getters_global},
    {"capture.getters_thread_local", t_getters_thread_local},
    {"capture.getters_relaxed", t_getters_relaxed},
    {"capture.wrap_global", t_wrap_global},
    {"capture.wrap_thread_local", t_wrap_thread_local},
    {"capture.wrap_relaxed", t_wrap_relaxed},
    {"capture.wrap_per_thread", t_wrap_per_thread},
    {"capture.fence_reclaim", t_fence_reclaim},
    {NULL, NULL},
};
