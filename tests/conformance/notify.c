/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/* Completion notifiers (evx/notify.h): tokens through the file descriptor,
 * callbacks, what a watch captures, head-of-line blocking between watches,
 * the stream cap, destroy with watches pending, bad input, threads.
 *
 * Host functions of one context run one at a time on the real driver (see
 * docs/host-emulation.md), so a gate (a blocking host function) on device 0
 * would hold back every delivery of device 0, not only the watch it is
 * meant to hold. The cases that need one watch held while another of the
 * same device is delivered therefore hold device 0's stream with a raw
 * cross-device wait on an event behind a gate on device 1 (the driver
 * allows cross-device waits; evx refuses them), and need two devices. */
#define _POSIX_C_SOURCE 200809L

#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "hold_kernel.h" /* tests/gpu */
#include "util.h"

/* Whether the notifier's fd becomes readable within timeout_ms. */
static int fd_readable(evx_notifier_t n, int timeout_ms)
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

/* Reads tokens until `want` have come or timeout_ms passed (waiting on the
 * fd in between); returns how many were read into out. */
static uint32_t read_tokens(evx_notifier_t n, uint64_t *out, uint32_t want,
                            int timeout_ms)
{
    uint32_t got = 0;
    double until = now_ms() + timeout_ms;
    while (got < want) {
        uint32_t c = 0;
        if (!EXPECT_OK(evx_notifier_read(n, out + got, want - got, &c)))
            break;
        got += c;
        if (got >= want)
            break;
        if (now_ms() > until)
            break;
        (void)fd_readable(n, 20);
    }
    return got;
}

static uint64_t queued_count(evx_notifier_t n)
{
    uint64_t q = 99999;
    EXPECT_OK(evx_notifier_get_counts(n, NULL, &q));
    return q;
}

static void on_count(void *user_data)
{
    __atomic_fetch_add((int *)user_data, 1, __ATOMIC_SEQ_CST);
}

static int count_get(int *c) { return __atomic_load_n(c, __ATOMIC_SEQ_CST); }

/* Cleanup: destroy if not NULL, expect success, set to NULL. */
static void drop_notifier(evx_notifier_t *n)
{
    if (*n != NULL)
        EXPECT_OK(evx_notifier_destroy(*n));
    *n = NULL;
}

/* ---- a held stream of device 0 with no host function on device 0 ------- */

typedef struct hold {
    conf_gate *gate;
    evx_stream_t far;    /* device 1: the gate, then far_ev */
    evx_event_t far_ev;
    evx_stream_t near;   /* device 0: waits (raw) for far_ev */
} hold;

/* near is held until hold_release(); work queued on near after this waits. */
static int hold_make(hold *h)
{
    const conf_cu *cu = conf_cu_get();
    void *ns = NULL, *ne = NULL;
    memset(h, 0, sizeof *h);
    if (cu == NULL)
        return 0;
    h->gate = gate_new();
    h->far = make_stream(1);
    h->near = make_stream(0);
    h->far_ev = make_event(1, EVX_EVENT_DISABLE_TIMING);
    if (h->far == NULL || h->near == NULL || h->far_ev == NULL)
        return 0;
    if (!EXPECT_OK(gate_launch(h->far, h->gate)) ||
        !EXPECT_OK(evx_event_record(h->far_ev, h->far)) ||
        !EXPECT_OK(evx_stream_get_native(h->near, &ns)) ||
        !EXPECT_OK(evx_event_get_native(h->far_ev, &ne)))
        return 0;
    return EXPECTF(cu->stream_wait_event((CUstream)ns, (CUevent)ne, 0) ==
                       CUDA_SUCCESS,
                   "raw cuStreamWaitEvent across devices failed");
}

static void hold_release(hold *h)
{
    if (h->gate != NULL)
        gate_open(h->gate);
    if (h->near != NULL)
        EXPECT_OK(evx_stream_synchronize(h->near));
    drop_event(&h->far_ev);
    drop_stream(&h->near);
    drop_stream(&h->far);
}

/* ---- cases -------------------------------------------------------------- */

static void t_never_recorded_at_once(void)
{
    evx_notifier_t n = NULL;
    evx_event_t e = NULL;
    uint64_t tok[4] = {0};
    uint32_t c = 99;
    uint64_t pending = 99, queued = 99;
    int calls = 0;
    REQUIRE_OK(evx_notifier_create(NULL, &n));
    REQUIRE((e = make_event(0, 0)) != NULL);
    EXPECT(!fd_readable(n, 0));
    REQUIRE_OK(evx_notifier_watch(n, e, 0xFEEDFACECAFEBEEFULL));
    /* queued by the call itself: readable at once */
    EXPECT(fd_readable(n, 0));
    EXPECT_OK(evx_notifier_get_counts(n, &pending, &queued));
    EXPECTF(pending == 0 && queued == 1, "pending %llu queued %llu",
            (unsigned long long)pending, (unsigned long long)queued);
    EXPECT_OK(evx_notifier_read(n, tok, 4, &c));
    EXPECTF(c == 1 && tok[0] == 0xFEEDFACECAFEBEEFULL, "read %u tokens", c);
    EXPECT(!fd_readable(n, 0));
    EXPECT_OK(evx_notifier_read(n, tok, 4, &c));
    EXPECT(c == 0);
    /* the callback form runs on a driver thread, never in the call */
    REQUIRE_OK(evx_notifier_watch_callback(n, e, on_count, &calls));
    EXPECT(poll_flag(&calls, 5000));
    EXPECT_OK(evx_notifier_destroy(n));
    n = NULL;
    EXPECT(count_get(&calls) == 1);
out:
    drop_notifier(&n);
    drop_event(&e);
}

static void t_pending_then_delivered(void)
{
    evx_notifier_t n = NULL;
    evx_stream_t s = NULL;
    evx_event_t e = NULL;
    conf_gate *g = gate_new();
    uint64_t tok = 0, pending = 0;
    uint32_t c = 0;
    int calls = 0;
    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((e = make_event(0, 0)) != NULL);
    REQUIRE_OK(evx_notifier_create(NULL, &n));
    REQUIRE_OK(gate_launch(s, g));
    REQUIRE_OK(evx_event_record(e, s));
    REQUIRE_OK(evx_notifier_watch(n, e, 7));
    REQUIRE_OK(evx_notifier_watch_callback(n, e, on_count, &calls));
    EXPECT(!fd_readable(n, 50));
    EXPECT_OK(evx_notifier_read(n, &tok, 1, &c));
    EXPECT(c == 0);
    EXPECT_OK(evx_notifier_get_counts(n, &pending, NULL));
    EXPECTF(pending == 2, "pending %llu, expected 2", (unsigned long long)pending);
    EXPECT(count_get(&calls) == 0);
    gate_open(g);
    EXPECT(fd_readable(n, 5000));
    EXPECT(read_tokens(n, &tok, 1, 5000) == 1 && tok == 7);
    EXPECT_OK(evx_event_query(e));
    EXPECT(poll_flag(&calls, 5000));
out:
    gate_open(g);
    drop_notifier(&n);
    EXPECT(count_get(&calls) == 1);
    drop_event(&e);
    drop_stream(&s);
}

/* Many watches, read back in batches: each token exactly once. */
static void t_batches(void)
{
    enum { N = 200 };
    evx_notifier_t n = NULL;
    evx_stream_t s = NULL;
    evx_event_t ev[N] = {NULL};
    conf_gate *g = gate_new();
    uint64_t got[N + 1];
    int seen[N] = {0};
    uint32_t total = 0, c, i;
    int batches = 0;
    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE_OK(evx_notifier_create(NULL, &n));
    REQUIRE_OK(gate_launch(s, g));
    for (i = 0; i < N; i++) {
        REQUIRE((ev[i] = make_event(0, EVX_EVENT_DISABLE_TIMING)) != NULL);
        REQUIRE_OK(evx_event_record(ev[i], s));
        REQUIRE_OK(evx_notifier_watch(n, ev[i], 1000 + i));
    }
    gate_open(g);
    REQUIRE_OK(evx_stream_synchronize(s));
    /* delivery follows completion; wait until every token is queued */
    {
        double until = now_ms() + 5000;
        while (queued_count(n) < N && now_ms() < until)
            sleep_ms(2);
    }
    EXPECT(fd_readable(n, 0));
    do {
        c = 0;
        REQUIRE_OK(evx_notifier_read(n, got, 16, &c));
        EXPECT(c <= 16);
        for (i = 0; i < c; i++) {
            uint64_t t = got[i];
            if (EXPECTF(t >= 1000 && t < 1000 + N, "token %llu",
                        (unsigned long long)t))
                seen[t - 1000]++;
        }
        total += c;
        batches++;
    } while (c == 16);
    EXPECTF(total == N, "read %u tokens, expected %d", total, N);
    EXPECT(batches == N / 16 + 1);
    for (i = 0; i < N; i++)
        EXPECTF(seen[i] == 1, "token %u seen %d times", 1000 + i, seen[i]);
    EXPECT(!fd_readable(n, 0));
out:
    gate_open(g);
    drop_notifier(&n);
    for (i = 0; i < N; i++)
        drop_event(&ev[i]);
    drop_stream(&s);
}

/* A watch keeps the state it captured: re-recording the event later on an
 * idle stream does not deliver it early; a watch made after the re-record
 * is delivered at once. */
/* The driver blocks cuLaunchHostFunc once a context has 56 host functions
 * queued behind cross-stream waits still pending (measured on an H200,
 * modelled by the emulation). A watch's host function is one, so a
 * notifier keeps its own below that and defers the rest: watching many
 * events behind held work must not wait for the work. A gate that another
 * thread opens after 2.5 s turns a watch that waits into a failure (took
 * too long) instead of a hang. */
static void t_many_pending_never_block(void)
{
    enum { N = 300, NCB = 60, NEV = 8 };
    evx_notifier_t n = NULL;
    evx_stream_t s = NULL;
    evx_event_t ev[NEV] = {0};
    conf_gate *g = gate_new();
    uint64_t tok[N];
    unsigned char seen[N + 1];
    uint64_t pending = 0;
    uint32_t got = 0, i;
    int calls = 0, dup = 0;
    double t0, took;
    memset(seen, 0, sizeof seen);
    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE_OK(evx_notifier_create(NULL, &n));
    REQUIRE_OK(gate_launch(s, g));
    for (i = 0; i < NEV; ++i) {
        REQUIRE((ev[i] = make_event(0, EVX_EVENT_DISABLE_TIMING)) != NULL);
        REQUIRE_OK(evx_event_record(ev[i], s));
    }
    gate_open_later(g, 2500);
    t0 = now_ms();
    for (i = 0; i < N; ++i)
        REQUIRE_OK(evx_notifier_watch(n, ev[i % NEV], (uint64_t)i + 1));
    for (i = 0; i < NCB; ++i)
        REQUIRE_OK(evx_notifier_watch_callback(n, ev[i % NEV], on_count, &calls));
    took = now_ms() - t0;
    EXPECTF(took < 1000.0,
            "%d watches of events behind held work took %.0f ms: a watch call "
            "waited for the work",
            N + NCB, took);
    if (took < 1000.0) {
        EXPECT_OK(evx_notifier_get_counts(n, &pending, NULL));
        EXPECTF(pending == N + NCB, "pending %llu while the work is held, expected %d",
                (unsigned long long)pending, N + NCB);
        EXPECT(count_get(&calls) == 0 && queued_count(n) == 0);
    }
    gate_open(g);
    got = read_tokens(n, tok, N, 20000);
    EXPECTF(got == N, "%u of %d tokens delivered", got, N);
    for (i = 0; i < got; ++i) {
        if (tok[i] < 1 || tok[i] > N || seen[tok[i]]++)
            dup = 1;
    }
    EXPECTF(!dup, "a token came twice or was never given");
    EXPECT_OK(evx_notifier_destroy(n)); /* waits for every callback */
    n = NULL;
    EXPECTF(count_get(&calls) == NCB, "%d of %d callbacks ran", count_get(&calls), NCB);
out:
    gate_open(g);
    drop_notifier(&n);
    for (i = 0; i < NEV; ++i)
        drop_event(&ev[i]);
    drop_stream(&s);
}

/* No watch call launches a host function (the driver can make
 * cuLaunchHostFunc wait for GPU work): the notifier's pump does. Shown on
 * the emulation by refusing the next cuLaunchHostFunc: the watch call still
 * succeeds, the refusal fires on the pump's launch, and the pump delivers
 * the watch at once, its documented answer to a refused launch, while the
 * work watched is still held. Emulation-only: only it can be made to fail. */
static void t_watch_launches_no_host_function(void)
{
    const host_debug *h = host_debug_get();
    evx_notifier_t n = NULL;
    evx_stream_t s = NULL;
    evx_event_t ev = NULL;
    conf_gate *g = NULL;
    uint64_t tok = 0;
    uint32_t got;
    long long fired0;
    evx_status_t st;
    if (h == NULL) {
        conf_skip("the driver is not the host emulation: only it can be made to fail");
        return;
    }
    g = gate_new();
    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE_OK(evx_notifier_create(NULL, &n));
    REQUIRE_OK(gate_launch(s, g));
    REQUIRE((ev = make_event(0, EVX_EVENT_DISABLE_TIMING)) != NULL);
    REQUIRE_OK(evx_event_record(ev, s));
    fired0 = h->faults_fired();
    REQUIRE(h->set_fault("cuLaunchHostFunc", 1, CUDA_ERROR_LAUNCH_FAILED) == 0);
    st = evx_notifier_watch(n, ev, 7);
    EXPECTF(st == EVX_SUCCESS,
            "evx_notifier_watch with the next cuLaunchHostFunc refused -> %s: %s (the "
            "call launched the host function itself)",
            evx_status_name(st), evx_last_error_message());
    got = read_tokens(n, &tok, 1, 5000);
    EXPECTF(got == 1 && tok == 7, "%u tokens (%llu) after the pump's launch was refused",
            got, (unsigned long long)tok);
    EXPECTF(h->faults_fired() == fired0 + 1, "the refusal fired %lld times, expected once",
            h->faults_fired() - fired0);
    EXPECT(evx_event_query(ev) == EVX_ERROR_NOT_READY);
out:
    if (h != NULL)
        h->set_fault(NULL, 0, 0);
    if (g != NULL)
        gate_open(g);
    drop_notifier(&n);
    drop_event(&ev);
    drop_stream(&s);
}

/* The same behind a kernel: there the driver's limit applies (a notifier
 * with no limit of its own blocked the 57th watch until the kernel ended).
 * The program has also recorded 40 blocking_sync events behind the kernel,
 * which use the same budget of the driver (a notifier that launched host
 * functions in the watch call blocked the 17th watch then). The kernel ends
 * by itself after 3 s, so a watch that waits shows as a slow call, not a
 * hang. GPU-only: the emulation runs no kernels. */
static void t_kernel_held_never_block(void)
{
    enum { N = 1000, NEV = 8, NBLOCKING = 40 };
    const conf_cu *cu = conf_cu_get();
    CUcontext ctx = NULL, prev = NULL;
    CUmodule mod = NULL;
    CUfunction fn = NULL;
    CUdeviceptr dflag = 0;
    volatile uint32_t *flag = NULL;
    void *host = NULL, *native = NULL;
    unsigned long long limit = 3000000000ULL;
    void *params[2];
    evx_notifier_t n = NULL;
    evx_stream_t s = NULL;
    evx_event_t ev[NEV] = {0}, blocking[NBLOCKING] = {0};
    uint64_t *tok = NULL;
    uint32_t got = 0, i;
    int retained = 0;
    double t0, took;
    if (cu == NULL)
        return;
    if (cu->module_load_data == NULL || cu->launch_kernel == NULL ||
        cu->mem_host_alloc == NULL || cu->module_get_function == NULL ||
        cu->mem_host_get_device_pointer == NULL || cu->mem_free_host == NULL ||
        cu->module_unload == NULL) {
        conf_skip("the driver has no kernels (cuModuleLoadData, cuLaunchKernel, "
                  "cuMemHostAlloc): the host emulation runs none (GPU-only case, "
                  "docs/conformance.md)");
        return;
    }
    REQUIRE((tok = (uint64_t *)calloc(N, sizeof *tok)) != NULL);
    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE_OK(evx_stream_get_native(s, &native));
    REQUIRE(cu->ctx_get_current(&prev) == CUDA_SUCCESS);
    REQUIRE(cu->primary_retain(&ctx, conf_cu_device(0)) == CUDA_SUCCESS);
    retained = 1;
    REQUIRE(cu->ctx_set_current(ctx) == CUDA_SUCCESS);
    REQUIRE(cu->mem_host_alloc(&host, 64, CU_MEMHOSTALLOC_DEVICEMAP) == CUDA_SUCCESS);
    flag = (volatile uint32_t *)host;
    __atomic_store_n(flag, 0, __ATOMIC_SEQ_CST);
    REQUIRE(cu->mem_host_get_device_pointer(&dflag, host, 0) == CUDA_SUCCESS);
    REQUIRE(cu->module_load_data(&mod, evx_hold_kernel_ptx) == CUDA_SUCCESS);
    REQUIRE(cu->module_get_function(&fn, mod, "evx_hold") == CUDA_SUCCESS);
    params[0] = &dflag;
    params[1] = &limit;
    REQUIRE(cu->launch_kernel(fn, 1, 1, 1, 1, 1, 1, 0, (CUstream)native, params, NULL) ==
            CUDA_SUCCESS);
    REQUIRE_OK(evx_notifier_create(NULL, &n));
    for (i = 0; i < NEV; ++i) {
        REQUIRE((ev[i] = make_event(0, EVX_EVENT_DISABLE_TIMING)) != NULL);
        REQUIRE_OK(evx_event_record(ev[i], s));
    }
    t0 = now_ms();
    for (i = 0; i < NBLOCKING; ++i) {
        REQUIRE((blocking[i] = make_event(0, EVX_EVENT_DISABLE_TIMING |
                                                 EVX_EVENT_BLOCKING_SYNC)) != NULL);
        REQUIRE_OK(evx_event_record(blocking[i], s));
    }
    took = now_ms() - t0;
    EXPECTF(took < 1000.0, "%d records of blocking_sync events took %.0f ms (below the "
            "driver's limit of 56, none should wait)", NBLOCKING, took);
    t0 = now_ms();
    for (i = 0; i < N; ++i)
        REQUIRE_OK(evx_notifier_watch(n, ev[i % NEV], (uint64_t)i + 1));
    took = now_ms() - t0;
    EXPECTF(took < 1000.0,
            "%d watches of events behind a running kernel took %.0f ms: a watch "
            "call waited for the kernel",
            N, took);
    EXPECTF(queued_count(n) == 0 || took >= 1000.0, "tokens came before the kernel ended");
    __atomic_store_n(flag, 1, __ATOMIC_SEQ_CST);
    got = read_tokens(n, tok, N, 20000);
    EXPECTF(got == N, "%u of %d tokens delivered", got, N);
out:
    if (flag != NULL)
        __atomic_store_n(flag, 1, __ATOMIC_SEQ_CST);
    drop_notifier(&n);
    if (s != NULL)
        EXPECT_OK(evx_stream_synchronize(s));
    for (i = 0; i < NEV; ++i)
        drop_event(&ev[i]);
    for (i = 0; i < NBLOCKING; ++i)
        drop_event(&blocking[i]);
    drop_stream(&s);
    if (mod != NULL)
        cu->module_unload(mod);
    if (host != NULL)
        cu->mem_free_host(host);
    if (retained) {
        cu->ctx_set_current(prev);
        cu->primary_release(conf_cu_device(0));
    }
    free(tok);
}

static void t_captures_state(void)
{
    hold h;
    evx_notifier_t n = NULL;
    evx_stream_t idle = NULL;
    evx_event_t e = NULL;
    uint64_t tok = 0;
    int held_ok;
    NEED_DEVICES(2);
    held_ok = hold_make(&h);
    REQUIRE(held_ok);
    REQUIRE((idle = make_stream(0)) != NULL);
    REQUIRE((e = make_event(0, 0)) != NULL);
    REQUIRE_OK(evx_notifier_create(NULL, &n));
    REQUIRE_OK(evx_event_record(e, h.near));
    REQUIRE_OK(evx_notifier_watch(n, e, 1));  /* captures the held record */
    REQUIRE_OK(evx_event_record(e, idle));   /* overwrites the event */
    REQUIRE_OK(evx_event_synchronize(e));
    EXPECT_OK(evx_event_query(e));
    REQUIRE_OK(evx_notifier_watch(n, e, 2));  /* captures the idle record */
    EXPECT(read_tokens(n, &tok, 1, 5000) == 1 && tok == 2);
    /* device 0's host functions are free; watch 1 is held by its capture */
    EXPECT(!fd_readable(n, 100));
    EXPECT(queued_count(n) == 0);
    hold_release(&h);
    EXPECT(read_tokens(n, &tok, 1, 5000) == 1 && tok == 1);
out:
    hold_release(&h);
    drop_notifier(&n);
    drop_event(&e);
    drop_stream(&idle);
}

/* Destroying the event after watching it is allowed, and a new event that
 * reuses its driver event does not change the watch. */
static void t_destroy_event_after_watch(void)
{
    evx_notifier_t n = NULL;
    evx_stream_t s = NULL, idle = NULL;
    evx_event_t e = NULL, f = NULL;
    conf_gate *g = gate_new();
    uint64_t tok = 0;
    int calls = 0;
    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((idle = make_stream(0)) != NULL);
    REQUIRE((e = make_event(0, 0)) != NULL);
    REQUIRE_OK(evx_notifier_create(NULL, &n));
    REQUIRE_OK(gate_launch(s, g));
    REQUIRE_OK(evx_event_record(e, s));
    REQUIRE_OK(evx_notifier_watch(n, e, 42));
    REQUIRE_OK(evx_notifier_watch_callback(n, e, on_count, &calls));
    drop_event(&e);
    REQUIRE((f = make_event(0, 0)) != NULL); /* may reuse e's driver event */
    REQUIRE_OK(evx_event_record(f, idle));
    EXPECT_OK(evx_event_query(f) == EVX_ERROR_NOT_READY
                  ? evx_event_synchronize(f) : EVX_SUCCESS);
    EXPECT(queued_count(n) == 0);
    EXPECT(count_get(&calls) == 0);
    gate_open(g);
    EXPECT(read_tokens(n, &tok, 1, 5000) == 1 && tok == 42);
    EXPECT(poll_flag(&calls, 5000));
out:
    gate_open(g);
    drop_notifier(&n);
    EXPECT(count_get(&calls) == 1);
    drop_event(&e);
    drop_event(&f);
    drop_stream(&s);
    drop_stream(&idle);
}

/* Head-of-line: watch A on a held event, then watch B on an event of the
 * same device that completes later: B is delivered while A is pending. And
 * B on an event already complete: delivered at once. */
static void t_no_head_of_line(void)
{
    hold h;
    evx_notifier_t n = NULL;
    evx_stream_t y = NULL;
    evx_event_t a = NULL, b = NULL, done = NULL;
    uint64_t tok = 0;
    int held_ok, calls_a = 0, calls_b = 0;
    NEED_DEVICES(2);
    held_ok = hold_make(&h);
    REQUIRE(held_ok);
    REQUIRE((y = make_stream(0)) != NULL);
    REQUIRE((a = make_event(0, 0)) != NULL);
    REQUIRE((b = make_event(0, 0)) != NULL);
    REQUIRE((done = make_event(0, 0)) != NULL);
    REQUIRE_OK(evx_notifier_create(NULL, &n));
    REQUIRE_OK(evx_event_record(a, h.near));
    REQUIRE_OK(evx_notifier_watch(n, a, 0xA));
    REQUIRE_OK(evx_notifier_watch_callback(n, a, on_count, &calls_a));
    /* B: pending when watched, completes after about 30 ms */
    REQUIRE_OK(evx_stream_launch_host_func(y, host_sleep_ms, (void *)(intptr_t)30));
    REQUIRE_OK(evx_event_record(b, y));
    REQUIRE_OK(evx_notifier_watch(n, b, 0xB));
    REQUIRE_OK(evx_notifier_watch_callback(n, b, on_count, &calls_b));
    EXPECT(read_tokens(n, &tok, 1, 5000) == 1 && tok == 0xB);
    EXPECT(poll_flag(&calls_b, 5000));
    EXPECT_STATUS(evx_event_query(a), EVX_ERROR_NOT_READY);
    /* an event already complete */
    REQUIRE_OK(evx_event_record(done, y));
    REQUIRE_OK(evx_event_synchronize(done));
    REQUIRE_OK(evx_notifier_watch(n, done, 0xD));
    EXPECT(read_tokens(n, &tok, 1, 0) == 1 && tok == 0xD);
    EXPECT(count_get(&calls_a) == 0 && queued_count(n) == 0);
    hold_release(&h);
    EXPECT(read_tokens(n, &tok, 1, 5000) == 1 && tok == 0xA);
    EXPECT(poll_flag(&calls_a, 5000));
out:
    hold_release(&h);
    drop_notifier(&n);
    drop_event(&a);
    drop_event(&b);
    drop_event(&done);
    drop_stream(&y);
}

/* At the cap (one stream per device here) a watch waits behind the watches
 * queued before it on its stream, as documented. */
static void t_cap(void)
{
    hold h;
    evx_notifier_options_t o;
    evx_notifier_t n = NULL;
    evx_stream_t y = NULL;
    evx_event_t a = NULL, b = NULL;
    uint64_t tok[2] = {0, 0};
    int held_ok;
    NEED_DEVICES(2);
    held_ok = hold_make(&h);
    REQUIRE(held_ok);
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.max_streams_per_device = 1;
    REQUIRE((y = make_stream(0)) != NULL);
    REQUIRE((a = make_event(0, 0)) != NULL);
    REQUIRE((b = make_event(0, 0)) != NULL);
    REQUIRE_OK(evx_notifier_create(&o, &n));
    REQUIRE_OK(evx_event_record(a, h.near));
    REQUIRE_OK(evx_notifier_watch(n, a, 0xA));
    REQUIRE_OK(evx_stream_launch_host_func(y, host_sleep_ms, (void *)(intptr_t)20));
    REQUIRE_OK(evx_event_record(b, y));
    REQUIRE_OK(evx_notifier_watch(n, b, 0xB));
    EXPECT_OK(evx_event_synchronize(b));
    EXPECT(!fd_readable(n, 100));
    EXPECT(queued_count(n) == 0);
    hold_release(&h);
    EXPECT(read_tokens(n, tok, 2, 5000) == 2);
    EXPECTF(tok[0] == 0xA && tok[1] == 0xB, "order %llx %llx",
            (unsigned long long)tok[0], (unsigned long long)tok[1]);
out:
    hold_release(&h);
    drop_notifier(&n);
    drop_event(&a);
    drop_event(&b);
    drop_stream(&y);
}

/* The pump delivers a batch of tokens whose internal stream is idle (its
 * waits done, every earlier host function of the stream run) without a host
 * function: short work completes before the pump gets to its watch, and a
 * host function would cost a wake of the driver's thread. Shown on the
 * emulation: 32 watches held (the pump's cap of host functions in flight on
 * a device) keep the pump from a 33rd watch until its event has completed
 * and its stream has had time to go idle; then the next cuLaunchHostFunc is
 * refused and must not be reached. Emulation-only (fault injection), two
 * devices (the hold: no host function of device 0 holds the others). */
static void t_idle_lane_tokens_without_host_function(void)
{
    enum { HELD = 32 };
    const host_debug *hd = host_debug_get();
    hold h;
    evx_notifier_options_t o;
    evx_notifier_t n = NULL;
    evx_stream_t y = NULL;
    evx_event_t held[HELD], x = NULL;
    evx_host_live live0, live;
    uint64_t tok[HELD + 1];
    uint32_t got, i;
    int seen_x = 0, held_ok = 0;
    long long fired0;
    double until;
    memset(held, 0, sizeof held);
    memset(&h, 0, sizeof h);
    if (hd == NULL) {
        conf_skip("the driver is not the host emulation: only it can be made to fail");
        return;
    }
    NEED_DEVICES(2);
    held_ok = hold_make(&h);
    REQUIRE(held_ok);
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.max_streams_per_device = EVX_NOTIFIER_MAX_STREAMS;
    REQUIRE_OK(evx_notifier_create(&o, &n));
    hd->get_live(&live0);
    for (i = 0; i < HELD; ++i) {
        REQUIRE((held[i] = make_event(0, EVX_EVENT_DISABLE_TIMING)) != NULL);
        REQUIRE_OK(evx_event_record(held[i], h.near));
        REQUIRE_OK(evx_notifier_watch(n, held[i], i + 1));
    }
    until = now_ms() + 5000; /* the pump launches the 32 host functions */
    for (;;) {
        hd->get_live(&live);
        if (live.host_funcs >= live0.host_funcs + HELD || now_ms() > until)
            break;
        sleep_ms(1);
    }
    if (!EXPECTF(live.host_funcs == live0.host_funcs + HELD,
                 "%lld host functions in flight, %d expected",
                 live.host_funcs - live0.host_funcs, HELD))
        goto out;
    REQUIRE((y = make_stream(0)) != NULL);
    REQUIRE((x = make_event(0, EVX_EVENT_DISABLE_TIMING)) != NULL);
    REQUIRE_OK(evx_stream_launch_host_func(y, host_sleep_ms, (void *)(intptr_t)20));
    REQUIRE_OK(evx_event_record(x, y));
    REQUIRE_OK(evx_notifier_watch(n, x, 99)); /* pending: on a stream of its own */
    EXPECT_OK(evx_event_synchronize(x));
    sleep_ms(200); /* its internal stream passes the wait */
    EXPECTF(queued_count(n) == 0, "a token came before the held watches were released");
    fired0 = hd->faults_fired();
    REQUIRE(hd->set_fault("cuLaunchHostFunc", 1, CUDA_ERROR_LAUNCH_FAILED) == 0);
    hold_release(&h);
    got = read_tokens(n, tok, HELD + 1, 5000);
    EXPECTF(got == HELD + 1, "%u of %d tokens delivered", got, HELD + 1);
    for (i = 0; i < got; ++i)
        seen_x += tok[i] == 99;
    EXPECTF(seen_x == 1, "the idle stream's token came %d times", seen_x);
    EXPECTF(hd->faults_fired() == fired0,
            "the pump called cuLaunchHostFunc for a batch of tokens whose stream was idle");
out:
    if (hd != NULL)
        hd->set_fault(NULL, 0, 0);
    hold_release(&h);
    drop_notifier(&n);
    for (i = 0; i < HELD; ++i)
        drop_event(&held[i]);
    drop_event(&x);
    drop_stream(&y);
}

/* Callbacks too, while none of the device's is in flight: a callback of a
 * never-recorded event (an internal stream with nothing to wait for) runs
 * on the pump, and holds it for 300 ms; a second callback watch, of work
 * that completes 100 ms later, then finds its stream idle and none of the
 * device in flight, and runs on the pump after the first. With every
 * cuLaunchHostFunc refused from the start, no refusal fires, and the two
 * callbacks run once each, one after the other. Emulation-only (fault
 * injection). */
typedef struct pump_cb {
    int running, ran, overlapped;
} pump_cb;

static void pump_cb_slow(void *p)
{
    pump_cb *c = (pump_cb *)p;
    if (flag_get(&c->running))
        flag_set(&c->overlapped, 1);
    flag_set(&c->running, 1);
    sleep_ms(300);
    flag_set(&c->running, 0);
    flag_set(&c->ran, flag_get(&c->ran) + 1);
}

static void pump_cb_fast(void *p)
{
    pump_cb *c = (pump_cb *)p;
    if (flag_get(&c->running))
        flag_set(&c->overlapped, 1);
    flag_set(&c->ran, flag_get(&c->ran) + 1);
}

static void t_idle_lane_callbacks_without_host_function(void)
{
    const host_debug *hd = host_debug_get();
    evx_notifier_t n = NULL;
    evx_stream_t y = NULL;
    evx_event_t never = NULL, x = NULL;
    pump_cb c;
    long long fired0 = 0;
    double until;
    memset(&c, 0, sizeof c);
    if (hd == NULL) {
        conf_skip("the driver is not the host emulation: only it can be made to fail");
        return;
    }
    REQUIRE_OK(evx_notifier_create(NULL, &n));
    REQUIRE((y = make_stream(0)) != NULL);
    REQUIRE((never = make_event(0, EVX_EVENT_DISABLE_TIMING)) != NULL);
    REQUIRE((x = make_event(0, EVX_EVENT_DISABLE_TIMING)) != NULL);
    /* x completes in 100 ms, while the first callback holds the pump */
    REQUIRE_OK(evx_stream_launch_host_func(y, host_sleep_ms, (void *)(intptr_t)100));
    REQUIRE_OK(evx_event_record(x, y));
    fired0 = hd->faults_fired();
    REQUIRE(hd->set_fault("cuLaunchHostFunc", 1, CUDA_ERROR_LAUNCH_FAILED) == 0);
    REQUIRE_OK(evx_notifier_watch_callback(n, never, pump_cb_slow, &c));
    REQUIRE(poll_flag(&c.running, 5000)); /* on the pump, which it holds */
    REQUIRE(evx_event_query(x) == EVX_ERROR_NOT_READY);
    REQUIRE_OK(evx_notifier_watch_callback(n, x, pump_cb_fast, &c));
    EXPECT_OK(evx_event_synchronize(x));
    until = now_ms() + 5000;
    while (flag_get(&c.ran) < 2 && now_ms() < until)
        sleep_ms(1);
    EXPECTF(flag_get(&c.ran) == 2, "%d of 2 callbacks ran", flag_get(&c.ran));
    EXPECTF(!flag_get(&c.overlapped), "two callbacks of one device ran at once");
    EXPECTF(hd->faults_fired() == fired0,
            "the pump called cuLaunchHostFunc for callbacks whose stream was idle");
out:
    if (hd != NULL)
        hd->set_fault(NULL, 0, 0);
    if (x != NULL)
        EXPECT_OK(evx_event_synchronize(x));
    drop_notifier(&n); /* waits for both callbacks */
    drop_event(&never);
    drop_event(&x);
    drop_stream(&y);
}

/* The callbacks of one device run one at a time, also now that the pump
 * runs some: a callback running in a host function (held 300 ms) keeps the
 * pump from running the next callback of the device itself, even one of a
 * never-recorded event whose stream is idle; that one runs after it. */
static void t_callbacks_one_at_a_time(void)
{
    evx_notifier_t n = NULL;
    evx_stream_t g = NULL;
    evx_event_t a = NULL, never = NULL;
    conf_gate *gate = gate_new();
    pump_cb c;
    double until;
    memset(&c, 0, sizeof c);
    REQUIRE_OK(evx_notifier_create(NULL, &n));
    REQUIRE((g = make_stream(0)) != NULL);
    REQUIRE((a = make_event(0, EVX_EVENT_DISABLE_TIMING)) != NULL);
    REQUIRE((never = make_event(0, EVX_EVENT_DISABLE_TIMING)) != NULL);
    REQUIRE_OK(gate_launch(g, gate));
    REQUIRE_OK(evx_event_record(a, g));
    REQUIRE_OK(evx_notifier_watch_callback(n, a, pump_cb_slow, &c));
    sleep_ms(50); /* the pump launches a's host function behind the gate */
    gate_open(gate);
    REQUIRE(poll_flag(&c.running, 5000)); /* a's callback runs, for 300 ms */
    REQUIRE_OK(evx_notifier_watch_callback(n, never, pump_cb_fast, &c));
    until = now_ms() + 5000;
    while (flag_get(&c.ran) < 2 && now_ms() < until)
        sleep_ms(1);
    EXPECTF(flag_get(&c.ran) == 2, "%d of 2 callbacks ran", flag_get(&c.ran));
    EXPECTF(!flag_get(&c.overlapped), "two callbacks of one device ran at once");
out:
    gate_open(gate);
    drop_notifier(&n); /* waits for both callbacks */
    drop_event(&a);
    drop_event(&never);
    drop_stream(&g);
}

/* Destroy with watches pending waits for them: every callback has run
 * exactly once when it returns; unread tokens go with the notifier. */
typedef struct destroy_arg {
    evx_notifier_t n;
    int *calls;
    int calls_at_return;
    int returned;
    evx_status_t st;
} destroy_arg;

static void *destroy_main(void *p)
{
    destroy_arg *a = (destroy_arg *)p;
    a->st = evx_notifier_destroy(a->n);
    a->calls_at_return = count_get(a->calls);
    flag_set(&a->returned, 1);
    return NULL;
}

static void t_destroy_waits(void)
{
    evx_notifier_t n = NULL;
    evx_stream_t s = NULL;
    evx_event_t e = NULL, fresh = NULL;
    conf_gate *g = gate_new();
    int calls = 0, i, fd = -1;
    destroy_arg a;
    pthread_t th;
    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((e = make_event(0, 0)) != NULL);
    REQUIRE((fresh = make_event(0, 0)) != NULL);
    REQUIRE_OK(evx_notifier_create(NULL, &n));
    REQUIRE_OK(gate_launch(s, g));
    REQUIRE_OK(evx_event_record(e, s));
    for (i = 0; i < 5; i++)
        REQUIRE_OK(evx_notifier_watch_callback(n, e, on_count, &calls));
    REQUIRE_OK(evx_notifier_watch(n, e, 9));
    REQUIRE_OK(evx_notifier_watch(n, fresh, 10)); /* queued, never read */
    REQUIRE_OK(evx_notifier_get_fd(n, &fd));
    memset(&a, 0, sizeof a);
    a.n = n;
    a.calls = &calls;
    REQUIRE(pthread_create(&th, NULL, destroy_main, &a) == 0);
    sleep_ms(100);
    EXPECT(!flag_get(&a.returned));
    EXPECT(count_get(&calls) == 0);
    /* the handle died at once */
    EXPECT_FAIL(evx_notifier_watch(n, fresh, 11), EVX_ERROR_INVALID_HANDLE);
    gate_open(g);
    pthread_join(th, NULL);
    n = NULL;
    EXPECT_OK(a.st);
    EXPECTF(a.calls_at_return == 5, "%d callbacks had run when destroy returned",
            a.calls_at_return);
    EXPECT_FAIL(evx_notifier_get_fd(a.n, &fd), EVX_ERROR_INVALID_HANDLE);
    EXPECT(str_has(evx_last_error_message(), "stale"));
    EXPECT_FAIL(evx_notifier_destroy(a.n), EVX_ERROR_INVALID_HANDLE);
out:
    gate_open(g);
    drop_notifier(&n);
    drop_event(&e);
    drop_event(&fresh);
    drop_stream(&s);
}

/* A callback that destroys a notifier is refused (it would wait for
 * itself); the notifier stays alive. */
static evx_status_t from_callback_status = -1;
static int from_callback_done;

static void destroy_from_callback(void *p)
{
    from_callback_status = evx_notifier_destroy((evx_notifier_t)p);
    flag_set(&from_callback_done, 1);
}

static void t_destroy_from_callback(void)
{
    evx_notifier_t n = NULL;
    evx_event_t e = NULL;
    int fd = -1;
    REQUIRE((e = make_event(0, 0)) != NULL);
    REQUIRE_OK(evx_notifier_create(NULL, &n));
    REQUIRE_OK(evx_notifier_watch_callback(n, e, destroy_from_callback, n));
    EXPECT(poll_flag(&from_callback_done, 5000));
    EXPECT_STATUS(from_callback_status, EVX_ERROR_NOT_PERMITTED);
    EXPECT_OK(evx_notifier_get_fd(n, &fd));
out:
    drop_notifier(&n);
    drop_event(&e);
}

static void dummy_cb(void *p) { (void)p; }

static void t_bad_input(void)
{
    evx_notifier_t n = NULL, dead = NULL;
    evx_notifier_options_t o;
    evx_event_t e = NULL, dead_e = NULL;
    evx_stream_t s = NULL;
    uint64_t tok[2], pending;
    uint32_t c = 77;
    int fd = 5;
    const char *m;
    REQUIRE((e = make_event(0, 0)) != NULL);
    REQUIRE((dead_e = make_event(0, 0)) != NULL);
    REQUIRE((s = make_stream(0)) != NULL);
    drop_event(&dead_e);
    dead_e = NULL;
    REQUIRE_OK(evx_notifier_create(NULL, &dead));
    REQUIRE_OK(evx_notifier_destroy(dead));

    /* create */
    EXPECT_FAIL(evx_notifier_create(NULL, NULL), EVX_ERROR_INVALID_VALUE);
    memset(&o, 0, sizeof o);
    o.struct_size = 8;
    n = JUNK(evx_notifier_t);
    EXPECT_FAIL(evx_notifier_create(&o, &n), EVX_ERROR_INVALID_VALUE);
    EXPECT(n == NULL);
    EXPECT(str_has(evx_last_error_message(), "struct_size"));
    o.struct_size = sizeof o;
    o.flags = 0x10;
    n = JUNK(evx_notifier_t);
    EXPECT_FAIL(evx_notifier_create(&o, &n), EVX_ERROR_INVALID_VALUE);
    EXPECT(n == NULL);
    EXPECT(str_has(evx_last_error_message(), "0x10"));
    o.flags = 0;
    o.max_streams_per_device = EVX_NOTIFIER_MAX_STREAMS + 1;
    EXPECT_FAIL(evx_notifier_create(&o, &n), EVX_ERROR_INVALID_VALUE);
    EXPECT(msg_has_int(evx_last_error_message(), EVX_NOTIFIER_MAX_STREAMS + 1));
    o.max_streams_per_device = EVX_NOTIFIER_MAX_STREAMS;
    REQUIRE_OK(evx_notifier_create(&o, &n));

    /* handles: null, forged, wrong kind, stale */
    EXPECT_FAIL(evx_notifier_get_fd(NULL, &fd), EVX_ERROR_INVALID_HANDLE);
    EXPECT(str_has(evx_last_error_message(), "null notifier"));
    EXPECT_FAIL(evx_notifier_get_fd(n, NULL), EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_notifier_get_fd(FORGE(evx_notifier_t, 0x1234567890ULL), &fd),
                EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_notifier_get_fd((evx_notifier_t)(void *)e, &fd),
                EVX_ERROR_INVALID_HANDLE);
    m = evx_last_error_message();
    EXPECTF(str_has(m, "is an event, not a notifier"), "\"%s\"", m);
    EXPECT_FAIL(evx_notifier_get_fd(dead, &fd), EVX_ERROR_INVALID_HANDLE);
    EXPECT(str_has(evx_last_error_message(), "stale"));

    /* watch */
    EXPECT_FAIL(evx_notifier_watch(NULL, e, 1), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_notifier_watch(dead, e, 1), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_notifier_watch(n, NULL, 1), EVX_ERROR_INVALID_HANDLE);
    EXPECT(str_has(evx_last_error_message(), "null event"));
    EXPECT_FAIL(evx_notifier_watch(n, dead_e, 1), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_notifier_watch(n, AS_EVENT(s), 1), EVX_ERROR_INVALID_HANDLE);
    EXPECT(str_has(evx_last_error_message(), "is a stream, not an event"));
    EXPECT_FAIL(evx_notifier_watch((evx_notifier_t)(void *)e, e, 1),
                EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_notifier_watch_callback(n, e, NULL, NULL),
                EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_notifier_watch_callback(dead, e, dummy_cb, NULL),
                EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_notifier_watch_callback(n, dead_e, dummy_cb, NULL),
                EVX_ERROR_INVALID_HANDLE);
    /* nothing was watched by the failures */
    EXPECT_OK(evx_notifier_get_counts(n, &pending, NULL));
    EXPECT(pending == 0 && queued_count(n) == 0);

    /* read, counts */
    EXPECT_FAIL(evx_notifier_read(n, tok, 2, NULL), EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_notifier_read(n, NULL, 2, &c), EVX_ERROR_INVALID_VALUE);
    EXPECT(c == 0);
    c = 77;
    EXPECT_FAIL(evx_notifier_read(n, tok, 0, &c), EVX_ERROR_INVALID_VALUE);
    EXPECT(c == 0);
    EXPECT_FAIL(evx_notifier_read(dead, tok, 2, &c), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_notifier_get_counts(n, NULL, NULL), EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_notifier_get_counts(dead, &pending, NULL),
                EVX_ERROR_INVALID_HANDLE);

    /* destroy */
    EXPECT_FAIL(evx_notifier_destroy(NULL), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_notifier_destroy(dead), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_notifier_destroy((evx_notifier_t)(void *)s),
                EVX_ERROR_INVALID_HANDLE);
    EXPECT_OK(evx_notifier_destroy(n));
    EXPECT_FAIL(evx_notifier_destroy(n), EVX_ERROR_INVALID_HANDLE);
    n = NULL;
    /* the stream and event were not touched by the wrong-kind calls */
    EXPECT_OK(evx_event_query(e));
    EXPECT_OK(evx_stream_query(s));
out:
    drop_notifier(&n);
    drop_event(&e);
    drop_stream(&s);
}

/* ---- threads ------------------------------------------------------------ */

enum { TH_WATCHERS = 4, TH_PER = 150 };

typedef struct th_shared {
    evx_notifier_t n;
    conf_gate *gate;
    int device_count;
    int seen[TH_WATCHERS * TH_PER];
    int stop_reader;
    int failures;
} th_shared;

typedef struct th_arg {
    th_shared *sh;
    int id;
} th_arg;

static void *watcher_main(void *p)
{
    th_arg *a = (th_arg *)p;
    th_shared *sh = a->sh;
    int dev = a->id % sh->device_count, i;
    evx_stream_t s = NULL;
    evx_event_t e = NULL;
    if (evx_device_create_stream(dev, EVX_STREAM_NON_BLOCKING, 0, &s) ||
        evx_device_create_event(dev, EVX_EVENT_DISABLE_TIMING, &e)) {
        __atomic_fetch_add(&sh->failures, 1, __ATOMIC_SEQ_CST);
        return NULL;
    }
    for (i = 0; i < TH_PER; i++) {
        /* some events pending when watched, some complete, some never
         * recorded; the event is re-recorded right after each watch */
        if (i % 3 != 2 && evx_event_record(e, s))
            __atomic_fetch_add(&sh->failures, 1, __ATOMIC_SEQ_CST);
        if (i % 10 == 0 &&
            evx_stream_launch_host_func(s, host_sleep_ms, (void *)(intptr_t)1))
            __atomic_fetch_add(&sh->failures, 1, __ATOMIC_SEQ_CST);
        if (evx_notifier_watch(sh->n, e, (uint64_t)(a->id * TH_PER + i)))
            __atomic_fetch_add(&sh->failures, 1, __ATOMIC_SEQ_CST);
        if (i % 3 == 2) {
            evx_event_destroy(e);
            if (evx_device_create_event(dev, EVX_EVENT_DISABLE_TIMING, &e)) {
                __atomic_fetch_add(&sh->failures, 1, __ATOMIC_SEQ_CST);
                break;
            }
        }
    }
    evx_stream_synchronize(s);
    evx_event_destroy(e);
    evx_stream_destroy(s);
    return NULL;
}

static void *reader_main(void *p)
{
    th_shared *sh = (th_shared *)p;
    int fd = -1;
    uint64_t buf[32];
    if (evx_notifier_get_fd(sh->n, &fd))
        return NULL;
    for (;;) {
        struct pollfd pf;
        uint32_t c = 0, i;
        pf.fd = fd;
        pf.events = POLLIN;
        pf.revents = 0;
        (void)poll(&pf, 1, 10);
        do {
            if (evx_notifier_read(sh->n, buf, 32, &c)) {
                __atomic_fetch_add(&sh->failures, 1, __ATOMIC_SEQ_CST);
                return NULL;
            }
            for (i = 0; i < c; i++)
                if (buf[i] < TH_WATCHERS * TH_PER)
                    __atomic_fetch_add(&sh->seen[buf[i]], 1, __ATOMIC_SEQ_CST);
        } while (c == 32);
        if (flag_get(&sh->stop_reader)) {
            uint64_t q = 1;
            if (evx_notifier_get_counts(sh->n, NULL, &q) || q == 0)
                return NULL;
        }
    }
}

static void t_threads(void)
{
    static th_shared sh;
    th_arg args[TH_WATCHERS];
    pthread_t w[TH_WATCHERS], rd[2];
    int i, made = 0, readers = 0, missing = 0, twice = 0;
    double until;
    uint64_t pending = 1;
    memset(&sh, 0, sizeof sh);
    sh.device_count = conf_device_count();
    REQUIRE_OK(evx_notifier_create(NULL, &sh.n));
    for (i = 0; i < 2; i++)
        if (EXPECT(pthread_create(&rd[i], NULL, reader_main, &sh) == 0))
            readers++;
    for (i = 0; i < TH_WATCHERS; i++) {
        args[i].sh = &sh;
        args[i].id = i;
        if (EXPECT(pthread_create(&w[i], NULL, watcher_main, &args[i]) == 0))
            made++;
    }
    for (i = 0; i < made; i++)
        pthread_join(w[i], NULL);
    until = now_ms() + 10000;
    while (now_ms() < until) {
        EXPECT_OK(evx_notifier_get_counts(sh.n, &pending, NULL));
        if (pending == 0)
            break;
        sleep_ms(5);
    }
    EXPECTF(pending == 0, "%llu watches still pending", (unsigned long long)pending);
    flag_set(&sh.stop_reader, 1);
    for (i = 0; i < readers; i++)
        pthread_join(rd[i], NULL);
    EXPECTF(sh.failures == 0, "%d calls failed in the threads", sh.failures);
    for (i = 0; i < TH_WATCHERS * TH_PER; i++) {
        if (sh.seen[i] == 0)
            missing++;
        else if (sh.seen[i] > 1)
            twice++;
    }
    EXPECTF(missing == 0 && twice == 0, "%d tokens never read, %d read twice",
            missing, twice);
out:
    drop_notifier(&sh.n);
}

/* Destroy racing with watches from other threads: each watch either fails
 * with INVALID_HANDLE or has its callback run before destroy returns. */
typedef struct race {
    evx_notifier_t n;
    evx_event_t e;
    int ok;
    int bad;
    int other;
    int calls;
} race;

static void *race_main(void *p)
{
    race *r = (race *)p;
    int i;
    for (i = 0; i < 2000; i++) {
        evx_status_t st = evx_notifier_watch_callback(r->n, r->e, on_count, &r->calls);
        if (st == EVX_SUCCESS)
            __atomic_fetch_add(&r->ok, 1, __ATOMIC_SEQ_CST);
        else if (st == EVX_ERROR_INVALID_HANDLE)
            __atomic_fetch_add(&r->bad, 1, __ATOMIC_SEQ_CST);
        else
            __atomic_fetch_add(&r->other, 1, __ATOMIC_SEQ_CST);
        if (st == EVX_ERROR_INVALID_HANDLE)
            break;
    }
    return NULL;
}

static void t_destroy_races_watch(void)
{
    static race r;
    evx_stream_t s = NULL;
    pthread_t th[3];
    int i, made = 0, calls;
    memset(&r, 0, sizeof r);
    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((r.e = make_event(0, EVX_EVENT_DISABLE_TIMING)) != NULL);
    REQUIRE_OK(evx_stream_launch_host_func(s, host_sleep_ms, (void *)(intptr_t)5));
    REQUIRE_OK(evx_event_record(r.e, s));
    REQUIRE_OK(evx_notifier_create(NULL, &r.n));
    for (i = 0; i < 3; i++)
        if (EXPECT(pthread_create(&th[i], NULL, race_main, &r) == 0))
            made++;
    sleep_ms(2);
    EXPECT_OK(evx_notifier_destroy(r.n));
    calls = count_get(&r.calls);
    for (i = 0; i < made; i++)
        pthread_join(th[i], NULL);
    EXPECTF(r.other == 0, "%d watches failed with another status", r.other);
    EXPECTF(calls == r.ok, "%d callbacks had run when destroy returned, %d watches "
            "succeeded", calls, r.ok);
    conf_note("%d watches before destroy, %d refused after", r.ok, r.bad);
out:
    drop_event(&r.e);
    drop_stream(&s);
}

const conf_case conf_notify_cases[] = {
    {"notify.never_recorded_at_once", t_never_recorded_at_once},
    {"notify.pending_then_delivered", t_pending_then_delivered},
    {"notify.batches", t_batches},
    {"notify.many_pending_never_block", t_many_pending_never_block},
    {"notify.kernel_held_never_block_gpu_only", t_kernel_held_never_block},
    {"notify.watch_launches_no_host_function", t_watch_launches_no_host_function},
    {"notify.captures_state", t_captures_state},
    {"notify.destroy_event_after_watch", t_destroy_event_after_watch},
    {"notify.no_head_of_line", t_no_head_of_line},
    {"notify.cap", t_cap},
    {"notify.idle_lane_tokens_without_host_function", t_idle_lane_tokens_without_host_function},
    {"notify.idle_lane_callbacks_without_host_function",
     t_idle_lane_callbacks_without_host_function},
    {"notify.callbacks_one_at_a_time", t_callbacks_one_at_a_time},
    {"notify.destroy_waits", t_destroy_waits},
    {"notify.destroy_from_callback", t_destroy_from_callback},
    {"notify.bad_input", t_bad_input},
    {"notify.threads", t_threads},
    {"notify.destroy_races_watch", t_destroy_races_watch},
    {NULL, NULL},
};
