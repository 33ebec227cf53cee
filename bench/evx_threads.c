/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/*
 * evx-bench-threads: throughput of evx and of the raw driver when several
 * threads make, record, query and destroy events at once.
 *
 * Each thread has its own stream (an evx stream on the evx side, a raw
 * driver stream on the raw side) and loops: create an event, record it on
 * its stream, query it, destroy it. One such loop body is one "iteration".
 * The threads start together on a barrier and stop when the main thread
 * raises a flag after a fixed duration; throughput is all threads'
 * iterations divided by the span from the first thread's start to the
 * last thread's stop (CLOCK_MONOTONIC). For each thread count, raw and evx
 * runs alternate, and the medians of the runs are compared.
 *
 * A third side, "floor", loops only the raw record and query, on one
 * event the thread made before the timed span: what a wrapper that never
 * reaches the driver to create or destroy an event (evx reuses driver
 * events) could do at best. evx/floor says how close evx comes; floor/raw
 * bounds evx/raw at each thread count, whatever evx does, because the
 * driver's record and query remain.
 *
 * Both sides run on the one driver evx opened, with device 0's primary
 * context current in every thread (the raw driver needs it to create
 * events; evx gets the same conditions). Thread i of either side is pinned
 * to the i-th CPU the process may use (unless --no-pin), so that neither
 * side gets a better core by chance: unpinned, the 1-thread figure of one
 * side moved by up to 30% from one invocation to the next on an H200 host.
 */
#define _GNU_SOURCE /* pthread_barrier_t, nanosleep */

#include "bench_common.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_THREADS 256
#define WARMUP_ITERS 16

typedef struct worker {
    pthread_t tid;
    int side; /* SIDE_* */
    pthread_barrier_t *start;
    const int *stop;
    uint64_t iters;
    double t_begin, t_end;
    /* the first failure, if any */
    int failed;
    const char *call;
    CUresult raw_status;
    evx_status_t evx_status;
    char evx_message[256];
} worker;

enum { SIDE_RAW, SIDE_EVX, SIDE_FLOOR };

static bench_raw g_raw;
static int g_pin = 1;
static int g_cpus[MAX_THREADS]; /* the CPUs the process may use, in order */
static int g_ncpus;

static void find_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return;
    for (int c = 0; c < CPU_SETSIZE && g_ncpus < MAX_THREADS; c++)
        if (CPU_ISSET(c, &set))
            g_cpus[g_ncpus++] = c;
}
static int g_any_failed; /* set by a failing worker: everyone stops */

static int stop_requested(const worker *w)
{
    return __atomic_load_n(w->stop, __ATOMIC_RELAXED) ||
           __atomic_load_n(&g_any_failed, __ATOMIC_RELAXED);
}

static void fail_raw(worker *w, const char *call, CUresult r)
{
    if (!w->failed) {
        w->failed = 1;
        w->call = call;
        w->raw_status = r;
    }
    __atomic_store_n(&g_any_failed, 1, __ATOMIC_RELAXED);
}

static void fail_evx(worker *w, const char *call, evx_status_t s)
{
    if (!w->failed) {
        w->failed = 1;
        w->call = call;
        w->evx_status = s;
        snprintf(w->evx_message, sizeof w->evx_message, "%s",
                 evx_last_error_message());
    }
    __atomic_store_n(&g_any_failed, 1, __ATOMIC_RELAXED);
}

#define W_RAW(w, call)                                                        \
    do {                                                                      \
        CUresult r_ = (call);                                                 \
        if (r_ != CUDA_SUCCESS) {                                             \
            fail_raw((w), #call, r_);                                         \
            goto out;                                                         \
        }                                                                     \
    } while (0)

#define W_EVX(w, call)                                                        \
    do {                                                                      \
        evx_status_t s_ = (call);                                             \
        if (s_ != EVX_SUCCESS) {                                              \
            fail_evx((w), #call, s_);                                         \
            goto out;                                                         \
        }                                                                     \
    } while (0)

/* One iteration on each side. A query may find the event pending. */
static int iter_raw(worker *w, CUstream s)
{
    CUevent e;
    CUresult r = g_raw.EventCreate(&e, CU_EVENT_DEFAULT);
    if (r != CUDA_SUCCESS) {
        fail_raw(w, "cuEventCreate", r);
        return -1;
    }
    if ((r = g_raw.EventRecord(e, s)) != CUDA_SUCCESS) {
        fail_raw(w, "cuEventRecord", r);
    } else if ((r = g_raw.EventQuery(e)) != CUDA_SUCCESS &&
               r != CUDA_ERROR_NOT_READY) {
        fail_raw(w, "cuEventQuery", r);
    }
    CUresult d = g_raw.EventDestroy(e);
    if (d != CUDA_SUCCESS)
        fail_raw(w, "cuEventDestroy", d);
    return w->failed ? -1 : 0;
}

static int iter_evx(worker *w, evx_stream_t s)
{
    evx_event_t e;
    evx_status_t st = evx_device_create_event(0, EVX_EVENT_DEFAULT, &e);
    if (st != EVX_SUCCESS) {
        fail_evx(w, "evx_device_create_event", st);
        return -1;
    }
    if ((st = evx_event_record(e, s)) != EVX_SUCCESS) {
        fail_evx(w, "evx_event_record", st);
    } else if ((st = evx_event_query(e)) != EVX_SUCCESS &&
               st != EVX_ERROR_NOT_READY) {
        fail_evx(w, "evx_event_query", st);
    }
    evx_status_t d = evx_event_destroy(e);
    if (d != EVX_SUCCESS)
        fail_evx(w, "evx_event_destroy", d);
    return w->failed ? -1 : 0;
}

/* The floor's iteration: record and query only, on the thread's one
 * event. */
static int iter_floor(worker *w, CUstream s, CUevent e)
{
    CUresult r;
    if ((r = g_raw.EventRecord(e, s)) != CUDA_SUCCESS) {
        fail_raw(w, "cuEventRecord", r);
    } else if ((r = g_raw.EventQuery(e)) != CUDA_SUCCESS &&
               r != CUDA_ERROR_NOT_READY) {
        fail_raw(w, "cuEventQuery", r);
    }
    return w->failed ? -1 : 0;
}

static int iter(worker *w, CUstream rs, evx_stream_t es, CUevent fe)
{
    switch (w->side) {
    case SIDE_EVX: return iter_evx(w, es);
    case SIDE_FLOOR: return iter_floor(w, rs, fe);
    default: return iter_raw(w, rs);
    }
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    CUstream rs = NULL;
    evx_stream_t es = NULL;
    CUevent fe = NULL;
    int waited = 0;

    W_RAW(w, g_raw.CtxSetCurrent(g_raw.ctx));
    if (w->side == SIDE_EVX)
        W_EVX(w, evx_device_create_stream(0, EVX_STREAM_NON_BLOCKING, 0, &es));
    else
        W_RAW(w, g_raw.StreamCreateWithPriority(&rs, CU_STREAM_NON_BLOCKING,
                                                0));
    if (w->side == SIDE_FLOOR)
        W_RAW(w, g_raw.EventCreate(&fe, CU_EVENT_DEFAULT));
    /* A few untimed iterations, so that first-use costs (evx's thread
     * record and event cache, the driver's per-thread state) fall outside
     * the timed span on every side. */
    for (int i = 0; i < WARMUP_ITERS; i++)
        if (iter(w, rs, es, fe) != 0)
            goto out;

    pthread_barrier_wait(w->start);
    waited = 1;
    w->t_begin = bench_now_ns();
    uint64_t k = 0;
    while (!stop_requested(w) && iter(w, rs, es, fe) == 0)
        k++;
    w->t_end = bench_now_ns();
    w->iters = k;

out:
    if (!waited)
        pthread_barrier_wait(w->start); /* never leave the others waiting */
    if (es != NULL) {
        evx_status_t s = evx_stream_synchronize(es);
        if (s != EVX_SUCCESS)
            fail_evx(w, "evx_stream_synchronize", s);
        if ((s = evx_stream_destroy(es)) != EVX_SUCCESS)
            fail_evx(w, "evx_stream_destroy", s);
    }
    if (rs != NULL) {
        CUresult r = g_raw.StreamSynchronize(rs);
        if (r == CUDA_SUCCESS && fe != NULL && (r = g_raw.EventDestroy(fe)) != CUDA_SUCCESS)
            fail_raw(w, "cuEventDestroy", r);
        if (r != CUDA_SUCCESS)
            fail_raw(w, "cuStreamSynchronize", r);
        if ((r = g_raw.StreamDestroy(rs)) != CUDA_SUCCESS)
            fail_raw(w, "cuStreamDestroy", r);
    }
    CUresult r = g_raw.CtxSetCurrent(NULL);
    if (r != CUDA_SUCCESS)
        fail_raw(w, "cuCtxSetCurrent(NULL)", r);
    return NULL;
}

/* One run: `nthreads` threads for `ms` milliseconds; iterations per second
 * over all threads, or a negative value after a failure (reported). */
static double run_once(int nthreads, int side, long ms)
{
    static worker ws[MAX_THREADS];
    pthread_barrier_t start;
    int stop = 0;
    if (pthread_barrier_init(&start, NULL, (unsigned)nthreads + 1) != 0) {
        fprintf(stderr, "pthread_barrier_init failed\n");
        return -1.0;
    }
    int started = 0;
    for (int i = 0; i < nthreads; i++) {
        memset(&ws[i], 0, sizeof ws[i]);
        ws[i].side = side;
        ws[i].start = &start;
        ws[i].stop = &stop;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        if (g_pin && g_ncpus > 0) {
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(g_cpus[i % g_ncpus], &one);
            pthread_attr_setaffinity_np(&attr, sizeof one, &one);
        }
        int rc = pthread_create(&ws[i].tid, &attr, worker_main, &ws[i]);
        pthread_attr_destroy(&attr);
        if (rc != 0) {
            fprintf(stderr, "pthread_create failed for thread %d\n", i);
            break;
        }
        started++;
    }
    if (started < nthreads) {
        /* The started threads wait on a barrier that can no longer fill. */
        exit(1);
    }
    pthread_barrier_wait(&start);
    struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&d, &d) != 0) {
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < nthreads; i++)
        pthread_join(ws[i].tid, NULL);
    pthread_barrier_destroy(&start);

    uint64_t total = 0;
    double begin = 0.0, end = 0.0;
    int failed = 0;
    for (int i = 0; i < nthreads; i++) {
        const worker *w = &ws[i];
        if (w->failed) {
            failed = 1;
            if (side == SIDE_EVX)
                fprintf(stderr, "thread %d: %s -> %s: %s\n", i, w->call,
                        evx_status_name(w->evx_status), w->evx_message);
            else
                fprintf(stderr, "thread %d: %s -> %s\n", i, w->call,
                        bench_raw_status_name(&g_raw, w->raw_status));
            continue;
        }
        total += w->iters;
        if (i == 0 || w->t_begin < begin)
            begin = w->t_begin;
        if (i == 0 || w->t_end > end)
            end = w->t_end;
    }
    if (failed || g_any_failed)
        return -1.0;
    if (total == 0 || end <= begin) {
        fprintf(stderr, "%s run with %d threads completed no iteration\n",
                side == SIDE_EVX ? "evx" : side == SIDE_FLOOR ? "floor" : "raw",
                nthreads);
        return -1.0;
    }
    return (double)total / ((end - begin) * 1e-9);
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: evx-bench-threads [--threads LIST] [--runs N] [--ms N] "
            "[--quick] [--no-pin]\n"
            "  --threads LIST  comma-separated thread counts (default "
            "1,2,4,8,16)\n"
            "  --runs N        runs per side and thread count (default 7)\n"
            "  --ms N          duration of one run in ms (default 200)\n"
            "  --quick         3 runs of 20 ms: a smoke run\n"
            "  --no-pin        leave the threads' CPUs to the scheduler (by "
            "default thread i\n"
            "                  of both sides runs on the i-th CPU the process "
            "may use)\n"
            "Set EVX_DRIVER=host to run on the host emulation.\n");
}

static int parse_threads(const char *text, int *counts, int max)
{
    int k = 0;
    const char *p = text;
    while (p != NULL && *p != '\0') {
        char item[16];
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == 0 || len >= sizeof item || k == max) {
            fprintf(stderr, "--threads: bad list '%s'\n", text);
            return -1;
        }
        memcpy(item, p, len);
        item[len] = '\0';
        long v = bench_parse_long("--threads", item, 1, MAX_THREADS);
        if (v < 0)
            return -1;
        counts[k++] = (int)v;
        p = comma ? comma + 1 : NULL;
    }
    if (k == 0) {
        fprintf(stderr, "--threads: empty list\n");
        return -1;
    }
    return k;
}

int main(int argc, char **argv)
{
    int counts[32] = {1, 2, 4, 8, 16};
    int ncounts = 5;
    long runs = 7, ms = 200, runs_opt = -1, ms_opt = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--threads") == 0) {
            if (i + 1 >= argc ||
                (ncounts = parse_threads(argv[++i], counts, 32)) < 0)
                return 2;
        } else if (strcmp(a, "--runs") == 0) {
            if ((runs_opt = bench_parse_long(a, i + 1 < argc ? argv[++i] : NULL,
                                             1, 101)) < 0)
                return 2;
        } else if (strcmp(a, "--ms") == 0) {
            if ((ms_opt = bench_parse_long(a, i + 1 < argc ? argv[++i] : NULL,
                                           1, 60000)) < 0)
                return 2;
        } else if (strcmp(a, "--no-pin") == 0) {
            g_pin = 0;
        } else if (strcmp(a, "--quick") == 0) {
            runs = 3;
            ms = 20;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (runs_opt > 0)
        runs = runs_opt;
    if (ms_opt > 0)
        ms = ms_opt;

    if (bench_raw_open(&g_raw) != 0)
        return 1;
    bench_print_driver(stdout, &g_raw);
    find_cpus();
    printf("method: each thread loops create, record on its own stream, "
           "query, destroy (floor: record and query only, on one event made "
           "before); %ld runs of %ld ms per side and thread count, raw, evx "
           "and floor runs alternating; medians of iterations per second "
           "over all threads; %s\n",
           runs, ms,
           g_pin && g_ncpus > 0 ? "thread i of each side pinned to the i-th "
                                  "usable CPU"
                                : "threads not pinned");
    printf("\n%8s %16s %16s %10s %16s %10s %10s\n", "threads", "raw iter/s",
           "evx iter/s", "evx/raw", "floor iter/s", "floor/raw", "evx/floor");
    fflush(stdout);

    double raw_t[101], evx_t[101], floor_t[101];
    int rc = 0;
    for (int c = 0; c < ncounts && rc == 0; c++) {
        int nt = counts[c];
        for (long r = 0; r < runs; r++) {
            raw_t[r] = run_once(nt, SIDE_RAW, ms);
            evx_t[r] = run_once(nt, SIDE_EVX, ms);
            floor_t[r] = run_once(nt, SIDE_FLOOR, ms);
            if (raw_t[r] < 0 || evx_t[r] < 0 || floor_t[r] < 0) {
                rc = 1;
                break;
            }
        }
        if (rc != 0)
            break;
        double raw_med = bench_median(raw_t, (int)runs);
        double evx_med = bench_median(evx_t, (int)runs);
        double floor_med = bench_median(floor_t, (int)runs);
        printf("%8d %16.0f %16.0f %10.3f %16.0f %10.3f %10.3f\n", nt, raw_med,
               evx_med, evx_med / raw_med, floor_med, floor_med / raw_med,
               evx_med / floor_med);
        printf("BENCH threads=%d raw_iter_per_s=%.0f evx_iter_per_s=%.0f "
               "ratio=%.4f floor_iter_per_s=%.0f floor_ratio=%.4f runs=%ld ms=%ld\n",
               nt, raw_med, evx_med, evx_med / raw_med, floor_med,
               floor_med / raw_med, runs, ms);
        fflush(stdout);
    }
    bench_raw_close(&g_raw);
    if (rc != 0)
        fprintf(stderr, "evx-bench-threads: stopped after a failure\n");
    return rc;
}
