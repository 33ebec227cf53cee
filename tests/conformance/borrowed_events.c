/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/* Borrowed events (evx_event_wrap_external, issue 32): raw CUevents made
 * through the driver evx opened, as other CUDA code makes them, used
 * through evx handles as evx's own events are; evx_event_destroy() ends the
 * borrow and never destroys the CUevent; the release callback runs once,
 * after racing calls return, and never for a failed wrap. Runs on both
 * drivers. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "util.h"

/* A raw event of device 0's primary context, borrowed by evx. */
static int borrow(unsigned flags, CUevent *raw, evx_event_t *e)
{
    *e = NULL;
    if (!raw_event_create(0, flags, raw))
        return 0;
    return EXPECT_OK(evx_event_wrap_external(0, *raw, e));
}

static void raw_drop(CUevent *raw)
{
    if (*raw != NULL)
        EXPECT(conf_cu_get()->event_destroy(*raw) == CUDA_SUCCESS);
    *raw = NULL;
}

/* Record, wait, query, synchronize and elapsed time, against an own event
 * and another borrowed one; pending work is seen as pending. */
static void t_basic(void)
{
    CUevent ra = NULL, rb = NULL;
    evx_event_t a = NULL, b = NULL, own = NULL;
    evx_stream_t s = NULL, t = NULL;
    conf_gate *g = gate_new();
    int owned = -1, dev = -1;
    void *native = NULL;
    float ms = -1.0f;

    REQUIRE(conf_cu_get() != NULL && g != NULL);
    REQUIRE(borrow(CU_EVENT_DEFAULT, &ra, &a));
    REQUIRE(borrow(CU_EVENT_BLOCKING_SYNC, &rb, &b));
    REQUIRE((own = make_event(0, EVX_EVENT_DEFAULT)) != NULL);
    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((t = make_stream(0)) != NULL);
    EXPECT_OK(evx_event_is_owned(a, &owned));
    EXPECT(owned == 0);
    EXPECT_OK(evx_event_is_owned(own, &owned));
    EXPECT(owned == 1);
    EXPECT_OK(evx_event_get_device(a, &dev));
    EXPECT(dev == 0);
    EXPECT_OK(evx_event_get_native(a, &native));
    EXPECT(native == (void *)ra);
    /* never recorded: the driver says complete */
    EXPECT_OK(evx_event_query(a));
    EXPECT_OK(evx_event_synchronize(a));

    EXPECT_OK(evx_event_record(own, s));
    REQUIRE_OK(gate_launch(s, g));
    EXPECT_OK(evx_event_record(a, s));
    EXPECT_OK(evx_stream_launch_host_func(s, host_sleep_ms, (void *)(intptr_t)5));
    EXPECT_OK(evx_event_record_with_flags(b, s, EVX_EVENT_RECORD_DEFAULT));
    EXPECT_OK(evx_stream_wait_event(t, b, EVX_EVENT_WAIT_DEFAULT));
    sleep_ms(20);
    EXPECT_STATUS(evx_event_query(a), EVX_ERROR_NOT_READY);
    EXPECT_STATUS(evx_event_query(b), EVX_ERROR_NOT_READY);
    EXPECT_STATUS(evx_stream_query(t), EVX_ERROR_NOT_READY);
    EXPECT(conf_cu_get()->event_query(ra) == CUDA_ERROR_NOT_READY);
    gate_open(g);
    EXPECT_OK(evx_event_synchronize(b));
    EXPECT_OK(evx_stream_synchronize(t));
    EXPECT_OK(evx_event_query(a));
    EXPECT_OK(evx_event_elapsed_time(&ms, own, a));
    EXPECTF(ms >= 0.0f, "own..borrowed %f ms", (double)ms);
    ms = -1.0f;
    EXPECT_OK(evx_event_elapsed_time(&ms, a, b));
    EXPECTF(ms >= 4.0f, "borrowed..borrowed %f ms, the stream slept 5 ms", (double)ms);
    ms = 1.0f;
    EXPECT_OK(evx_event_elapsed_time(&ms, b, own));
    EXPECTF(ms < 0.0f, "borrowed..earlier own event %f ms", (double)ms);
out:
    if (g != NULL)
        gate_open(g);
    if (s != NULL)
        evx_stream_synchronize(s);
    drop_event(&a);
    drop_event(&b);
    drop_event(&own);
    drop_stream(&s);
    drop_stream(&t);
    raw_drop(&ra);
    raw_drop(&rb);
}

/* What evx cannot know of a borrowed event comes from the driver, and the
 * message says so. */
static void t_unknown_flags(void)
{
    CUevent rn = NULL, rt = NULL;
    evx_event_t notime = NULL, timed = NULL;
    evx_stream_t s = NULL;
    evx_event_pool_t pool = NULL;
    evx_event_pool_options_t o = EVX_EVENT_POOL_OPTIONS_INIT;
    evx_ipc_event_handle_t ih;
    unsigned flags = 77;
    float ms = -1.0f;
    int owned = -1;
    const char *m;

    REQUIRE(conf_cu_get() != NULL);
    REQUIRE(borrow(CU_EVENT_DISABLE_TIMING, &rn, &notime));
    REQUIRE(borrow(CU_EVENT_DEFAULT, &rt, &timed));
    REQUIRE((s = make_stream(0)) != NULL);
    /* never recorded by anyone: evx asks the driver, which refuses */
    if (EXPECT_FAIL(evx_event_elapsed_time(&ms, timed, timed), EVX_ERROR_INVALID_HANDLE)) {
        m = evx_last_error_message();
        EXPECTF(str_has(m, "cuEventElapsedTime") && str_has(m, "borrowed") &&
                    str_has(m, "not recorded"), "message: %s", m);
    }
    EXPECT_OK(evx_event_record(notime, s));
    EXPECT_OK(evx_event_record(timed, s));
    EXPECT_OK(evx_stream_synchronize(s));
    EXPECT_OK(evx_event_synchronize(notime));
    if (EXPECT_FAIL(evx_event_elapsed_time(&ms, timed, notime), EVX_ERROR_INVALID_HANDLE)) {
        m = evx_last_error_message();
        EXPECTF(str_has(m, "evx_event_elapsed_time") && str_has(m, "cuEventElapsedTime") &&
                    str_has(m, "without timing") && str_has(m, "CU_EVENT_DISABLE_TIMING"),
                "message: %s", m);
    }
    EXPECT(ms == -1.0f);
    EXPECT_OK(evx_event_elapsed_time(&ms, timed, timed));
    EXPECT(ms == 0.0f);
    if (EXPECT_FAIL(evx_event_get_flags(timed, &flags), EVX_ERROR_NOT_SUPPORTED))
        EXPECTF(str_has(evx_last_error_message(), "borrowed"), "message: %s",
                evx_last_error_message());
    EXPECT(flags == 77);
    if (EXPECT_FAIL(evx_event_get_ipc_handle(notime, &ih), EVX_ERROR_NOT_SUPPORTED))
        EXPECTF(str_has(evx_last_error_message(), "borrowed"), "message: %s",
                evx_last_error_message());
    /* a pool never takes a borrowed event, which stays live */
    o.capacity = 4;
    REQUIRE_OK(evx_device_create_event_pool(0, &o, &pool));
    if (EXPECT_FAIL(evx_event_pool_release(pool, timed), EVX_ERROR_INVALID_VALUE))
        EXPECTF(str_has(evx_last_error_message(), "borrowed"), "message: %s",
                evx_last_error_message());
    EXPECT_OK(evx_event_is_owned(timed, &owned));
    EXPECT(owned == 0);
out:
    if (pool != NULL)
        EXPECT_OK(evx_event_pool_destroy(pool));
    drop_event(&notime);
    drop_event(&timed);
    drop_stream(&s);
    raw_drop(&rn);
    raw_drop(&rt);
}

static void on_token_count(void *user_data)
{
    __atomic_fetch_add((int *)user_data, 1, __ATOMIC_SEQ_CST);
}

/* A notifier watch of a borrowed event fires when its work completes. */
static void t_notifier(void)
{
    CUevent raw = NULL;
    evx_event_t e = NULL;
    evx_stream_t s = NULL;
    evx_notifier_t n = NULL;
    conf_gate *g = gate_new();
    uint64_t tok = 0;
    uint32_t c = 0;
    int calls = 0, i;

    REQUIRE(conf_cu_get() != NULL && g != NULL);
    REQUIRE(borrow(CU_EVENT_DISABLE_TIMING, &raw, &e));
    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE_OK(evx_notifier_create(NULL, &n));
    REQUIRE_OK(gate_launch(s, g));
    REQUIRE_OK(evx_event_record(e, s));
    REQUIRE_OK(evx_notifier_watch(n, e, 42));
    REQUIRE_OK(evx_notifier_watch_callback(n, e, on_token_count, &calls));
    sleep_ms(30);
    EXPECT_OK(evx_notifier_read(n, &tok, 1, &c));
    EXPECTF(c == 0, "a token came before the borrowed event's work completed");
    EXPECT(__atomic_load_n(&calls, __ATOMIC_SEQ_CST) == 0);
    gate_open(g);
    for (i = 0; i < 500 && c == 0; i++) {
        EXPECT_OK(evx_notifier_read(n, &tok, 1, &c));
        if (c == 0)
            sleep_ms(10);
    }
    EXPECTF(c == 1 && tok == 42, "tokens %u, token %llu", c, (unsigned long long)tok);
    EXPECT(poll_flag(&calls, 5000));
    EXPECT_OK(evx_event_query(e));
out:
    if (g != NULL)
        gate_open(g);
    if (n != NULL)
        EXPECT_OK(evx_notifier_destroy(n));
    if (s != NULL)
        evx_stream_synchronize(s);
    drop_event(&e);
    drop_stream(&s);
    raw_drop(&raw);
}

/* evx_event_destroy ends the borrow only: after it and a trim (which
 * destroys what evx keeps for reuse), the raw event still records and
 * synchronizes through the raw driver, and destroying it is its maker's. */
static void t_destroy_keeps_cuevent(void)
{
    const conf_cu *cu = conf_cu_get();
    CUevent raw = NULL;
    CUstream rs = NULL;
    evx_event_t e = NULL, fresh = NULL;
    evx_stream_t s = NULL;
    void *native = NULL;
    int i;

    REQUIRE(cu != NULL);
    REQUIRE(raw_stream_create(0, CU_STREAM_NON_BLOCKING, 0, &rs));
    REQUIRE(borrow(CU_EVENT_DEFAULT, &raw, &e));
    REQUIRE((s = make_stream(0)) != NULL);
    EXPECT_OK(evx_event_record(e, s));
    EXPECT_OK(evx_event_synchronize(e));
    EXPECT_OK(evx_event_destroy(e));
    e = NULL;
    /* more destroys than a batch, so the retired borrow is freed, then a trim */
    for (i = 0; i < 40; i++) {
        evx_event_t x = make_event(0, EVX_EVENT_DEFAULT);
        if (!EXPECT(x != NULL))
            break;
        EXPECT_OK(evx_event_destroy(x));
    }
    EXPECT_OK(evx_device_trim(0));
    /* evx did not keep it for reuse either */
    REQUIRE((fresh = make_event(0, EVX_EVENT_DEFAULT)) != NULL);
    EXPECT_OK(evx_event_get_native(fresh, &native));
    EXPECTF(native != (void *)raw, "a new evx event got the borrowed CUevent");
    EXPECT(cu->event_record(raw, rs) == CUDA_SUCCESS);
    EXPECT(cu->event_synchronize(raw) == CUDA_SUCCESS);
    EXPECT(cu->event_query(raw) == CUDA_SUCCESS);
out:
    drop_event(&fresh);
    drop_event(&e);
    drop_stream(&s);
    raw_drop(&raw);
    if (rs != NULL)
        raw_stream_destroy(0, rs);
}

/* ---- release callbacks ------------------------------------------------- */

static void t_release_once(void)
{
    conf_release rs;
    CUevent raw = NULL;
    evx_event_t e = NULL;
    evx_stream_t s = NULL;
    int owned = -1;

    memset(&rs, 0, sizeof rs);
    REQUIRE(raw_event_create(0, CU_EVENT_DEFAULT, &raw));
    REQUIRE((s = make_stream(0)) != NULL);
    e = JUNK(evx_event_t);
    REQUIRE_OK(evx_event_wrap_external_with_release(0, raw, conf_on_release, &rs, &e));
    EXPECT_OK(evx_event_is_owned(e, &owned));
    EXPECT(owned == 0);
    EXPECT_OK(evx_event_record(e, s));
    EXPECT_OK(evx_event_synchronize(e));
    EXPECTF(conf_release_calls(&rs) == 0, "released %d times before the destroy",
            conf_release_calls(&rs));
    rs.event = raw; /* the callback frees the event */
    EXPECT_OK(evx_event_destroy(e));
    EXPECTF(conf_release_calls(&rs) == 1, "released %d times when the destroy returned",
            conf_release_calls(&rs));
    EXPECT(rs.destroy_result == CUDA_SUCCESS);
    raw = NULL;
    EXPECT_FAIL(evx_event_destroy(e), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_query(e), EVX_ERROR_INVALID_HANDLE);
    e = NULL;
    EXPECTF(conf_release_calls(&rs) == 1, "released %d times after a second destroy",
            conf_release_calls(&rs));
out:
    drop_event(&e);
    drop_stream(&s);
    raw_drop(&raw);
}

static evx_status_t sync_event(void *h) { return evx_event_synchronize((evx_event_t)h); }
static evx_status_t destroy_event(void *h) { return evx_event_destroy((evx_event_t)h); }

/* A thread synchronizes the borrowed event while a gate holds its work;
 * another destroys the handle. The release must wait for the synchronize
 * to return: run early (at the destroy's unpublish), it would see the gate
 * unpassed. */
static void t_waits_for_racing_call(void)
{
    CUevent raw = NULL;
    evx_stream_t s = NULL;
    int attempt, r = 0;

    REQUIRE(raw_event_create(0, CU_EVENT_DISABLE_TIMING, &raw));
    REQUIRE((s = make_stream(0)) != NULL);
    for (attempt = 0; attempt < 5 && r == 0; attempt++) {
        conf_release rs;
        evx_event_t e = NULL;

        memset(&rs, 0, sizeof rs);
        rs.gate = gate_new();
        if (!EXPECT(rs.gate != NULL) ||
            !EXPECT_OK(evx_event_wrap_external_with_release(0, raw, conf_on_release, &rs, &e)))
            break;
        EXPECT_OK(gate_launch(s, rs.gate));
        EXPECT_OK(evx_event_record(e, s));
        r = conf_race_release(e, sync_event, destroy_event, &rs, attempt);
    }
    EXPECTF(r == 1, "in 5 attempts no synchronize was inside evx when the destroy began");
    EXPECT_OK(evx_stream_synchronize(s));
out:
    drop_stream(&s);
    raw_drop(&raw);
}

enum { kUsers = 3, kRounds = 20 };

/* A user thread of t_racing_use: its own stream, the shared borrowed event. */
typedef struct user_arg {
    evx_event_t e;
    evx_stream_t s;
    int driver_errors; /* a failure the driver reported: use after release */
    char first_bad[256];
} user_arg;

/* 1 to go on; 0 to stop: the handle is dead (evx's refusal), or a call
 * reached the driver with the released event (counted). */
static int go_on(evx_status_t st, user_arg *a)
{
    const char *m = evx_last_error_message();
    if (st == EVX_SUCCESS || st == EVX_ERROR_NOT_READY)
        return 1;
    if (st != EVX_ERROR_INVALID_HANDLE || str_has(m, "returned"))
        if (a->driver_errors++ == 0)
            strncpy(a->first_bad, m, sizeof a->first_bad - 1);
    return 0;
}

static void *user_thread(void *p)
{
    user_arg *a = (user_arg *)p;
    while (go_on(evx_event_record(a->e, a->s), a) && go_on(evx_event_query(a->e), a) &&
           go_on(evx_stream_wait_event(a->s, a->e, 0), a) &&
           go_on(evx_event_synchronize(a->e), a))
        ;
    return NULL;
}

/* Threads use the borrowed event in a loop while it is destroyed; the
 * release callback destroys the CUevent. No call may reach the driver with
 * it after that: each works or gets evx's INVALID_HANDLE. */
static void t_racing_use(void)
{
    int round, i;
    for (round = 0; round < kRounds; round++) {
        conf_release rs;
        user_arg ua[kUsers];
        pthread_t th[kUsers];
        CUevent raw = NULL;
        evx_event_t e = NULL;
        int n = 0;

        memset(&rs, 0, sizeof rs);
        memset(ua, 0, sizeof ua);
        if (!raw_event_create(0, CU_EVENT_DISABLE_TIMING, &raw))
            return;
        if (!EXPECT_OK(evx_event_wrap_external_with_release(0, raw, conf_on_release, &rs, &e))) {
            raw_drop(&raw);
            return;
        }
        rs.event = raw;
        for (i = 0; i < kUsers; i++) {
            ua[i].e = e;
            ua[i].s = make_stream(0);
            if (ua[i].s == NULL || pthread_create(&th[i], NULL, user_thread, &ua[i]) != 0)
                break;
            n++;
        }
        sleep_ms(round % 4 == 0 ? 0 : 5);
        EXPECT_OK(evx_event_destroy(e));
        EXPECTF(conf_release_calls(&rs) == 1, "round %d: released %d times", round,
                conf_release_calls(&rs));
        EXPECT(rs.destroy_result == CUDA_SUCCESS);
        for (i = 0; i < n; i++) {
            pthread_join(th[i], NULL);
            EXPECTF(ua[i].driver_errors == 0,
                    "round %d, thread %d: a call reached the released event (%s)", round, i,
                    ua[i].first_bad);
        }
        for (i = 0; i < kUsers; i++)
            if (ua[i].s != NULL) {
                EXPECT_OK(evx_stream_synchronize(ua[i].s));
                drop_stream(&ua[i].s);
            }
        if (!EXPECTF(n == kUsers, "could not start the user threads"))
            return;
    }
}

/* ---- contexts ---------------------------------------------------------- */

/* EVX_DEVICE_CURRENT in a context made with cuCtxCreate: the borrow is of
 * that context; it records on that context's streams, refuses others before
 * the driver, and times against an own event recorded there. */
static void t_current_created_context(void)
{
    const conf_cu *cu = conf_cu_get();
    CUcontext ctx = NULL, popped = NULL, before = NULL;
    CUstream cs = NULL;
    CUevent raw = NULL;
    evx_stream_t s = NULL, p = NULL;
    evx_event_t e = NULL, own = NULL, wrong = NULL;
    float ms = -1.0f;
    int dev = -1, pushed = 0;
    const char *m;

    REQUIRE(cu != NULL);
    REQUIRE(cu->ctx_get_current(&before) == CUDA_SUCCESS);
    REQUIRE(conf_ctx_make(0, &ctx, &cs));
    REQUIRE(cu->ctx_push_current(ctx) == CUDA_SUCCESS);
    pushed = 1;
    REQUIRE(cu->event_create(&raw, CU_EVENT_DEFAULT) == CUDA_SUCCESS);
    REQUIRE_OK(evx_event_wrap_external(EVX_DEVICE_CURRENT, raw, &e));
    EXPECT(cu->ctx_pop_current(&popped) == CUDA_SUCCESS && popped == ctx);
    pushed = 0;
    conf_check_ctx(before, "the wrap with EVX_DEVICE_CURRENT", __FILE__, __LINE__);
    EXPECT_OK(evx_event_get_device(e, &dev));
    EXPECT(dev == 0);
    REQUIRE_OK(evx_stream_wrap_external(0, cs, &s));
    REQUIRE((p = make_stream(0)) != NULL);
    REQUIRE((own = make_event(0, EVX_EVENT_DEFAULT)) != NULL);
    EXPECT_OK(evx_event_record(own, s)); /* evx moves its own event there */
    EXPECT_OK(evx_stream_launch_host_func(s, host_sleep_ms, (void *)(intptr_t)3));
    EXPECT_OK(evx_event_record(e, s));
    EXPECT_OK(evx_stream_wait_event(p, e, 0));
    EXPECT_OK(evx_event_synchronize(e));
    EXPECT_OK(evx_stream_synchronize(p));
    EXPECT_OK(evx_event_elapsed_time(&ms, own, e));
    EXPECTF(ms >= 2.0f, "own..borrowed in the created context: %f ms", (double)ms);
    /* a primary-context stream: refused before the driver */
    if (EXPECT_FAIL(evx_event_record(e, p), EVX_ERROR_INVALID_HANDLE)) {
        m = evx_last_error_message();
        EXPECTF(str_has(m, "evx_event_record") && str_has(m, "borrowed") &&
                    str_has(m, "created by the caller") && str_has(m, "primary context"),
                "message: %s", m);
    }
    /* the same CUevent borrowed as device 0's primary context's: evx cannot
     * tell, and refuses its record on the created context's stream */
    REQUIRE_OK(evx_event_wrap_external(0, raw, &wrong));
    EXPECT_FAIL(evx_event_record_with_flags(wrong, s, 0), EVX_ERROR_INVALID_HANDLE);
    EXPECT_OK(evx_event_query(e));
    conf_check_ctx(before, "the end of the case", __FILE__, __LINE__);
out:
    if (pushed)
        cu->ctx_pop_current(&popped);
    if (s != NULL)
        evx_stream_synchronize(s);
    drop_event(&wrong);
    drop_event(&e);
    drop_event(&own);
    drop_stream(&s);
    drop_stream(&p);
    raw_drop(&raw);
    if (ctx != NULL)
        conf_ctx_drop(&ctx, &cs);
}

/* ---- bad input --------------------------------------------------------- */

typedef struct current_arg {
    CUevent raw;
    evx_status_t result;
    evx_event_t out;
    char message[512];
} current_arg;

/* A new thread has no current context. */
static void *wrap_current_thread(void *p)
{
    current_arg *a = (current_arg *)p;
    a->out = JUNK(evx_event_t);
    a->result = evx_event_wrap_external(EVX_DEVICE_CURRENT, a->raw, &a->out);
    strncpy(a->message, evx_last_error_message(), sizeof a->message - 1);
    return NULL;
}

static void t_bad_input(void)
{
    conf_release rs;
    CUevent raw = NULL;
    evx_event_t e = NULL;
    current_arg ca;
    pthread_t th;
    int count = 0, owned = 7;
    const char *m;

    memset(&rs, 0, sizeof rs);
    memset(&ca, 0, sizeof ca);
    REQUIRE_OK(evx_device_count(&count));
    REQUIRE(raw_event_create(0, CU_EVENT_DEFAULT, &raw));
    EXPECT_FAIL(evx_event_wrap_external(0, raw, NULL), EVX_ERROR_INVALID_VALUE);
    e = JUNK(evx_event_t);
    if (EXPECT_FAIL(evx_event_wrap_external(0, NULL, &e), EVX_ERROR_INVALID_VALUE)) {
        m = evx_last_error_message();
        EXPECTF(str_has(m, "evx_event_wrap_external") && str_has(m, "native_event is NULL"),
                "message: %s", m);
    }
    EXPECT(e == NULL);
    e = JUNK(evx_event_t);
    if (EXPECT_FAIL(evx_event_wrap_external(count, raw, &e), EVX_ERROR_INVALID_DEVICE))
        EXPECTF(msg_has_int(evx_last_error_message(), count), "message: %s",
                evx_last_error_message());
    EXPECT(e == NULL);
    e = JUNK(evx_event_t);
    if (EXPECT_FAIL(evx_event_wrap_external(-7, raw, &e), EVX_ERROR_INVALID_DEVICE))
        EXPECTF(msg_has_int(evx_last_error_message(), -7), "message: %s",
                evx_last_error_message());
    EXPECT(e == NULL);
    e = JUNK(evx_event_t);
    if (EXPECT_FAIL(evx_event_wrap_external(EVX_DEVICE_FROM_STREAM, raw, &e),
                    EVX_ERROR_INVALID_DEVICE))
        EXPECTF(str_has(evx_last_error_message(), "EVX_DEVICE_FROM_STREAM"), "message: %s",
                evx_last_error_message());
    EXPECT(e == NULL);
    ca.raw = raw;
    if (EXPECT(pthread_create(&th, NULL, wrap_current_thread, &ca) == 0)) {
        pthread_join(th, NULL);
        EXPECTF(ca.result == EVX_ERROR_INVALID_VALUE, "status %d", (int)ca.result);
        EXPECT(ca.out == NULL);
        EXPECTF(str_has(ca.message, "evx_event_wrap_external") &&
                    str_has(ca.message, "EVX_DEVICE_CURRENT") &&
                    str_has(ca.message, "no context is current"),
                "message: %s", ca.message);
    }
    /* the variant with a release callback: never called when the wrap fails */
    e = JUNK(evx_event_t);
    if (EXPECT_FAIL(evx_event_wrap_external_with_release(0, raw, NULL, &rs, &e),
                    EVX_ERROR_INVALID_VALUE))
        EXPECTF(str_has(evx_last_error_message(), "release"), "message: %s",
                evx_last_error_message());
    EXPECT(e == NULL);
    EXPECT_FAIL(evx_event_wrap_external_with_release(0, raw, conf_on_release, &rs, NULL),
                EVX_ERROR_INVALID_VALUE);
    e = JUNK(evx_event_t);
    EXPECT_FAIL(evx_event_wrap_external_with_release(0, NULL, conf_on_release, &rs, &e),
                EVX_ERROR_INVALID_VALUE);
    EXPECT(e == NULL);
    e = JUNK(evx_event_t);
    EXPECT_FAIL(evx_event_wrap_external_with_release(count, raw, conf_on_release, &rs, &e),
                EVX_ERROR_INVALID_DEVICE);
    EXPECT(e == NULL);
    e = NULL;
    EXPECTF(conf_release_calls(&rs) == 0, "a failing wrap called the release callback %d times",
            conf_release_calls(&rs));
    /* the handle is checked like every handle */
    EXPECT_FAIL(evx_event_is_owned(NULL, &owned), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_is_owned(FORGE(evx_event_t, 0x123450001ULL), &owned),
                EVX_ERROR_INVALID_HANDLE);
    EXPECT(owned == 7);
    REQUIRE_OK(evx_event_wrap_external(0, raw, &e));
    EXPECT_FAIL(evx_event_is_owned(e, NULL), EVX_ERROR_INVALID_VALUE);
out:
    drop_event(&e);
    raw_drop(&raw);
}

/* Double destroy and use after destroy: evx's refusal, never the driver's;
 * the raw event is untouched. */
static void t_after_destroy(void)
{
    CUevent raw = NULL;
    evx_event_t e = NULL, own = NULL;
    evx_stream_t s = NULL;
    int owned = 0;
    float ms = 0.0f;

    REQUIRE(borrow(CU_EVENT_DEFAULT, &raw, &e));
    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((own = make_event(0, EVX_EVENT_DEFAULT)) != NULL);
    EXPECT_OK(evx_event_record(e, s));
    EXPECT_OK(evx_event_destroy(e));
    if (EXPECT_FAIL(evx_event_destroy(e), EVX_ERROR_INVALID_HANDLE))
        EXPECTF(str_has(evx_last_error_message(), "destroyed"), "message: %s",
                evx_last_error_message());
    EXPECT_FAIL(evx_event_record(e, s), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_query(e), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_synchronize(e), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_stream_wait_event(s, e, 0), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_elapsed_time(&ms, own, e), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_is_owned(e, &owned), EVX_ERROR_INVALID_HANDLE);
    e = NULL;
    EXPECT_OK(evx_stream_synchronize(s));
    EXPECT(conf_cu_get()->event_query(raw) == CUDA_SUCCESS);
out:
    drop_event(&own);
    drop_stream(&s);
    raw_drop(&raw);
}

/* ---- capture ----------------------------------------------------------- */

/* A borrowed event recorded (plainly and as an external record node) and
 * waited for inside a global-mode capture: the capture stays valid, and
 * each launch of the graph records the external node's event. */
static void t_capture_global(void)
{
    const conf_cu *cu = conf_cu_get();
    CUevent ra = NULL, rb = NULL;
    evx_event_t a = NULL, b = NULL;
    evx_stream_t s = NULL, t = NULL;
    void *native = NULL;
    CUgraph graph = NULL;
    CUgraphExec exec = NULL;
    CUresult r;
    int capturing = 0, pushed = 0, flag = 0, i;

    if (cu == NULL || !conf_have_graphs(cu))
        return;
    REQUIRE(borrow(CU_EVENT_DISABLE_TIMING, &ra, &a));
    REQUIRE(borrow(CU_EVENT_DISABLE_TIMING, &rb, &b));
    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((t = make_stream(0)) != NULL);
    REQUIRE_OK(evx_stream_get_native(s, &native));
    REQUIRE(cu->stream_begin_capture((CUstream)native, CU_STREAM_CAPTURE_MODE_GLOBAL) ==
            CUDA_SUCCESS);
    capturing = 1;
    EXPECT_OK(evx_event_record(a, s));
    EXPECT_OK(evx_stream_wait_event(s, a, 0));
    EXPECT_OK(evx_stream_launch_host_func(s, host_set_flag, &flag));
    EXPECT_OK(evx_event_record_with_flags(b, s, EVX_EVENT_RECORD_EXTERNAL));
    r = cu->stream_end_capture((CUstream)native, &graph);
    capturing = 0;
    REQUIRE(EXPECTF(r == CUDA_SUCCESS && graph != NULL,
                    "cuStreamEndCapture -> %d: the capture did not stay valid", (int)r));
    EXPECT(!flag_get(&flag)); /* captured, not run */
    REQUIRE(EXPECTF((pushed = conf_primary_push(cu)) != 0, "primary context current"));
    r = cu->graph_instantiate(&exec, graph, 0);
    REQUIRE(EXPECTF(r == CUDA_SUCCESS, "cuGraphInstantiateWithFlags -> %d", (int)r));
    for (i = 0; i < 3; i++) {
        REQUIRE(EXPECTF(cu->graph_launch(exec, (CUstream)native) == CUDA_SUCCESS,
                        "cuGraphLaunch %d", i));
        EXPECT_OK(evx_stream_wait_event(t, b, 0));
        EXPECT_OK(evx_event_synchronize(b));
        EXPECT_OK(evx_stream_synchronize(t));
    }
    EXPECT(flag_get(&flag));
    EXPECT_OK(evx_stream_synchronize(s));
out:
    if (capturing)
        cu->stream_end_capture((CUstream)native, &graph);
    if (exec != NULL)
        EXPECT(cu->graph_exec_destroy(exec) == CUDA_SUCCESS);
    if (graph != NULL)
        cu->graph_destroy(graph);
    if (pushed)
        conf_primary_pop(cu);
    drop_event(&a);
    drop_event(&b);
    drop_stream(&s);
    drop_stream(&t);
    raw_drop(&ra);
    raw_drop(&rb);
}

const conf_case conf_borrowed_event_cases[] = {
    {"borrowed_events.basic", t_basic},
    {"borrowed_events.unknown_flags", t_unknown_flags},
    {"borrowed_events.notifier", t_notifier},
    {"borrowed_events.destroy_keeps_cuevent", t_destroy_keeps_cuevent},
    {"borrowed_events.release_once", t_release_once},
    {"borrowed_events.waits_for_racing_call", t_waits_for_racing_call},
    {"borrowed_events.racing_use", t_racing_use},
    {"borrowed_events.current_created_context", t_current_created_context},
    {"borrowed_events.bad_input", t_bad_input},
    {"borrowed_events.after_destroy", t_after_destroy},
    {"borrowed_events.capture_global", t_capture_global},
    {NULL, NULL},
};
