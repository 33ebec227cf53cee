/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/* Contexts: evx works whatever context is current, and leaves the current
 * context as it found it. The raw driver is reached as other CUDA code
 * would reach it: the library evx opened, through cuGetProcAddress_v2. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "util.h"

#define check_ctx(want, after, line) \
    conf_check_ctx((want), (after), __FILE__, (line))

#define STEP(call) \
    do { \
        conf_expect_status((call), EVX_SUCCESS, #call, __FILE__, __LINE__); \
        check_ctx(want, #call, __LINE__); \
    } while (0)

/* Every kind of evx call on device `dev`, checking after each that the
 * current context is still `want`. */
static void run_calls(int dev, CUcontext want)
{
    evx_event_t a = NULL, b = NULL, pe = NULL;
    evx_stream_t s = NULL, s2 = NULL, def = NULL, wrapped = NULL;
    evx_timer_t t = NULL;
    evx_timeline_t tl = NULL;
    evx_event_pool_t p = NULL;
    evx_fence_t f = NULL;
    uint64_t fv = 0;
    evx_event_pool_options_t o;
    int least = 0, greatest = 0, d = -1, ran = 0;
    void *native = NULL;
    float ms;

    memset(&o, 0, sizeof o);
    o.struct_size = (uint32_t)sizeof o;
    o.capacity = 2;
    o.prewarm = 1;

    STEP(evx_device_stream_priority_range(dev, &least, &greatest));
    STEP(evx_device_create_event(dev, 0, &a));
    STEP(evx_device_create_event(dev, EVX_EVENT_BLOCKING_SYNC, &b));
    STEP(evx_device_create_stream(dev, EVX_STREAM_NON_BLOCKING, greatest, &s));
    STEP(evx_device_create_stream(dev, EVX_STREAM_DEFAULT, least, &s2));
    STEP(evx_stream_wrap_external(dev, NULL, &def));
    STEP(evx_stream_get_native(s, &native));
    STEP(evx_stream_wrap_external(EVX_DEVICE_FROM_STREAM, native, &wrapped));
    STEP(evx_stream_get_device(wrapped, &d));
    EXPECT(d == dev);
    STEP(evx_event_record(a, s));
    STEP(evx_stream_launch_host_func(s, host_sleep_ms, (void *)(intptr_t)1));
    STEP(evx_event_record(b, wrapped));
    STEP(evx_stream_wait_event(s2, b, 0));
    STEP(evx_stream_launch_host_func(s2, host_set_flag, &ran));
    STEP(evx_event_synchronize(b));
    STEP(evx_event_query(a));
    STEP(evx_event_elapsed_time(&ms, a, b));
    STEP(evx_stream_synchronize(s2));
    EXPECT(flag_get(&ran) == 1);
    STEP(evx_stream_query(s));
    STEP(evx_event_record(a, def));
    STEP(evx_stream_wait_event(def, b, 0));
    STEP(evx_stream_synchronize(def));
    STEP(evx_stream_query(def));
    STEP(evx_event_synchronize(a));
    STEP(evx_device_create_timer(dev, &t));
    STEP(evx_timer_start(t, s));
    STEP(evx_timer_stop(t, s2));
    STEP(evx_timer_synchronize(t, &ms));
    STEP(evx_device_create_timeline(dev, 4, &tl));
    STEP(evx_timeline_mark(tl, s, NULL));
    STEP(evx_timeline_mark(tl, def, NULL));
    STEP(evx_timeline_synchronize(tl));
    /* fences: a signal and a wait on a stream of evx's and on the borrowed
     * default stream (under evx's guard), a host signal and wait */
    STEP(evx_device_create_fence(dev, 0, 0, &f));
    STEP(evx_fence_signal(f, s, 1));
    STEP(evx_stream_wait_fence(def, f, 1));
    STEP(evx_fence_signal(f, def, 2));
    STEP(evx_stream_wait_fence(s2, f, 2));
    STEP(evx_stream_synchronize(s2));
    STEP(evx_fence_get_value(f, &fv));
    EXPECT(fv == 2);
    STEP(evx_fence_signal_host(f, 3));
    STEP(evx_fence_wait_host(f, 3, 0));
    STEP(evx_fence_destroy(f));
    STEP(evx_device_create_event_pool(dev, &o, &p));
    STEP(evx_event_pool_acquire(p, &pe));
    STEP(evx_event_record(pe, s));
    STEP(evx_event_pool_release(p, pe));
    STEP(evx_event_pool_destroy(p));
    STEP(evx_timeline_destroy(tl));
    STEP(evx_timer_destroy(t));
    STEP(evx_stream_destroy(wrapped));
    STEP(evx_stream_destroy(def));
    STEP(evx_stream_synchronize(s));
    STEP(evx_stream_destroy(s));
    STEP(evx_stream_destroy(s2));
    STEP(evx_event_destroy(a));
    STEP(evx_event_destroy(b));
    STEP(evx_device_trim(dev));
}

static void t_no_current(void)
{
    const conf_cu *cu = conf_cu_get();
    CUcontext old = NULL;
    const CUcontext want = NULL;

    if (!EXPECT(cu != NULL))
        return;
    if (!EXPECT(cu->ctx_get_current(&old) == CUDA_SUCCESS))
        return;
    if (!EXPECT(cu->ctx_set_current(NULL) == CUDA_SUCCESS))
        return;
    check_ctx(want, "cuCtxSetCurrent(NULL)", __LINE__);
    run_calls(0, NULL);
    EXPECT(cu->ctx_set_current(old) == CUDA_SUCCESS);
}

static void t_primary_current(void)
{
    const conf_cu *cu = conf_cu_get();
    CUcontext old = NULL, primary = NULL;
    CUdevice d;

    if (!EXPECT(cu != NULL))
        return;
    d = conf_cu_device(0);
    if (!EXPECT(cu->ctx_get_current(&old) == CUDA_SUCCESS))
        return;
    if (!EXPECT(cu->primary_retain(&primary, d) == CUDA_SUCCESS))
        return;
    EXPECT(primary != NULL);
    if (EXPECT(cu->ctx_set_current(primary) == CUDA_SUCCESS)) {
        run_calls(0, primary);
        EXPECT(cu->ctx_set_current(old) == CUDA_SUCCESS);
    }
    EXPECT(cu->primary_release(d) == CUDA_SUCCESS);
}

/* Device 1's primary context is current; evx works on device 0. */
static void t_other_device_current(void)
{
    const conf_cu *cu;
    CUcontext old = NULL, primary1 = NULL;
    CUdevice d1;

    NEED_DEVICES(2);
    cu = conf_cu_get();
    if (!EXPECT(cu != NULL))
        return;
    d1 = conf_cu_device(1);
    if (!EXPECT(cu->ctx_get_current(&old) == CUDA_SUCCESS))
        return;
    if (!EXPECT(cu->primary_retain(&primary1, d1) == CUDA_SUCCESS))
        return;
    if (EXPECT(cu->ctx_set_current(primary1) == CUDA_SUCCESS)) {
        run_calls(0, primary1);
        EXPECT(cu->ctx_set_current(old) == CUDA_SUCCESS);
    }
    EXPECT(cu->primary_release(d1) == CUDA_SUCCESS);
}

/* A fresh thread has no current context; evx works there too. */
static void *fresh_thread(void *arg)
{
    (void)arg;
    run_calls(0, NULL);
    return NULL;
}

static void t_fresh_thread(void)
{
    pthread_t th;
    if (!EXPECT(conf_cu_get() != NULL))
        return;
    if (EXPECT(pthread_create(&th, NULL, fresh_thread, NULL) == 0))
        pthread_join(th, NULL);
}

/* What evx reports agrees with the raw driver. */
static void t_agrees_with_driver(void)
{
    const conf_cu *cu = conf_cu_get();
    CUcontext old = NULL, primary = NULL;
    CUdevice d;
    int least = 1, greatest = 1, rl = 2, rg = 2, p = 99;
    evx_stream_t s = NULL;
    void *native = NULL;

    if (!EXPECT(cu != NULL))
        return;
    REQUIRE_OK(evx_device_stream_priority_range(0, &least, &greatest));
    REQUIRE_OK(evx_device_create_stream(0, 0, greatest, &s));
    REQUIRE_OK(evx_stream_get_native(s, &native));
    if (cu->stream_get_priority != NULL) {
        EXPECT(cu->stream_get_priority((CUstream)native, &p) == CUDA_SUCCESS);
        EXPECTF(p == greatest, "cuStreamGetPriority of an evx stream made "
                "with %d: %d", greatest, p);
    } else {
        conf_note("the driver has no cuStreamGetPriority; not compared");
    }
    EXPECT(cu->stream_query((CUstream)native) == CUDA_SUCCESS);
    if (cu->ctx_get_stream_priority_range != NULL) {
        d = conf_cu_device(0);
        REQUIRE(cu->ctx_get_current(&old) == CUDA_SUCCESS);
        REQUIRE(cu->primary_retain(&primary, d) == CUDA_SUCCESS);
        EXPECT(cu->ctx_set_current(primary) == CUDA_SUCCESS);
        EXPECT(cu->ctx_get_stream_priority_range(&rl, &rg) == CUDA_SUCCESS);
        EXPECT(cu->ctx_set_current(old) == CUDA_SUCCESS);
        EXPECT(cu->primary_release(d) == CUDA_SUCCESS);
        EXPECTF(rl == least && rg == greatest,
                "evx says [%d, %d], the driver [%d, %d]", greatest, least,
                rg, rl);
    } else {
        conf_note("the driver has no cuCtxGetStreamPriorityRange");
    }
out:
    drop_stream(&s);
}

const conf_case conf_context_cases[] = {
    {"context.no_current_context", t_no_current},
    {"context.primary_stays_current", t_primary_current},
    {"context.other_device_stays_current", t_other_device_current},
    {"context.fresh_thread", t_fresh_thread},
    {"context.agrees_with_driver", t_agrees_with_driver},
    {NULL, NULL},
};
