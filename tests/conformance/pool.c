/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/* Event pools: bounds, warm-up, release, pending events, destroy. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "util.h"

static evx_event_pool_options_t opts(unsigned flags, unsigned capacity,
                                     unsigned prewarm)
{
    evx_event_pool_options_t o;
    memset(&o, 0, sizeof o);
    o.struct_size = (uint32_t)sizeof o;
    o.event_flags = flags;
    o.capacity = capacity;
    o.prewarm = prewarm;
    return o;
}

static int stats(evx_event_pool_t p, evx_event_pool_stats_t *st)
{
    memset(st, 0xAB, sizeof *st);
    st->struct_size = (uint32_t)sizeof *st;
    return EXPECT_OK(evx_event_pool_get_stats(p, st));
}

#define EXPECT_STATS(p, cap, idle_, in_use_, pending_, created, acquired, \
                     exhausted) \
    do { \
        evx_event_pool_stats_t st_; \
        if (stats(p, &st_)) { \
            EXPECTF(st_.capacity == (cap) && st_.idle == (idle_) && \
                        st_.in_use == (in_use_) && \
                        st_.pending == (pending_) && \
                        st_.created_total == (created) && \
                        st_.acquired_total == (acquired) && \
                        st_.exhausted_total == (exhausted), \
                    "stats: capacity %u idle %u in_use %u pending %u " \
                    "created %llu acquired %llu exhausted %llu; expected " \
                    "%u %u %u %u %u %u %u", \
                    st_.capacity, st_.idle, st_.in_use, st_.pending, \
                    (unsigned long long)st_.created_total, \
                    (unsigned long long)st_.acquired_total, \
                    (unsigned long long)st_.exhausted_total, (cap), (idle_), \
                    (in_use_), (pending_), (created), (acquired), \
                    (exhausted)); \
        } \
    } while (0)

static void t_bounds(void)
{
    evx_event_pool_options_t o = opts(0, 4, 0);
    evx_event_pool_t p = NULL;
    evx_event_t ev[4], extra = NULL, again = NULL, old;
    evx_stream_t s = NULL;
    int i;
    const char *m;

    memset(ev, 0, sizeof ev);
    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE_OK(evx_device_create_event_pool(0, &o, &p));
    EXPECT_STATS(p, 4u, 0u, 0u, 0u, 0u, 0u, 0u);
    for (i = 0; i < 4; i++) {
        unsigned fl = 0xFFFF;
        int d = -1;
        REQUIRE_OK(evx_event_pool_acquire(p, &ev[i]));
        EXPECT_OK(evx_event_get_flags(ev[i], &fl));
        EXPECT(fl == 0);
        EXPECT_OK(evx_event_get_device(ev[i], &d));
        EXPECT(d == 0);
        EXPECT_OK(evx_event_query(ev[i])); /* never recorded */
    }
    EXPECT_STATS(p, 4u, 0u, 4u, 0u, 4u, 4u, 0u);
    EXPECT_FAIL(evx_event_pool_acquire(p, &extra), EVX_ERROR_OUT_OF_MEMORY);
    m = evx_last_error_message();
    EXPECTF(msg_has_int(m, 4), "the message does not give the counts: \"%s\"",
            m);
    conf_note("%s", m);
    EXPECT_STATS(p, 4u, 0u, 4u, 0u, 4u, 4u, 1u);

    /* They are ordinary events. */
    EXPECT_OK(evx_event_record(ev[0], s));
    EXPECT_OK(evx_stream_launch_host_func(s, host_sleep_ms, (void *)(intptr_t)1));
    EXPECT_OK(evx_event_record(ev[1], s));
    EXPECT_OK(evx_event_synchronize(ev[1]));
    {
        float ms = -1;
        EXPECT_OK(evx_event_elapsed_time(&ms, ev[0], ev[1]));
        EXPECT(ms >= 0.5f);
    }

    /* Release one never recorded: idle at once; acquire takes it back
     * without making a new driver event, under a new handle value. */
    old = ev[3];
    EXPECT_OK(evx_event_pool_release(p, ev[3]));
    ev[3] = NULL;
    EXPECT_STATS(p, 4u, 1u, 3u, 0u, 4u, 4u, 1u);
    EXPECT_FAIL(evx_event_query(old), EVX_ERROR_INVALID_HANDLE);
    REQUIRE_OK(evx_event_pool_acquire(p, &again));
    EXPECT(again != old);
    EXPECT_FAIL(evx_event_query(old), EVX_ERROR_INVALID_HANDLE);
    EXPECT_STATS(p, 4u, 0u, 4u, 0u, 4u, 5u, 1u);
    old = again;
    EXPECT_OK(evx_event_pool_release(p, again));
    again = NULL;
    EXPECT_FAIL(evx_event_pool_release(p, old), EVX_ERROR_INVALID_HANDLE);
    /* evx_event_destroy of a pool event returns it to the pool too */
    EXPECT_OK(evx_event_destroy(ev[2]));
    ev[2] = NULL;
    EXPECT_OK(evx_stream_synchronize(s));
    for (i = 0; i < 2; i++) {
        EXPECT_OK(evx_event_pool_release(p, ev[i]));
        ev[i] = NULL;
    }
    {
        evx_event_pool_stats_t st;
        if (stats(p, &st)) {
            EXPECTF(st.in_use == 0, "in_use %u", st.in_use);
            EXPECTF(st.idle + st.pending == 4, "idle %u + pending %u",
                    st.idle, st.pending);
            EXPECT(st.created_total == 4);
        }
    }
out:
    for (i = 0; i < 4; i++)
        if (ev[i] != NULL)
            EXPECT_OK(evx_event_pool_release(p, ev[i]));
    if (again != NULL)
        EXPECT_OK(evx_event_pool_release(p, again));
    drop_pool(&p);
    drop_stream(&s);
}

static void t_prewarm(void)
{
    evx_event_pool_options_t o = opts(EVX_EVENT_DISABLE_TIMING, 8, 3);
    evx_event_pool_t p = NULL;
    evx_event_t ev[8];
    int i;

    memset(ev, 0, sizeof ev);
    REQUIRE_OK(evx_device_create_event_pool(0, &o, &p));
    EXPECT_STATS(p, 8u, 3u, 0u, 0u, 3u, 0u, 0u);
    EXPECT_OK(evx_event_pool_prewarm(p, 5));
    EXPECT_STATS(p, 8u, 5u, 0u, 0u, 5u, 0u, 0u);
    EXPECT_OK(evx_event_pool_prewarm(p, 2)); /* has more already */
    EXPECT_STATS(p, 8u, 5u, 0u, 0u, 5u, 0u, 0u);
    REQUIRE_OK(evx_event_pool_acquire(p, &ev[0]));
    REQUIRE_OK(evx_event_pool_acquire(p, &ev[1]));
    EXPECT_STATS(p, 8u, 3u, 2u, 0u, 5u, 2u, 0u);
    /* idle wanted: 8, but only 6 fit beside the 2 handed out */
    EXPECT_OK(evx_event_pool_prewarm(p, 8));
    EXPECT_STATS(p, 8u, 6u, 2u, 0u, 8u, 2u, 0u);
    for (i = 2; i < 8; i++)
        REQUIRE_OK(evx_event_pool_acquire(p, &ev[i]));
    EXPECT_STATS(p, 8u, 0u, 8u, 0u, 8u, 8u, 0u);
    {
        unsigned fl = 0;
        EXPECT_OK(evx_event_get_flags(ev[7], &fl));
        EXPECT(fl == EVX_EVENT_DISABLE_TIMING);
    }
out:
    for (i = 0; i < 8; i++)
        if (ev[i] != NULL)
            EXPECT_OK(evx_event_pool_release(p, ev[i]));
    drop_pool(&p);
}

static void t_wrong_pool(void)
{
    evx_event_pool_options_t o = opts(0, 2, 0);
    evx_event_pool_t a = NULL, b = NULL;
    evx_event_t e = NULL, plain = NULL;
    evx_stream_t s = NULL;

    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE_OK(evx_device_create_event_pool(0, &o, &a));
    REQUIRE_OK(evx_device_create_event_pool(0, &o, &b));
    REQUIRE_OK(evx_event_pool_acquire(a, &e));
    REQUIRE((plain = make_event(0, 0)) != NULL);
    EXPECT_FAIL(evx_event_pool_release(b, e), EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_event_pool_release(a, plain), EVX_ERROR_INVALID_VALUE);
    /* both stay live */
    EXPECT_OK(evx_event_record(e, s));
    EXPECT_OK(evx_event_record(plain, s));
    EXPECT_OK(evx_event_synchronize(plain)); /* recorded last */
    EXPECT_OK(evx_event_query(e));
    EXPECT_STATS(b, 2u, 0u, 0u, 0u, 0u, 0u, 0u);
    EXPECT_OK(evx_event_pool_release(a, e));
    EXPECT_FAIL(evx_event_pool_release(a, e), EVX_ERROR_INVALID_HANDLE);
    e = NULL;
out:
    if (e != NULL)
        EXPECT_OK(evx_event_pool_release(a, e));
    drop_event(&plain);
    drop_pool(&a);
    drop_pool(&b);
    drop_stream(&s);
}

static void t_release_pending(void)
{
    evx_event_pool_options_t o = opts(0, 2, 0);
    evx_event_pool_t p = NULL;
    evx_event_t e1 = NULL, e2 = NULL, e3 = NULL;
    evx_stream_t busy = NULL;
    conf_gate *g = gate_new();
    void *n1 = NULL, *n2 = NULL;
    evx_event_pool_stats_t st;

    REQUIRE((busy = make_stream(0)) != NULL);
    REQUIRE_OK(evx_device_create_event_pool(0, &o, &p));
    REQUIRE_OK(evx_event_pool_acquire(p, &e1));
    REQUIRE_OK(evx_event_get_native(e1, &n1));
    REQUIRE_OK(gate_launch(busy, g));
    REQUIRE_OK(evx_event_record(e1, busy));
    EXPECT_OK(evx_event_pool_release(p, e1));
    e1 = NULL;
    if (stats(p, &st)) {
        EXPECTF(st.pending == 1 && st.in_use == 0 && st.idle == 0,
                "after releasing a pending event: idle %u in_use %u "
                "pending %u", st.idle, st.in_use, st.pending);
    }
    REQUIRE_OK(evx_event_pool_acquire(p, &e2));
    REQUIRE_OK(evx_event_get_native(e2, &n2));
    EXPECTF(n2 != n1, "the pool handed out a driver event whose work is "
                      "pending");
    EXPECT_OK(evx_event_query(e2));
    /* one handed out + one pending = the capacity */
    EXPECT_FAIL(evx_event_pool_acquire(p, &e3), EVX_ERROR_OUT_OF_MEMORY);
    e3 = NULL;
    if (stats(p, &st))
        EXPECTF(st.pending == 1 && st.in_use == 1,
                "in_use %u pending %u", st.in_use, st.pending);

    gate_open(g);
    EXPECT_OK(evx_stream_synchronize(busy));
    REQUIRE_OK(evx_event_pool_acquire(p, &e3));
    EXPECT_OK(evx_event_query(e3)); /* new: never recorded */
    {
        float ms;
        EXPECT_FAIL(evx_event_elapsed_time(&ms, e3, e3),
                    EVX_ERROR_INVALID_HANDLE);
    }
    if (stats(p, &st))
        EXPECTF(st.pending == 0 && st.in_use == 2 && st.created_total == 2,
                "in_use %u pending %u created %llu", st.in_use, st.pending,
                (unsigned long long)st.created_total);
    /* e3 holds e1's former driver event: handing it out makes a new one,
     * which the pool counts as made, and which the driver sees as never
     * recorded. */
    {
        const conf_cu *cu = conf_cu_get();
        void *n3 = NULL;
        float ms = -1.0f;
        REQUIRE(cu != NULL);
        REQUIRE_OK(evx_event_get_native(e3, &n3));
        EXPECT(cu->event_query((CUevent)n3) == CUDA_SUCCESS);
        EXPECT(cu->event_elapsed_time(&ms, (CUevent)n3, (CUevent)n3) ==
               CUDA_ERROR_INVALID_HANDLE);
        if (stats(p, &st))
            EXPECTF(st.created_total == 3 && st.in_use == 2,
                    "after get_native of a former pool event: created %llu "
                    "in_use %u", (unsigned long long)st.created_total,
                    st.in_use);
    }
out:
    gate_open(g);
    if (busy != NULL)
        EXPECT_OK(evx_stream_synchronize(busy));
    if (e1 != NULL)
        EXPECT_OK(evx_event_pool_release(p, e1));
    if (e2 != NULL)
        EXPECT_OK(evx_event_pool_release(p, e2));
    if (e3 != NULL)
        EXPECT_OK(evx_event_pool_release(p, e3));
    drop_pool(&p);
    drop_stream(&busy);
}

static void t_destroy_while_out(void)
{
    evx_event_pool_options_t o = opts(0, 3, 3);
    evx_event_pool_t p = NULL;
    evx_event_t a = NULL, b = NULL, c = NULL;
    evx_stream_t s = NULL;
    conf_gate *g = gate_new();
    float ms = -1;

    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE_OK(evx_device_create_event_pool(0, &o, &p));
    REQUIRE_OK(evx_event_pool_acquire(p, &a));
    REQUIRE_OK(evx_event_pool_acquire(p, &b));
    REQUIRE_OK(evx_event_pool_acquire(p, &c));
    EXPECT_OK(evx_event_record(c, s));
    EXPECT_OK(gate_launch(s, g));
    EXPECT_OK(evx_event_record(b, s)); /* pending when the pool goes */
    EXPECT_OK(evx_event_pool_destroy(p));
    {
        evx_event_t none = NULL;
        EXPECT_FAIL(evx_event_pool_acquire(p, &none), EVX_ERROR_INVALID_HANDLE);
    }
    EXPECT_FAIL(evx_event_pool_release(p, c), EVX_ERROR_INVALID_HANDLE);
    p = NULL;
    /* the events stay valid */
    EXPECT_STATUS(evx_event_query(b), EVX_ERROR_NOT_READY);
    EXPECT_OK(evx_event_record(a, s));
    gate_open(g);
    EXPECT_OK(evx_event_synchronize(a));
    EXPECT_OK(evx_event_elapsed_time(&ms, c, a));
    EXPECT_OK(evx_event_query(b));
    EXPECT_OK(evx_event_query(c));
    EXPECT_OK(evx_event_destroy(a));
    EXPECT_OK(evx_event_destroy(b));
    EXPECT_OK(evx_event_destroy(c));
    a = b = c = NULL;
out:
    gate_open(g);
    if (s != NULL)
        EXPECT_OK(evx_stream_synchronize(s));
    drop_event(&a);
    drop_event(&b);
    drop_event(&c);
    drop_pool(&p);
    drop_stream(&s);
}

/* Threads acquiring and releasing on one pool: never more out than its
 * capacity; every acquire succeeds or says the pool is exhausted. */
typedef struct pool_worker {
    evx_event_pool_t pool;
    evx_stream_t s;
    int ok, exhausted, other;
} pool_worker;

static void *pool_worker_main(void *arg)
{
    pool_worker *w = (pool_worker *)arg;
    int i;
    for (i = 0; i < 2000; i++) {
        evx_event_t e = NULL;
        evx_status_t st = evx_event_pool_acquire(w->pool, &e);
        if (st == EVX_ERROR_OUT_OF_MEMORY) {
            w->exhausted++;
            continue;
        }
        if (st != EVX_SUCCESS) {
            w->other++;
            continue;
        }
        w->ok++;
        if (i % 4 == 0 && evx_event_record(e, w->s) != EVX_SUCCESS)
            w->other++;
        if (evx_event_pool_release(w->pool, e) != EVX_SUCCESS)
            w->other++;
    }
    if (evx_stream_synchronize(w->s) != EVX_SUCCESS)
        w->other++;
    return NULL;
}

static void t_threads(void)
{
    enum { T = 4 };
    evx_event_pool_options_t o = opts(EVX_EVENT_DISABLE_TIMING, 3, 1);
    evx_event_pool_t p = NULL;
    pool_worker w[T];
    pthread_t th[T];
    int i, started = 0, ok = 0;
    evx_event_pool_stats_t st;

    memset(w, 0, sizeof w);
    REQUIRE_OK(evx_device_create_event_pool(0, &o, &p));
    for (i = 0; i < T; i++) {
        w[i].pool = p;
        REQUIRE((w[i].s = make_stream(0)) != NULL);
    }
    for (i = 0; i < T; i++) {
        if (pthread_create(&th[i], NULL, pool_worker_main, &w[i]) != 0)
            break;
        started++;
    }
    for (i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    EXPECT(started == T);
    for (i = 0; i < T; i++) {
        EXPECTF(w[i].other == 0, "thread %d: %d unexpected statuses", i,
                w[i].other);
        ok += w[i].ok;
    }
    if (stats(p, &st)) {
        EXPECTF(st.in_use == 0, "in_use %u after every release", st.in_use);
        EXPECTF(st.created_total <= 3, "created %llu > capacity 3",
                (unsigned long long)st.created_total);
        EXPECTF(st.acquired_total == (uint64_t)ok, "acquired %llu, threads "
                "counted %d", (unsigned long long)st.acquired_total, ok);
    }
out:
    for (i = 0; i < T; i++)
        drop_stream(&w[i].s);
    drop_pool(&p);
}

const conf_case conf_pool_cases[] = {
    {"pool.bounds_and_stats", t_bounds},
    {"pool.prewarm", t_prewarm},
    {"pool.release_to_wrong_pool", t_wrong_pool},
    {"pool.release_pending", t_release_pending},
    {"pool.destroy_while_events_out", t_destroy_while_out},
    {"pool.threads", t_threads},
    {NULL, NULL},
};
