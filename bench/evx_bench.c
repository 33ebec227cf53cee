/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/*
 * evx-bench: the cost of each evx call next to the raw driver call it
 * wraps, in one process, on one driver.
 *
 * The raw entry points are looked up in the library evx itself opened
 * (see bench_common.c), and device 0's primary context is current on this
 * thread, so both sides run on the same driver, device and context. Each
 * row times n calls (n / 4 for the timed regions), `reps` times per side,
 * alternating raw and evx repetitions, and reports the medians in ns per
 * call. The per-repetition method follows bench/anchors/raw_driver.c:
 * before each repetition two events a and b are created, recorded and
 * completed; after it they are destroyed.
 *
 * Both sides record on the same driver stream (evx borrows the raw side's
 * with evx_stream_wrap_external): which hardware queue a stream lands on
 * moves a timed region by about 1 % on its own, more than evx adds.
 * --own-stream gives evx a stream of its own making instead.
 */
#include "bench_common.h"

#include <stdlib.h>
#include <string.h>

#define RAW(call)                                                             \
    do {                                                                      \
        CUresult r_ = (call);                                                 \
        if (r_ != CUDA_SUCCESS)                                               \
            bench_die_raw(&g_raw, r_, #call, __FILE__, __LINE__);             \
    } while (0)

#define EVX(call)                                                             \
    do {                                                                      \
        evx_status_t s_ = (call);                                             \
        if (s_ != EVX_SUCCESS)                                                \
            bench_die_evx(s_, #call, __FILE__, __LINE__);                     \
    } while (0)

enum op {
    OP_CD_DEFAULT_BULK,
    OP_CD_NOTIMING_BULK,
    OP_CD_DEFAULT_PAIRS,
    OP_CD_NOTIMING_PAIRS,
    OP_RECORD,
    OP_QUERY,
    OP_SYNCHRONIZE,
    OP_ELAPSED,
    OP_WAIT,
    OP_TIMED_REGION,
    OP_TIMER,
    OP_HOST_FUNC,
    OP_HOST_FUNC_ERROR,
    OP_COUNT
};

typedef struct row {
    const char *id;      /* machine name, matched by --filter */
    const char *raw_is;  /* what the raw side times */
    const char *evx_is;  /* what the evx side times */
    int quarter;         /* 1: n / 4 iterations (timed regions) */
} row;

static const row k_rows[OP_COUNT] = {
    {"create_destroy_default_bulk",
     "cuEventCreate(0) x n, then cuEventDestroy x n",
     "evx_device_create_event(0) x n, then evx_event_destroy x n", 0},
    {"create_destroy_notiming_bulk",
     "cuEventCreate(DISABLE_TIMING) x n, then cuEventDestroy x n",
     "evx_device_create_event(DISABLE_TIMING) x n, then evx_event_destroy x n",
     0},
    {"create_destroy_default_pairs", "cuEventCreate(0); cuEventDestroy",
     "evx_device_create_event(0); evx_event_destroy", 0},
    {"create_destroy_notiming_pairs",
     "cuEventCreate(DISABLE_TIMING); cuEventDestroy",
     "evx_device_create_event(DISABLE_TIMING); evx_event_destroy", 0},
    {"record", "cuEventRecord on an empty non-blocking stream (+1 sync)",
     "evx_event_record on an empty non-blocking stream (+1 sync)", 0},
    {"query_done", "cuEventQuery of a completed event",
     "evx_event_query of a completed event", 0},
    {"synchronize_done", "cuEventSynchronize of a completed event",
     "evx_event_synchronize of a completed event", 0},
    {"elapsed_time", "cuEventElapsedTime of two completed events",
     "evx_event_elapsed_time of two completed events", 0},
    {"stream_wait_event", "cuStreamWaitEvent on a completed event (+1 sync)",
     "evx_stream_wait_event on a completed event (+1 sync)", 0},
    {"timed_region", "record a; record b; synchronize b; elapsed(a, b)",
     "the same four calls through evx", 1},
    {"timer", "record a; record b; synchronize b; elapsed(a, b)",
     "evx_timer_start; evx_timer_stop; evx_timer_synchronize", 1},
    {"host_func", "cuLaunchHostFunc of an empty function x n, then one sync",
     "evx_stream_launch_host_func_status of an empty function that returns "
     "EVX_SUCCESS x n, then evx_stream_synchronize", 0},
    {"host_func_error", "cuLaunchHostFunc of an empty function; cuStreamSynchronize",
     "evx_stream_launch_host_func_status of a function that returns "
     "EVX_ERROR_UNKNOWN; evx_stream_synchronize, which reports it", 1},
};

static void CUDA_CB raw_noop(void *user_data) { (void)user_data; }
static evx_status_t evx_noop(void *user_data)
{
    (void)user_data;
    return EVX_SUCCESS;
}
static evx_status_t evx_fail(void *user_data)
{
    (void)user_data;
    return EVX_ERROR_UNKNOWN;
}

static bench_raw g_raw;
static CUstream g_raw_stream;
static evx_stream_t g_evx_stream;
static CUevent *g_raw_events;    /* n of them, for the bulk rows */
static evx_event_t *g_evx_events;

/* One raw repetition of `op`: ns per call (per iteration for the timed
 * region). */
static double rep_raw(enum op op, int n)
{
    CUstream s = g_raw_stream;
    CUevent a, b;
    float ms = 0.0f;
    RAW(g_raw.EventCreate(&a, CU_EVENT_DEFAULT));
    RAW(g_raw.EventCreate(&b, CU_EVENT_DEFAULT));
    RAW(g_raw.EventRecord(a, s));
    RAW(g_raw.EventRecord(b, s));
    RAW(g_raw.StreamSynchronize(s));

    double t0 = bench_now_ns();
    switch (op) {
    case OP_CD_DEFAULT_BULK:
    case OP_CD_NOTIMING_BULK: {
        unsigned flags = op == OP_CD_DEFAULT_BULK ? CU_EVENT_DEFAULT
                                                  : CU_EVENT_DISABLE_TIMING;
        for (int i = 0; i < n; i++)
            RAW(g_raw.EventCreate(&g_raw_events[i], flags));
        for (int i = 0; i < n; i++)
            RAW(g_raw.EventDestroy(g_raw_events[i]));
        break;
    }
    case OP_CD_DEFAULT_PAIRS:
    case OP_CD_NOTIMING_PAIRS: {
        unsigned flags = op == OP_CD_DEFAULT_PAIRS ? CU_EVENT_DEFAULT
                                                   : CU_EVENT_DISABLE_TIMING;
        for (int i = 0; i < n; i++) {
            CUevent e;
            RAW(g_raw.EventCreate(&e, flags));
            RAW(g_raw.EventDestroy(e));
        }
        break;
    }
    case OP_RECORD:
        for (int i = 0; i < n; i++)
            RAW(g_raw.EventRecord(a, s));
        RAW(g_raw.StreamSynchronize(s));
        break;
    case OP_QUERY:
        for (int i = 0; i < n; i++)
            RAW(g_raw.EventQuery(a));
        break;
    case OP_SYNCHRONIZE:
        for (int i = 0; i < n; i++)
            RAW(g_raw.EventSynchronize(a));
        break;
    case OP_ELAPSED:
        for (int i = 0; i < n; i++)
            RAW(g_raw.EventElapsedTime(&ms, a, b));
        break;
    case OP_WAIT:
        for (int i = 0; i < n; i++)
            RAW(g_raw.StreamWaitEvent(s, a, 0));
        RAW(g_raw.StreamSynchronize(s));
        break;
    case OP_TIMED_REGION:
    case OP_TIMER: /* the raw counterpart of a timer is the timed region */
        for (int i = 0; i < n; i++) {
            RAW(g_raw.EventRecord(a, s));
            RAW(g_raw.EventRecord(b, s));
            RAW(g_raw.EventSynchronize(b));
            RAW(g_raw.EventElapsedTime(&ms, a, b));
        }
        break;
    case OP_HOST_FUNC:
        for (int i = 0; i < n; i++)
            RAW(g_raw.LaunchHostFunc(s, raw_noop, NULL));
        RAW(g_raw.StreamSynchronize(s));
        break;
    case OP_HOST_FUNC_ERROR:
        for (int i = 0; i < n; i++) {
            RAW(g_raw.LaunchHostFunc(s, raw_noop, NULL));
            RAW(g_raw.StreamSynchronize(s));
        }
        break;
    case OP_COUNT:
        break;
    }
    double ns = (bench_now_ns() - t0) / n;

    RAW(g_raw.EventDestroy(a));
    RAW(g_raw.EventDestroy(b));
    return ns;
}

/* One evx repetition of `op`, mirroring rep_raw call for call. */
static double rep_evx(enum op op, int n)
{
    evx_stream_t s = g_evx_stream;
    evx_event_t a, b;
    evx_timer_t timer = NULL;
    float ms = 0.0f;
    EVX(evx_device_create_event(0, EVX_EVENT_DEFAULT, &a));
    EVX(evx_device_create_event(0, EVX_EVENT_DEFAULT, &b));
    EVX(evx_event_record(a, s));
    EVX(evx_event_record(b, s));
    EVX(evx_stream_synchronize(s));
    if (op == OP_TIMER)
        EVX(evx_device_create_timer(0, &timer));

    double t0 = bench_now_ns();
    switch (op) {
    case OP_CD_DEFAULT_BULK:
    case OP_CD_NOTIMING_BULK: {
        unsigned flags = op == OP_CD_DEFAULT_BULK ? EVX_EVENT_DEFAULT
                                                  : EVX_EVENT_DISABLE_TIMING;
        for (int i = 0; i < n; i++)
            EVX(evx_device_create_event(0, flags, &g_evx_events[i]));
        for (int i = 0; i < n; i++)
            EVX(evx_event_destroy(g_evx_events[i]));
        break;
    }
    case OP_CD_DEFAULT_PAIRS:
    case OP_CD_NOTIMING_PAIRS: {
        unsigned flags = op == OP_CD_DEFAULT_PAIRS ? EVX_EVENT_DEFAULT
                                                   : EVX_EVENT_DISABLE_TIMING;
        for (int i = 0; i < n; i++) {
            evx_event_t e;
            EVX(evx_device_create_event(0, flags, &e));
            EVX(evx_event_destroy(e));
        }
        break;
    }
    case OP_RECORD:
        for (int i = 0; i < n; i++)
            EVX(evx_event_record(a, s));
        EVX(evx_stream_synchronize(s));
        break;
    case OP_QUERY:
        for (int i = 0; i < n; i++)
            EVX(evx_event_query(a));
        break;
    case OP_SYNCHRONIZE:
        for (int i = 0; i < n; i++)
            EVX(evx_event_synchronize(a));
        break;
    case OP_ELAPSED:
        for (int i = 0; i < n; i++)
            EVX(evx_event_elapsed_time(&ms, a, b));
        break;
    case OP_WAIT:
        for (int i = 0; i < n; i++)
            EVX(evx_stream_wait_event(s, a, EVX_EVENT_WAIT_DEFAULT));
        EVX(evx_stream_synchronize(s));
        break;
    case OP_TIMED_REGION:
        for (int i = 0; i < n; i++) {
            EVX(evx_event_record(a, s));
            EVX(evx_event_record(b, s));
            EVX(evx_event_synchronize(b));
            EVX(evx_event_elapsed_time(&ms, a, b));
        }
        break;
    case OP_TIMER:
        for (int i = 0; i < n; i++) {
            EVX(evx_timer_start(timer, s));
            EVX(evx_timer_stop(timer, s));
            EVX(evx_timer_synchronize(timer, &ms));
        }
        break;
    case OP_HOST_FUNC:
        for (int i = 0; i < n; i++)
            EVX(evx_stream_launch_host_func_status(s, evx_noop, NULL, NULL));
        EVX(evx_stream_synchronize(s));
        break;
    case OP_HOST_FUNC_ERROR:
        for (int i = 0; i < n; i++) {
            EVX(evx_stream_launch_host_func_status(s, evx_fail, NULL, NULL));
            evx_status_t st = evx_stream_synchronize(s);
            if (st != EVX_ERROR_UNKNOWN) /* the failure must come back, each time */
                bench_die_evx(st == EVX_SUCCESS ? EVX_ERROR_ILLEGAL_STATE : st,
                              "evx_stream_synchronize after a failing host function",
                              __FILE__, __LINE__);
        }
        break;
    case OP_COUNT:
        break;
    }
    double ns = (bench_now_ns() - t0) / n;

    if (timer != NULL)
        EVX(evx_timer_destroy(timer));
    EVX(evx_event_destroy(a));
    EVX(evx_event_destroy(b));
    return ns;
}

/* The smallest nonzero interval between two back-to-back marks on an
 * empty stream, as the raw driver and an evx timer report it (ms). */
static void resolution(int n, double *raw_min, double *evx_min)
{
    CUevent a, b;
    evx_timer_t timer;
    float ms;
    *raw_min = *evx_min = -1.0;
    RAW(g_raw.EventCreate(&a, CU_EVENT_DEFAULT));
    RAW(g_raw.EventCreate(&b, CU_EVENT_DEFAULT));
    EVX(evx_device_create_timer(0, &timer));
    for (int i = 0; i < n; i++) {
        RAW(g_raw.EventRecord(a, g_raw_stream));
        RAW(g_raw.EventRecord(b, g_raw_stream));
        RAW(g_raw.EventSynchronize(b));
        RAW(g_raw.EventElapsedTime(&ms, a, b));
        if (ms > 0.0f && (*raw_min < 0.0 || ms < *raw_min))
            *raw_min = ms;
        EVX(evx_timer_start(timer, g_evx_stream));
        EVX(evx_timer_stop(timer, g_evx_stream));
        EVX(evx_timer_synchronize(timer, &ms));
        if (ms > 0.0f && (*evx_min < 0.0 || ms < *evx_min))
            *evx_min = ms;
    }
    EVX(evx_timer_destroy(timer));
    RAW(g_raw.EventDestroy(a));
    RAW(g_raw.EventDestroy(b));
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: evx-bench [--reps N] [--n N] [--filter SUBSTR] [--quick]\n"
            "                 [--own-stream]\n"
            "  --reps N       repetitions per side and row (default 7)\n"
            "  --n N          calls per repetition (default 20000; the timed\n"
            "                 regions run N/4)\n"
            "  --filter S     only the rows whose name contains S (the\n"
            "                 timer resolution check is named 'resolution')\n"
            "  --quick        3 repetitions of 200 calls: a smoke run\n"
            "  --own-stream   evx records on a stream it made, not on the raw\n"
            "                 side's stream (borrowed by default)\n"
            "  --list         print the row names and exit\n"
            "Set EVX_DRIVER=host to run on the host emulation.\n");
}

int main(int argc, char **argv)
{
    long reps = 7, n = 20000, reps_opt = -1, n_opt = -1;
    const char *filter = NULL;
    int own_stream = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--reps") == 0) {
            if ((reps_opt = bench_parse_long(a, i + 1 < argc ? argv[++i] : NULL,
                                             1, 1001)) < 0)
                return 2;
        } else if (strcmp(a, "--n") == 0) {
            if ((n_opt = bench_parse_long(a, i + 1 < argc ? argv[++i] : NULL,
                                          1, 10000000)) < 0)
                return 2;
        } else if (strcmp(a, "--filter") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "--filter needs a substring\n");
                return 2;
            }
            filter = argv[++i];
        } else if (strcmp(a, "--own-stream") == 0) {
            own_stream = 1;
        } else if (strcmp(a, "--quick") == 0) {
            reps = 3;
            n = 200;
        } else if (strcmp(a, "--list") == 0) {
            for (int op = 0; op < OP_COUNT; op++)
                printf("%s\n", k_rows[op].id);
            printf("resolution\n");
            return 0;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (reps_opt > 0)
        reps = reps_opt;
    if (n_opt > 0)
        n = n_opt;

    int selected[OP_COUNT], nsel = 0;
    for (int op = 0; op < OP_COUNT; op++) {
        selected[op] = filter == NULL || strstr(k_rows[op].id, filter) != NULL;
        nsel += selected[op];
    }
    int want_resolution =
        filter == NULL || strstr("resolution", filter) != NULL;
    if (nsel == 0 && !want_resolution) {
        fprintf(stderr, "no row name contains '%s' (see --list)\n", filter);
        return 2;
    }

    if (bench_raw_open(&g_raw) != 0)
        return 1;
    bench_print_driver(stdout, &g_raw);
    printf("method: one process, one driver; medians of %ld repetitions of "
           "%ld calls (%ld for timed regions), raw and evx repetitions "
           "alternating; ns per call\n",
           reps, n, n / 4 > 0 ? n / 4 : 1);
    fflush(stdout);

    RAW(g_raw.StreamCreateWithPriority(&g_raw_stream, CU_STREAM_NON_BLOCKING,
                                       0));
    if (own_stream)
        EVX(evx_device_create_stream(0, EVX_STREAM_NON_BLOCKING, 0,
                                     &g_evx_stream));
    else
        EVX(evx_stream_wrap_external(0, g_raw_stream, &g_evx_stream));
    printf("streams: %s\n",
           own_stream ? "each side its own (--own-stream)"
                      : "one, made by the raw side and borrowed by evx");
    g_raw_events = calloc((size_t)n, sizeof *g_raw_events);
    g_evx_events = calloc((size_t)n, sizeof *g_evx_events);
    double *t_raw = calloc((size_t)reps, sizeof *t_raw);
    double *t_evx = calloc((size_t)reps, sizeof *t_evx);
    if (!g_raw_events || !g_evx_events || !t_raw || !t_evx) {
        fprintf(stderr, "out of memory for %ld events\n", n);
        return 1;
    }

    if (nsel > 0)
        printf("\n%-30s %10s %10s %11s %7s\n", "call", "raw ns", "evx ns",
               "evx-raw ns", "ratio");
    for (int op = 0; op < OP_COUNT; op++) {
        if (!selected[op])
            continue;
        int iters = (int)(k_rows[op].quarter ? (n / 4 > 0 ? n / 4 : 1) : n);
        for (long r = 0; r < reps; r++) {
            t_raw[r] = rep_raw((enum op)op, iters);
            t_evx[r] = rep_evx((enum op)op, iters);
        }
        double raw_min = t_raw[0], evx_min = t_evx[0];
        for (long r = 1; r < reps; r++) {
            if (t_raw[r] < raw_min)
                raw_min = t_raw[r];
            if (t_evx[r] < evx_min)
                evx_min = t_evx[r];
        }
        double raw_med = bench_median(t_raw, (int)reps);
        double evx_med = bench_median(t_evx, (int)reps);
        printf("%-30s %10.1f %10.1f %+11.1f %7.3f\n", k_rows[op].id, raw_med,
               evx_med, evx_med - raw_med, evx_med / raw_med);
        printf("BENCH %s raw_ns=%.1f evx_ns=%.1f diff_ns=%.1f ratio=%.4f "
               "raw_min_ns=%.1f evx_min_ns=%.1f reps=%ld calls=%d\n",
               k_rows[op].id, raw_med, evx_med, evx_med - raw_med,
               evx_med / raw_med, raw_min, evx_min, reps, iters);
        fflush(stdout);
    }

    if (want_resolution) {
        int rn = n < 1000 ? (int)n : 1000;
        double raw_min, evx_min;
        resolution(rn, &raw_min, &evx_min);
        printf("\nsmallest nonzero interval between back-to-back marks "
               "(%d tries; -1: none was nonzero): raw %.6f ms, evx timer "
               "%.6f ms\n",
               rn, raw_min, evx_min);
        printf("RESOLUTION raw_min_ms=%.6f evx_timer_min_ms=%.6f tries=%d\n",
               raw_min, evx_min, rn);
    }

    if (nsel > 0)
        printf("\nwhat each row times (per call):\n");
    for (int op = 0; op < OP_COUNT; op++)
        if (selected[op])
            printf("  %-30s raw: %s\n  %-30s evx: %s\n", k_rows[op].id,
                   k_rows[op].raw_is, "", k_rows[op].evx_is);

    EVX(evx_stream_destroy(g_evx_stream));
    RAW(g_raw.StreamDestroy(g_raw_stream));
    free(g_raw_events);
    free(g_evx_events);
    free(t_raw);
    free(t_evx);
    bench_raw_close(&g_raw);

    printf("rows: %d measured\n", nsel);
    return 0;
}
