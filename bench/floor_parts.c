/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/*
 * evx-floor-parts: where the nanoseconds that evx adds to a hot call go.
 *
 * evx-bench gives evx - raw for each hot call. This program splits that
 * difference into the parts a reader can name, by timing, in one process
 * and one context, the raw driver call alone, the raw call with one of
 * evx's guarantees done by hand around it, and the evx call:
 *
 *   raw        the driver call
 *   +hazard    the call inside a hold on a handle published with a seq_cst
 *              exchange of a thread's hazard word before it and a release
 *              store after it: evx's hold where the kernel has no
 *              membarrier, and under ThreadSanitizer
 *   +light     the same hold published with a plain store and a compiler
 *              barrier: evx's hold where destroys run membarrier instead
 *              (docs/design.md); what keeps a racing destroy from freeing
 *              what the call uses
 *   +capture   (timer rows) +light and the two cuStreamIsCapturing a
 *              timer's start and stop make, so that marks under stream
 *              capture become graph nodes; (host_func) +light and the
 *              cuStreamIsCapturing a launch makes, so that a function
 *              launched under capture becomes the graph's
 *   +claim     (fence signal) +light and a compare-and-swap on a 64-bit
 *              word, the monotonic claim of a signalled value
 *   evx        the evx call
 *
 * Variants alternate within each repetition (round robin, the order
 * rotating), short repetitions many times, so that the drift of a host's
 * clock and neighbours falls on every variant alike; medians of the
 * repetitions, ns per call. "evx - best" is what
 * no named part explains: handle decoding, argument checks, the status
 * plumbing, and noise.
 *
 *   evx-floor-parts [--reps N] [--calls N] [--quick]
 */
#include "bench_common.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define RAW(call) CHECK_RAW(&g_raw, call)
#define EVX(call) CHECK_EVX(call)

static bench_raw g_raw;
static CUstream g_stream;
static evx_stream_t g_evx_stream;
static CUresult (*g_is_capturing)(CUstream s, CUstreamCaptureStatus *st);

/* A thread's hazard word, on a line of its own as evx's is. */
static __thread struct {
    uint64_t word;
} t_hz __attribute__((aligned(64)));
/* The claim word of the +claim part. */
static uint64_t g_claim_word __attribute__((aligned(64)));

static inline void hold_seq(uint64_t mark)
{
    (void)__atomic_exchange_n(&t_hz.word, mark, __ATOMIC_SEQ_CST);
}
static inline void hold_light(uint64_t mark)
{
    __atomic_store_n(&t_hz.word, mark, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}
static inline void hold_end(void)
{
    __atomic_store_n(&t_hz.word, 0, __ATOMIC_RELEASE);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}
static inline void claim(uint64_t value)
{
    uint64_t prev = __atomic_load_n(&g_claim_word, __ATOMIC_RELAXED);
    while (value > prev &&
           !__atomic_compare_exchange_n(&g_claim_word, &prev, value, 1,
                                        __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
    }
}

enum part { P_RAW, P_HAZARD, P_LIGHT, P_CAPTURE, P_CLAIM, P_EVX, P_COUNT };
static const char *const k_part_names[P_COUNT] = {
    "raw", "+hazard", "+light", "+capture", "+claim", "evx"};

enum op { OP_QUERY, OP_SYNC, OP_ELAPSED, OP_WAIT, OP_RECORD, OP_REGION, OP_TIMER,
          OP_FENCE_SIGNAL, OP_FENCE_WAIT, OP_HOST_FUNC, OP_COUNT };

typedef struct row {
    const char *id;
    const char *what;
    unsigned parts; /* bit per part */
    int quarter;    /* n / 4 iterations */
} row;

#define BIT(p) (1u << (p))
#define HOLD_PARTS (BIT(P_RAW) | BIT(P_HAZARD) | BIT(P_LIGHT) | BIT(P_EVX))

static const row k_rows[OP_COUNT] = {
    {"query_done", "cuEventQuery of a completed event", HOLD_PARTS, 0},
    {"synchronize_done", "cuEventSynchronize of a completed event", HOLD_PARTS, 0},
    {"elapsed_time", "cuEventElapsedTime of two completed events", HOLD_PARTS, 0},
    {"stream_wait_event", "cuStreamWaitEvent on a completed event",
     HOLD_PARTS, 0},
    {"record", "cuEventRecord on a stream", HOLD_PARTS, 0},
    {"timed_region", "record a; record b; synchronize b; elapsed (evx: the same four)",
     HOLD_PARTS, 1},
    {"timer", "record a; record b; synchronize b; elapsed (evx: a timer)",
     HOLD_PARTS | BIT(P_CAPTURE), 1},
    {"fence_signal", "cuStreamWriteValue64 of a growing value",
     HOLD_PARTS | BIT(P_CLAIM), 0},
    {"fence_wait", "cuStreamWaitValue64 of a reached value",
     HOLD_PARTS, 0},
    {"host_func", "cuLaunchHostFunc of an empty function (evx: "
     "evx_stream_launch_host_func_status of one that succeeds); the launches only",
     HOLD_PARTS | BIT(P_CAPTURE), 0},
};

static void CUDA_CB raw_noop(void *user_data) { (void)user_data; }
static evx_status_t evx_noop(void *user_data)
{
    (void)user_data;
    return EVX_SUCCESS;
}

typedef struct fixture {
    CUevent a, b;
    evx_event_t ea, eb;
    evx_timer_t timer;
    evx_fence_t fence;
    uint64_t *word;       /* raw fence word (pinned, mapped) */
    CUdeviceptr dword;
    uint64_t raw_value;   /* last raw value written */
    uint64_t evx_value;   /* last value signalled on the evx fence */
} fixture;

static fixture g_fx;

/* Rows whose calls queue work on the stream. Timed in chunks of kChunk
 * calls with a synchronize between chunks, untimed: a long run of queued
 * calls fills the stream's queue, and the calls then wait for the GPU to
 * drain it, which hides the host's cost of each call. */
enum { kChunk = 128 };
static int queued(enum op op)
{
    return op == OP_WAIT || op == OP_RECORD || op == OP_FENCE_SIGNAL || op == OP_FENCE_WAIT ||
           op == OP_HOST_FUNC;
}

/* One repetition of `op` in variant `p`: ns per call. */
static double rep(enum op op, enum part p, int n)
{
    fixture *f = &g_fx;
    CUstream s = g_stream;
    evx_stream_t es = g_evx_stream;
    float ms = 0.0f;
    CUstreamCaptureStatus cap;
    const int hold = p == P_HAZARD;
    const int light = p == P_LIGHT || p == P_CAPTURE || p == P_CLAIM;
    double t0 = bench_now_ns();
#define HELD(call)                                                            \
    do {                                                                      \
        if (hold) hold_seq(1);                                                \
        else if (light) hold_light(1);                                        \
        RAW(call);                                                            \
        if (hold || light) hold_end();                                        \
    } while (0)
    switch (op) {
    case OP_QUERY:
        if (p == P_EVX) for (int i = 0; i < n; i++) EVX(evx_event_query(f->ea));
        else for (int i = 0; i < n; i++) HELD(g_raw.EventQuery(f->a));
        break;
    case OP_SYNC:
        if (p == P_EVX) for (int i = 0; i < n; i++) EVX(evx_event_synchronize(f->ea));
        else for (int i = 0; i < n; i++) HELD(g_raw.EventSynchronize(f->a));
        break;
    case OP_ELAPSED:
        if (p == P_EVX)
            for (int i = 0; i < n; i++) EVX(evx_event_elapsed_time(&ms, f->ea, f->eb));
        else
            for (int i = 0; i < n; i++) HELD(g_raw.EventElapsedTime(&ms, f->a, f->b));
        break;
    case OP_WAIT:
        if (p == P_EVX) {
            for (int i = 0; i < n; i++)
                EVX(evx_stream_wait_event(es, f->ea, EVX_EVENT_WAIT_DEFAULT));
        } else {
            for (int i = 0; i < n; i++) HELD(g_raw.StreamWaitEvent(s, f->a, 0));
        }
        break;
    case OP_RECORD:
        if (p == P_EVX) for (int i = 0; i < n; i++) EVX(evx_event_record(f->ea, es));
        else for (int i = 0; i < n; i++) HELD(g_raw.EventRecord(f->a, s));
        break;
    case OP_REGION:
        if (p == P_EVX) {
            for (int i = 0; i < n; i++) {
                EVX(evx_event_record(f->ea, es));
                EVX(evx_event_record(f->eb, es));
                EVX(evx_event_synchronize(f->eb));
                EVX(evx_event_elapsed_time(&ms, f->ea, f->eb));
            }
        } else {
            for (int i = 0; i < n; i++) {
                HELD(g_raw.EventRecord(f->a, s));
                HELD(g_raw.EventRecord(f->b, s));
                HELD(g_raw.EventSynchronize(f->b));
                HELD(g_raw.EventElapsedTime(&ms, f->a, f->b));
            }
        }
        break;
    case OP_TIMER:
        if (p == P_EVX) {
            for (int i = 0; i < n; i++) {
                EVX(evx_timer_start(f->timer, es));
                EVX(evx_timer_stop(f->timer, es));
                EVX(evx_timer_synchronize(f->timer, &ms));
            }
        } else {
            for (int i = 0; i < n; i++) {
                if (p == P_CAPTURE) RAW(g_is_capturing(s, &cap));
                HELD(g_raw.EventRecord(f->a, s));
                if (p == P_CAPTURE) RAW(g_is_capturing(s, &cap));
                HELD(g_raw.EventRecord(f->b, s));
                HELD(g_raw.EventSynchronize(f->b));
                HELD(g_raw.EventElapsedTime(&ms, f->a, f->b));
            }
        }
        break;
    case OP_FENCE_SIGNAL:
        if (p == P_EVX) {
            for (int i = 0; i < n; i++) EVX(evx_fence_signal(f->fence, es, ++f->evx_value));
        } else {
            for (int i = 0; i < n; i++) {
                ++f->raw_value;
                if (hold) hold_seq(1);
                else if (light) hold_light(1);
                if (p == P_CLAIM) claim(f->raw_value);
                RAW(g_raw.StreamWriteValue64(s, f->dword, f->raw_value, 0));
                if (hold || light) hold_end();
            }
        }
        break;
    case OP_FENCE_WAIT:
        if (p == P_EVX) {
            for (int i = 0; i < n; i++) EVX(evx_stream_wait_fence(es, f->fence, 1));
        } else {
            for (int i = 0; i < n; i++)
                HELD(g_raw.StreamWaitValue64(s, f->dword, 1, CU_STREAM_WAIT_VALUE_GEQ));
        }
        break;
    case OP_HOST_FUNC:
        if (p == P_EVX) {
            for (int i = 0; i < n; i++)
                EVX(evx_stream_launch_host_func_status(es, evx_noop, NULL, NULL));
        } else {
            for (int i = 0; i < n; i++) {
                if (p == P_CAPTURE) RAW(g_is_capturing(s, &cap));
                HELD(g_raw.LaunchHostFunc(s, raw_noop, NULL));
            }
        }
        break;
    case OP_COUNT:
        break;
    }
#undef HELD
    const double ns = (bench_now_ns() - t0) / n;
    /* Outside the timing: the queued rows' work drains before the next
     * chunk (queued(): a full queue would time the GPU, not the call). */
    if (queued(op)) RAW(g_raw.StreamSynchronize(s));
    return ns;
}

/* `n` calls of a row in variant p, in chunks for the queued rows: ns per
 * call. */
static double rep_chunked(enum op op, enum part p, int n)
{
    if (!queued(op)) return rep(op, p, n);
    double total = 0.0;
    for (int done = 0; done < n; done += kChunk) {
        const int m = n - done < kChunk ? n - done : kChunk;
        total += rep(op, p, m) * m;
    }
    return total / n;
}

static void setup(void)
{
    fixture *f = &g_fx;
    RAW(g_raw.StreamCreateWithPriority(&g_stream, CU_STREAM_NON_BLOCKING, 0));
    EVX(evx_stream_wrap_external(0, (void *)g_stream, &g_evx_stream));
    RAW(g_raw.EventCreate(&f->a, CU_EVENT_DEFAULT));
    RAW(g_raw.EventCreate(&f->b, CU_EVENT_DEFAULT));
    RAW(g_raw.EventRecord(f->a, g_stream));
    RAW(g_raw.EventRecord(f->b, g_stream));
    EVX(evx_device_create_event(0, EVX_EVENT_DEFAULT, &f->ea));
    EVX(evx_device_create_event(0, EVX_EVENT_DEFAULT, &f->eb));
    EVX(evx_event_record(f->ea, g_evx_stream));
    EVX(evx_event_record(f->eb, g_evx_stream));
    EVX(evx_device_create_timer(0, &f->timer));
    EVX(evx_device_create_fence(0, 1, EVX_FENCE_DEFAULT, &f->fence));
    f->evx_value = 1;
    void *p = NULL;
    RAW(g_raw.MemHostAlloc(&p, 128, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
    f->word = (uint64_t *)p;
    *f->word = 1;
    f->raw_value = 1;
    RAW(g_raw.MemHostGetDevicePointer(&f->dword, p, 0));
    RAW(g_raw.StreamSynchronize(g_stream));
}

static void teardown(void)
{
    fixture *f = &g_fx;
    RAW(g_raw.StreamSynchronize(g_stream));
    EVX(evx_fence_destroy(f->fence));
    EVX(evx_timer_destroy(f->timer));
    EVX(evx_event_destroy(f->ea));
    EVX(evx_event_destroy(f->eb));
    EVX(evx_stream_destroy(g_evx_stream));
    RAW(g_raw.EventDestroy(f->a));
    RAW(g_raw.EventDestroy(f->b));
    RAW(g_raw.MemFreeHost(f->word));
    RAW(g_raw.StreamDestroy(g_stream));
}

int main(int argc, char **argv)
{
    int reps = 31, calls = 6000;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            reps = 3;
            calls = 200;
        } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
            if ((reps = (int)bench_parse_long("--reps", argv[++i], 1, 1000)) < 0) return 2;
        } else if (strcmp(argv[i], "--calls") == 0 && i + 1 < argc) {
            if ((calls = (int)bench_parse_long("--calls", argv[++i], 4, 10000000)) < 0)
                return 2;
        } else {
            fprintf(stderr, "usage: evx-floor-parts [--reps N] [--calls N] [--quick]\n");
            return 2;
        }
    }
    if (bench_raw_open(&g_raw) != 0) return 1;
    g_is_capturing = g_raw.StreamIsCapturing;
    if (!g_raw.StreamWriteValue64 || !g_raw.StreamWaitValue64 || !g_raw.MemHostAlloc ||
        !g_is_capturing) {
        fprintf(stderr, "evx-floor-parts: the driver lacks a call this program times\n");
        return 1;
    }
    setup();
    bench_print_driver(stdout, &g_raw);
    printf("method: one process, one context, one stream (evx borrows it); for each "
           "row the variants alternate within each of %d repetitions of %d calls "
           "(%d for the timer), order rotating; medians, ns per call\n\n",
           reps, calls, calls / 4);
    printf("%-18s", "call");
    for (int p = 0; p < P_COUNT; p++) printf(" %10s", k_part_names[p]);
    printf(" %10s %10s\n", "evx-raw", "evx-best");

    double *v = malloc(sizeof(double) * (size_t)reps * P_COUNT);
    if (!v) return 1;
    for (int op = 0; op < OP_COUNT; op++) {
        const row *r = &k_rows[op];
        const int n = r->quarter ? calls / 4 : calls;
        int parts[P_COUNT], np = 0;
        for (int p = 0; p < P_COUNT; p++)
            if (r->parts & BIT(p)) parts[np++] = p;
        (void)rep_chunked((enum op)op, P_RAW, n / 10 + 1); /* warm */
        (void)rep_chunked((enum op)op, P_EVX, n / 10 + 1);
        for (int k = 0; k < reps; k++)
            for (int j = 0; j < np; j++) {
                const int p = parts[(j + k) % np];
                v[p * reps + k] = rep_chunked((enum op)op, (enum part)p, n);
            }
        double med[P_COUNT];
        printf("%-18s", r->id);
        for (int p = 0; p < P_COUNT; p++) {
            if (!(r->parts & BIT(p))) {
                med[p] = -1.0;
                printf(" %10s", "-");
                continue;
            }
            med[p] = bench_median(&v[p * reps], reps);
            printf(" %10.1f", med[p]);
        }
        /* The guarantees evx's call keeps: the light hold, plus capture
         * checks and the claim where the row has them. */
        double best = med[P_LIGHT];
        if (med[P_CAPTURE] >= 0) best = med[P_CAPTURE];
        if (med[P_CLAIM] >= 0) best = med[P_CLAIM];
        printf(" %+10.1f %+10.1f\n", med[P_EVX] - med[P_RAW], med[P_EVX] - best);
        printf("PARTS %s", r->id);
        for (int p = 0; p < P_COUNT; p++)
            if (med[p] >= 0) printf(" %s=%.1f", k_part_names[p][0] == '+' ? k_part_names[p] + 1
                                                                         : k_part_names[p],
                                    med[p]);
        printf("\n");
    }
    free(v);
    printf("\nrows: ");
    for (int op = 0; op < OP_COUNT; op++)
        printf("%s%s: %s", op ? "; " : "", k_rows[op].id, k_rows[op].what);
    printf("\nevx-best: evx minus the raw call with the guarantees of its row done by "
           "hand (+claim for fence_signal, +capture for timer and host_func, else +light)\n");
    teardown();
    bench_raw_close(&g_raw);
    return 0;
}
