/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/* Reuse of driver events: a reused event behaves as new, also when its
 * driver event was destroyed with its work pending; a driver event never
 * reaches the caller's hands with a former life's work. */
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
        REQUIRE_OK(evx_event_record(e, s));
        REQUIRE_OK(evx_event_get_native(e, &n1));
        REQUIRE_OK(evx_event_synchronize(e));
        REQUIRE_OK(evx_event_destroy(e));
        e = NULL;
        REQUIRE_OK(evx_device_create_event(0, flags, &e2));
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
        EXPECT_OK(evx_event_get_native(e2, &n2));
        if (n2 == n1)
            reused++;
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

/* Makes 100 events of `flags`, checks that each is new to evx and to other
 * code that gets its driver event, records each on an idle stream and
 * waits. */
typedef struct fresh_args {
    unsigned flags;
    evx_stream_t idle;
    int bad_native;   /* the driver saw work or a time from a former life */
    int bad_query;    /* a new event answered other than SUCCESS */
    int bad_complete; /* recorded on an idle stream, did not complete */
    int errors;
} fresh_args;

static void *make_fresh(void *arg)
{
    fresh_args *a = (fresh_args *)arg;
    const conf_cu *cu = conf_cu_get();
    evx_event_t ev[100];
    int i, n = 0;
    if (cu == NULL) {
        a->errors++;
        return NULL;
    }
    for (i = 0; i < 100; i++) {
        void *nat = NULL;
        float ms;
        if (evx_device_create_event(0, a->flags, &ev[i]) != EVX_SUCCESS) {
            a->errors++;
            break;
        }
        n++;
        if (evx_event_get_native(ev[i], &nat) != EVX_SUCCESS) {
            a->errors++;
            continue;
        }
        /* Other code that gets the driver event sees a new one: complete,
         * with no time (never recorded). Its address says nothing: the
         * driver hands out the address of a destroyed event again. */
        if (cu->event_query((CUevent)nat) != CUDA_SUCCESS ||
            cu->event_elapsed_time(&ms, (CUevent)nat, (CUevent)nat) !=
                CUDA_ERROR_INVALID_HANDLE)
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
    EXPECTF(a.bad_native == 0, "%d new events gave other code a driver event "
            "that was not new to the driver (pending work or a time)",
            a.bad_native);
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
    /* The natives are read after a record: before one, a reused event gets
     * a new driver event, and the destroyed one's address may come back. */
    for (i = 0; i < N; i++) {
        evx_event_t e = NULL;
        REQUIRE_OK(evx_device_create_event(0, 0, &e));
        EXPECT_OK(evx_event_record(e, s0));
        EXPECT_OK(evx_event_get_native(e, &native0[i]));
        EXPECT_OK(evx_event_synchronize(e));
        EXPECT_OK(evx_event_destroy(e));
    }
    for (i = 0; i < N; i++) {
        evx_event_t e = NULL;
        void *nat = NULL;
        int d = -1;
        REQUIRE_OK(evx_device_create_event(1, 0, &e));
        EXPECT_OK(evx_event_get_device(e, &d));
        EXPECT(d == 1);
        EXPECT_OK(evx_event_record(e, s1));
        EXPECT_OK(evx_event_get_native(e, &nat));
        for (j = 0; j < N; j++)
            EXPECTF(nat != native0[j],
                    "a device-1 event got a device-0 driver event");
        EXPECT_OK(evx_event_synchronize(e));
        EXPECT_OK(evx_event_destroy(e));
    }
out:
    drop_stream(&s0);
    drop_stream(&s1);
}

/* Driver events destroyed with their work pending are reused, and their
 * new life must not see that work: before its first record a new event is
 * complete, has no time, and a stream that waits for it waits for nothing;
 * recorded, it completes with its new stream while the old work still
 * waits, and its time is the new record's, also after the old work ends. */
#define N_OLD 64 /* more than a thread's batch of destroys before they land */

static void pending_reused(unsigned flags)
{
    const int timing = !(flags & EVX_EVENT_DISABLE_TIMING);
    evx_stream_t busy = NULL, idle = NULL, third = NULL;
    evx_event_t e[N_OLD], f[4], g = NULL, m[2] = {NULL, NULL};
    void *old[N_OLD];
    float before[4], after[4], ms;
    conf_gate *gate = gate_new();
    int i, j, reused = 0;

    memset(e, 0, sizeof e);
    memset(f, 0, sizeof f);
    REQUIRE((busy = make_stream(0)) != NULL);
    REQUIRE((idle = make_stream(0)) != NULL);
    REQUIRE((third = make_stream(0)) != NULL);
    REQUIRE_OK(gate_launch(busy, gate));
    for (i = 0; i < N_OLD; i++) {
        REQUIRE_OK(evx_device_create_event(0, flags, &e[i]));
        REQUIRE_OK(evx_event_record(e[i], busy));
        REQUIRE_OK(evx_event_get_native(e[i], &old[i]));
    }
    EXPECT_STATUS(evx_event_query(e[N_OLD - 1]), EVX_ERROR_NOT_READY);
    for (i = 0; i < N_OLD; i++) {
        REQUIRE_OK(evx_event_destroy(e[i]));
        e[i] = NULL;
    }
    for (i = 0; i < 4; i++) {
        REQUIRE_OK(evx_device_create_event(0, flags, &f[i]));
        EXPECT_OK(evx_event_query(f[i]));
        EXPECT_OK(evx_event_synchronize(f[i]));
        if (timing)
            EXPECT_FAIL(evx_event_elapsed_time(&ms, f[i], f[i]),
                        EVX_ERROR_INVALID_HANDLE);
    }
    /* f[0] and f[1] are waited for before any record (a mark after the
     * wait, not a host function: the gate's host function may hold up the
     * host functions of other streams) */
    for (i = 0; i < 2; i++) {
        REQUIRE((m[i] = make_event(0, EVX_EVENT_DISABLE_TIMING)) != NULL);
        EXPECT_OK(evx_stream_wait_event(third, f[i], 0));
        EXPECT_OK(evx_event_record(m[i], third));
        EXPECTF(poll_event(m[i], 10000) == EVX_SUCCESS,
                "a wait for a new event whose driver event may have a former "
                "life's work pending blocked the stream");
    }
    for (i = 0; i < 4; i++) {
        void *nat = NULL;
        EXPECT_OK(evx_event_record(f[i], idle));
        EXPECT_OK(evx_event_get_native(f[i], &nat));
        for (j = 0; j < N_OLD; j++)
            if (nat == old[j])
                reused++;
    }
    REQUIRE((g = make_event(0, flags)) != NULL);
    REQUIRE_OK(evx_event_record(g, idle));
    for (i = 0; i < 4; i++)
        EXPECTF(poll_event(f[i], 10000) == EVX_SUCCESS,
                "event %d, recorded on an idle stream, did not complete while "
                "its driver event's former work was pending", i);
    EXPECT(poll_event(g, 10000) == EVX_SUCCESS);
    for (i = 0; timing && i < 4; i++)
        EXPECT_OK(evx_event_elapsed_time(&before[i], f[i], g));
    EXPECT(gate_passed(gate) == 0);
    EXPECT_STATUS(evx_stream_query(busy), EVX_ERROR_NOT_READY);

    gate_open(gate);
    EXPECT_OK(evx_stream_synchronize(busy));
    for (i = 0; i < 4; i++) {
        EXPECT_OK(evx_event_query(f[i]));
        if (!timing)
            continue;
        EXPECT_OK(evx_event_elapsed_time(&after[i], f[i], g));
        EXPECTF(after[i] == before[i],
                "event %d: %.6f ms to the mark before its driver event's "
                "former work completed, %.6f ms after", i, before[i], after[i]);
    }
    /* Without a reused driver event this case would test nothing. */
    EXPECTF(reused > 0, "none of %d driver events destroyed with pending "
            "work came back to a new event on the same thread", N_OLD);
    conf_note("flags 0x%x: %d of 4 new events got a driver event destroyed with "
              "pending work", flags, reused);
out:
    gate_open(gate);
    if (busy != NULL)
        EXPECT_OK(evx_stream_synchronize(busy));
    if (third != NULL)
        EXPECT_OK(evx_stream_synchronize(third));
    for (i = 0; i < N_OLD; i++)
        drop_event(&e[i]);
    for (i = 0; i < 4; i++)
        drop_event(&f[i]);
    drop_event(&g);
    drop_event(&m[0]);
    drop_event(&m[1]);
    drop_stream(&busy);
    drop_stream(&idle);
    drop_stream(&third);
}

static void t_pending_reused(void) { pending_reused(0); }
static void t_pending_reused_no_timing(void)
{
    pending_reused(EVX_EVENT_DISABLE_TIMING);
}

/* The first use of a reused driver event is claimed by one thread: a record
 * on one thread and evx_event_get_native() on another, at once, agree on
 * the driver event, and the record is the one that completes. */
typedef struct race_args {
    pthread_barrier_t *barrier;
    evx_event_t *shared;
    void *seen[200];
    int errors;
} race_args;

static void *get_native_racer(void *arg)
{
    race_args *a = (race_args *)arg;
    int i;
    for (i = 0; i < 200; i++) {
        pthread_barrier_wait(a->barrier);
        if (evx_event_get_native(*a->shared, &a->seen[i]) != EVX_SUCCESS)
            a->errors++;
        pthread_barrier_wait(a->barrier);
    }
    return NULL;
}

static void t_first_use_race(void)
{
    evx_stream_t s = NULL;
    evx_event_t ev = NULL, shared = NULL;
    pthread_barrier_t barrier;
    race_args a;
    pthread_t th;
    int i, started = 0, differ = 0, incomplete = 0;

    memset(&a, 0, sizeof a);
    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE(pthread_barrier_init(&barrier, NULL, 2) == 0);
    a.barrier = &barrier;
    a.shared = &shared;
    REQUIRE(pthread_create(&th, NULL, get_native_racer, &a) == 0);
    started = 1;
    for (i = 0; i < 200; i++) {
        void *mine = NULL;
        /* a recorded driver event goes back to the cache, and comes out
         * again for `shared` */
        if (evx_device_create_event(0, 0, &ev) != EVX_SUCCESS ||
            evx_event_record(ev, s) != EVX_SUCCESS ||
            evx_event_destroy(ev) != EVX_SUCCESS ||
            evx_device_create_event(0, 0, &shared) != EVX_SUCCESS)
            a.errors++;
        ev = NULL;
        pthread_barrier_wait(&barrier);
        if (evx_event_record(shared, s) != EVX_SUCCESS)
            a.errors++;
        pthread_barrier_wait(&barrier);
        if (evx_event_get_native(shared, &mine) != EVX_SUCCESS)
            a.errors++;
        if (mine != a.seen[i])
            differ++;
        if (poll_event(shared, 10000) != EVX_SUCCESS)
            incomplete++;
        if (evx_event_destroy(shared) != EVX_SUCCESS)
            a.errors++;
        shared = NULL;
    }
    pthread_join(th, NULL);
    started = 0;
    EXPECTF(differ == 0, "%d of 200 times the two threads got different "
            "driver events for one event", differ);
    EXPECTF(incomplete == 0, "%d of 200 records did not complete", incomplete);
    EXPECT(a.errors == 0);
out:
    if (started)
        pthread_join(th, NULL);
    if (started || a.barrier != NULL)
        pthread_barrier_destroy(&barrier);
    drop_event(&ev);
    drop_event(&shared);
    drop_stream(&s);
}

const conf_case conf_reuse_cases[] = {
    {"reuse.reused_event_is_new", t_reused_default},
    {"reuse.reused_event_is_new_blocking_sync", t_reused_blocking},
    {"reuse.reused_event_is_new_timing_disabled", t_reused_no_timing},
    {"reuse.pending_not_handed_out", t_pending_default},
    {"reuse.pending_not_handed_out_timing_disabled", t_pending_no_timing},
    {"reuse.pending_reused_as_new", t_pending_reused},
    {"reuse.pending_reused_as_new_timing_disabled", t_pending_reused_no_timing},
    {"reuse.first_use_race", t_first_use_race},
    {"reuse.flags_kept_apart", t_flags_kept_apart},
    {"reuse.devices_kept_apart", t_devices_kept_apart},
    {NULL, NULL},
};
