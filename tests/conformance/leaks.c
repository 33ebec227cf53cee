/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/* Leak accounting: after evx_device_trim, the host emulation's live driver
 * objects (src/host/evx_host_debug.h) are back to where they were. Each case
 * is a path where evx once kept a driver object that trim could not reach.
 * On a real driver nothing can be counted: the cases are skipped there. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <string.h>

#include "harness.h"
#include "util.h"

#define NEED_COUNTS(start) \
    do { \
        if (!host_live_start(start)) { \
            conf_skip("the driver is not the host emulation: its live " \
                      "driver objects cannot be counted"); \
            return; \
        } \
    } while (0)

/* A thread destroys fewer events than one retire batch (evx frees plain
 * events in batches) and exits: the exit frees them into the thread's cache,
 * and that cache must then move to the shared depot, where evx_device_trim
 * on another thread destroys them. (Once, the exit flushed the cache before
 * it freed the retired events, which then stayed behind in the dead thread's
 * record, out of trim's reach.) */
static int attached; /* threads past their first evx call */

static void *make_and_drop(void *arg)
{
    int *bad = (int *)arg;
    int i;
    /* Every thread holds its own evx thread record: none exits before all
     * have made their first call (a record is reused after its thread
     * exits, and its new owner would trim what it inherited). */
    evx_event_t first = NULL;
    double t0 = now_ms();
    if (evx_device_create_event(0, 0, &first) != EVX_SUCCESS)
        (*bad)++;
    __atomic_add_fetch(&attached, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&attached, __ATOMIC_SEQ_CST) < 4 &&
           now_ms() - t0 < 2000)
        sleep_ms(1);
    if (evx_event_destroy(first) != EVX_SUCCESS)
        (*bad)++;
    for (i = 0; i < 20; i++) {
        evx_event_t e = NULL;
        if (evx_device_create_event(0, i % 2 ? EVX_EVENT_DISABLE_TIMING : 0,
                                    &e) != EVX_SUCCESS ||
            evx_event_destroy(e) != EVX_SUCCESS)
            (*bad)++;
    }
    return NULL;
}

static void t_thread_exit_reaches_trim(void)
{
    evx_host_live start;
    pthread_t th[4];
    int bad[4] = {0, 0, 0, 0}, i, started = 0;
    /* This thread has its record first, so the trim below does not take
     * over a record a worker left. */
    EXPECT_OK(evx_device_trim(0));
    NEED_COUNTS(&start);
    attached = 0;
    for (i = 0; i < 4; i++) {
        if (pthread_create(&th[i], NULL, make_and_drop, &bad[i]) != 0)
            break;
        started++;
    }
    for (i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    EXPECT(started == 4);
    for (i = 0; i < started; i++)
        EXPECTF(bad[i] == 0, "thread %d: %d failed create/destroy", i, bad[i]);
    live_expect_back(&start, "threads that destroyed events and exited");
}

/* A destroyed timer is kept by the thread that freed it, with its two
 * driver events, for its next create (src/timer.cpp): evx_device_trim must
 * reach the calling thread's kept timers, and a thread's exit must destroy
 * its own. */
static void *timer_and_exit(void *arg)
{
    int *bad = (int *)arg;
    int i;
    for (i = 0; i < 3; i++) {
        evx_timer_t t = NULL;
        if (evx_device_create_timer(0, &t) != EVX_SUCCESS ||
            evx_timer_destroy(t) != EVX_SUCCESS)
            (*bad)++;
    }
    return NULL;
}

static void t_kept_timers(void)
{
    evx_host_live start;
    evx_timer_t t = NULL, again = NULL;
    pthread_t th;
    int bad = 0;
    EXPECT_OK(evx_device_trim(0));
    NEED_COUNTS(&start);
    /* This thread's kept timer: its events go back with the trim. */
    EXPECT_OK(evx_device_create_timer(0, &t));
    EXPECT_OK(evx_timer_destroy(t));
    EXPECT_OK(evx_device_create_timer(0, &again));
    EXPECT_STATUS(evx_timer_elapsed(t, &(float){0}), EVX_ERROR_INVALID_HANDLE);
    EXPECT_OK(evx_timer_destroy(again));
    live_expect_back(&start, "a timer destroyed, kept by this thread, trimmed");
    /* Another thread's kept timers: destroyed at its exit. */
    if (EXPECT(pthread_create(&th, NULL, timer_and_exit, &bad) == 0))
        pthread_join(th, NULL);
    EXPECTF(bad == 0, "the thread had %d failed timer create/destroy", bad);
    live_expect_back(&start, "timers destroyed by a thread that exited");
}

const conf_case conf_leak_cases[] = {
    {"leaks.thread_exit_reaches_trim", t_thread_exit_reaches_trim},
    {"leaks.kept_timers_trimmed_and_freed_at_exit", t_kept_timers},
    {NULL, NULL},
};
