/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/* Reuse of driver events: a reused event behaves as new; an event whose
 * work is pending is not handed out again until that work completes. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "util.h"

static void reused_as_new(unsigned flags)
{
    evx_stream_t s = NULL, s2 = NULL;
    evx_event_t done = NULL, e = NULL, e2 = NULL;
    int i, reused = 0;
    float ms;

    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((s2 = make_stream(0)) != NULL);
    REQUIRE((done = make_event(0, 0)) != NULL);
    REQUIRE_OK(evx_event_record(done, s));
    for (i = 0; i < 50; i++) {
        void *n1 = NULL, *n2 = NULL;
        unsigned fl = 0xFFFF;
        int ran = 0;
        REQUIRE_OK(evx_device_create_event(0, flags, &e));
        REQUIRE_OK(evx_event_get_native(e, &n1));
        REQUIRE_OK(evx_event_record(e, s));
        REQUIRE_OK(evx_event_synchronize(e));
        REQUIRE_OK(evx_event_destroy(e));
        e = NULL;
        REQUIRE_OK(evx_device_create_event(0, flags, &e2));
        REQUIRE_OK(evx_event_get_native(e2, &n2));
        if (n2 == n1)
            reused++;
        EXPECT_OK(evx_event_get_flags(e2, &fl));
        EXPECT(fl == flags);
        /* never recorded, whatever its driver event did before */
        EXPECT_OK(evx_event_query(e2));
        EXPECT_OK(evx_event_synchronize(e2));
        if (!(flags & EVX_EVENT_DISABLE_TIMING)) {
            EXPECT_FAIL(evx_event_elapsed_time(&ms, done, e2),
                        EVX_ERROR_INVALID_HANDLE);
            EXPECTF(str_has(evx_last_error_message(), "never") ||
                        str_has(evx_last_error_message(), "not recorded") ||
                        str_has(evx_last_error_message(), "not been recorded"),
                    "a reused never-recorded event: \"%s\"",
                    evx_last_error_message());
            EXPECT_FAIL(evx_event_elapsed_time(&ms, e2, e2),
                        EVX_ERROR_INVALID_HANDLE);
        }
        EXPECT_OK(evx_stream_wait_event(s2, e2, 0));
        EXPECT_OK(evx_stream_launch_host_func(s2, host_set_flag, &ran));
        EXPECTF(poll_flag(&ran, 10000), "a wait for a reused, never-recorded "
                                        "event blocked the stream");
        /* and once recorded, it works as any event */
        EXPECT_OK(evx_event_record(e2, s));
        EXPECT_OK(evx_event_synchronize(e2));
        if (!(flags & EVX_EVENT_DISABLE_TIMING))
            EXPECT_OK(evx_event_elapsed_time(&ms, done, e2));
        REQUIRE_OK(evx_event_destroy(e2));
        e2 = NULL;
    }
    conf_note("flags 0x%x: the driver event came back in %d of 50 cycles",
              flags, reused);
out:
    if (s2 != NULL)
        EXPECT_OK(evx_stream_synchronize(s2));
    drop_event(&e);
    drop_event(&e2);
    drop_event(&done);
    drop_stream(&s);
    drop_stream(&s2);
}

static void t_reused_default(void) { reused_as_new(EVX_EVENT_DEFAULT); }
static void t_reused_blocking(void) { reused_as_new(EVX_EVENT_BLOCKING_SYNC); }
static void t_reused_no_timing(void) { reused_as_new(EVX_EVENT_DISABLE_TIMING); }

/* Makes N events of `flags`, checks none carries the pending driver event
 * or reports NOT_READY, records each on an idle stream and waits. */
typedef struct fresh_args {
    unsigned flags;
    void *pending_native[4];
    evx_stream_t idle;
    int bad_native;   /* got a driver event whose work is pending */
    int bad_query;    /* a new event answered other than SUCCESS */
    int bad_complete; /* recorded on an idle stream, did not complete */
    int errors;
} fresh_args;

static void *make_fresh(void *arg)
{
    fresh_args *a = (fresh_args *)arg;
    evx_event_t ev[100];
    int i, j, n = 0;
    for (i = 0; i < 100; i++) {
        void *nat = NULL;
        if (evx_device_create_event(0, a->flags, &ev[i]) != EVX_SUCCESS) {
            a->errors++;
            break;
        }
        n++;
        if (evx_event_get_native(ev[i], &nat) != EVX_SUCCESS)
            a->errors++;
        for (j = 0; j < 4; j++)
            if (nat == a->pending_native[j])
                a->bad_native++;
        if (evx_event_query(ev[i]) != EVX_SUCCESS)
            a->bad_query++;
    }
    for (i = 0; i < n; i++)
        if (evx_event_record(ev[i], a->idle) != EVX_SUCCESS)
            a->errors++;
    for (i = 0; i < n; i++) {
        if (poll_event(ev[i], 10000) != EVX_SUCCESS)
            a->bad_complete++;
        if (evx_event_destroy(ev[i]) != EVX_SUCCESS)
            a->errors++;
    }
    return NULL;
}

static void pending_not_handed_out(unsigned flags)
{
    evx_stream_t busy = NULL, idle = NULL;
    evx_event_t e[4];
    conf_gate *g = gate_new();
    fresh_args a;
    pthread_t th;
    int i;

    memset(e, 0, sizeof e);
    memset(&a, 0, sizeof a);
    a.flags = flags;
    REQUIRE((busy = make_stream(0)) != NULL);
    REQUIRE((idle = make_stream(0)) != NULL);
    a.idle = idle;
    REQUIRE_OK(gate_launch(busy, g));
    for (i = 0; i < 4; i++) {
        REQUIRE_OK(evx_device_create_event(0, flags, &e[i]));
        REQUIRE_OK(evx_event_get_native(e[i], &a.pending_native[i]));
        REQUIRE_OK(evx_event_record(e[i], busy));
    }
    EXPECT_STATUS(evx_event_query(e[3]), EVX_ERROR_NOT_READY);
    for (i = 0; i < 4; i++) {
        EXPECT_OK(evx_event_destroy(e[i]));
        e[i] = NULL;
    }
    /* on this thread, and on a thread of its own */
    make_fresh(&a);
    REQUIRE(pthread_create(&th, NULL, make_fresh, &a) == 0);
    pthread_join(th, NULL);
    EXPECTF(a.bad_native == 0, "%d new events got a driver event whose work "
            "was still pending", a.bad_native);
    EXPECTF(a.bad_query == 0, "%d new events did not query as complete",
            a.bad_query);
    EXPECTF(a.bad_complete == 0, "%d new events recorded on an idle stream "
            "did not complete while the old work was pending",
            a.bad_complete);
    EXPECT(a.errors == 0);
    EXPECT(gate_passed(g) == 0);
    EXPECT_STATUS(evx_stream_query(busy), EVX_ERROR_NOT_READY);

    /* Once the work is done, everything is usable again. */
    gate_open(g);
    EXPECT_OK(evx_stream_synchronize(busy));
    memset(a.pending_native, 0, sizeof a.pending_native);
    make_fresh(&a);
    EXPECT(a.bad_query == 0 && a.bad_complete == 0 && a.errors == 0);
out:
    gate_open(g);
    if (busy != NULL)
        EXPECT_OK(evx_stream_synchronize(busy));
    for (i = 0; i < 4; i++)
        drop_event(&e[i]);
    drop_stream(&busy);
    drop_stream(&idle);
}

static void t_pending_default(void) { pending_not_handed_out(0); }
static void t_pending_no_timing(void)
{
    pending_not_handed_out(EVX_EVENT_DISABLE_TIMING);
}

/* Driver events are reused only for the same flags. */
static void t_flags_kept_apart(void)
{
    evx_stream_t s = NULL;
    int i;

    REQUIRE((s = make_stream(0)) != NULL);
    for (i = 0; i < 60; i++) {
        unsigned flags = (i % 3 == 0) ? EVX_EVENT_DISABLE_TIMING
                         : (i % 3 == 1) ? EVX_EVENT_DEFAULT
                                        : EVX_EVENT_BLOCKING_SYNC;
        evx_event_t a = NULL, b = NULL;
        float ms = -1;
        REQUIRE_OK(evx_device_create_event(0, flags, &a));
        REQUIRE_OK(evx_device_create_event(0, flags, &b));
        EXPECT_OK(evx_event_record(a, s));
        EXPECT_OK(evx_event_record(b, s));
        EXPECT_OK(evx_event_synchronize(b));
        if (flags & EVX_EVENT_DISABLE_TIMING)
            EXPECT_FAIL(evx_event_elapsed_time(&ms, a, b),
                        EVX_ERROR_INVALID_HANDLE);
        else
            EXPECTF(evx_event_elapsed_time(&ms, a, b) == EVX_SUCCESS,
                    "a timing event (flags 0x%x) could not be timed: %s",
                    flags, evx_last_error_message());
        EXPECT_OK(evx_event_destroy(a));
        EXPECT_OK(evx_event_destroy(b));
    }
out:
    drop_stream(&s);
}

/* Driver events of one device are not handed to another's events. */
static void t_devices_kept_apart(void)
{
    enum { N = 32 };
    evx_stream_t s0 = NULL, s1 = NULL;
    void *native0[N];
    int i, j;

    NEED_DEVICES(2);
    memset(native0, 0, sizeof native0);
    REQUIRE((s0 = make_stream(0)) != NULL);
    REQUIRE((s1 = make_stream(1)) != NULL);
    for (i = 0; i < N; i++) {
        evx_event_t e = NULL;
        REQUIRE_OK(evx_device_create_event(0, 0, &e));
        EXPECT_OK(evx_event_get_native(e, &native0[i]));
        EXPECT_OK(evx_event_record(e, s0));
        EXPECT_OK(evx_event_synchronize(e));
        EXPECT_OK(evx_event_destroy(e));
    }
    for (i = 0; i < N; i++) {
        evx_event_t e = NULL;
        void *nat = NULL;
        int d = -1;
        REQUIRE_OK(evx_device_create_event(1, 0, &e));
        EXPECT_OK(evx_event_get_native(e, &nat));
        EXPECT_OK(evx_event_get_device(e, &d));
        EXPECT(d == 1);
        for (j = 0; j < N; j++)
            EXPECTF(nat != native0[j],
                    "a device-1 event got a device-0 driver event");
        EXPECT_OK(evx_event_record(e, s1));
        EXPECT_OK(evx_event_synchronize(e));
        EXPECT_OK(evx_event_destroy(e));
    }
out:
    drop_stream(&s0);
    drop_stream(&s1);
}

const conf_case conf_reuse_cases[] = {
    {"reuse.reused_event_is_new", t_reused_default},
    {"reuse.reused_event_is_new_blocking_sync", t_reused_blocking},
    {"reuse.reused_event_is_new_timing_disabled", t_reused_no_timing},
    {"reuse.pending_not_handed_out", t_pending_default},
    {"reuse.pending_not_handed_out_timing_disabled", t_pending_no_timing},
    {"reuse.flags_kept_apart", t_flags_kept_apart},
    {"reuse.devices_kept_apart", t_devices_kept_apart},
    {NULL, NULL},
};
