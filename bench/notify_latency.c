/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/*
 * evx-notify-latency: how long after GPU work completes each way of
 * waiting for it sees that, in C, with no Python in the path. It splits the
 * latency of evx.aio (docs/async.md) into the driver's part and evx's.
 *
 * A trial holds a stream, records an event after the hold, starts one
 * waiter, lets it settle (--settle-us), then releases the hold at t0 and
 * takes the time t1 at which the waiter knows. The hold is a one-thread
 * kernel spinning on a flag in mapped host memory (--hold kernel, the
 * default on a GPU): the event completes when the kernel ends, as after
 * real work. --hold hostfn holds with a host function spinning on the flag
 * instead, blocked on a semaphore that the release posts (the only hold
 * the host emulation has; bench/py_async_bench.py has both).
 *
 * Waiters (one per trial, the kinds interleaved trial by trial):
 *   spin       a thread in cuEventSynchronize, default event (the driver
 *              spins or yields: the context's scheduling flags)
 *   blocking   a thread in cuEventSynchronize, CU_EVENT_BLOCKING_SYNC event
 *   hostfn     cuLaunchHostFunc on the held stream itself, after the event
 *   lane       cuStreamWaitEvent on another stream + cuLaunchHostFunc there
 *              (the notifier's mechanism, without evx)
 *   lane_hi    the same on a stream of the greatest priority
 *   notifier   evx_notifier_watch; a thread in poll() on the notifier's fd
 *   callback   evx_notifier_watch_callback
 *
 * Prints the median and 90th percentile of t1 - t0 per waiter, and for the
 * blocking ones the CPU time of the process while the hold lasts.
 *
 * --diag instead times the calls a watch makes while a kernel holds the
 * stream, to find any that waits for it, and records of many events
 * (blocking_sync and default) behind it.
 *
 * --interference instead asks whether watches cost other GPU work
 * anything: a chain of kernels of a known length on a worker stream, timed
 * on the GPU with events and on the host (the submitting loop), in four
 * conditions alternated round by round:
 *   plain      the chain alone
 *   pending    the chain while 1,000 watches wait on another stream held
 *              by a kernel (the notifier's lanes and pump busy)
 *   records    an event recorded on the worker after every kernel
 *   watched    the same, each record watched by the notifier
 *   lane       the same, each record followed by cuStreamWaitEvent and
 *              cuLaunchHostFunc on one other stream: a watch without evx
 * A kernel is held on that other stream in every condition, so only the
 * watches differ between plain and pending; records, watched and lane
 * differ only by the calls after each record, whose time is reported.
 *
 *   evx-notify-latency [--trials N] [--settle-us N] [--hold kernel|hostfn]
 *                      [--diag | --interference [--rounds N]]
 *
 * On the host emulation the figures say nothing about a GPU.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"
#include "hold_kernel.h" /* tests/gpu: the kernel that holds a stream */
#include "evx/evx.h"

enum { W_SPIN, W_BLOCKING, W_HOSTFN, W_LANE, W_LANE_HI, W_NOTIFIER, W_CALLBACK, W_COUNT };
static const char *const kNames[W_COUNT] = {"spin",    "blocking", "hostfn",  "lane",
                                            "lane_hi", "notifier", "callback"};

typedef struct ctx {
    bench_raw raw;
    int kernel_hold;
    CUmodule mod;
    CUfunction fn;
    volatile uint32_t *flag; /* --hold kernel: mapped host memory */
    CUdeviceptr dflag;
    uint64_t limit_ns;
    CUstream held, lane, lane_hi, worker;
    evx_stream_t held_evx;
    evx_event_t ev, ev_blocking;
    CUevent cu_ev, cu_ev_blocking;
    CUevent sync_ev;          /* what sync_thread waits for: one of the two */
    evx_notifier_t notifier;
    int fd;
    sem_t done;               /* posted by a waiter when it has stamped */
    sem_t release;            /* --hold hostfn: what the host function waits on */
    double stamp;             /* t1: written before sem_post, read after sem_wait */
} ctx;

static void stamp_now(ctx *c)
{
    c->stamp = bench_now_ns();
    sem_post(&c->done);
}

static void CUDA_CB host_hold(void *p)
{
    ctx *c = p;
    while (sem_wait(&c->release) != 0 && errno == EINTR) {
    }
}

static void CUDA_CB host_stamp(void *p) { stamp_now(p); }
static void notify_stamp(void *p) { stamp_now(p); }

/* The spin and blocking waiters: cuEventSynchronize of c->sync_ev. */
static void *sync_thread(void *p)
{
    ctx *c = p;
    CHECK_RAW(&c->raw, c->raw.CtxSetCurrent(c->raw.ctx));
    CHECK_RAW(&c->raw, c->raw.EventSynchronize(c->sync_ev));
    stamp_now(c);
    return NULL;
}

static void *poll_thread(void *p)
{
    ctx *c = p;
    struct pollfd pfd = {c->fd, POLLIN, 0};
    uint64_t token = 0;
    uint32_t n = 0;
    for (;;) {
        if (poll(&pfd, 1, -1) < 0 && errno != EINTR) {
            perror("poll");
            exit(1);
        }
        CHECK_EVX(evx_notifier_read(c->notifier, &token, 1, &n));
        if (n == 1) break;
    }
    stamp_now(c);
    return NULL;
}

static double cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* One trial of waiter w; returns t1 - t0 in ns, and the process's CPU
 * share during the settle time in *cpu. */
static double trial(ctx *c, int w, long settle_us, double *cpu)
{
    bench_raw *raw = &c->raw;
    pthread_t th;
    int thread = 0;
    if (c->kernel_hold) {
        __atomic_store_n(c->flag, 0, __ATOMIC_SEQ_CST);
        void *params[] = {&c->dflag, &c->limit_ns};
        CHECK_RAW(raw, raw->LaunchKernel(c->fn, 1, 1, 1, 1, 1, 1, 0, c->held, params, NULL));
    } else {
        CHECK_RAW(raw, raw->LaunchHostFunc(c->held, host_hold, c));
    }
    evx_event_t ev = w == W_BLOCKING ? c->ev_blocking : c->ev;
    CHECK_EVX(evx_event_record(ev, c->held_evx));
    switch (w) {
    case W_SPIN:
    case W_BLOCKING:
        c->sync_ev = w == W_SPIN ? c->cu_ev : c->cu_ev_blocking;
        thread = !pthread_create(&th, NULL, sync_thread, c);
        break;
    case W_HOSTFN:
        CHECK_RAW(raw, raw->LaunchHostFunc(c->held, host_stamp, c));
        break;
    case W_LANE:
    case W_LANE_HI: {
        CUstream s = w == W_LANE ? c->lane : c->lane_hi;
        CHECK_RAW(raw, raw->StreamWaitEvent(s, c->cu_ev, 0));
        CHECK_RAW(raw, raw->LaunchHostFunc(s, host_stamp, c));
        break;
    }
    case W_NOTIFIER:
        CHECK_EVX(evx_notifier_watch(c->notifier, c->ev, 1));
        thread = !pthread_create(&th, NULL, poll_thread, c);
        break;
    case W_CALLBACK:
        CHECK_EVX(evx_notifier_watch_callback(c->notifier, c->ev, notify_stamp, c));
        break;
    }
    if ((w == W_SPIN || w == W_BLOCKING || w == W_NOTIFIER) && !thread) {
        fprintf(stderr, "evx-notify-latency: pthread_create failed\n");
        exit(1);
    }
    double cpu0 = cpu_ns(), wall0 = bench_now_ns();
    sleep_us(settle_us);
    *cpu = (cpu_ns() - cpu0) / (bench_now_ns() - wall0);
    double t0 = bench_now_ns();
    if (c->kernel_hold)
        __atomic_store_n(c->flag, 1, __ATOMIC_RELEASE);
    else
        sem_post(&c->release);
    while (sem_wait(&c->done) != 0 && errno == EINTR) {
    }
    double t1 = c->stamp;
    if (thread) pthread_join(th, NULL);
    CHECK_RAW(raw, raw->StreamSynchronize(c->held));
    CHECK_RAW(raw, raw->StreamSynchronize(c->lane));
    CHECK_RAW(raw, raw->StreamSynchronize(c->lane_hi));
    return t1 - t0;
}

static void CUDA_CB noop_fn(void *p) { (void)p; }

/* --diag: which calls made while a kernel holds the stream wait for it.
 * Each phase launches the hold (ending by itself after limit_ns), records
 * the event after it, times the calls, then releases the hold. */
static void diag(ctx *c)
{
    bench_raw *raw = &c->raw;
    const char *names[] = {
        "cuStreamCreateWithPriority (a new stream)",
        "cuStreamWaitEvent on a new stream",
        "cuLaunchHostFunc on a new stream",
        "cuStreamWaitEvent + cuLaunchHostFunc on an existing stream",
        "evx_notifier_watch, a new notifier (makes its lanes)",
        "evx_notifier_watch, lanes made",
        "cuStreamWaitEvent + cuLaunchHostFunc on one stream, many",
        "evx_notifier_watch, many",
        "cuStreamWaitEvent on one stream, many",
        "cuLaunchHostFunc on one stream, many (no waits)",
        "evx_event_record, a blocking_sync event each, many",
        "evx_event_record, a default event each, many",
        "evx_notifier_watch, many, after 40 blocking_sync records",
        "cuStreamWaitEvent + cuLaunchHostFunc, many, after 40 blocking_sync records",
    };
    enum { NREC = 256 };
    static evx_event_t recs[NREC];
    printf("\n# calls made while a kernel holds the stream (it ends by itself after %.0f ms)\n",
           c->limit_ns / 1e6);
    printf("| call | calls | slowest (ms) | first call over 100 ms | total (ms) |\n"
           "|---|---|---|---|---|\n");
    for (int phase = 0; phase < (int)(sizeof names / sizeof names[0]); ++phase) {
        void *params[] = {&c->dflag, &c->limit_ns};
        __atomic_store_n(c->flag, 0, __ATOMIC_SEQ_CST);
        CHECK_RAW(raw, raw->LaunchKernel(c->fn, 1, 1, 1, 1, 1, 1, 0, c->held, params, NULL));
        CHECK_EVX(evx_event_record(c->ev, c->held_evx));
        CUstream made[8] = {0};
        evx_notifier_t fresh = NULL;
        int n = phase >= 12 ? 200 : phase >= 10 ? NREC : phase == 0 ? 8
                : phase >= 6 ? 4096 : phase >= 4 ? 16 : 1;
        for (int i = 0; phase >= 10 && i < NREC; ++i)
            CHECK_EVX(evx_device_create_event(
                0, EVX_EVENT_DISABLE_TIMING | (phase != 11 ? EVX_EVENT_BLOCKING_SYNC : 0),
                &recs[i]));
        for (int i = 0; phase >= 12 && i < 40; ++i) /* untimed: below the limit */
            CHECK_EVX(evx_event_record(recs[i], c->held_evx));
        int first_slow = -1;
        double slowest = 0, t_all = bench_now_ns();
        if (phase == 1 || phase == 2)
            CHECK_RAW(raw, raw->StreamCreateWithPriority(&made[0], CU_STREAM_NON_BLOCKING, 0));
        if (phase == 4) CHECK_EVX(evx_notifier_create(NULL, &fresh));
        t_all = bench_now_ns();
        for (int i = 0; i < n; ++i) {
            double t = bench_now_ns();
            switch (phase) {
            case 0:
                CHECK_RAW(raw, raw->StreamCreateWithPriority(&made[i], CU_STREAM_NON_BLOCKING, 0));
                break;
            case 1:
                CHECK_RAW(raw, raw->StreamWaitEvent(made[0], c->cu_ev, 0));
                break;
            case 2:
                CHECK_RAW(raw, raw->LaunchHostFunc(made[0], noop_fn, NULL));
                break;
            case 3:
                CHECK_RAW(raw, raw->StreamWaitEvent(c->lane, c->cu_ev, 0));
                CHECK_RAW(raw, raw->LaunchHostFunc(c->lane, noop_fn, NULL));
                break;
            case 4:
                CHECK_EVX(evx_notifier_watch(fresh, c->ev, (uint64_t)i));
                break;
            case 5:
            case 7:
                CHECK_EVX(evx_notifier_watch(c->notifier, c->ev, (uint64_t)i));
                break;
            case 6:
                CHECK_RAW(raw, raw->StreamWaitEvent(c->lane, c->cu_ev, 0));
                CHECK_RAW(raw, raw->LaunchHostFunc(c->lane, noop_fn, NULL));
                break;
            case 8:
                CHECK_RAW(raw, raw->StreamWaitEvent(c->lane, c->cu_ev, 0));
                break;
            case 9:
                CHECK_RAW(raw, raw->LaunchHostFunc(c->held, noop_fn, NULL));
                break;
            case 10:
            case 11:
                CHECK_EVX(evx_event_record(recs[i], c->held_evx));
                break;
            case 12:
                CHECK_EVX(evx_notifier_watch(c->notifier, c->ev, (uint64_t)i));
                break;
            case 13:
                CHECK_RAW(raw, raw->StreamWaitEvent(c->lane, c->cu_ev, 0));
                CHECK_RAW(raw, raw->LaunchHostFunc(c->lane, noop_fn, NULL));
                break;
            }
            t = bench_now_ns() - t;
            if (t > 100e6 && first_slow < 0) first_slow = i;
            if (t > slowest) slowest = t;
        }
        t_all = bench_now_ns() - t_all;
        __atomic_store_n(c->flag, 1, __ATOMIC_RELEASE);
        CHECK_RAW(raw, raw->StreamSynchronize(c->held));
        for (int i = 0; i < 8; ++i)
            if (made[i]) {
                CHECK_RAW(raw, raw->StreamSynchronize(made[i]));
                CHECK_RAW(raw, raw->StreamDestroy(made[i]));
            }
        CHECK_RAW(raw, raw->StreamSynchronize(c->lane));
        if (fresh) CHECK_EVX(evx_notifier_destroy(fresh));
        for (int i = 0; phase >= 10 && i < NREC; ++i) CHECK_EVX(evx_event_destroy(recs[i]));
        printf("| %s | %d | %.3f | %d | %.3f |\n", names[phase], n, slowest / 1e6, first_slow,
               t_all / 1e6);
        fflush(stdout);
    }
    /* drain the tokens of the watch phases */
    uint64_t tokens[256];
    uint32_t got = 0;
    do CHECK_EVX(evx_notifier_read(c->notifier, tokens, 256, &got));
    while (got == 256);
}

/* Reads tokens until `want` have come back (a thread-less drain). */
static void drain_tokens(ctx *c, long want)
{
    uint64_t tokens[256];
    uint32_t got = 0;
    struct pollfd pfd = {c->fd, POLLIN, 0};
    while (want > 0) {
        if (poll(&pfd, 1, 10000) <= 0) {
            fprintf(stderr, "evx-notify-latency: %ld tokens did not come back in 10 s\n", want);
            exit(1);
        }
        do {
            CHECK_EVX(evx_notifier_read(c->notifier, tokens, 256, &got));
            want -= got;
        } while (got == 256);
    }
}

enum { I_PLAIN, I_PENDING, I_RECORDS, I_WATCHED, I_LANE, I_COUNT };

/* --interference: see the top of the file. */
static void interference(ctx *c, int rounds, int kernels, uint64_t kernel_ns)
{
    static const char *const names[I_COUNT] = {
        "plain: the chain alone",
        "pending: 1,000 watches waiting on another stream",
        "records: an event recorded after every kernel",
        "watched: the same, each record watched",
        "lane: the same, each record waited for by a host function on another stream, without evx",
    };
    enum { PENDING = 1000 };
    bench_raw *raw = &c->raw;
    CUevent t0, t1;
    CHECK_RAW(raw, raw->EventCreate(&t0, 0));
    CHECK_RAW(raw, raw->EventCreate(&t1, 0));
    evx_stream_t worker_evx = NULL;
    CHECK_EVX(evx_stream_wrap_external(0, c->worker, &worker_evx));
    evx_event_t mark = NULL;
    CHECK_EVX(evx_device_create_event(0, EVX_EVENT_DISABLE_TIMING, &mark));
    void *native = NULL;
    CHECK_EVX(evx_event_get_native(mark, &native));
    CUevent cu_mark = native;
    CUdeviceptr never = c->dflag + 32; /* kept 0: each kernel runs kernel_ns */
    __atomic_store_n(c->flag + 8, 0, __ATOMIC_SEQ_CST);
    uint64_t forever = 10ull * 1000000000ull;
    double *gpu = calloc((size_t)rounds * I_COUNT, sizeof *gpu);
    double *host = calloc((size_t)rounds * I_COUNT, sizeof *host);
    double *inside = calloc((size_t)rounds * I_COUNT, sizeof *inside);
    /* per kernel: the launch, the record, and the slowest launch of a round */
    double *launch = calloc((size_t)rounds * I_COUNT, sizeof *launch);
    double *record = calloc((size_t)rounds * I_COUNT, sizeof *record);
    double *slowest = calloc((size_t)rounds * I_COUNT, sizeof *slowest);
    if (!gpu || !host || !inside || !launch || !record || !slowest) exit(1);
    printf("\n# does watching cost other GPU work anything? %d rounds; a chain of %d "
           "one-thread kernels of %.0f us each on a worker stream\n",
           rounds, kernels, kernel_ns / 1e3);
    for (int r = -1; r < rounds; ++r) { /* round -1 warms every path */
        for (int k = 0; k < I_COUNT; ++k) {
            /* the other stream is held by a kernel in every condition */
            __atomic_store_n(c->flag, 0, __ATOMIC_SEQ_CST);
            void *hold[] = {&c->dflag, &forever};
            CHECK_RAW(raw, raw->LaunchKernel(c->fn, 1, 1, 1, 1, 1, 1, 0, c->held, hold, NULL));
            CHECK_EVX(evx_event_record(c->ev, c->held_evx));
            long watches = 0;
            if (k == I_PENDING)
                for (; watches < PENDING; ++watches)
                    CHECK_EVX(evx_notifier_watch(c->notifier, c->ev, (uint64_t)watches));
            double h = bench_now_ns(), in = 0, la = 0, re = 0, slow = 0;
            CHECK_RAW(raw, raw->EventRecord(t0, c->worker));
            for (int i = 0; i < kernels; ++i) {
                void *params[] = {&never, &kernel_ns};
                double t = bench_now_ns();
                CHECK_RAW(raw, raw->LaunchKernel(c->fn, 1, 1, 1, 1, 1, 1, 0, c->worker, params,
                                                 NULL));
                double dt = bench_now_ns() - t;
                la += dt;
                if (dt > slow) slow = dt;
                if (k == I_PLAIN || k == I_PENDING) continue;
                t = bench_now_ns();
                CHECK_EVX(evx_event_record(mark, worker_evx));
                re += bench_now_ns() - t;
                t = bench_now_ns();
                if (k == I_WATCHED)
                    CHECK_EVX(evx_notifier_watch(c->notifier, mark, (uint64_t)watches++));
                if (k == I_LANE) {
                    CHECK_RAW(raw, raw->StreamWaitEvent(c->lane, cu_mark, 0));
                    CHECK_RAW(raw, raw->LaunchHostFunc(c->lane, noop_fn, NULL));
                }
                in += bench_now_ns() - t;
            }
            CHECK_RAW(raw, raw->EventRecord(t1, c->worker));
            h = bench_now_ns() - h;
            CHECK_RAW(raw, raw->EventSynchronize(t1));
            float ms = 0;
            CHECK_RAW(raw, raw->EventElapsedTime(&ms, t0, t1));
            __atomic_store_n(c->flag, 1, __ATOMIC_RELEASE);
            CHECK_RAW(raw, raw->StreamSynchronize(c->held));
            CHECK_RAW(raw, raw->StreamSynchronize(c->lane));
            drain_tokens(c, watches);
            if (r >= 0) {
                gpu[k * rounds + r] = ms * 1e3 / kernels;
                host[k * rounds + r] = h / 1e3 / kernels;
                inside[k * rounds + r] = in / 1e3 / kernels;
                launch[k * rounds + r] = la / 1e3 / kernels;
                record[k * rounds + r] = re / 1e3 / kernels;
                slowest[k * rounds + r] = slow / 1e3;
            }
        }
    }
    printf("| condition | GPU time per kernel (us), median | min | max | host time per kernel "
           "submitted (us), median | of which the calls after the record |\n"
           "|---|---|---|---|---|---|\n");
    for (int k = 0; k < I_COUNT; ++k) {
        double *g = gpu + k * rounds;
        double med = bench_median(g, rounds); /* sorts */
        printf("| %s | %.3f | %.3f | %.3f | %.3f | %.3f |\n", names[k], med, g[0],
               g[rounds - 1], bench_median(host + k * rounds, rounds),
               bench_median(inside + k * rounds, rounds));
    }
    printf("\nWhere the submitting thread's time goes (us per kernel, medians over the "
           "rounds; the slowest single launch of a round, median and largest over the "
           "rounds)\n\n"
           "| condition | launch | record | calls after the record | slowest launch, "
           "median | largest |\n|---|---|---|---|---|---|\n");
    for (int k = 0; k < I_COUNT; ++k) {
        double *sl = slowest + k * rounds;
        double sl_med = bench_median(sl, rounds); /* sorts */
        printf("| %s | %.3f | %.3f | %.3f | %.1f | %.1f |\n", names[k],
               bench_median(launch + k * rounds, rounds),
               bench_median(record + k * rounds, rounds),
               bench_median(inside + k * rounds, rounds), sl_med, sl[rounds - 1]);
    }
    fflush(stdout);
    free(gpu);
    free(host);
    free(inside);
    free(launch);
    free(record);
    free(slowest);
    CHECK_EVX(evx_event_destroy(mark));
    CHECK_EVX(evx_stream_destroy(worker_evx));
    raw->EventDestroy(t0);
    raw->EventDestroy(t1);
}

static double pct(double *v, int n, double p)
{
    bench_median(v, n); /* sorts */
    int i = (int)(p / 100.0 * (n - 1) + 0.5);
    return v[i];
}

int main(int argc, char **argv)
{
    long trials = 200, settle_us = 2000;
    int hold = -1; /* -1: kernel where the driver can, else hostfn */
    int want_diag = 0, want_interference = 0;
    long rounds = 15;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--trials") && i + 1 < argc) {
            if ((trials = bench_parse_long("--trials", argv[++i], 1, 1000000)) < 0) return 2;
        } else if (!strcmp(argv[i], "--settle-us") && i + 1 < argc) {
            if ((settle_us = bench_parse_long("--settle-us", argv[++i], 1, 10000000)) < 0)
                return 2;
        } else if (!strcmp(argv[i], "--hold") && i + 1 < argc) {
            ++i;
            if (!strcmp(argv[i], "kernel"))
                hold = 1;
            else if (!strcmp(argv[i], "hostfn"))
                hold = 0;
            else {
                fprintf(stderr, "--hold takes kernel or hostfn, not %s\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--diag")) {
            want_diag = 1;
        } else if (!strcmp(argv[i], "--interference")) {
            want_interference = 1;
        } else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
            if ((rounds = bench_parse_long("--rounds", argv[++i], 1, 100000)) < 0) return 2;
        } else if (!strcmp(argv[i], "--quick")) {
            trials = 3;
            settle_us = 200;
        } else {
            fprintf(stderr,
                    "usage: %s [--trials N] [--settle-us N] [--hold kernel|hostfn] "
                    "[--diag | --interference [--rounds N]] [--quick]\n",
                    argv[0]);
            return 2;
        }
    }

    static ctx c;
    bench_raw *raw = &c.raw;
    if (bench_raw_open(raw) != 0) return 1;
    const int can_kernel = raw->ModuleLoadData && raw->ModuleGetFunction &&
                           raw->LaunchKernel && raw->MemHostAlloc &&
                           raw->MemHostGetDevicePointer && raw->MemFreeHost;
    if (hold == 1 && !can_kernel) {
        fprintf(stderr, "evx-notify-latency: this driver cannot load a kernel; use --hold hostfn\n");
        return 1;
    }
    c.kernel_hold = hold < 0 ? can_kernel && !raw->emulation : hold;
    if (c.kernel_hold) {
        void *p = NULL;
        CHECK_RAW(raw, raw->MemHostAlloc(&p, 64, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
        c.flag = p;
        CHECK_RAW(raw, raw->MemHostGetDevicePointer(&c.dflag, p, 0));
        CHECK_RAW(raw, raw->ModuleLoadData(&c.mod, evx_hold_kernel_ptx));
        CHECK_RAW(raw, raw->ModuleGetFunction(&c.fn, c.mod, "evx_hold"));
    }
    int least = 0, greatest = 0;
    CHECK_EVX(evx_device_stream_priority_range(0, &least, &greatest));
    CHECK_RAW(raw, raw->StreamCreateWithPriority(&c.held, CU_STREAM_NON_BLOCKING, 0));
    CHECK_RAW(raw, raw->StreamCreateWithPriority(&c.lane, CU_STREAM_NON_BLOCKING, 0));
    CHECK_RAW(raw, raw->StreamCreateWithPriority(&c.lane_hi, CU_STREAM_NON_BLOCKING, greatest));
    CHECK_RAW(raw, raw->StreamCreateWithPriority(&c.worker, CU_STREAM_NON_BLOCKING, 0));
    CHECK_EVX(evx_stream_wrap_external(0, c.held, &c.held_evx));
    CHECK_EVX(evx_device_create_event(0, EVX_EVENT_DISABLE_TIMING, &c.ev));
    CHECK_EVX(evx_device_create_event(0, EVX_EVENT_DISABLE_TIMING | EVX_EVENT_BLOCKING_SYNC,
                                      &c.ev_blocking));
    void *native = NULL;
    CHECK_EVX(evx_event_get_native(c.ev, &native));
    c.cu_ev = native;
    CHECK_EVX(evx_event_get_native(c.ev_blocking, &native));
    c.cu_ev_blocking = native;
    CHECK_EVX(evx_notifier_create(NULL, &c.notifier));
    CHECK_EVX(evx_notifier_get_fd(c.notifier, &c.fd));
    sem_init(&c.done, 0, 0);
    sem_init(&c.release, 0, 0);

    bench_print_driver(stdout, raw);
    printf("# evx-notify-latency: %ld trials per waiter, settle %ld us, hold: %s%s\n", trials,
           settle_us, c.kernel_hold ? "kernel spinning on mapped host memory" : "host function",
           raw->emulation ? " (host emulation: a smoke run, not a GPU figure)" : "");

    c.limit_ns = 1000000000ull; /* 1 s */
    if (want_diag || want_interference) {
        if (!c.kernel_hold) {
            fprintf(stderr, "evx-notify-latency: --%s needs the kernel hold (a GPU)\n",
                    want_diag ? "diag" : "interference");
            return 1;
        }
        if (want_diag)
            diag(&c);
        else
            interference(&c, (int)rounds, 500, 20000);
        return 0;
    }

    /* warm every path once */
    double cpu;
    for (int w = 0; w < W_COUNT; ++w) trial(&c, w, 100, &cpu);

    double *lat = calloc((size_t)trials * W_COUNT, sizeof *lat);
    double *cpus = calloc((size_t)trials * W_COUNT, sizeof *cpus);
    if (!lat || !cpus) return 1;
    for (long t = 0; t < trials; ++t)
        for (int w = 0; w < W_COUNT; ++w)
            lat[w * trials + t] = trial(&c, w, settle_us, &cpus[w * trials + t]) / 1e3;

    printf("\n| waiter | median (us) | p10 (us) | p90 (us) | CPU while held (share of a core) |\n");
    printf("|---|---|---|---|---|\n");
    for (int w = 0; w < W_COUNT; ++w) {
        double *v = lat + w * trials;
        double med = bench_median(v, (int)trials);
        double p10 = pct(v, (int)trials, 10), p90 = pct(v, (int)trials, 90);
        printf("| %s | %.1f | %.1f | %.1f | %.3f |\n", kNames[w], med, p10, p90,
               bench_median(cpus + w * trials, (int)trials));
    }
    fflush(stdout);

    CHECK_EVX(evx_notifier_destroy(c.notifier));
    CHECK_EVX(evx_event_destroy(c.ev));
    CHECK_EVX(evx_event_destroy(c.ev_blocking));
    CHECK_EVX(evx_stream_destroy(c.held_evx));
    raw->StreamDestroy(c.held);
    raw->StreamDestroy(c.lane);
    raw->StreamDestroy(c.lane_hi);
    raw->StreamDestroy(c.worker);
    if (c.kernel_hold) {
        raw->ModuleUnload(c.mod);
        raw->MemFreeHost((void *)c.flag);
    }
    sem_destroy(&c.done);
    sem_destroy(&c.release);
    free(lat);
    free(cpus);
    bench_raw_close(raw);
    return 0;
}
