/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/* Bad input: every refusal gets its status and a message, never a crash. */
#define _POSIX_C_SOURCE 200809L

#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "util.h"

/* Live objects of every kind, and dead ones (made, then destroyed). */
typedef struct fixture {
    evx_stream_t s;
    evx_event_t e, done, done2;
    evx_event_pool_t pool;
    evx_timer_t timer;
    evx_timeline_t tl;
    evx_stream_t dead_s;
    evx_event_t dead_e;
    evx_event_pool_t dead_pool;
    evx_timer_t dead_timer;
    evx_timeline_t dead_tl;
} fixture;

static evx_event_pool_options_t pool_opts(unsigned flags, unsigned capacity,
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

static int fixture_make(fixture *f)
{
    evx_event_pool_options_t o = pool_opts(0, 4, 0);
    memset(f, 0, sizeof *f);
    if (!EXPECT_OK(evx_device_create_stream(0, EVX_STREAM_NON_BLOCKING, 0,
                                            &f->s)) ||
        !EXPECT_OK(evx_device_create_event(0, 0, &f->e)) ||
        !EXPECT_OK(evx_device_create_event(0, 0, &f->done)) ||
        !EXPECT_OK(evx_device_create_event(0, 0, &f->done2)) ||
        !EXPECT_OK(evx_device_create_event_pool(0, &o, &f->pool)) ||
        !EXPECT_OK(evx_device_create_timer(0, &f->timer)) ||
        !EXPECT_OK(evx_device_create_timeline(0, 4, &f->tl)) ||
        !EXPECT_OK(evx_device_create_stream(0, 0, 0, &f->dead_s)) ||
        !EXPECT_OK(evx_device_create_event(0, 0, &f->dead_e)) ||
        !EXPECT_OK(evx_device_create_event_pool(0, &o, &f->dead_pool)) ||
        !EXPECT_OK(evx_device_create_timer(0, &f->dead_timer)) ||
        !EXPECT_OK(evx_device_create_timeline(0, 4, &f->dead_tl)))
        return 0;
    EXPECT_OK(evx_event_record(f->done, f->s));
    EXPECT_OK(evx_event_record(f->done2, f->s));
    EXPECT_OK(evx_timer_start(f->timer, f->s));
    EXPECT_OK(evx_timer_stop(f->timer, f->s));
    EXPECT_OK(evx_timeline_mark(f->tl, f->s, NULL));
    EXPECT_OK(evx_stream_synchronize(f->s));
    EXPECT_OK(evx_stream_destroy(f->dead_s));
    EXPECT_OK(evx_event_destroy(f->dead_e));
    EXPECT_OK(evx_event_pool_destroy(f->dead_pool));
    EXPECT_OK(evx_timer_destroy(f->dead_timer));
    EXPECT_OK(evx_timeline_destroy(f->dead_tl));
    return 1;
}

static void fixture_free(fixture *f)
{
    /* the live objects must have survived everything done to them */
    if (f->s != NULL)
        EXPECT_OK(evx_stream_synchronize(f->s));
    drop_event(&f->e);
    drop_event(&f->done);
    drop_event(&f->done2);
    drop_pool(&f->pool);
    drop_timer(&f->timer);
    drop_timeline(&f->tl);
    drop_stream(&f->s);
}

static void dummy_fn(void *p) { (void)p; }

static void t_null_out_pointers(void)
{
    fixture f;
    evx_event_pool_options_t o = pool_opts(0, 4, 0);
    uint32_t w = 77;

    if (!fixture_make(&f))
        goto out;
    EXPECT_FAIL(evx_driver_get_version(NULL), EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_driver_get_path(NULL), EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_driver_is_emulation(NULL), EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_device_count(NULL), EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_device_stream_priority_range(0, NULL, NULL),
                EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_device_create_event(0, 0, NULL), EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_device_create_stream(0, 0, 0, NULL),
                EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_stream_wrap_external(0, NULL, NULL),
                EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_event_elapsed_time(NULL, f.done, f.done2),
                EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_event_get_flags(f.e, NULL), EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_event_get_device(f.e, NULL), EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_event_get_native(f.e, NULL), EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_stream_get_priority(f.s, NULL), EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_stream_get_flags(f.s, NULL), EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_stream_get_device(f.s, NULL), EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_stream_get_native(f.s, NULL), EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_stream_is_owned(f.s, NULL), EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_stream_launch_host_func(f.s, NULL, NULL),
                EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_stream_launch_host_func(f.s, NULL, &w),
                EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_device_create_event_pool(0, NULL, &f.dead_pool),
                EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_device_create_event_pool(0, &o, NULL), EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_event_pool_acquire(f.pool, NULL), EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_event_pool_get_stats(f.pool, NULL),
                EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_device_create_timer(0, NULL), EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_timer_elapsed(f.timer, NULL), EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_timer_synchronize(f.timer, NULL), EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_device_create_timeline(0, 4, NULL), EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_timeline_count(f.tl, NULL), EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_timeline_intervals(f.tl, NULL, 3, &w),
                EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_timeline_intervals(f.tl, NULL, 1, NULL),
                EVX_ERROR_INVALID_VALUE);
    /* Optional out-pointers are optional. */
    EXPECT_OK(evx_timeline_intervals(f.tl, NULL, 0, NULL));
    EXPECT_OK(evx_timeline_mark(f.tl, f.s, NULL));
    EXPECT_OK(evx_timeline_synchronize(f.tl));
    w = 77;
    EXPECT_OK(evx_timeline_intervals(f.tl, NULL, 0, &w));
    EXPECTF(w == 1, "2 marks, intervals count %u", w);
out:
    fixture_free(&f);
}

static void t_null_handles(void)
{
    fixture f;
    float ms = 0;
    unsigned fl;
    int i;
    void *p;
    uint32_t c;
    evx_event_t got = NULL;
    evx_event_pool_stats_t st;

    memset(&st, 0, sizeof st);
    st.struct_size = (uint32_t)sizeof st;
    if (!fixture_make(&f))
        goto out;
    EXPECT_FAIL(evx_event_destroy(NULL), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_record(NULL, f.s), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_record(f.e, NULL), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_record_with_flags(NULL, f.s, 0),
                EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_record_with_flags(f.e, NULL, 0),
                EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_query(NULL), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_synchronize(NULL), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_elapsed_time(&ms, NULL, f.done),
                EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_elapsed_time(&ms, f.done, NULL),
                EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_get_flags(NULL, &fl), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_get_device(NULL, &i), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_get_native(NULL, &p), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_stream_destroy(NULL), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_stream_wait_event(NULL, f.done, 0),
                EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_stream_wait_event(f.s, NULL, 0), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_stream_query(NULL), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_stream_synchronize(NULL), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_stream_launch_host_func(NULL, dummy_fn, NULL),
                EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_stream_get_priority(NULL, &i), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_stream_get_flags(NULL, &fl), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_stream_get_device(NULL, &i), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_stream_get_native(NULL, &p), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_stream_is_owned(NULL, &i), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_pool_destroy(NULL), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_pool_prewarm(NULL, 1), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_pool_acquire(NULL, &got), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_pool_release(NULL, f.e), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_pool_release(f.pool, NULL), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_pool_get_stats(NULL, &st), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_timer_destroy(NULL), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_timer_start(NULL, f.s), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_timer_start(f.timer, NULL), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_timer_stop(NULL, f.s), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_timer_stop(f.timer, NULL), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_timer_elapsed(NULL, &ms), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_timer_synchronize(NULL, &ms), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_timeline_destroy(NULL), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_timeline_mark(NULL, f.s, &c), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_timeline_mark(f.tl, NULL, &c), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_timeline_count(NULL, &c), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_timeline_intervals(NULL, NULL, 0, &c),
                EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_timeline_synchronize(NULL), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_timeline_reset(NULL), EVX_ERROR_INVALID_HANDLE);
    /* The refused calls did nothing to the live objects. */
    EXPECT_OK(evx_event_query(f.e));
    EXPECT_OK(evx_timeline_count(f.tl, &c));
    EXPECTF(c == 1, "timeline has %u marks after refused marks", c);
    EXPECT_OK(evx_timer_elapsed(f.timer, &ms));
out:
    fixture_free(&f);
}

static uint64_t xorshift(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static void t_forged_handles(void)
{
    fixture f;
    uint64_t seed = 0x9E3779B97F4A7C15ULL;
    uint64_t values[32];
    int local = 0;
    size_t n = 0, i;
    float ms;
    uint32_t c;

    if (!fixture_make(&f))
        goto out;
    values[n++] = 1;
    values[n++] = 2;
    values[n++] = 3;
    values[n++] = 15;
    values[n++] = 16;
    values[n++] = 17;
    values[n++] = 0xFFFFFFFFULL;
    values[n++] = 0x100000000ULL;
    values[n++] = 0x100000011ULL;
    values[n++] = ~0ULL;
    values[n++] = 0x8000000000000000ULL;
    values[n++] = 0xDEADBEEFCAFEBABEULL;
    values[n++] = (uint64_t)(uintptr_t)&local;
    values[n++] = (uint64_t)(uintptr_t)&f;
    /* a live handle's value with its top bit flipped */
    values[n++] = (uint64_t)(uintptr_t)f.e ^ 0x8000000000000000ULL;
    values[n++] = (uint64_t)(uintptr_t)f.s ^ 0x4000000000000000ULL;
    while (n < sizeof values / sizeof values[0])
        values[n++] = xorshift(&seed);

    for (i = 0; i < n; i++) {
        uint64_t v = values[i];
        conf_note("forged value 0x%llx", (unsigned long long)v);
        EXPECT_FAIL(evx_event_query(FORGE(evx_event_t, v)),
                    EVX_ERROR_INVALID_HANDLE);
        EXPECT_FAIL(evx_event_record(FORGE(evx_event_t, v), f.s),
                    EVX_ERROR_INVALID_HANDLE);
        EXPECT_FAIL(evx_event_record(f.e, FORGE(evx_stream_t, v)),
                    EVX_ERROR_INVALID_HANDLE);
        EXPECT_FAIL(evx_stream_wait_event(f.s, FORGE(evx_event_t, v), 0),
                    EVX_ERROR_INVALID_HANDLE);
        EXPECT_FAIL(evx_event_elapsed_time(&ms, f.done, FORGE(evx_event_t, v)),
                    EVX_ERROR_INVALID_HANDLE);
        EXPECT_FAIL(evx_event_destroy(FORGE(evx_event_t, v)),
                    EVX_ERROR_INVALID_HANDLE);
        EXPECT_FAIL(evx_stream_query(FORGE(evx_stream_t, v)),
                    EVX_ERROR_INVALID_HANDLE);
        EXPECT_FAIL(evx_stream_destroy(FORGE(evx_stream_t, v)),
                    EVX_ERROR_INVALID_HANDLE);
        EXPECT_FAIL(evx_event_pool_destroy(FORGE(evx_event_pool_t, v)),
                    EVX_ERROR_INVALID_HANDLE);
        EXPECT_FAIL(evx_timer_destroy(FORGE(evx_timer_t, v)),
                    EVX_ERROR_INVALID_HANDLE);
        EXPECT_FAIL(evx_timeline_count(FORGE(evx_timeline_t, v), &c),
                    EVX_ERROR_INVALID_HANDLE);
        EXPECT_FAIL(evx_timeline_destroy(FORGE(evx_timeline_t, v)),
                    EVX_ERROR_INVALID_HANDLE);
    }
    EXPECT(local == 0); /* never written through */
out:
    fixture_free(&f);
}

static void t_stale_handles(void)
{
    fixture f;
    float ms;
    unsigned fl;
    int i;
    void *p;
    uint32_t c;
    evx_event_t got = NULL;
    evx_event_pool_stats_t st;

    memset(&st, 0, sizeof st);
    st.struct_size = (uint32_t)sizeof st;
    if (!fixture_make(&f))
        goto out;
    EXPECT_FAIL(evx_event_query(f.dead_e), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_synchronize(f.dead_e), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_record(f.dead_e, f.s), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_record(f.e, f.dead_s), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_elapsed_time(&ms, f.dead_e, f.done),
                EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_get_flags(f.dead_e, &fl), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_get_native(f.dead_e, &p), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_destroy(f.dead_e), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_stream_wait_event(f.s, f.dead_e, 0),
                EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_stream_wait_event(f.dead_s, f.done, 0),
                EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_stream_query(f.dead_s), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_stream_synchronize(f.dead_s), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_stream_launch_host_func(f.dead_s, dummy_fn, NULL),
                EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_stream_get_priority(f.dead_s, &i),
                EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_stream_destroy(f.dead_s), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_pool_acquire(f.dead_pool, &got),
                EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_pool_get_stats(f.dead_pool, &st),
                EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_pool_prewarm(f.dead_pool, 1),
                EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_pool_destroy(f.dead_pool), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_timer_start(f.dead_timer, f.s), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_timer_start(f.timer, f.dead_s), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_timer_elapsed(f.dead_timer, &ms), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_timer_destroy(f.dead_timer), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_timeline_mark(f.dead_tl, f.s, &c),
                EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_timeline_mark(f.tl, f.dead_s, &c),
                EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_timeline_reset(f.dead_tl), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_timeline_synchronize(f.dead_tl), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_timeline_destroy(f.dead_tl), EVX_ERROR_INVALID_HANDLE);
    (void)got;
out:
    fixture_free(&f);
}

static void t_wrong_kind(void)
{
    fixture f;
    float ms;
    unsigned fl;
    int i;
    uint32_t c;
    evx_event_t got = NULL;

    if (!fixture_make(&f))
        goto out;
    /* a stream as an event, an event as a stream, ... */
    EXPECT_FAIL(evx_event_query(AS_EVENT(f.s)), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_destroy(AS_EVENT(f.s)), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_destroy(AS_EVENT(f.pool)), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_destroy(AS_EVENT(f.timer)), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_get_flags(AS_EVENT(f.tl), &fl),
                EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_record(AS_EVENT(f.s), f.s), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_record(f.e, AS_STREAM(f.e)), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_elapsed_time(&ms, f.done, AS_EVENT(f.timer)),
                EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_stream_wait_event(AS_STREAM(f.e), f.done, 0),
                EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_stream_wait_event(f.s, AS_EVENT(f.s), 0),
                EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_stream_query(AS_STREAM(f.e)), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_stream_destroy(AS_STREAM(f.e)), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_stream_destroy(AS_STREAM(f.tl)), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_stream_get_priority(AS_STREAM(f.pool), &i),
                EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_pool_destroy(AS_POOL(f.e)), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_pool_destroy(AS_POOL(f.timer)),
                EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_pool_acquire(AS_POOL(f.tl), &got),
                EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_pool_release(AS_POOL(f.s), f.e),
                EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_timer_destroy(AS_TIMER(f.pool)), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_timer_destroy(AS_TIMER(f.tl)), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_timer_start(AS_TIMER(f.e), f.s), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_timer_start(f.timer, AS_STREAM(f.timer)),
                EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_timer_elapsed(AS_TIMER(f.s), &ms), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_timeline_destroy(AS_TIMELINE(f.timer)),
                EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_timeline_count(AS_TIMELINE(f.pool), &c),
                EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_timeline_mark(f.tl, AS_STREAM(f.tl), &c),
                EVX_ERROR_INVALID_HANDLE);
    /* the message says which kind it got */
    EXPECT_FAIL(evx_event_query(AS_EVENT(f.s)), EVX_ERROR_INVALID_HANDLE);
    EXPECTF(str_has(evx_last_error_message(), "stream"),
            "a stream passed as an event: \"%s\"", evx_last_error_message());
    /* Nothing was destroyed by a wrong-kind destroy. */
    EXPECT_OK(evx_stream_query(f.s));
    EXPECT_OK(evx_event_query(f.e));
    EXPECT_OK(evx_timer_elapsed(f.timer, &ms));
    EXPECT_OK(evx_timeline_count(f.tl, &c));
    EXPECT_OK(evx_event_pool_acquire(f.pool, &got));
    if (got != NULL)
        EXPECT_OK(evx_event_pool_release(f.pool, got));
out:
    fixture_free(&f);
}

static void t_devices(void)
{
    int n = conf_device_count();
    const int bad[] = {-2, -1, n, n + 1, 1000, INT_MIN, INT_MAX};
    size_t i;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int d = bad[i], l, g;
        evx_event_t e = JUNK(evx_event_t);
        evx_stream_t s = JUNK(evx_stream_t);
        evx_timer_t t = NULL;
        evx_timeline_t tl = NULL;
        evx_event_pool_t p = NULL;
        evx_event_pool_options_t o = pool_opts(0, 4, 0);
        conf_note("device %d", d);
        EXPECT_FAIL(evx_device_create_event(d, 0, &e), EVX_ERROR_INVALID_DEVICE);
        EXPECT(e == NULL);
        EXPECT_FAIL(evx_device_create_stream(d, 0, 0, &s),
                    EVX_ERROR_INVALID_DEVICE);
        EXPECT(s == NULL);
        EXPECT_FAIL(evx_device_stream_priority_range(d, &l, &g),
                    EVX_ERROR_INVALID_DEVICE);
        EXPECT_FAIL(evx_device_trim(d), EVX_ERROR_INVALID_DEVICE);
        EXPECT_FAIL(evx_device_create_timer(d, &t), EVX_ERROR_INVALID_DEVICE);
        EXPECT_FAIL(evx_device_create_timeline(d, 4, &tl), EVX_ERROR_INVALID_DEVICE);
        EXPECT_FAIL(evx_device_create_event_pool(d, &o, &p), EVX_ERROR_INVALID_DEVICE);
        /* The specials mean something to a wrap (tested in streams and
         * contexts). */
        if (d != EVX_DEVICE_FROM_STREAM && d != EVX_DEVICE_CURRENT) {
            s = JUNK(evx_stream_t);
            EXPECT_FAIL(evx_stream_wrap_external(d, EVX_STREAM_LEGACY, &s),
                        EVX_ERROR_INVALID_DEVICE);
            EXPECT(s == NULL);
        }
    }
}

static void t_default_stream_from_stream(void)
{
    static void *const natives[] = {NULL, EVX_STREAM_LEGACY,
                                    EVX_STREAM_PER_THREAD};
    size_t i;
    for (i = 0; i < 3; i++) {
        evx_stream_t s = JUNK(evx_stream_t);
        EXPECT_FAIL(evx_stream_wrap_external(EVX_DEVICE_FROM_STREAM,
                                             natives[i], &s),
                    EVX_ERROR_INVALID_VALUE);
        EXPECT(s == NULL);
    }
}

static void t_pool_options(void)
{
    evx_event_pool_t p = NULL;
    evx_event_pool_options_t o;
    evx_event_pool_stats_t st;

    o = pool_opts(0, 4, 0);
    o.struct_size = 0;
    EXPECT_FAIL(evx_device_create_event_pool(0, &o, &p), EVX_ERROR_INVALID_VALUE);
    o.struct_size = 4;
    EXPECT_FAIL(evx_device_create_event_pool(0, &o, &p), EVX_ERROR_INVALID_VALUE);
    o.struct_size = (uint32_t)sizeof o - 1;
    EXPECT_FAIL(evx_device_create_event_pool(0, &o, &p), EVX_ERROR_INVALID_VALUE);
    o = pool_opts(0, 0, 0);
    EXPECT_FAIL(evx_device_create_event_pool(0, &o, &p), EVX_ERROR_INVALID_VALUE);
    o = pool_opts(0, 4, 5);
    EXPECT_FAIL(evx_device_create_event_pool(0, &o, &p), EVX_ERROR_INVALID_VALUE);
    o = pool_opts(EVX_EVENT_INTERPROCESS | EVX_EVENT_DISABLE_TIMING, 4, 0);
    EXPECT_FAIL(evx_device_create_event_pool(0, &o, &p), EVX_ERROR_INVALID_VALUE);
    o = pool_opts(EVX_EVENT_INTERPROCESS, 4, 0);
    EXPECT_FAIL(evx_device_create_event_pool(0, &o, &p), EVX_ERROR_INVALID_VALUE);
    o = pool_opts(0x80, 4, 0);
    EXPECT_FAIL(evx_device_create_event_pool(0, &o, &p), EVX_ERROR_INVALID_VALUE);
    o = pool_opts(0x8, 4, 0);
    EXPECT_FAIL(evx_device_create_event_pool(0, &o, &p), EVX_ERROR_INVALID_VALUE);
    EXPECT(p == NULL);

    o = pool_opts(EVX_EVENT_DISABLE_TIMING, 4, 4);
    REQUIRE_OK(evx_device_create_event_pool(0, &o, &p));
    EXPECT_FAIL(evx_event_pool_prewarm(p, 5), EVX_ERROR_INVALID_VALUE);
    EXPECT_OK(evx_event_pool_prewarm(p, 4));
    memset(&st, 0, sizeof st);
    st.struct_size = 0;
    EXPECT_FAIL(evx_event_pool_get_stats(p, &st), EVX_ERROR_INVALID_VALUE);
    st.struct_size = 4;
    EXPECT_FAIL(evx_event_pool_get_stats(p, &st), EVX_ERROR_INVALID_VALUE);
out:
    drop_pool(&p);
}

static void t_timeline_capacity(void)
{
    evx_timeline_t tl = JUNK(evx_timeline_t);
    EXPECT_FAIL(evx_device_create_timeline(0, 0, &tl), EVX_ERROR_INVALID_VALUE);
    tl = JUNK(evx_timeline_t);
    EXPECT_FAIL(evx_device_create_timeline(0, 1, &tl), EVX_ERROR_INVALID_VALUE);
    tl = NULL;
    EXPECT_OK(evx_device_create_timeline(0, 2, &tl));
    drop_timeline(&tl);
}

static void t_timer_state(void)
{
    evx_timer_t t = NULL;
    evx_stream_t s = NULL;
    float ms = 5.0f;

    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE_OK(evx_device_create_timer(0, &t));
    EXPECT_FAIL(evx_timer_stop(t, s), EVX_ERROR_ILLEGAL_STATE);
    EXPECT_FAIL(evx_timer_elapsed(t, &ms), EVX_ERROR_ILLEGAL_STATE);
    EXPECT_FAIL(evx_timer_synchronize(t, &ms), EVX_ERROR_ILLEGAL_STATE);
    EXPECT_OK(evx_timer_start(t, s));
    EXPECT_FAIL(evx_timer_elapsed(t, &ms), EVX_ERROR_ILLEGAL_STATE);
    EXPECT_FAIL(evx_timer_synchronize(t, &ms), EVX_ERROR_ILLEGAL_STATE);
    EXPECT_OK(evx_timer_stop(t, s));
    EXPECT_OK(evx_timer_synchronize(t, &ms));
    EXPECT(ms >= 0.0f);
out:
    drop_timer(&t);
    drop_stream(&s);
}

/* Wrapping another device's stream while naming device 0. */
static void t_wrap_wrong_device(void)
{
    CUstream raw = NULL;
    evx_stream_t w = JUNK(evx_stream_t), s1 = NULL;
    void *native1 = NULL;
    const char *m;

    NEED_DEVICES(2);
    REQUIRE(raw_stream_create(1, CU_STREAM_NON_BLOCKING, 0, &raw));
    EXPECT_FAIL(evx_stream_wrap_external(0, raw, &w), EVX_ERROR_INVALID_VALUE);
    EXPECT(w == NULL);
    m = evx_last_error_message();
    EXPECTF(msg_names_device(m, 0) && msg_names_device(m, 1),
            "the message does not name both devices: \"%s\"", m);
    conf_note("%s", m);
    /* the same with an evx stream's native handle */
    REQUIRE((s1 = make_stream(1)) != NULL);
    REQUIRE_OK(evx_stream_get_native(s1, &native1));
    w = JUNK(evx_stream_t);
    EXPECT_FAIL(evx_stream_wrap_external(0, native1, &w),
                EVX_ERROR_INVALID_VALUE);
    EXPECT(w == NULL);
    /* named correctly, both are fine */
    w = NULL;
    EXPECT_OK(evx_stream_wrap_external(1, raw, &w));
    drop_stream(&w);
out:
    if (w == JUNK(evx_stream_t))
        w = NULL;
    drop_stream(&w);
    drop_stream(&s1);
    if (raw != NULL)
        raw_stream_destroy(1, raw);
}

const conf_case conf_badinput_cases[] = {
    {"badinput.null_out_pointers", t_null_out_pointers},
    {"badinput.null_handles", t_null_handles},
    {"badinput.forged_handles", t_forged_handles},
    {"badinput.stale_handles", t_stale_handles},
    {"badinput.wrong_kind_handles", t_wrong_kind},
    {"badinput.devices_out_of_range", t_devices},
    {"badinput.default_stream_with_device_from_stream",
     t_default_stream_from_stream},
    {"badinput.pool_options", t_pool_options},
    {"badinput.timeline_capacity", t_timeline_capacity},
    {"badinput.timer_state", t_timer_state},
    {"badinput.wrap_wrong_device", t_wrap_wrong_device},
    {NULL, NULL},
};
