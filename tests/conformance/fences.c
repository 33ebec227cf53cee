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

#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
    if (EXPECT_FAIL(evx_fence_signal(f, s1, 1), EVX_ERROR_INVALID_HANDLE))
        EXPECTF(msg_names_device(evx_last_error_message(), 0) &&
                    msg_names_device(evx_last_error_message(), 1),
                "message: %s", evx_last_error_message());
    EXPECT_FAIL(evx_stream_wait_fence(s1, f, 1), EVX_ERROR_INVALID_HANDLE);
    /* the refused signal claimed nothing */
    EXPECT_OK(evx_fence_signal_host(f, 1));
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

/* The child: opens the fence named by EVX_CONF_FENCE, signals 1 from the
 * host (it is open), has a stream wait for 2 (which the parent signals
 * later) and signal 3 behind it. Exit status 0 when all went as planned. */
int conf_fence_child(void)
{
    const char *hex = getenv("EVX_CONF_FENCE");
    evx_ipc_fence_handle_t h;
    evx_fence_t f = NULL;
    evx_stream_t s = NULL;
    evx_status_t st;

    if (hex == NULL || !from_hex(hex, h.reserved, sizeof h.reserved))
        return 10;
    if (evx_device_open_ipc_fence(0, &h, &f) != EVX_SUCCESS) {
        fprintf(stderr, "child: open: %s\n", evx_last_error_message());
        return 11;
    }
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

typedef struct child_run {
    char var[40 + 2 * EVX_IPC_FENCE_HANDLE_SIZE];
    int rc;
} child_run;

static void *run_fence_child(void *arg)
{
    child_run *cr = (child_run *)arg;
    const char *vars[2];
    vars[0] = cr->var;
    vars[1] = NULL;
    cr->rc = run_child_env("fence-peer", vars);
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
        out = JUNK(evx_fence_t);
        REQUIRE(arm(creates[i].entry, CUDA_ERROR_OUT_OF_MEMORY));
        EXPECT_INJECTED(evx_device_create_fence(0, 0, creates[i].flags, &out),
                        EVX_ERROR_OUT_OF_MEMORY, creates[i].entry);
        disarm();
        EXPECT(out == NULL);
        /* and works again */
        REQUIRE_OK(evx_device_create_fence(0, 0, creates[i].flags, &out));
        drop_fence(&out);
    }
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
    /* destroying an unused fence frees its memory; a failing free is
     * reported, and the handle is dead all the same */
    drop_fence(&f);
    REQUIRE((f = make_fence(0, 0, 0)) != NULL);
    REQUIRE(arm("cuMemFreeHost", CUDA_ERROR_LAUNCH_FAILED));
    EXPECT_INJECTED(evx_fence_destroy(f), EVX_ERROR_LAUNCH_FAILED, "cuMemFreeHost");
    disarm();
    EXPECT_FAIL(evx_fence_destroy(f), EVX_ERROR_INVALID_HANDLE);
    f = NULL;
    /* the same for an unused IPC fence's page: cuMemHostUnregister */
    REQUIRE((f = make_fence(0, 0, EVX_FENCE_INTERPROCESS)) != NULL);
    REQUIRE(arm("cuMemHostUnregister", CUDA_ERROR_LAUNCH_FAILED));
    EXPECT_INJECTED(evx_fence_destroy(f), EVX_ERROR_LAUNCH_FAILED, "cuMemHostUnregister");
    disarm();
    EXPECT_FAIL(evx_fence_destroy(f), EVX_ERROR_INVALID_HANDLE);
    f = NULL;
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
    {"fence.wait_before_signal", t_wait_before_signal},
    {"fence.host_and_stream", t_host_and_stream},
    {"fence.destroy_while_queued", t_destroy_while_queued},
    {"fence.cross_device", t_cross_device},
    {"fence.notifier", t_notifier},
    {"fence.ipc_local", t_ipc_local},
    {"fence.ipc_two_processes", t_ipc_two_processes},
    {"fence.faults", t_faults},
    {"fence.not_supported", t_not_supported},
    {NULL, NULL},
};
