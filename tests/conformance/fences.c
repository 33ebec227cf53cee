/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/* Fences (evx/fence.h): counters that only grow, waited for before they are
 * signalled, on streams, on the host, between processes and by notifiers;
 * the refusals; injected faults at each driver call fences make (host
 * emulation only). Host functions around the stream operations show what
 * really waited for what, on the emulation and on a GPU alike. */
#define _GNU_SOURCE

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "util.h"

static evx_fence_t make_fence(int device, uint64_t initial, unsigned flags)
{
    evx_fence_t f = NULL;
    if (!EXPECT_OK(evx_device_create_fence(device, initial, flags, &f)))
        return NULL;
    return f;
}

static void drop_fence(evx_fence_t *f)
{
    if (*f != NULL)
        EXPECT_OK(evx_fence_destroy(*f));
    *f = NULL;
}

static uint64_t value_of(evx_fence_t f)
{
    uint64_t v = UINT64_MAX;
    EXPECT_OK(evx_fence_get_value(f, &v));
    return v;
}

/* ---- making, reading, bad input ------------------------------------------ */

static void t_create(void)
{
    evx_fence_t f = NULL, out = JUNK(evx_fence_t);
    int count = 0;

    REQUIRE_OK(evx_device_count(&count));
    REQUIRE((f = make_fence(0, 5, EVX_FENCE_DEFAULT)) != NULL);
    EXPECT(value_of(f) == 5);
    EXPECT_FAIL(evx_device_create_fence(0, 0, 0, NULL), EVX_ERROR_INVALID_VALUE);
    if (EXPECT_FAIL(evx_device_create_fence(0, 0, 0x2, &out), EVX_ERROR_INVALID_VALUE))
        EXPECTF(str_has(evx_last_error_message(), "0x2"), "message: %s",
                evx_last_error_message());
    EXPECT(out == NULL);
    out = JUNK(evx_fence_t);
    if (EXPECT_FAIL(evx_device_create_fence(0, EVX_FENCE_MAX_VALUE + 1, 0, &out),
                    EVX_ERROR_INVALID_VALUE))
        EXPECTF(str_has(evx_last_error_message(), "9223372036854775808"),
                "message: %s", evx_last_error_message());
    EXPECT(out == NULL);
    out = JUNK(evx_fence_t);
    EXPECT_FAIL(evx_device_create_fence(count, 0, 0, &out), EVX_ERROR_INVALID_DEVICE);
    EXPECT(out == NULL);
    out = JUNK(evx_fence_t);
    EXPECT_FAIL(evx_device_create_fence(-1, 0, 0, &out), EVX_ERROR_INVALID_DEVICE);
    EXPECT(out == NULL);
    EXPECT_FAIL(evx_fence_get_value(f, NULL), EVX_ERROR_INVALID_VALUE);
    /* the largest value is allowed */
    EXPECT_OK(evx_fence_signal_host(f, EVX_FENCE_MAX_VALUE));
    EXPECT(value_of(f) == EVX_FENCE_MAX_VALUE);
out:
    drop_fence(&f);
}

static void t_bad_handles(void)
{
    evx_fence_t f = NULL, dead = NULL;
    evx_stream_t s = NULL;
    evx_event_t e = NULL;
    evx_notifier_t n = NULL;
    uint64_t v = 0;
    evx_ipc_fence_handle_t h;

    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((e = make_event(0, EVX_EVENT_DEFAULT)) != NULL);
    REQUIRE((f = make_fence(0, 0, 0)) != NULL);
    REQUIRE((dead = make_fence(0, 0, 0)) != NULL);
    REQUIRE_OK(evx_fence_destroy(dead));
    REQUIRE_OK(evx_notifier_create(NULL, &n));
    /* null, destroyed (twice), forged, another kind */
    EXPECT_FAIL(evx_fence_destroy(NULL), EVX_ERROR_INVALID_HANDLE);
    if (EXPECT_FAIL(evx_fence_destroy(dead), EVX_ERROR_INVALID_HANDLE))
        EXPECTF(str_has(evx_last_error_message(), "fence"), "message: %s",
                evx_last_error_message());
    EXPECT_FAIL(evx_fence_get_value(dead, &v), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_fence_get_value(FORGE(evx_fence_t, 0x12345677ULL), &v),
                EVX_ERROR_INVALID_HANDLE);
    if (EXPECT_FAIL(evx_fence_get_value((evx_fence_t)(void *)e, &v),
                    EVX_ERROR_INVALID_HANDLE))
        EXPECTF(str_has(evx_last_error_message(), "not a fence"), "message: %s",
                evx_last_error_message());
    EXPECT_FAIL(evx_fence_signal_host(dead, 1), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_fence_wait_host(dead, 0, 0), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_fence_signal(dead, s, 1), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_fence_signal(f, NULL, 1), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_fence_signal(f, AS_STREAM(e), 1), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_stream_wait_fence(s, dead, 1), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_stream_wait_fence(NULL, f, 1), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_fence_get_ipc_handle(dead, &h), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_notifier_watch_fence(n, dead, 1, 1), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_notifier_watch_fence(NULL, f, 1, 1), EVX_ERROR_INVALID_HANDLE);
    /* a refused signal claimed nothing: the fence is as it was */
    EXPECT(value_of(f) == 0);
    EXPECT_OK(evx_fence_signal_host(f, 1));
out:
    if (n != NULL)
        EXPECT_OK(evx_notifier_destroy(n));
    drop_fence(&f);
    drop_event(&e);
    drop_stream(&s);
}

/* ---- host signal and wait ------------------------------------------------ */

typedef struct later_signal {
    evx_fence_t f;
    uint64_t value;
    int delay_ms;
    evx_status_t st;
} later_signal;

static void *signal_later(void *arg)
{
    later_signal *ls = (later_signal *)arg;
    sleep_ms(ls->delay_ms);
    ls->st = evx_fence_signal_host(ls->f, ls->value);
    return NULL;
}

static void t_host_signal_wait(void)
{
    evx_fence_t f = NULL;
    later_signal ls;
    pthread_t th;
    double t0, dt;
    int started = 0;

    REQUIRE((f = make_fence(0, 1, 0)) != NULL);
    /* reached already: at once, also as a query */
    EXPECT_OK(evx_fence_wait_host(f, 0, 0));
    EXPECT_OK(evx_fence_wait_host(f, 1, 0));
    /* a query of a value not reached */
    if (EXPECT_FAIL(evx_fence_wait_host(f, 2, 0), EVX_ERROR_TIMEOUT))
        EXPECTF(msg_has_int(evx_last_error_message(), 2), "message: %s",
                evx_last_error_message());
    /* a timeout is honoured: not before it, and not much after */
    t0 = now_ms();
    EXPECT_FAIL(evx_fence_wait_host(f, 2, 60ull * 1000 * 1000), EVX_ERROR_TIMEOUT);
    dt = now_ms() - t0;
    EXPECTF(dt >= 59.0 && dt < 1000.0, "a wait of 60 ms took %.1f ms", dt);
    /* a signal from another thread ends the wait */
    ls.f = f;
    ls.value = 3;
    ls.delay_ms = 50;
    ls.st = -1;
    REQUIRE(pthread_create(&th, NULL, signal_later, &ls) == 0);
    started = 1;
    t0 = now_ms();
    EXPECT_OK(evx_fence_wait_host(f, 3, 20ull * 1000 * 1000 * 1000));
    dt = now_ms() - t0;
    EXPECTF(dt >= 30.0, "the wait ended after %.1f ms, before the signal", dt);
    EXPECT(value_of(f) == 3);
    /* waiting without limit for a value reached */
    EXPECT_OK(evx_fence_wait_host(f, 2, UINT64_MAX));
    if (EXPECT_FAIL(evx_fence_wait_host(f, EVX_FENCE_MAX_VALUE + 1, 0),
                    EVX_ERROR_INVALID_VALUE))
        EXPECTF(str_has(evx_last_error_message(), "EVX_FENCE_MAX_VALUE"), "message: %s",
                evx_last_error_message());
out:
    if (started) {
        pthread_join(th, NULL);
        EXPECT(ls.st == EVX_SUCCESS);
    }
    drop_fence(&f);
}

/* A host wait for a stream's signal sleeps: the waiting thread's CPU time
 * stays far below the wait's wall time (a waiter that spins uses all of
 * it). */
static void t_wait_host_sleeps(void)
{
    evx_fence_t f = NULL;
    evx_stream_t s = NULL;
    conf_gate *g = gate_new();
    struct timespec c0, c1;
    double t0, wall, cpu;
    int opener = 0;

    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((f = make_fence(0, 0, 0)) != NULL);
    REQUIRE_OK(gate_launch(s, g));
    REQUIRE_OK(evx_fence_signal(f, s, 1));
    gate_open_later(g, 300);
    opener = 1;
    t0 = now_ms();
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    EXPECT_OK(evx_fence_wait_host(f, 1, 20ull * 1000 * 1000 * 1000));
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    wall = now_ms() - t0;
    cpu = (double)(c1.tv_sec - c0.tv_sec) * 1e3 + (double)(c1.tv_nsec - c0.tv_nsec) / 1e6;
    EXPECTF(wall >= 200.0, "the wait returned after %.1f ms, before the gate opened", wall);
    EXPECTF(cpu < 0.3 * wall, "the waiting thread used %.1f ms of CPU in a wait of %.1f ms",
            cpu, wall);
    conf_note("waited %.1f ms, %.2f ms of CPU", wall, cpu);
out:
    if (opener)
        gate_join_opener(g);
    gate_open(g);
    if (s != NULL)
        EXPECT_OK(evx_stream_synchronize(s));
    drop_fence(&f);
    drop_stream(&s);
}

/* ---- values only grow --------------------------------------------------- */

static void t_monotonic(void)
{
    evx_fence_t f = NULL;
    evx_stream_t s = NULL;
    conf_gate *g = gate_new();

    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((f = make_fence(0, 10, 0)) != NULL);
    /* a host signal not above the last value */
    if (EXPECT_FAIL(evx_fence_signal_host(f, 10), EVX_ERROR_INVALID_VALUE))
        EXPECTF(str_has(evx_last_error_message(), "value 10 is not above 10"),
                "message: %s", evx_last_error_message());
    EXPECT_FAIL(evx_fence_signal_host(f, 3), EVX_ERROR_INVALID_VALUE);
    EXPECT_OK(evx_fence_signal_host(f, 11));
    /* a queued signal not above the last host signal */
    if (EXPECT_FAIL(evx_fence_signal(f, s, 11), EVX_ERROR_INVALID_VALUE))
        EXPECTF(msg_has_int(evx_last_error_message(), 11), "message: %s",
                evx_last_error_message());
    /* queued signals: each above the last queued, run or not */
    REQUIRE_OK(gate_launch(s, g));
    REQUIRE_OK(evx_fence_signal(f, s, 20));
    if (EXPECT_FAIL(evx_fence_signal(f, s, 15), EVX_ERROR_INVALID_VALUE))
        EXPECTF(str_has(evx_last_error_message(), "value 15 is not above 20"),
                "message: %s", evx_last_error_message());
    EXPECT_FAIL(evx_fence_signal_host(f, 20), EVX_ERROR_INVALID_VALUE);
    /* above it, but the queued 20 has not run: it would set the counter back */
    if (EXPECT_FAIL(evx_fence_signal_host(f, 25), EVX_ERROR_ILLEGAL_STATE))
        EXPECTF(msg_has_int(evx_last_error_message(), 20) &&
                    msg_has_int(evx_last_error_message(), 25),
                "message: %s", evx_last_error_message());
    EXPECT(value_of(f) == 11);
    EXPECT_STATUS(evx_fence_signal(f, s, EVX_FENCE_MAX_VALUE + 1), EVX_ERROR_INVALID_VALUE);
    gate_open(g);
    EXPECT_OK(evx_fence_wait_host(f, 20, 20ull * 1000 * 1000 * 1000));
    EXPECT(value_of(f) == 20);
    EXPECT_OK(evx_fence_signal_host(f, 25));
    EXPECT(value_of(f) == 25);
out:
    gate_open(g);
    if (s != NULL)
        EXPECT_OK(evx_stream_synchronize(s));
    drop_fence(&f);
    drop_stream(&s);
}

/* ---- wait before signal, two streams --------------------------------------- */

static void t_wait_before_signal(void)
{
    evx_fence_t f = NULL;
    evx_stream_t a = NULL, b = NULL;
    conf_gate *g = gate_new();
    int written = 0, seen = 0, b_done = 0;
    int *observe[2];

    REQUIRE((a = make_stream(0)) != NULL);
    REQUIRE((b = make_stream(0)) != NULL);
    REQUIRE((f = make_fence(0, 0, 0)) != NULL);
    /* B waits for 1 first, before anything signals it */
    REQUIRE_OK(evx_stream_wait_fence(b, f, 1));
    observe[0] = &written;
    observe[1] = &seen;
    REQUIRE_OK(evx_stream_launch_host_func(b, host_observe, observe));
    REQUIRE_OK(evx_stream_launch_host_func(b, host_set_flag, &b_done));
    /* then A: held by a gate, writes, signals 1 */
    REQUIRE_OK(gate_launch(a, g));
    REQUIRE_OK(evx_stream_launch_host_func(a, host_set_flag, &written));
    REQUIRE_OK(evx_fence_signal(f, a, 1));
    sleep_ms(100);
    EXPECTF(!flag_get(&b_done), "stream B went past its wait before A signalled");
    EXPECT_STATUS(evx_stream_query(b), EVX_ERROR_NOT_READY);
    EXPECT(value_of(f) == 0);
    gate_open(g);
    EXPECT(poll_flag(&b_done, 20000));
    EXPECTF(flag_get(&seen) == 1, "B's work after the wait did not see A's write");
    EXPECT_OK(evx_stream_synchronize(b));
    EXPECT(value_of(f) == 1);
    /* a wait for a value reached does not wait */
    REQUIRE_OK(evx_stream_wait_fence(b, f, 1));
    EXPECT_OK(evx_stream_synchronize(b));
out:
    gate_open(g);
    if (a != NULL)
        EXPECT_OK(evx_stream_synchronize(a));
    if (b != NULL && value_of(f) >= 1)
        EXPECT_OK(evx_stream_synchronize(b));
    drop_fence(&f);
    drop_stream(&a);
    drop_stream(&b);
}

/* A host signal releases a stream's wait; a stream's signal ends a host
 * wait. */
static void t_host_and_stream(void)
{
    evx_fence_t f = NULL;
    evx_stream_t s = NULL;
    int done = 0;

    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((f = make_fence(0, 0, 0)) != NULL);
    REQUIRE_OK(evx_stream_wait_fence(s, f, 2));
    REQUIRE_OK(evx_stream_launch_host_func(s, host_set_flag, &done));
    sleep_ms(50);
    EXPECT(!flag_get(&done));
    EXPECT_OK(evx_fence_signal_host(f, 1));
    sleep_ms(50);
    EXPECTF(!flag_get(&done), "a wait for 2 passed at 1");
    EXPECT_OK(evx_fence_signal_host(f, 2));
    EXPECT(poll_flag(&done, 20000));
    REQUIRE_OK(evx_fence_signal(f, s, 3));
    EXPECT_OK(evx_fence_wait_host(f, 3, 20ull * 1000 * 1000 * 1000));
    EXPECT(value_of(f) == 3);
out:
    if (s != NULL && value_of(f) < 2)
        EXPECT_OK(evx_fence_signal_host(f, 2));
    if (s != NULL)
        EXPECT_OK(evx_stream_synchronize(s));
    drop_fence(&f);
    drop_stream(&s);
}

/* Destroying a fence that a queued wait still needs: the handle dies at
 * once; the queued signal still runs and releases the wait. */
static void t_destroy_while_queued(void)
{
    evx_fence_t f = NULL;
    evx_stream_t a = NULL, b = NULL;
    conf_gate *g = gate_new();
    int done = 0;
    uint64_t v = 0;

    REQUIRE((a = make_stream(0)) != NULL);
    REQUIRE((b = make_stream(0)) != NULL);
    REQUIRE((f = make_fence(0, 0, 0)) != NULL);
    REQUIRE_OK(evx_stream_wait_fence(b, f, 1));
    REQUIRE_OK(evx_stream_launch_host_func(b, host_set_flag, &done));
    REQUIRE_OK(gate_launch(a, g));
    REQUIRE_OK(evx_fence_signal(f, a, 1));
    EXPECT_OK(evx_fence_destroy(f));
    EXPECT_FAIL(evx_fence_get_value(f, &v), EVX_ERROR_INVALID_HANDLE);
    f = NULL;
    gate_open(g);
    EXPECT(poll_flag(&done, 20000));
    EXPECT_OK(evx_stream_synchronize(a));
    EXPECT_OK(evx_stream_synchronize(b));
out:
    gate_open(g);
    drop_fence(&f);
    drop_stream(&a);
    drop_stream(&b);
}

/* ---- two devices ---------------------------------------------------------- */

static void t_cross_device(void)
{
    evx_fence_t f = NULL;
    evx_stream_t s1 = NULL;
    evx_notifier_t n = NULL;
    NEED_DEVICES(2);
    REQUIRE((f = make_fence(0, 0, 0)) != NULL);
    REQUIRE((s1 = make_stream(1)) != NULL);
    /* a stream of device 1 uses a fence of device 0 (fence.two_devices) */
    EXPECT_OK(evx_fence_signal(f, s1, 1));
    EXPECT_OK(evx_stream_wait_fence(s1, f, 1));
    EXPECT_OK(evx_stream_synchronize(s1));
    EXPECT(value_of(f) == 1);
    /* a fence of device 1 works on device 1's streams */
    drop_fence(&f);
    REQUIRE((f = make_fence(1, 0, 0)) != NULL);
    EXPECT_OK(evx_stream_wait_fence(s1, f, 0));
    EXPECT_OK(evx_fence_signal(f, s1, 1));
    EXPECT_OK(evx_stream_synchronize(s1));
    EXPECT(value_of(f) == 1);
    /* a notifier watches fences of any device */
    REQUIRE_OK(evx_notifier_create(NULL, &n));
    EXPECT_OK(evx_notifier_watch_fence(n, f, 2, 77));
    EXPECT_OK(evx_fence_signal(f, s1, 2));
    {
        uint64_t tok = 0;
        uint32_t c = 0;
        double until = now_ms() + 20000;
        while (c == 0 && now_ms() < until) {
            EXPECT_OK(evx_notifier_read(n, &tok, 1, &c));
            if (c == 0)
                sleep_ms(2);
        }
        EXPECT(c == 1 && tok == 77);
    }
out:
    if (n != NULL)
        EXPECT_OK(evx_notifier_destroy(n));
    if (s1 != NULL)
        EXPECT_OK(evx_stream_synchronize(s1));
    drop_fence(&f);
    drop_stream(&s1);
}

/* ---- the notifier --------------------------------------------------------- */

static int readable(evx_notifier_t n, int timeout_ms)
{
    struct pollfd p;
    int fd = -1;
    if (!EXPECT_OK(evx_notifier_get_fd(n, &fd)))
        return 0;
    p.fd = fd;
    p.events = POLLIN;
    p.revents = 0;
    return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

static void t_notifier(void)
{
    evx_notifier_t n = NULL;
    evx_fence_t f = NULL;
    evx_stream_t s = NULL;
    conf_gate *g = gate_new();
    uint64_t tok[4];
    uint32_t c = 0;
    int ran = 0, ran2 = 0;

    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((f = make_fence(0, 1, 0)) != NULL);
    REQUIRE_OK(evx_notifier_create(NULL, &n));
    /* a value reached already: delivered by the call */
    REQUIRE_OK(evx_notifier_watch_fence(n, f, 1, 101));
    EXPECT_OK(evx_notifier_read(n, tok, 4, &c));
    EXPECT(c == 1 && tok[0] == 101);
    /* not reached: nothing until a host signal */
    REQUIRE_OK(evx_notifier_watch_fence(n, f, 2, 102));
    EXPECTF(!readable(n, 100), "a watch of 2 was delivered at 1");
    EXPECT_OK(evx_fence_signal_host(f, 2));
    EXPECT(readable(n, 20000));
    EXPECT_OK(evx_notifier_read(n, tok, 4, &c));
    EXPECT(c == 1 && tok[0] == 102);
    /* a signal queued behind a gate */
    REQUIRE_OK(evx_notifier_watch_fence(n, f, 3, 103));
    REQUIRE_OK(gate_launch(s, g));
    REQUIRE_OK(evx_fence_signal(f, s, 3));
    EXPECTF(!readable(n, 100), "a watch was delivered before the stream signalled");
    gate_open(g);
    EXPECT(readable(n, 20000));
    EXPECT_OK(evx_notifier_read(n, tok, 4, &c));
    EXPECT(c == 1 && tok[0] == 103);
    EXPECT_FAIL(evx_notifier_watch_fence(n, f, EVX_FENCE_MAX_VALUE + 1, 1),
                EVX_ERROR_INVALID_VALUE);
    /* a callback: runs once the value is reached, not before */
    EXPECT_FAIL(evx_notifier_watch_fence_callback(n, f, 4, NULL, NULL),
                EVX_ERROR_INVALID_VALUE);
    REQUIRE_OK(evx_notifier_watch_fence_callback(n, f, 4, host_set_flag, &ran));
    sleep_ms(50);
    EXPECTF(!flag_get(&ran), "a callback for 4 ran at 3");
    EXPECT_OK(evx_fence_signal_host(f, 4));
    EXPECT(poll_flag(&ran, 20000));
    /* reached already: runs all the same, never inside the call */
    REQUIRE_OK(evx_notifier_watch_fence_callback(n, f, 4, host_set_flag, &ran2));
    EXPECT(poll_flag(&ran2, 20000));
out:
    gate_open(g);
    if (s != NULL)
        EXPECT_OK(evx_stream_synchronize(s));
    if (n != NULL)
        EXPECT_OK(evx_notifier_destroy(n));
    drop_fence(&f);
    drop_stream(&s);
}

/* ---- claims of several threads ------------------------------------------- */

#define RACE_FENCES 64
#define RACE_VALUES 1000

typedef struct claim_racer {
    evx_fence_t *fences;
    evx_stream_t s;
    volatile int *go;
    unsigned char won[RACE_FENCES][RACE_VALUES + 1];
    int errors;
} claim_racer;

/* Signals every value 1..RACE_VALUES of every fence, on its own stream
 * (every 8th value) or from the host (the others: the shortest call, the
 * tightest race), racing the other thread; records which it was granted. */
static void *claim_race(void *arg)
{
    claim_racer *cr = (claim_racer *)arg;
    int i, v;
    while (!__atomic_load_n(cr->go, __ATOMIC_ACQUIRE))
        ;
    for (i = 0; i < RACE_FENCES; i++)
        for (v = 1; v <= RACE_VALUES; v++) {
            evx_status_t st = (v % 8) ? evx_fence_signal_host(cr->fences[i], (uint64_t)v)
                                      : evx_fence_signal(cr->fences[i], cr->s, (uint64_t)v);
            if (st == EVX_SUCCESS)
                cr->won[i][v] = 1;
            else if (st != EVX_ERROR_INVALID_VALUE && st != EVX_ERROR_ILLEGAL_STATE)
                cr->errors++;
        }
    return NULL;
}

/* Two threads signal the same values of the same fences at once (on some
 * fences after a third thread's claim): each value is granted to one
 * signal at most, and each fence's last claim is the largest value
 * granted. */
static void t_claims_race(void)
{
    evx_fence_t fences[RACE_FENCES] = {NULL};
    claim_racer *cr[2] = {NULL, NULL};
    pthread_t th[2];
    volatile int go = 0;
    int i, v, k, started = 0, twice = 0;

    for (i = 0; i < RACE_FENCES; i++)
        REQUIRE((fences[i] = make_fence(0, 0, 0)) != NULL);
    for (k = 0; k < 2; k++) {
        REQUIRE((cr[k] = (claim_racer *)calloc(1, sizeof *cr[k])) != NULL);
        cr[k]->fences = fences;
        cr[k]->go = &go;
        REQUIRE((cr[k]->s = make_stream(0)) != NULL);
    }
    /* the first fences were claimed by this thread already: a third
     * claimer */
    for (i = 0; i < RACE_FENCES / 4; i++)
        EXPECT_OK(evx_fence_signal_host(fences[i], 1));
    for (k = 0; k < 2; k++)
        REQUIRE(pthread_create(&th[k], NULL, claim_race, cr[k]) == 0 && ++started);
    __atomic_store_n(&go, 1, __ATOMIC_RELEASE);
out:
    __atomic_store_n(&go, 1, __ATOMIC_RELEASE);
    for (k = 0; k < started; k++)
        pthread_join(th[k], NULL);
    if (started == 2) {
        for (i = 0; i < RACE_FENCES; i++)
            for (v = 1; v <= RACE_VALUES; v++)
                twice += cr[0]->won[i][v] && cr[1]->won[i][v];
        EXPECTF(twice == 0, "%d values were granted to both threads", twice);
        EXPECTF(cr[0]->errors == 0 && cr[1]->errors == 0,
                "signals failed with other statuses: %d, %d", cr[0]->errors, cr[1]->errors);
        /* every fence ends at the largest value granted */
        for (i = 0; i < RACE_FENCES; i++) {
            int top = 0;
            for (v = 1; v <= RACE_VALUES; v++)
                if (cr[0]->won[i][v] || cr[1]->won[i][v] || (v == 1 && i < RACE_FENCES / 4))
                    top = v;
            EXPECT_OK(evx_stream_synchronize(cr[0]->s));
            EXPECT_OK(evx_stream_synchronize(cr[1]->s));
            /* (its counter may be below: signals of two streams ran in
             * another order than they were queued, which is the program's
             * to order) */
            if (EXPECT_FAIL(evx_fence_signal_host(fences[i], (uint64_t)top),
                            EVX_ERROR_INVALID_VALUE)) {
                char want[40];
                snprintf(want, sizeof want, "is not above %d,", top);
                EXPECTF(str_has(evx_last_error_message(), want), "fence %d, granted up to %d: %s",
                        i, top, evx_last_error_message());
            }
        }
    }
    for (k = 0; k < 2; k++)
        if (cr[k] != NULL) {
            if (cr[k]->s != NULL)
                EXPECT_OK(evx_stream_synchronize(cr[k]->s));
            drop_stream(&cr[k]->s);
            free(cr[k]);
        }
    for (i = 0; i < RACE_FENCES; i++)
        drop_fence(&fences[i]);
}

/* ---- between processes ------------------------------------------------------ */

static void to_hex(const unsigned char *b, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    size_t i;
    for (i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[2 * n] = '\0';
}

static int from_hex(const char *s, unsigned char *b, size_t n)
{
    size_t i;
    if (strlen(s) != 2 * n)
        return 0;
    for (i = 0; i < n; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1)
            return 0;
        b[i] = (unsigned char)v;
    }
    return 1;
}

static void t_ipc_local(void)
{
    evx_fence_t f = NULL, plain = NULL, out = JUNK(evx_fence_t);
    evx_ipc_fence_handle_t h, h2;
    evx_stream_t s = NULL;

    REQUIRE((f = make_fence(0, 4, EVX_FENCE_INTERPROCESS)) != NULL);
    REQUIRE((plain = make_fence(0, 0, 0)) != NULL);
    REQUIRE((s = make_stream(0)) != NULL);
    EXPECT_FAIL(evx_fence_get_ipc_handle(f, NULL), EVX_ERROR_INVALID_VALUE);
    if (EXPECT_FAIL(evx_fence_get_ipc_handle(plain, &h), EVX_ERROR_INVALID_HANDLE))
        EXPECTF(str_has(evx_last_error_message(), "EVX_FENCE_INTERPROCESS"),
                "message: %s", evx_last_error_message());
    REQUIRE_OK(evx_fence_get_ipc_handle(f, &h));
    REQUIRE_OK(evx_fence_get_ipc_handle(f, &h2));
    EXPECT(memcmp(&h, &h2, sizeof h) == 0);
    /* an IPC fence works in its own process as any fence */
    EXPECT(value_of(f) == 4);
    EXPECT_OK(evx_fence_signal(f, s, 5));
    EXPECT_OK(evx_fence_wait_host(f, 5, 20ull * 1000 * 1000 * 1000));
    /* opening in the exporting process is refused, as for IPC events */
    EXPECT_FAIL(evx_device_open_ipc_fence(0, &h, &out), EVX_ERROR_INVALID_CONTEXT);
    EXPECT(out == NULL);
    out = JUNK(evx_fence_t);
    EXPECT_FAIL(evx_device_open_ipc_fence(0, NULL, &out), EVX_ERROR_INVALID_VALUE);
    EXPECT(out == NULL);
    EXPECT_FAIL(evx_device_open_ipc_fence(0, &h, NULL), EVX_ERROR_INVALID_VALUE);
    out = JUNK(evx_fence_t);
    EXPECT_FAIL(evx_device_open_ipc_fence(-1, &h, &out), EVX_ERROR_INVALID_DEVICE);
    EXPECT(out == NULL);
    /* garbage bytes */
    memset(&h2, 0x41, sizeof h2);
    out = JUNK(evx_fence_t);
    EXPECT_FAIL(evx_device_open_ipc_fence(0, &h2, &out), EVX_ERROR_INVALID_VALUE);
    EXPECT(out == NULL);
    /* a destroyed fence's handle opens no more */
    EXPECT_OK(evx_stream_synchronize(s));
    drop_fence(&f);
    out = JUNK(evx_fence_t);
    EXPECT_FAIL(evx_device_open_ipc_fence(0, &h, &out), EVX_ERROR_INVALID_VALUE);
    EXPECT(out == NULL);
out:
    drop_fence(&f);
    drop_fence(&plain);
    drop_stream(&s);
}

/* A child's fence: opens the handle in EVX_CONF_FENCE (hex) into *f. 0, or
 * 1 when the variable is missing or malformed, 2 when the open failed (the
 * message on stderr, after `who`). */
static int open_env_fence(const char *who, evx_fence_t *f)
{
    const char *hex = getenv("EVX_CONF_FENCE");
    evx_ipc_fence_handle_t h;
    if (hex == NULL || !from_hex(hex, h.reserved, sizeof h.reserved))
        return 1;
    if (evx_device_open_ipc_fence(0, &h, f) != EVX_SUCCESS) {
        fprintf(stderr, "%s: open: %s\n", who, evx_last_error_message());
        return 2;
    }
    return 0;
}

/* The child: opens the fence named by EVX_CONF_FENCE, signals 1 from the
 * host (it is open), has a stream wait for 2 (which the parent signals
 * later) and signal 3 behind it. Exit status 0 when all went as planned. */
int conf_fence_child(void)
{
    evx_fence_t f = NULL;
    evx_stream_t s = NULL;
    evx_status_t st;
    int rc = open_env_fence("child", &f);

    if (rc != 0)
        return 9 + rc;
    if (evx_device_create_stream(0, EVX_STREAM_NON_BLOCKING, 0, &s) != EVX_SUCCESS)
        return 12;
    /* queued before the parent's signal of 2 exists */
    if (evx_stream_wait_fence(s, f, 2) != EVX_SUCCESS ||
        evx_fence_signal(f, s, 3) != EVX_SUCCESS) {
        fprintf(stderr, "child: queue: %s\n", evx_last_error_message());
        return 13;
    }
    /* 1 and 2 are taken by then: the rule holds across processes */
    st = evx_fence_signal_host(f, 2);
    if (st != EVX_ERROR_INVALID_VALUE)
        return 14;
    if (evx_stream_synchronize(s) != EVX_SUCCESS)
        return 15;
    evx_stream_destroy(s);
    evx_fence_destroy(f);
    return 0;
}

/* A child process of mode `mode` with one more variable, run by a thread. */
typedef struct child_run {
    const char *mode;
    char var[40 + 2 * EVX_IPC_FENCE_HANDLE_SIZE];
    int rc;
} child_run;

static void *run_fence_child(void *arg)
{
    child_run *cr = (child_run *)arg;
    const char *vars[2];
    vars[0] = cr->var;
    vars[1] = NULL;
    cr->rc = run_child_env(cr->mode, vars);
    return NULL;
}

static void t_ipc_two_processes(void)
{
    evx_fence_t f = NULL;
    evx_stream_t s = NULL;
    evx_ipc_fence_handle_t h;
    conf_gate *g = gate_new();
    child_run cr;
    pthread_t th;
    int started = 0;
    char hex[2 * EVX_IPC_FENCE_HANDLE_SIZE + 1];

    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((f = make_fence(0, 0, EVX_FENCE_INTERPROCESS)) != NULL);
    REQUIRE_OK(evx_fence_get_ipc_handle(f, &h));
    to_hex(h.reserved, sizeof h.reserved, hex);
    snprintf(cr.var, sizeof cr.var, "EVX_CONF_FENCE=%s", hex);
    cr.mode = "fence-peer";
    cr.rc = -1;
    /* the parent's signals: 1 now would be fine, but the child claims 3
     * first; so the parent signals 1 and 2 from a stream held by a gate,
     * queued before the child starts */
    REQUIRE_OK(gate_launch(s, g));
    REQUIRE_OK(evx_fence_signal(f, s, 1));
    REQUIRE_OK(evx_fence_signal(f, s, 2));
    REQUIRE(pthread_create(&th, NULL, run_fence_child, &cr) == 0);
    started = 1;
    /* the child queues its wait for 2 and its signal of 3; nothing runs
     * while the gate holds the parent's stream */
    sleep_ms(300);
    EXPECT(value_of(f) == 0);
    EXPECT_STATUS(evx_fence_wait_host(f, 3, 0), EVX_ERROR_TIMEOUT);
    gate_open(g);
    /* the child's stream signals 3 once the parent's 2 ran */
    EXPECT_OK(evx_fence_wait_host(f, 3, 30ull * 1000 * 1000 * 1000));
    EXPECT(value_of(f) == 3);
    pthread_join(th, NULL);
    started = 0;
    EXPECTF(cr.rc == 0, "the child exited %d", cr.rc);
    /* the rule that values grow saw the child's 3 */
    EXPECT_FAIL(evx_fence_signal_host(f, 3), EVX_ERROR_INVALID_VALUE);
    EXPECT_OK(evx_fence_signal_host(f, 4));
out:
    gate_open(g);
    if (started)
        pthread_join(th, NULL);
    if (s != NULL)
        EXPECT_OK(evx_stream_synchronize(s));
    drop_fence(&f);
    drop_stream(&s);
}

/* ---- between processes, without a shared /dev/shm ------------------------- */

/* A process without /dev/shm, played in the processes of the case
 * fence.ipc_no_dev_shm: while EVX_CONF_NO_DEV_SHM=1, shm_open refuses the
 * names of evx's fences as it does when /dev/shm is absent (ENOENT). The
 * executable's definition comes first in the lookup of every library's
 * shm_open, the driver's too, whose own names pass through untouched. */
static long conf_shm_refused;

int shm_open(const char *name, int oflag, mode_t mode)
{
    static void *real; /* libc's, looked up once (racing lookups agree) */
    int (*fn)(const char *, int, mode_t);
    void *p;
    const char *off = getenv("EVX_CONF_NO_DEV_SHM");
    if (off != NULL && strcmp(off, "1") == 0 && strncmp(name, "/evx-fence-", 11) == 0) {
        __atomic_add_fetch(&conf_shm_refused, 1, __ATOMIC_RELAXED);
        errno = ENOENT;
        return -1;
    }
    p = __atomic_load_n(&real, __ATOMIC_ACQUIRE);
    if (p == NULL) {
        p = dlsym(RTLD_NEXT, "shm_open");
        __atomic_store_n(&real, p, __ATOMIC_RELEASE);
    }
    if (p == NULL) {
        errno = ENOSYS;
        return -1;
    }
    *(void **)&fn = p;
    return fn(name, oflag, mode);
}

/* The descriptors of this process whose file is a fence's shared object
 * ("/dev/shm/evx-fence-..." or "/memfd:evx-fence-..."): their numbers in
 * fds[] and their links in links[], at most max; the count. */
static int fence_fds(int *fds, char (*links)[256], int max)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;
    if (d == NULL)
        return 0;
    while ((e = readdir(d)) != NULL && n < max) {
        char link[256];
        ssize_t len;
        if (e->d_name[0] == '.')
            continue;
        len = readlinkat(dirfd(d), e->d_name, link, sizeof link - 1);
        if (len <= 0)
            continue;
        link[len] = '\0';
        if (strstr(link, "evx-fence-") == NULL)
            continue;
        fds[n] = atoi(e->d_name);
        memcpy(links[n], link, sizeof link);
        n++;
    }
    closedir(d);
    return n;
}

/* The descriptor (and its link) of the fence object made since fence_fds
 * gave fds[0..n): -1 if none is new. */
static int new_fence_fd(const int *before, int n, char *link_out)
{
    int fds[64], m, i, j;
    char links[64][256];
    m = fence_fds(fds, links, 64);
    for (i = 0; i < m; i++) {
        int seen = 0;
        for (j = 0; j < n; j++)
            seen = seen || fds[i] == before[j];
        if (!seen) {
            memcpy(link_out, links[i], 256);
            return fds[i];
        }
    }
    return -1;
}

/* What a refused open could leak: descriptors, and mappings of fence
 * objects. */
typedef struct open_counts {
    int fds, maps;
} open_counts;

static open_counts count_open(void)
{
    open_counts c = {0, 0};
    DIR *d = opendir("/proc/self/fd");
    FILE *m = fopen("/proc/self/maps", "r");
    char line[512];
    struct dirent *e;
    if (d != NULL) {
        while ((e = readdir(d)) != NULL)
            c.fds += e->d_name[0] != '.';
        closedir(d);
        c.fds--; /* the directory's own descriptor */
    }
    if (m != NULL) {
        while (fgets(line, sizeof line, m) != NULL)
            c.maps += strstr(line, "evx-fence-") != NULL;
        fclose(m);
    }
    return c;
}

#define EXPECT_NOTHING_LEAKED(before)                                              \
    do {                                                                          \
        open_counts now_ = count_open();                                          \
        EXPECTF(now_.fds == (before).fds && now_.maps == (before).maps,           \
                "descriptors %d -> %d, fence mappings %d -> %d", (before).fds,     \
                now_.fds, (before).maps, now_.maps);                              \
    } while (0)

#define PING_NS (30ull * 1000 * 1000 * 1000)

/* The importing side of the ping-pong of fence.ipc_private_dev_shm and
 * fence.ipc_no_dev_shm (mode "fence-importer"): opens EVX_CONF_FENCE;
 * queues a stream wait for 2 before anything signals it, then signals 1
 * from the host; once its stream saw 2 (the exporter's stream), signals 3
 * from its stream; waits on the host for 4 (the exporter's host signal),
 * then signals 5. Exit status 0 when all went as planned. */
int conf_fence_importer_child(void)
{
    evx_fence_t f = NULL;
    evx_stream_t s = NULL;
    int rc = open_env_fence("importer", &f);

    if (rc != 0)
        return 19 + rc;
    if (evx_device_create_stream(0, EVX_STREAM_NON_BLOCKING, 0, &s) != EVX_SUCCESS)
        rc = 22;
    else if (evx_stream_wait_fence(s, f, 2) != EVX_SUCCESS ||
             evx_fence_signal_host(f, 1) != EVX_SUCCESS)
        rc = 23;
    else if (evx_stream_synchronize(s) != EVX_SUCCESS)
        rc = 24;
    else if (evx_fence_signal(f, s, 3) != EVX_SUCCESS || evx_stream_synchronize(s) != EVX_SUCCESS)
        rc = 25;
    else if (evx_fence_wait_host(f, 4, PING_NS) != EVX_SUCCESS)
        rc = 26;
    else if (evx_fence_signal_host(f, 4) != EVX_ERROR_INVALID_VALUE)
        rc = 27; /* the exporter's 4: values grow across processes */
    else if (evx_fence_signal_host(f, 5) != EVX_SUCCESS)
        rc = 28;
    if (rc != 0)
        fprintf(stderr, "importer: step %d: %s\n", rc, evx_last_error_message());
    if (s != NULL)
        evx_stream_destroy(s);
    evx_fence_destroy(f);
    return rc;
}

/* The exporting side: runs the importer on the handle of `f` (at 0) in a
 * child process and plays its part: waits for the importer's 1, signals 2
 * from stream `s`, has `s` wait for 3 (queued, maybe before the importer's
 * signal exists), signals 4 from the host, and sees the importer's 5.
 * 0 when all went as planned, else the step that failed (> 0) or the
 * importer's exit status (< 0: -status). */
static int export_ping_pong(evx_fence_t f, evx_stream_t s)
{
    evx_ipc_fence_handle_t h;
    child_run cr;
    pthread_t th;
    char hex[2 * EVX_IPC_FENCE_HANDLE_SIZE + 1];
    int rc = 0;
    uint64_t v = 0;

    if (evx_fence_get_ipc_handle(f, &h) != EVX_SUCCESS)
        return 1;
    to_hex(h.reserved, sizeof h.reserved, hex);
    snprintf(cr.var, sizeof cr.var, "EVX_CONF_FENCE=%s", hex);
    cr.mode = "fence-importer";
    cr.rc = -1;
    if (pthread_create(&th, NULL, run_fence_child, &cr) != 0)
        return 2;
    if (evx_fence_wait_host(f, 1, PING_NS) != EVX_SUCCESS)
        rc = 3;
    else if (evx_fence_signal(f, s, 2) != EVX_SUCCESS)
        rc = 4;
    else if (evx_stream_wait_fence(s, f, 3) != EVX_SUCCESS)
        rc = 5;
    else if (evx_stream_synchronize(s) != EVX_SUCCESS)
        rc = 6;
    else if (evx_fence_signal_host(f, 4) != EVX_SUCCESS)
        rc = 7;
    if (rc != 0) {
        fprintf(stderr, "exporter: step %d: %s\n", rc, evx_last_error_message());
        /* free the importer from whatever it waits for */
        evx_fence_signal_host(f, 1000);
    }
    pthread_join(th, NULL);
    if (rc == 0 && cr.rc != 0)
        rc = cr.rc > 0 ? -cr.rc : -99;
    if (rc == 0 && (evx_fence_get_value(f, &v) != EVX_SUCCESS || v != 5))
        rc = 8;
    if (rc == 0 && evx_fence_signal_host(f, 5) != EVX_ERROR_INVALID_VALUE)
        rc = 9; /* the importer's 5 */
    return rc;
}

/* Two containers with /dev/shm of their own and one PID namespace: the
 * child cannot open the fence by its name (played by unlinking the name,
 * which is all a private /dev/shm changes for the importer), so it opens it
 * through /proc/<exporter>/fd; then each signals and waits for the other,
 * on the host and on streams. */
static void t_ipc_private_dev_shm(void)
{
    evx_fence_t f = NULL;
    evx_stream_t s = NULL;
    int before[64], n, fd, rc;
    char link[256], links[64][256];

    REQUIRE((s = make_stream(0)) != NULL);
    n = fence_fds(before, links, 64);
    REQUIRE((f = make_fence(0, 0, EVX_FENCE_INTERPROCESS)) != NULL);
    fd = new_fence_fd(before, n, link);
    if (!EXPECTF(fd >= 0, "no descriptor of the new fence's object in /proc/self/fd"))
        goto out;
    if (strncmp(link, "/dev/shm/", 9) == 0)
        EXPECTF(unlink(link) == 0, "unlink(%s): %s", link, strerror(errno));
    else
        conf_note("no /dev/shm here: the fence is %s, which has no name to remove", link);
    rc = export_ping_pong(f, s);
    EXPECTF(rc == 0, "the ping-pong failed: %s %d (the child's stderr is above)",
            rc < 0 ? "the importer exited" : "the exporter's step", rc < 0 ? -rc : rc);
out:
    if (s != NULL)
        EXPECT_OK(evx_stream_synchronize(s));
    drop_fence(&f);
    drop_stream(&s);
}

/* The process of fence.ipc_no_dev_shm that has no /dev/shm (mode
 * "fence-memfd", EVX_CONF_NO_DEV_SHM=1): makes an IPC fence, which evx
 * puts in a memfd, and plays the exporter for an importer of its own. */
int conf_fence_memfd_child(void)
{
    evx_fence_t f = NULL;
    evx_stream_t s = NULL;
    int before[64], n, fd, rc = 0;
    char link[256], links[64][256];

    n = fence_fds(before, links, 64);
    if (evx_device_create_fence(0, 0, EVX_FENCE_INTERPROCESS, &f) != EVX_SUCCESS) {
        fprintf(stderr, "memfd: create: %s\n", evx_last_error_message());
        return 30;
    }
    fd = new_fence_fd(before, n, link);
    if (__atomic_load_n(&conf_shm_refused, __ATOMIC_RELAXED) == 0) {
        fprintf(stderr, "memfd: evx never called shm_open\n");
        rc = 31;
    } else if (fd < 0 || strncmp(link, "/memfd:evx-fence-", 17) != 0) {
        fprintf(stderr, "memfd: the fence's object is %s, not a memfd\n", fd < 0 ? "?" : link);
        rc = 32;
    } else if (evx_device_create_stream(0, EVX_STREAM_NON_BLOCKING, 0, &s) != EVX_SUCCESS) {
        rc = 33;
    } else {
        rc = export_ping_pong(f, s);
        if (rc != 0)
            fprintf(stderr, "memfd: the ping-pong failed: %d\n", rc);
        rc = rc == 0 ? 0 : rc < 0 ? 40 + -rc : 60 + rc;
    }
    if (s != NULL) {
        evx_stream_synchronize(s);
        evx_stream_destroy(s);
    }
    evx_fence_destroy(f);
    return rc;
}

/* A process without /dev/shm still exports: its fence is a memfd, reached
 * by the importer through /proc only. Played in a child whose shm_open
 * refuses evx's names. */
static void t_ipc_no_dev_shm(void)
{
    static const char *const vars[] = {"EVX_CONF_NO_DEV_SHM=1", NULL};
    int rc = run_child_env("fence-memfd", vars);
    EXPECTF(rc == 0, "the child without /dev/shm exited %d (its stderr is above)", rc);
}

/* Handles that lead nowhere, or to another object, are refused with
 * INVALID_VALUE and a message, and leave no descriptor or mapping behind.
 * The forged handles know the layout of fence_ipc.cpp: "evxfenc", the
 * version at byte 7, the nonce at byte 24. */
/* fence.ipc_v1_handle: a handle of evx 1.0 (the page's magic, then the
 * name in /dev/shm) still opens, by name. The page is made here as evx 1.0
 * made it: counter at 0, last at 64, wake at 72, the maker's pid at 76, the
 * magic at 80. A page whose maker is this process is refused, as 1.0 did. */
static void t_ipc_v1_handle(void)
{
    char name[56];
    evx_ipc_fence_handle_t h;
    evx_fence_t f = NULL, out = JUNK(evx_fence_t);
    uint64_t v = 0;
    unsigned char *page = NULL;
    int fd;

    snprintf(name, sizeof name, "/evx-conf-v1-%d", (int)getpid());
    shm_unlink(name);
    REQUIRE((fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600)) >= 0);
    if (!EXPECT(ftruncate(fd, 4096) == 0)) goto out;
    page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (!EXPECT(page != MAP_FAILED)) {
        page = NULL;
        goto out;
    }
    {
        const uint64_t five = 5;
        const int32_t other = (int32_t)getpid() + 1, self = (int32_t)getpid();
        memcpy(page, &five, 8);
        memcpy(page + 64, &five, 8);
        memcpy(page + 76, &self, 4);
        memcpy(page + 80, "evxfence", 8);
        memset(&h, 0, sizeof h);
        memcpy(h.reserved, "evxfence", 8);
        memcpy(h.reserved + 8, name, strlen(name) + 1);
        if (EXPECT_FAIL(evx_device_open_ipc_fence(0, &h, &out), EVX_ERROR_INVALID_CONTEXT))
            EXPECTF(str_has(evx_last_error_message(), "this same process"), "message: %s",
                    evx_last_error_message());
        EXPECT(out == NULL);
        memcpy(page + 76, &other, 4);
    }
    if (!EXPECT_OK(evx_device_open_ipc_fence(0, &h, &f))) goto out;
    EXPECT_OK(evx_fence_get_value(f, &v));
    EXPECTF(v == 5, "value %" PRIu64 ", the page says 5", v);
    if (EXPECT_FAIL(evx_fence_signal_host(f, 5), EVX_ERROR_INVALID_VALUE))
        EXPECTF(str_has(evx_last_error_message(), "not above 5"), "message: %s",
                evx_last_error_message());
    EXPECT_OK(evx_fence_signal_host(f, 9));
    {
        uint64_t value, last;
        memcpy(&value, page, 8);
        memcpy(&last, page + 64, 8);
        EXPECTF(value == 9 && last == 9, "page value %" PRIu64 ", last %" PRIu64 ", not 9",
                value, last);
    }
    EXPECT_OK(evx_fence_wait_host(f, 9, 0));
out:
    if (f) EXPECT_OK(evx_fence_destroy(f));
    if (page) munmap(page, 4096);
    close(fd);
    shm_unlink(name);
}

static void t_ipc_refused(void)
{
    evx_fence_t a = NULL, b = NULL, out = JUNK(evx_fence_t);
    evx_ipc_fence_handle_t ha, forged;
    int before[64], n, fd_a, fd_b;
    char link[256], links[64][256];
    open_counts c0;
    const char *m;

    n = fence_fds(before, links, 64);
    REQUIRE((a = make_fence(0, 0, EVX_FENCE_INTERPROCESS)) != NULL);
    REQUIRE((fd_a = new_fence_fd(before, n, link)) >= 0);
    REQUIRE_OK(evx_fence_get_ipc_handle(a, &ha));
    c0 = count_open();

    /* a wrong nonce: no such name, and the descriptor is another page */
    forged = ha;
    forged.reserved[24] ^= 0x5a;
    if (EXPECT_FAIL(evx_device_open_ipc_fence(0, &forged, &out), EVX_ERROR_INVALID_VALUE))
        EXPECTF(str_has(evx_last_error_message(), "reused descriptor, or a forged handle"),
                "message: %s", evx_last_error_message());
    EXPECT(out == NULL);
    EXPECT_NOTHING_LEAKED(c0);

    /* an older or unknown handle version */
    forged = ha;
    forged.reserved[7] = 99;
    if (EXPECT_FAIL(evx_device_open_ipc_fence(0, &forged, &out), EVX_ERROR_INVALID_VALUE))
        EXPECTF(str_has(evx_last_error_message(), "version 99"), "message: %s",
                evx_last_error_message());
    memset(&forged, 0, sizeof forged);
    memcpy(forged.reserved, "evxfence/evx-fence-1-1-1", 24); /* evx 1.0's, no such name */
    if (EXPECT_FAIL(evx_device_open_ipc_fence(0, &forged, &out), EVX_ERROR_INVALID_VALUE))
        EXPECTF(str_has(evx_last_error_message(), "evx 1.0 fence handle"), "message: %s",
                evx_last_error_message());
    EXPECT(out == NULL);

    /* a destroyed fence whose descriptor number went to another fence:
     * the other fence's page is refused, not opened */
    drop_fence(&a);
    n = fence_fds(before, links, 64);
    REQUIRE((b = make_fence(0, 0, EVX_FENCE_INTERPROCESS)) != NULL);
    fd_b = new_fence_fd(before, n, link);
    if (!EXPECTF(fd_b == fd_a, "the new fence's object has descriptor %d, not %d (the lowest free)",
                 fd_b, fd_a))
        goto out;
    c0 = count_open();
    if (EXPECT_FAIL(evx_device_open_ipc_fence(0, &ha, &out), EVX_ERROR_INVALID_VALUE))
        EXPECTF(str_has(evx_last_error_message(), "is not the page of fence"), "message: %s",
                evx_last_error_message());
    EXPECT(out == NULL);
    EXPECT_NOTHING_LEAKED(c0);

    /* the descriptor closed as well: both ways fail, and the message says
     * what each gave and what containers need */
    drop_fence(&b);
    c0 = count_open();
    if (EXPECT_FAIL(evx_device_open_ipc_fence(0, &ha, &out), EVX_ERROR_INVALID_VALUE)) {
        char path[48];
        m = evx_last_error_message();
        snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)getpid(), fd_a);
        EXPECTF(str_has(m, "by name: No such file or directory") && str_has(m, path) &&
                    str_has(m, "--ipc=host") && str_has(m, "--pid=host"),
                "message: %s", m);
    }
    EXPECT(out == NULL);
    EXPECT_NOTHING_LEAKED(c0);
out:
    drop_fence(&a);
    drop_fence(&b);
}

/* ---- injected faults (host emulation) -------------------------------------- */

/* Arms a fault on the next call of `entry`; 0 when not the emulation. */
static int arm(const char *entry, CUresult status)
{
    const host_debug *hd = host_debug_get();
    if (hd == NULL)
        return 0;
    return hd->set_fault(entry, 1, (int)status) == 0;
}

static void disarm(void)
{
    const host_debug *hd = host_debug_get();
    if (hd != NULL)
        hd->set_fault(NULL, 0, 0);
}

/* The call failed with the injected status and a message naming `entry`. */
#define EXPECT_INJECTED(call, status, entry)                                      \
    do {                                                                          \
        if (EXPECT_FAIL(call, status))                                            \
            EXPECTF(str_has(evx_last_error_message(), entry), "message: %s",     \
                    evx_last_error_message());                                    \
    } while (0)

/* Pinned ranges of the emulation (its pool's pages among them). */
static long long pinned_ranges(void)
{
    const host_debug *hd = host_debug_get();
    evx_host_live l;
    hd->get_live(&l);
    return l.pinned;
}

/* Plain fences of device 0 made until the word pool has no free word, so
 * that the next create pins a page (cuMemHostAlloc and
 * cuMemHostGetDevicePointer): up to `max` in held[], *n of them. Words
 * come from pages of 32; a new page shows as a pinned range. */
static int exhaust_pool(evx_fence_t *held, int max, int *n)
{
    long long before;
    int fresh = -1;
    EXPECT_OK(evx_device_trim(0)); /* idle pages freed: fewer free words */
    before = pinned_ranges();
    for (*n = 0; *n < max; (*n)++) {
        if (fresh == 31)
            return 1;
        if (!EXPECT_OK(evx_device_create_fence(0, 0, 0, &held[*n])))
            return 0;
        if (fresh >= 0) {
            fresh++;
        } else {
            const long long now = pinned_ranges();
            if (now > before)
                fresh = 0;
            else
                before = now; /* a page released meanwhile (an earlier case's) */
        }
    }
    return 0;
}

#define POOL_HOLD 128

/* What a destroy and a trim do with pinned memory, with the driver's
 * release refused: a destroy makes no release (a plain fence's word goes
 * back to evx's pool; an interprocess fence's page is kept, counted kept,
 * until a trim); evx_device_trim releases, and reports a refusal naming
 * the call, keeps the memory, and a later trim releases it. */
static void release_faults(void)
{
    evx_fence_t f = NULL;
    uint64_t pending = 0, kept0 = 0, kept = 0;
    long long fired, pinned0;
    /* the pages of the creates above */
    EXPECT_OK(evx_device_trim(0));
    EXPECT_OK(evx_fence_reclaim(&pending, &kept0));
    pinned0 = pinned_ranges();
    REQUIRE((f = make_fence(0, 0, 0)) != NULL);
    fired = host_debug_get()->faults_fired();
    REQUIRE(arm("cuMemFreeHost", CUDA_ERROR_LAUNCH_FAILED));
    EXPECT_OK(evx_fence_destroy(f));
    f = NULL;
    EXPECTF(host_debug_get()->faults_fired() == fired, "a fence destroy called cuMemFreeHost");
    EXPECT_INJECTED(evx_device_trim(0), EVX_ERROR_LAUNCH_FAILED, "cuMemFreeHost");
    disarm();
    EXPECT(pinned_ranges() == pinned0 + 1); /* refused: kept in the pool */
    EXPECT_OK(evx_device_trim(0));
    EXPECT(pinned_ranges() == pinned0);
    /* an unused interprocess fence's page: kept by its destroy, which
     * makes no driver release */
    REQUIRE((f = make_fence(0, 0, EVX_FENCE_INTERPROCESS)) != NULL);
    fired = host_debug_get()->faults_fired();
    REQUIRE(arm("cuMemHostUnregister", CUDA_ERROR_LAUNCH_FAILED));
    EXPECT_OK(evx_fence_destroy(f));
    f = NULL;
    EXPECT_OK(evx_fence_reclaim(&pending, &kept));
    /* nor anything of evx later, on any thread: a release in the
     * background could deadlock the program (fence_release.cpp) */
    sleep_ms(50);
    EXPECTF(host_debug_get()->faults_fired() == fired,
            "cuMemHostUnregister was called without a trim");
    EXPECTF(pending == 0 && kept == kept0 + 1, "pending %" PRIu64 ", kept %" PRIu64
            " (at the start %" PRIu64 ")", pending, kept, kept0);
    EXPECTF(pinned_ranges() == pinned0 + 1, "pinned %lld, at the start %lld", pinned_ranges(),
            pinned0);
    REQUIRE(arm("cuMemHostUnregister", CUDA_ERROR_LAUNCH_FAILED));
    EXPECT_INJECTED(evx_device_trim(0), EVX_ERROR_LAUNCH_FAILED, "cuMemHostUnregister");
    disarm();
    EXPECT_OK(evx_device_trim(0));
    EXPECT_OK(evx_fence_reclaim(NULL, &kept));
    EXPECT(kept == kept0);
    EXPECTF(pinned_ranges() == pinned0, "pinned %lld, at the start %lld", pinned_ranges(),
            pinned0);
out:
    disarm();
    drop_fence(&f);
}

static void t_faults(void)
{
    static const struct {
        const char *entry;
        unsigned flags;
    } creates[] = {
        {"cuDeviceGetAttribute", 0},
        {"cuMemHostAlloc", 0},
        {"cuMemHostGetDevicePointer", 0},
        {"cuDeviceGetAttribute", EVX_FENCE_INTERPROCESS},
        {"cuMemHostRegister", EVX_FENCE_INTERPROCESS},
        {"cuMemHostGetDevicePointer", EVX_FENCE_INTERPROCESS},
    };
    evx_fence_t f = NULL, out;
    evx_stream_t s = NULL, def = NULL;
    size_t i;

    if (host_debug_get() == NULL) {
        conf_skip("injected faults need the host emulation");
        return;
    }
    for (i = 0; i < sizeof creates / sizeof creates[0]; i++) {
        /* a plain fence pins a page only when its pool has no free word */
        evx_fence_t held[POOL_HOLD] = {0};
        int nheld = 0, k, ready = 1;
        if (creates[i].flags == 0 && strcmp(creates[i].entry, "cuDeviceGetAttribute") != 0)
            ready = EXPECT(exhaust_pool(held, POOL_HOLD, &nheld));
        out = JUNK(evx_fence_t);
        if (ready && arm(creates[i].entry, CUDA_ERROR_OUT_OF_MEMORY)) {
            EXPECT_INJECTED(evx_device_create_fence(0, 0, creates[i].flags, &out),
                            EVX_ERROR_OUT_OF_MEMORY, creates[i].entry);
            disarm();
            EXPECT(out == NULL);
            drop_fence(&out);
            /* and works again */
            if (EXPECT_OK(evx_device_create_fence(0, 0, creates[i].flags, &out)))
                drop_fence(&out);
        }
        out = NULL;
        for (k = 0; k < nheld; k++)
            drop_fence(&held[k]);
    }
    release_faults();
    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((f = make_fence(0, 0, 0)) != NULL);
    REQUIRE(arm("cuStreamWriteValue64", CUDA_ERROR_LAUNCH_FAILED));
    EXPECT_INJECTED(evx_fence_signal(f, s, 1), EVX_ERROR_LAUNCH_FAILED,
                    "cuStreamWriteValue64");
    disarm();
    /* the refused signal left its value unclaimed */
    EXPECT_OK(evx_fence_signal(f, s, 1));
    REQUIRE(arm("cuStreamWaitValue64", CUDA_ERROR_LAUNCH_FAILED));
    EXPECT_INJECTED(evx_stream_wait_fence(s, f, 1), EVX_ERROR_LAUNCH_FAILED,
                    "cuStreamWaitValue64");
    disarm();
    EXPECT_OK(evx_stream_wait_fence(s, f, 1));
    EXPECT_OK(evx_stream_synchronize(s));
    /* the same on a borrowed default stream (the call that makes the
     * device's context current around the driver call) */
    REQUIRE_OK(evx_stream_wrap_external(0, EVX_STREAM_LEGACY, &def));
    REQUIRE(arm("cuStreamWriteValue64", CUDA_ERROR_LAUNCH_FAILED));
    EXPECT_INJECTED(evx_fence_signal(f, def, 2), EVX_ERROR_LAUNCH_FAILED,
                    "cuStreamWriteValue64");
    disarm();
    EXPECT_OK(evx_fence_signal(f, def, 2));
    REQUIRE(arm("cuStreamWaitValue64", CUDA_ERROR_LAUNCH_FAILED));
    EXPECT_INJECTED(evx_stream_wait_fence(def, f, 2), EVX_ERROR_LAUNCH_FAILED,
                    "cuStreamWaitValue64");
    disarm();
    EXPECT_OK(evx_stream_wait_fence(def, f, 2));
    /* a refused make-current gives the claim back as well */
    REQUIRE(arm("cuCtxGetCurrent", CUDA_ERROR_INVALID_CONTEXT));
    EXPECT_INJECTED(evx_fence_signal(f, def, 3), EVX_ERROR_INVALID_CONTEXT,
                    "cuCtxGetCurrent");
    disarm();
    EXPECT_OK(evx_fence_signal(f, def, 3));
    EXPECT_OK(evx_stream_synchronize(def));
    EXPECT_OK(evx_stream_destroy(def));
    def = NULL;
    {
        evx_notifier_t n = NULL;
        REQUIRE_OK(evx_notifier_create(NULL, &n));
        REQUIRE(arm("cuStreamWaitValue64", CUDA_ERROR_LAUNCH_FAILED));
        EXPECT_INJECTED(evx_notifier_watch_fence(n, f, 4, 9), EVX_ERROR_LAUNCH_FAILED,
                        "cuStreamWaitValue64");
        disarm();
        EXPECT_OK(evx_notifier_destroy(n));
    }
    drop_fence(&f);
out:
    disarm();
    drop_fence(&f);
    if (s != NULL)
        EXPECT_OK(evx_stream_synchronize(s));
    drop_stream(&s);
    drop_stream(&def);
}

/* The child of fence.not_supported (mode "fence-no-memops"), run with
 * EVX_HOST_NO_STREAM_MEM_OPS=1: a device without 64-bit stream memory
 * operations. Exit status 0 when the refusal is the documented one. */
int conf_fence_no_memops_child(void)
{
    evx_fence_t f = JUNK(evx_fence_t);
    evx_status_t st = evx_device_create_fence(0, 0, 0, &f);
    if (st != EVX_ERROR_NOT_SUPPORTED) {
        fprintf(stderr, "child: evx_device_create_fence gave %s\n", evx_status_name(st));
        return 1;
    }
    if (f != NULL)
        return 2;
    if (!str_has(evx_last_error_message(),
                 "CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS")) {
        fprintf(stderr, "child: message: %s\n", evx_last_error_message());
        return 3;
    }
    st = evx_device_create_fence(0, 0, EVX_FENCE_INTERPROCESS, &f);
    return st == EVX_ERROR_NOT_SUPPORTED ? 0 : 4;
}

/* A device without the stream memory operations fences need: creation is
 * refused with NOT_SUPPORTED naming the attribute (the emulation plays
 * such a device in a child process). */
static void t_not_supported(void)
{
    static const char *const vars[] = {"EVX_HOST_NO_STREAM_MEM_OPS=1", NULL};
    int rc;
    if (host_debug_get() == NULL) {
        conf_skip("a device without stream memory operations is played by the host "
                  "emulation only");
        return;
    }
    rc = run_child_env("fence-no-memops", vars);
    EXPECTF(rc == 0, "the child exited %d", rc);
}

const conf_case conf_fence_cases[] = {
    {"fence.create", t_create},
    {"fence.bad_handles", t_bad_handles},
    {"fence.host_signal_wait", t_host_signal_wait},
    {"fence.wait_host_sleeps", t_wait_host_sleeps},
    {"fence.monotonic", t_monotonic},
    {"fence.claims_race", t_claims_race},
    {"fence.wait_before_signal", t_wait_before_signal},
    {"fence.host_and_stream", t_host_and_stream},
    {"fence.destroy_while_queued", t_destroy_while_queued},
    {"fence.cross_device", t_cross_device},
    {"fence.notifier", t_notifier},
    {"fence.ipc_local", t_ipc_local},
    {"fence.ipc_two_processes", t_ipc_two_processes},
    {"fence.ipc_private_dev_shm", t_ipc_private_dev_shm},
    {"fence.ipc_no_dev_shm", t_ipc_no_dev_shm},
    {"fence.ipc_refused", t_ipc_refused},
    {"fence.ipc_v1_handle", t_ipc_v1_handle},
    {"fence.faults", t_faults},
    {"fence.not_supported", t_not_supported},
    {NULL, NULL},
};
