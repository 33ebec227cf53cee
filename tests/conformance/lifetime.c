/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/* Borrowed streams with a release callback (evx/lifetime.h): the callback
 * runs exactly once, when evx_stream_destroy() ends the borrow, after every
 * racing call on the handle has returned, and never when the wrap fails. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "util.h"

static void t_release_once(void)
{
    conf_release rs;
    CUstream cs = NULL;
    evx_stream_t s = NULL;
    evx_event_t e = NULL;
    int owned = -1;

    memset(&rs, 0, sizeof rs);
    REQUIRE(raw_stream_create(0, CU_STREAM_NON_BLOCKING, 0, &cs));
    REQUIRE((e = make_event(0, 0)) != NULL);
    s = JUNK(evx_stream_t);
    REQUIRE_OK(evx_stream_wrap_external_with_release(0, cs, conf_on_release, &rs, &s));
    EXPECT_OK(evx_stream_is_owned(s, &owned));
    EXPECT(owned == 0);
    EXPECT_OK(evx_event_record(e, s));
    EXPECT_OK(evx_event_synchronize(e));
    EXPECT_OK(evx_stream_synchronize(s));
    EXPECTF(conf_release_calls(&rs) == 0, "released %d times before the destroy",
            conf_release_calls(&rs));
    rs.stream = cs; /* the callback frees the stream */
    EXPECT_OK(evx_stream_destroy(s));
    EXPECTF(conf_release_calls(&rs) == 1, "released %d times when the destroy returned",
            conf_release_calls(&rs));
    EXPECT(rs.destroy_result == CUDA_SUCCESS);
    cs = NULL;
    EXPECT_FAIL(evx_stream_destroy(s), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_stream_query(s), EVX_ERROR_INVALID_HANDLE);
    s = NULL;
    EXPECTF(conf_release_calls(&rs) == 1, "released %d times after a second destroy",
            conf_release_calls(&rs));
out:
    drop_stream(&s);
    drop_event(&e);
    if (cs != NULL)
        raw_stream_destroy(0, cs);
}

static void t_default_stream(void)
{
    conf_release rs;
    evx_stream_t s = NULL;
    evx_event_t e = NULL;

    memset(&rs, 0, sizeof rs);
    REQUIRE((e = make_event(0, 0)) != NULL);
    REQUIRE_OK(evx_stream_wrap_external_with_release(0, EVX_STREAM_LEGACY, conf_on_release,
                                                     &rs, &s));
    EXPECT_OK(evx_event_record(e, s));
    EXPECT_OK(evx_event_synchronize(e));
    EXPECT_OK(evx_stream_destroy(s));
    s = NULL;
    EXPECT(conf_release_calls(&rs) == 1);
out:
    drop_stream(&s);
    drop_event(&e);
}

static void t_not_called_on_failure(void)
{
    conf_release rs;
    CUstream cs = NULL;
    evx_stream_t s = NULL;
    int count = 0;

    memset(&rs, 0, sizeof rs);
    REQUIRE_OK(evx_device_count(&count));
    REQUIRE(raw_stream_create(0, CU_STREAM_NON_BLOCKING, 0, &cs));
    EXPECT_FAIL(evx_stream_wrap_external_with_release(0, cs, conf_on_release, &rs, NULL),
                EVX_ERROR_INVALID_VALUE);
    s = JUNK(evx_stream_t);
    if (EXPECT_FAIL(evx_stream_wrap_external_with_release(0, cs, NULL, &rs, &s),
                    EVX_ERROR_INVALID_VALUE))
        EXPECTF(str_has(evx_last_error_message(), "release"), "message: %s",
                evx_last_error_message());
    EXPECT(s == NULL);
    s = JUNK(evx_stream_t);
    EXPECT_FAIL(evx_stream_wrap_external_with_release(count, cs, conf_on_release, &rs, &s),
                EVX_ERROR_INVALID_DEVICE);
    EXPECT(s == NULL);
    s = JUNK(evx_stream_t);
    EXPECT_FAIL(evx_stream_wrap_external_with_release(EVX_DEVICE_FROM_STREAM, NULL,
                                                      conf_on_release, &rs, &s),
                EVX_ERROR_INVALID_VALUE);
    EXPECT(s == NULL);
    if (count >= 2) {
        /* a stream of device 0 given as device 1's */
        s = JUNK(evx_stream_t);
        EXPECT_FAIL(evx_stream_wrap_external_with_release(1, cs, conf_on_release, &rs, &s),
                    EVX_ERROR_INVALID_VALUE);
        EXPECT(s == NULL);
    }
    s = NULL;
    EXPECTF(conf_release_calls(&rs) == 0, "a failing wrap called the release callback %d times",
            conf_release_calls(&rs));
out:
    if (cs != NULL)
        raw_stream_destroy(0, cs);
}

/* ---- racing use -------------------------------------------------------- */

static evx_status_t sync_stream(void *h) { return evx_stream_synchronize((evx_stream_t)h); }
static evx_status_t destroy_stream(void *h) { return evx_stream_destroy((evx_stream_t)h); }

/* A thread synchronizes the borrowed stream while a gate holds it; another
 * destroys the handle. The release must wait for the synchronize to return:
 * run early (at the destroy's unpublish), it would see the gate unpassed. */
static void t_waits_for_racing_call(void)
{
    evx_stream_t owner = NULL;
    void *native = NULL;
    int attempt, r = 0;

    REQUIRE((owner = make_stream(0)) != NULL);
    REQUIRE_OK(evx_stream_get_native(owner, &native));
    for (attempt = 0; attempt < 5 && r == 0; attempt++) {
        conf_release rs;
        evx_stream_t s = NULL;

        memset(&rs, 0, sizeof rs);
        rs.gate = gate_new();
        if (!EXPECT(rs.gate != NULL) ||
            !EXPECT_OK(evx_stream_wrap_external_with_release(0, native, conf_on_release, &rs,
                                                             &s)))
            break;
        EXPECT_OK(gate_launch(owner, rs.gate));
        r = conf_race_release(s, sync_stream, destroy_stream, &rs, attempt);
    }
    EXPECTF(r == 1, "in 5 attempts no synchronize was inside evx when the "
                    "destroy began");
    EXPECT_OK(evx_stream_synchronize(owner));
out:
    drop_stream(&owner);
}

enum { kUsers = 3, kRounds = 20 };

typedef struct user_arg {
    evx_stream_t s;
    evx_event_t e;
    int driver_errors; /* a failure reported by the driver: use after release */
    int uses;
    char first_bad[256];
} user_arg;

static int acceptable(evx_status_t st, user_arg *a)
{
    const char *m;
    if (st == EVX_SUCCESS || st == EVX_ERROR_NOT_READY)
        return 1;
    m = evx_last_error_message();
    /* evx's own refusal of a dead handle is fine; a driver's answer about
     * the stream means the call reached a released stream. */
    if (st == EVX_ERROR_INVALID_HANDLE && !str_has(m, "returned"))
        return 0; /* dead: stop */
    if (a->driver_errors++ == 0)
        strncpy(a->first_bad, m, sizeof a->first_bad - 1);
    return 0;
}

static void *user_thread(void *p)
{
    user_arg *a = (user_arg *)p;
    for (;;) {
        if (!acceptable(evx_event_record(a->e, a->s), a))
            break;
        if (!acceptable(evx_stream_query(a->s), a))
            break;
        if (!acceptable(evx_stream_wait_event(a->s, a->e, 0), a))
            break;
        a->uses++;
    }
    return NULL;
}

/* Threads use the borrowed stream in a loop while it is destroyed; the
 * release callback destroys the driver stream. No call may reach the driver
 * stream after that: each either works or gets evx's INVALID_HANDLE. */
static void t_racing_use(void)
{
    int round;
    for (round = 0; round < kRounds; round++) {
        conf_release rs;
        user_arg ua[kUsers];
        pthread_t th[kUsers];
        CUstream cs = NULL;
        evx_stream_t s = NULL;
        int i, n = 0;

        memset(&rs, 0, sizeof rs);
        memset(ua, 0, sizeof ua);
        if (!raw_stream_create(0, CU_STREAM_NON_BLOCKING, 0, &cs))
            return;
        if (!EXPECT_OK(evx_stream_wrap_external_with_release(0, cs, conf_on_release, &rs, &s))) {
            raw_stream_destroy(0, cs);
            return;
        }
        rs.stream = cs;
        for (i = 0; i < kUsers; i++) {
            ua[i].s = s;
            ua[i].e = make_event(0, EVX_EVENT_DISABLE_TIMING);
            if (ua[i].e != NULL && pthread_create(&th[i], NULL, user_thread, &ua[i]) == 0)
                n++;
            else
                break;
        }
        sleep_ms(round % 4 == 0 ? 0 : 5);
        EXPECT_OK(evx_stream_destroy(s));
        EXPECTF(conf_release_calls(&rs) == 1, "round %d: released %d times", round,
                conf_release_calls(&rs));
        EXPECT(rs.destroy_result == CUDA_SUCCESS);
        for (i = 0; i < n; i++) {
            pthread_join(th[i], NULL);
            EXPECTF(ua[i].driver_errors == 0,
                    "round %d, thread %d: %d calls reached the released stream "
                    "(first: %s)", round, i, ua[i].driver_errors, ua[i].first_bad);
        }
        for (i = 0; i < kUsers; i++)
            if (ua[i].e != NULL) {
                EXPECT_OK(evx_event_synchronize(ua[i].e));
                drop_event(&ua[i].e);
            }
        if (n < kUsers) {
            EXPECTF(0, "could not start the user threads");
            return;
        }
    }
}

const conf_case conf_lifetime_cases[] = {
    {"lifetime.release_once", t_release_once},
    {"lifetime.default_stream", t_default_stream},
    {"lifetime.not_called_on_failure", t_not_called_on_failure},
    {"lifetime.waits_for_racing_call", t_waits_for_racing_call},
    {"lifetime.racing_use", t_racing_use},
    {NULL, NULL},
};
