/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/* Barrier: where a call publishes its hazard with a plain store (membarrier
 * available, not under ThreadSanitizer), every destroy that decides a free
 * must run the process-wide barrier after its handle died and before it
 * reads the hazards (docs/design.md, "Safe use against a racing
 * destroy"). The race a missing barrier opens is a few instructions wide
 * (threads.calls_on_streams_destroyed_as_made provokes it); these cases
 * check the barrier itself: this program defines syscall(), which libevx's
 * calls reach, counts membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), and at
 * each one asks whether the handle being destroyed is already dead.
 * Destroys that free in batches (plain events, timers, timelines, borrowed
 * streams, events released to a pool) must run about one barrier per 32,
 * not one each. */
#define _GNU_SOURCE

#include <dlfcn.h>
#include <linux/membarrier.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "harness.h"
#include "util.h"

static int g_barriers;            /* atomic: barriers run since the last reset */
static evx_stream_t g_watch;      /* a stream being destroyed, or NULL */
static int g_watch_live;          /* barriers that found g_watch still live */
static __thread int t_in_hook;

/* Reads six arguments whatever the caller passed (the kernel ignores the
 * ones a call does not take): not instrumented, so that AddressSanitizer
 * does not report the reads past a shorter call's arguments. */
__attribute__((no_sanitize_address)) long syscall(long n, ...)
{
    static long (*real)(long, ...);
    long a[6];
    va_list ap;
    int i;
    va_start(ap, n);
    for (i = 0; i < 6; i++)
        a[i] = va_arg(ap, long);
    va_end(ap);
    if (real == NULL) {
        void *p = dlsym(RTLD_NEXT, "syscall");
        memcpy(&real, &p, sizeof p); /* ISO C: no cast to a function pointer */
    }
    if (n == __NR_membarrier && a[0] == MEMBARRIER_CMD_PRIVATE_EXPEDITED && !t_in_hook) {
        evx_stream_t w = __atomic_load_n(&g_watch, __ATOMIC_SEQ_CST);
        __atomic_add_fetch(&g_barriers, 1, __ATOMIC_SEQ_CST);
        if (w != NULL) {
            /* The barrier must come after the destroy ended the handle. */
            t_in_hook = 1;
            if (evx_stream_query(w) != EVX_ERROR_INVALID_HANDLE)
                __atomic_add_fetch(&g_watch_live, 1, __ATOMIC_SEQ_CST);
            t_in_hook = 0;
        }
    }
    return real(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}

/* Whether evx publishes hazards with plain stores here; else skips. */
static int light(void)
{
#if defined(__SANITIZE_THREAD__)
    conf_skip("under ThreadSanitizer calls publish hazards with a seq_cst exchange");
    return 0;
#else
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
    conf_skip("under ThreadSanitizer calls publish hazards with a seq_cst exchange");
    return 0;
#endif
#endif
    long q = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (q < 0 || !(q & MEMBARRIER_CMD_PRIVATE_EXPEDITED)) {
        conf_skip("no expedited membarrier: calls publish hazards with a seq_cst exchange");
        return 0;
    }
    return 1;
#endif
}

static int barriers(void) { return __atomic_load_n(&g_barriers, __ATOMIC_SEQ_CST); }
static void reset(void) { __atomic_store_n(&g_barriers, 0, __ATOMIC_SEQ_CST); }

/* Owned streams free at once: one barrier each, after the handle died. */
static void t_owned_stream(void)
{
    evx_stream_t s = NULL;
    int i;
    if (!light())
        return;
    __atomic_store_n(&g_watch_live, 0, __ATOMIC_SEQ_CST);
    for (i = 0; i < 8; i++) {
        REQUIRE((s = make_stream(0)) != NULL);
        reset();
        __atomic_store_n(&g_watch, s, __ATOMIC_SEQ_CST);
        EXPECT_OK(evx_stream_destroy(s));
        __atomic_store_n(&g_watch, NULL, __ATOMIC_SEQ_CST);
        s = NULL;
        EXPECTF(barriers() >= 1, "destroy %d of an owned stream ran no barrier", i);
    }
    EXPECTF(__atomic_load_n(&g_watch_live, __ATOMIC_SEQ_CST) == 0,
            "%d barriers ran before the destroyed stream's handle was dead",
            __atomic_load_n(&g_watch_live, __ATOMIC_SEQ_CST));
out:
    __atomic_store_n(&g_watch, NULL, __ATOMIC_SEQ_CST);
    drop_stream(&s);
}

static void noop_release(void *user) { (void)user; }

/* A borrow with a release callback is freed before its destroy returns. */
static void t_borrow_with_release(void)
{
    evx_stream_t owner = NULL, s = NULL;
    void *native = NULL;
    if (!light())
        return;
    REQUIRE((owner = make_stream(0)) != NULL);
    REQUIRE_OK(evx_stream_get_native(owner, &native));
    REQUIRE_OK(evx_stream_wrap_external_with_release(0, native, noop_release, NULL, &s));
    reset();
    __atomic_store_n(&g_watch_live, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&g_watch, s, __ATOMIC_SEQ_CST);
    EXPECT_OK(evx_stream_destroy(s));
    __atomic_store_n(&g_watch, NULL, __ATOMIC_SEQ_CST);
    s = NULL;
    EXPECTF(barriers() >= 1, "the destroy of a borrow with a release callback ran no barrier");
    EXPECT(__atomic_load_n(&g_watch_live, __ATOMIC_SEQ_CST) == 0);
out:
    drop_stream(&s);
    drop_stream(&owner);
}

/* evx.timed's pattern: a borrowed stream and a timer made and destroyed per
 * block. 256 destroys: a barrier per batch of 32, not per destroy (and at
 * least one: the batches are scanned). */
static void t_batched(void)
{
    evx_stream_t owner = NULL;
    void *native = NULL;
    int i, n;
    if (!light())
        return;
    REQUIRE((owner = make_stream(0)) != NULL);
    REQUIRE_OK(evx_stream_get_native(owner, &native));
    reset();
    for (i = 0; i < 64; i++) {
        evx_stream_t s = NULL;
        evx_timer_t t = NULL;
        evx_timeline_t tl = NULL;
        evx_event_t e = NULL;
        REQUIRE_OK(evx_stream_wrap_external(0, native, &s));
        REQUIRE_OK(evx_device_create_timer(0, &t));
        REQUIRE_OK(evx_device_create_timeline(0, 2, &tl));
        REQUIRE_OK(evx_device_create_event(0, 0, &e));
        EXPECT_OK(evx_timer_destroy(t));
        EXPECT_OK(evx_timeline_destroy(tl));
        EXPECT_OK(evx_event_destroy(e));
        EXPECT_OK(evx_stream_destroy(s));
    }
    n = barriers();
    EXPECTF(n >= 1 && n <= 256 / 32 + 1,
            "256 batched destroys ran %d barriers (want 1 to %d)", n, 256 / 32 + 1);
out:
    drop_stream(&owner);
}

/* Pool releases are scanned in batches of the pool's: 64 acquire and
 * release pairs on a pool whose idle events never run out run 2 barriers
 * (and the stats see every event back). */
static void t_pool(void)
{
    evx_event_pool_options_t o = EVX_EVENT_POOL_OPTIONS_INIT;
    evx_event_pool_stats_t stats = EVX_EVENT_POOL_STATS_INIT;
    evx_event_pool_t pool = NULL;
    int i, n;
    if (!light())
        return;
    o.capacity = 64;
    o.prewarm = 64;
    REQUIRE_OK(evx_device_create_event_pool(0, &o, &pool));
    reset();
    for (i = 0; i < 64; i++) {
        evx_event_t e = NULL;
        REQUIRE_OK(evx_event_pool_acquire(pool, &e));
        EXPECT_OK(evx_event_pool_release(pool, e));
    }
    n = barriers();
    EXPECTF(n >= 1 && n <= 64 / 32 + 1, "64 pool releases ran %d barriers (want 1 to %d)", n,
            64 / 32 + 1);
    EXPECT_OK(evx_event_pool_get_stats(pool, &stats));
    EXPECTF(stats.in_use == 0 && stats.idle + stats.pending == 64,
            "after the releases: %u in use, %u idle, %u pending", stats.in_use, stats.idle,
            stats.pending);
out:
    if (pool != NULL)
        EXPECT_OK(evx_event_pool_destroy(pool));
}

const conf_case conf_barrier_cases[] = {
    {"barrier.owned_stream_destroy_after_death", t_owned_stream},
    {"barrier.borrow_with_release_destroy", t_borrow_with_release},
    {"barrier.batched_destroys_one_per_batch", t_batched},
    {"barrier.pool_releases_one_per_batch", t_pool},
    {NULL, NULL},
};
