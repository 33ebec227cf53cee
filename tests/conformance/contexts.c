/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/* Streams of contexts other than a device's primary context (issue 10,
 * item 1): a context the caller makes with cuCtxCreate, and a green
 * context (GPU only: the host emulation has none). evx events record on,
 * and evx streams wait for, streams of any context of their device; the
 * caller's current context is left as it was. The raw driver is reached
 * as other CUDA code would reach it (util.h). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "util.h"

/* The calling thread's current context when the running case began. */
static CUcontext cur0;
#define CHECK_CTX(after) conf_check_ctx(cur0, (after), __FILE__, __LINE__)
/* A call that must succeed and leave the current context as it was. */
#define STEP(call) \
    do { \
        conf_expect_status((call), EVX_SUCCESS, #call, __FILE__, __LINE__); \
        CHECK_CTX(#call); \
    } while (0)

/* A context made with cuCtxCreate, its stream wrapped by evx (s), and an
 * evx stream of the primary context (p); sets cur0. */
typedef struct fixture {
    CUcontext ctx;
    CUstream cs;
    evx_stream_t s, p;
} fixture;

static int fx_open(fixture *f)
{
    memset(f, 0, sizeof *f);
    return conf_cu_get() != NULL &&
           EXPECT(conf_cu_get()->ctx_get_current(&cur0) == CUDA_SUCCESS) &&
           conf_ctx_make(0, &f->ctx, &f->cs) &&
           EXPECT_OK(evx_stream_wrap_external(0, f->cs, &f->s)) &&
           (f->p = make_stream(0)) != NULL;
}

static void fx_close(fixture *f)
{
    drop_stream(&f->p);
    drop_stream(&f->s);
    if (f->ctx != NULL)
        conf_ctx_drop(&f->ctx, &f->cs);
    CHECK_CTX("the end of the case");
}

/* An evx event records on a borrowed stream of a created context: the
 * record, query, synchronize and elapsed time of a plain event, with
 * pending work, the current context untouched, and no driver object left
 * once the evx objects and then the context are destroyed. */
static void t_created_stream(void)
{
    const conf_cu *cu = conf_cu_get();
    CUcontext ctx = NULL;
    CUstream cs = NULL;
    evx_stream_t s = NULL;
    evx_event_t a = NULL, b = NULL;
    evx_host_live start, want;
    conf_gate *g = NULL;
    void *native = NULL;
    float ms = -1.0f;
    int counting, d = -1, i;

    if (cu == NULL)
        return;
    counting = host_live_start(&start);
    REQUIRE(cu->ctx_get_current(&cur0) == CUDA_SUCCESS);
    REQUIRE(conf_ctx_make(0, &ctx, &cs));
    CHECK_CTX("conf_ctx_make");
    REQUIRE((a = make_event(0, EVX_EVENT_DEFAULT)) != NULL);
    REQUIRE((b = make_event(0, EVX_EVENT_DEFAULT)) != NULL);
    /* The driver's rule that evx works around: a driver event of the
     * primary context is not recorded on a stream of another context. */
    STEP(evx_event_get_native(a, &native));
    EXPECTF(cu->event_record((CUevent)native, cs) == CUDA_ERROR_INVALID_HANDLE,
            "the driver records a primary-context event on a stream of a "
            "created context");
    STEP(evx_stream_wrap_external(EVX_DEVICE_FROM_STREAM, cs, &s));
    STEP(evx_stream_get_device(s, &d));
    EXPECT(d == 0);

    STEP(evx_event_record(a, s));
    STEP(evx_event_synchronize(a));
    STEP(evx_event_query(a));
    REQUIRE((g = gate_new()) != NULL);
    STEP(gate_launch(s, g));
    STEP(evx_event_record(b, s));
    EXPECT_STATUS(evx_event_query(b), EVX_ERROR_NOT_READY);
    EXPECT_STATUS(evx_stream_query(s), EVX_ERROR_NOT_READY);
    EXPECT_STATUS(evx_event_elapsed_time(&ms, a, b), EVX_ERROR_NOT_READY);
    CHECK_CTX("the NOT_READY calls");
    gate_open(g);
    STEP(evx_event_synchronize(b));
    STEP(evx_stream_synchronize(s));
    STEP(evx_event_elapsed_time(&ms, a, b));
    EXPECTF(ms >= 0.0f, "elapsed %f ms", (double)ms);
    STEP(evx_event_record_with_flags(b, s, 0));
    /* the driver event evx hands out now is one of the created context:
     * the raw driver records it on that context's stream */
    STEP(evx_event_get_native(b, &native));
    EXPECTF(cu->event_record((CUevent)native, cs) == CUDA_SUCCESS,
            "cuEventRecord of evx_event_get_native's event on the stream");
    for (i = 0; i < 200; i++)
        if (!EXPECT_OK(evx_event_record(a, s)))
            break;
    STEP(evx_stream_synchronize(s));
    STEP(evx_event_query(a));

    /* evx lets go of every driver object of the context at destroy, so the
     * caller may destroy the context next */
    STEP(evx_event_destroy(a));
    a = NULL;
    STEP(evx_event_destroy(b));
    b = NULL;
    STEP(evx_stream_destroy(s));
    s = NULL;
    if (counting) {
        want = start;
        want.streams += 1;  /* cs */
        want.contexts += 1; /* ctx */
        live_expect_back(&want, "evx's objects destroyed, the context alive");
    }
out:
    drop_event(&a);
    drop_event(&b);
    drop_stream(&s);
    if (ctx != NULL)
        conf_ctx_drop(&ctx, &cs);
    CHECK_CTX("cuCtxDestroy");
    if (counting)
        live_expect_back(&start, "the context destroyed");
}

/* e recorded on `from` behind a closed gate; `to` waits for it, then runs
 * a host function that must not run before the gate opens. Returns 1 when
 * every step held. */
static int ordered_wait(evx_event_t e, evx_stream_t from, evx_stream_t to,
                        const char *from_name, const char *to_name)
{
    conf_gate *g = gate_new();
    int flag = 0, ok = g != NULL;
    ok = ok && EXPECT_OK(gate_launch(from, g));
    ok = ok && EXPECT_OK(evx_event_record(e, from));
    ok = ok && EXPECT_OK(evx_stream_wait_event(to, e, 0));
    ok = ok && EXPECT_OK(evx_stream_launch_host_func(to, host_set_flag, &flag));
    CHECK_CTX("the record and the wait");
    if (ok) {
        sleep_ms(50);
        ok = EXPECTF(!flag_get(&flag), "%s went on while %s was held",
                     to_name, from_name);
    }
    if (g != NULL)
        gate_open(g);
    EXPECT_OK(evx_stream_synchronize(to));
    return EXPECT(flag_get(&flag)) && ok;
}

/* Waits across contexts order work both ways, and one event moves between
 * the contexts it is recorded in. */
static void t_wait_across(void)
{
    fixture f;
    evx_event_t e = NULL;

    REQUIRE(fx_open(&f));
    REQUIRE((e = make_event(0, EVX_EVENT_DISABLE_TIMING)) != NULL);

    /* created context -> primary context, and back (the event moves) */
    REQUIRE(ordered_wait(e, f.s, f.p, "the created context's stream",
                         "the primary-context stream"));
    REQUIRE(ordered_wait(e, f.p, f.s, "the primary-context stream",
                         "the created context's stream"));

    /* and to the created context again (its driver event there is kept) */
    STEP(evx_event_record(e, f.s));
    STEP(evx_event_synchronize(e));
    STEP(evx_stream_wait_event(f.p, e, 0));
    STEP(evx_stream_synchronize(f.p));
out:
    drop_event(&e);
    fx_close(&f);
}

/* Elapsed time between events recorded in two contexts: whatever the
 * driver gives; if it refuses, the message names both contexts. */
static void t_elapsed_across(void)
{
    fixture f;
    evx_event_t a = NULL, b = NULL;
    evx_status_t st;
    float ms = -1.0f;

    REQUIRE(fx_open(&f));
    REQUIRE((a = make_event(0, EVX_EVENT_DEFAULT)) != NULL);
    REQUIRE((b = make_event(0, EVX_EVENT_DEFAULT)) != NULL);
    STEP(evx_event_record(a, f.s));
    STEP(evx_event_synchronize(a));
    STEP(evx_event_record(b, f.p));
    STEP(evx_event_synchronize(b));
    st = evx_event_elapsed_time(&ms, a, b);
    CHECK_CTX("evx_event_elapsed_time");
    if (st == EVX_SUCCESS) {
        EXPECTF(isfinite(ms), "elapsed %f ms", (double)ms);
        conf_note("the driver times events of two contexts: %f ms", (double)ms);
    } else {
        const char *m = evx_last_error_message();
        EXPECTF(st == EVX_ERROR_INVALID_HANDLE, "status %d", (int)st);
        EXPECTF(str_has(m, "created by the caller") &&
                    str_has(m, "primary context") && msg_names_device(m, 0),
                "the message does not name both contexts: %s", m);
        conf_note("refused: %s", m);
    }
    /* both in one context again: timed */
    STEP(evx_event_record(a, f.p));
    STEP(evx_event_record(b, f.p));
    STEP(evx_event_synchronize(b));
    STEP(evx_event_elapsed_time(&ms, a, b));
    EXPECTF(ms >= 0.0f, "elapsed %f ms", (double)ms);
out:
    drop_event(&a);
    drop_event(&b);
    fx_close(&f);
}

/* What cannot move to another context is refused with a message naming
 * the contexts: an interprocess event (its IPC handle names its driver
 * event) and timers (their marks are the primary context's). */
static void t_refused(void)
{
    fixture f;
    evx_event_t ipc = NULL;
    evx_timer_t t = NULL;
    const char *m;

    REQUIRE(fx_open(&f));
    REQUIRE((ipc = make_event(0, EVX_EVENT_INTERPROCESS |
                                     EVX_EVENT_DISABLE_TIMING)) != NULL);
    EXPECT_FAIL(evx_event_record(ipc, f.s), EVX_ERROR_INVALID_HANDLE);
    m = evx_last_error_message();
    EXPECTF(str_has(m, "interprocess") && str_has(m, "created by the caller") &&
                str_has(m, "primary context"),
            "message: %s", m);
    CHECK_CTX("the refused record");
    STEP(evx_event_record(ipc, f.p)); /* still good on its own context */
    STEP(evx_event_synchronize(ipc));
    STEP(evx_device_create_timer(0, &t));
    EXPECT_FAIL(evx_timer_start(t, f.s), EVX_ERROR_INVALID_HANDLE);
    m = evx_last_error_message();
    EXPECTF(str_has(m, "timer") && str_has(m, "created by the caller"),
            "message: %s", m);
    STEP(evx_timer_start(t, f.p));
    STEP(evx_timer_stop(t, f.p));
out:
    drop_timer(&t);
    drop_event(&ipc);
    fx_close(&f);
}

/* GPU only: a stream of a green context records, waits and times like a
 * stream of the primary context (cuStreamGetCtx_v2 gives the primary
 * context for it). */
static void t_green(void)
{
    const conf_cu *cu = conf_cu_get();
    CUdevResource all, part, rest;
    CUdevResourceDesc desc = NULL;
    CUgreenCtx green = NULL;
    CUstream gs = NULL;
    evx_stream_t s = NULL, p = NULL;
    evx_event_t a = NULL, b = NULL;
    unsigned groups = 1;
    float ms = -1.0f;

    if (cu == NULL)
        return;
    if (cu->device_get_dev_resource == NULL ||
        cu->dev_sm_resource_split_by_count == NULL ||
        cu->dev_resource_generate_desc == NULL || cu->green_ctx_create == NULL ||
        cu->green_ctx_destroy == NULL || cu->green_ctx_stream_create == NULL) {
        conf_skip("the driver has no green contexts (cuGreenCtxCreate and "
                  "friends): the host emulation does not model them "
                  "(GPU-only case, docs/conformance.md)");
        return;
    }
    memset(&all, 0, sizeof all);
    memset(&part, 0, sizeof part);
    memset(&rest, 0, sizeof rest);
    REQUIRE(cu->ctx_get_current(&cur0) == CUDA_SUCCESS);
    REQUIRE(cu->device_get_dev_resource(conf_cu_device(0), &all,
                                        CU_DEV_RESOURCE_TYPE_SM) == CUDA_SUCCESS);
    REQUIRE(cu->dev_sm_resource_split_by_count(&part, &groups, &all, &rest, 0,
                                               8) == CUDA_SUCCESS);
    REQUIRE(groups == 1);
    REQUIRE(cu->dev_resource_generate_desc(&desc, &part, 1) == CUDA_SUCCESS);
    REQUIRE(cu->green_ctx_create(&green, desc, conf_cu_device(0),
                                 CU_GREEN_CTX_DEFAULT_STREAM) == CUDA_SUCCESS);
    REQUIRE(cu->green_ctx_stream_create(&gs, green, CU_STREAM_NON_BLOCKING,
                                        0) == CUDA_SUCCESS);
    CHECK_CTX("cuGreenCtxStreamCreate");
    STEP(evx_stream_wrap_external(EVX_DEVICE_FROM_STREAM, gs, &s));
    REQUIRE((p = make_stream(0)) != NULL);
    REQUIRE((a = make_event(0, EVX_EVENT_DEFAULT)) != NULL);
    REQUIRE((b = make_event(0, EVX_EVENT_DEFAULT)) != NULL);
    STEP(evx_event_record(a, s));
    STEP(evx_event_record(b, s));
    STEP(evx_event_synchronize(b));
    STEP(evx_event_elapsed_time(&ms, a, b));
    EXPECTF(ms >= 0.0f, "elapsed %f ms", (double)ms);
    STEP(evx_stream_wait_event(p, b, 0));
    STEP(evx_event_record(a, p));
    STEP(evx_stream_wait_event(s, a, 0));
    STEP(evx_stream_synchronize(s));
    STEP(evx_stream_synchronize(p));
out:
    drop_event(&a);
    drop_event(&b);
    drop_stream(&p);
    drop_stream(&s);
    if (gs != NULL)
        EXPECT(cu->stream_destroy(gs) == CUDA_SUCCESS);
    if (green != NULL)
        EXPECT(cu->green_ctx_destroy(green) == CUDA_SUCCESS);
}

/* EVX_DEVICE_CURRENT: a default stream wraps as the default stream of the
 * device whose primary context is current on the calling thread (as CUDA's
 * runtime, so CuPy and PyTorch, take it); with no context current, or a
 * created one, a default stream is refused, naming what to pass. A stream
 * of a created context wraps with the context's device. The current
 * context is left as it was each time. */
static void t_current_device(void)
{
    static void *const natives[] = {NULL, EVX_STREAM_LEGACY,
                                    EVX_STREAM_PER_THREAD};
    const conf_cu *cu = conf_cu_get();
    const int n = conf_device_count() < 2 ? 1 : 2;
    CUcontext primary[2] = {NULL, NULL}, ctx = NULL, now = NULL;
    CUstream cs = NULL;
    evx_stream_t s = NULL;
    evx_event_t e = NULL;
    size_t i;
    int d, got;

    if (cu == NULL)
        return;
    REQUIRE(cu->ctx_get_current(&cur0) == CUDA_SUCCESS);
    for (d = 0; d < n; d++)
        REQUIRE(cu->primary_retain(&primary[d], conf_cu_device(d)) == CUDA_SUCCESS);
    REQUIRE(conf_ctx_make(0, &ctx, &cs));

    /* No context current: refused, the message saying what to pass. */
    REQUIRE(cu->ctx_set_current(NULL) == CUDA_SUCCESS);
    for (i = 0; i < 3; i++) {
        s = JUNK(evx_stream_t);
        EXPECT_FAIL(evx_stream_wrap_external(EVX_DEVICE_CURRENT, natives[i], &s),
                    EVX_ERROR_INVALID_VALUE);
        EXPECTF(str_has(evx_last_error_message(), "no context is current") &&
                    str_has(evx_last_error_message(), "pass the device ordinal"),
                "\"%s\"", evx_last_error_message());
        EXPECT(s == NULL);
        s = NULL;
    }
    s = JUNK(evx_stream_t);
    EXPECT_FAIL(evx_stream_wrap_external(EVX_DEVICE_CURRENT, cs, &s),
                EVX_ERROR_INVALID_VALUE);
    EXPECT(s == NULL);
    s = NULL;
    EXPECT(cu->ctx_get_current(&now) == CUDA_SUCCESS && now == NULL);

    /* A primary context current: its device's default streams. */
    for (d = 0; d < n; d++) {
        REQUIRE(cu->ctx_set_current(primary[d]) == CUDA_SUCCESS);
        for (i = 0; i < 3; i++) {
            conf_note("device %d, native stream %p", d, natives[i]);
            if (!EXPECT_OK(evx_stream_wrap_external(EVX_DEVICE_CURRENT, natives[i], &s)))
                continue;
            got = -1;
            EXPECT_OK(evx_stream_get_device(s, &got));
            EXPECTF(got == d, "device %d, not %d", got, d);
            if ((e = make_event(d, EVX_EVENT_DISABLE_TIMING)) != NULL) {
                EXPECT_OK(evx_event_record(e, s));
                EXPECT_OK(evx_event_synchronize(e));
                drop_event(&e);
            }
            drop_stream(&s);
            EXPECT(cu->ctx_get_current(&now) == CUDA_SUCCESS && now == primary[d]);
        }
    }

    /* A created context current: not a default stream of evx's (those are
     * of primary contexts), but its own stream wraps, of its device. */
    REQUIRE(cu->ctx_set_current(ctx) == CUDA_SUCCESS);
    s = JUNK(evx_stream_t);
    EXPECT_FAIL(evx_stream_wrap_external(EVX_DEVICE_CURRENT, EVX_STREAM_LEGACY, &s),
                EVX_ERROR_INVALID_VALUE);
    EXPECTF(str_has(evx_last_error_message(), "not the primary context"),
            "\"%s\"", evx_last_error_message());
    EXPECT(s == NULL);
    s = NULL;
    if (EXPECT_OK(evx_stream_wrap_external(EVX_DEVICE_CURRENT, cs, &s))) {
        got = -1;
        EXPECT_OK(evx_stream_get_device(s, &got));
        EXPECTF(got == 0, "device %d, not 0", got);
        drop_stream(&s);
    }
    EXPECT(cu->ctx_get_current(&now) == CUDA_SUCCESS && now == ctx);
    /* A device given still wins over the current context. */
    if (n == 2 && EXPECT_OK(evx_stream_wrap_external(1, EVX_STREAM_LEGACY, &s))) {
        got = -1;
        EXPECT_OK(evx_stream_get_device(s, &got));
        EXPECTF(got == 1, "device %d, not 1", got);
        drop_stream(&s);
    }
out:
    drop_stream(&s);
    if (cu != NULL)
        EXPECT(cu->ctx_set_current(cur0) == CUDA_SUCCESS);
    if (ctx != NULL)
        conf_ctx_drop(&ctx, &cs);
    for (d = 0; d < 2; d++)
        if (primary[d] != NULL)
            EXPECT(cu->primary_release(conf_cu_device(d)) == CUDA_SUCCESS);
}

const conf_case conf_contexts_cases[] = {
    {"contexts.created_stream", t_created_stream},
    {"contexts.wait_across", t_wait_across},
    {"contexts.elapsed_across", t_elapsed_across},
    {"contexts.refused", t_refused},
    {"contexts.current_device", t_current_device},
    {"contexts.green_gpu_only", t_green},
    {NULL, NULL},
};
