/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/*
 * Threads stress: 16 threads share one table of handles (events, streams,
 * pools, timers, timelines, notifiers) and call evx on them at random, some
 * destroying and re-creating handles while the others record, query, wait,
 * take elapsed times, use pools and timers, and watch events. It checks
 * that every status is one the call may return (no crash, no unknown code),
 * that every failure other than EVX_ERROR_NOT_READY leaves a non-empty
 * message, and, on the host emulation, that no driver object is left after
 * the handles are destroyed and the devices trimmed.
 *
 * Notifiers: every callback watch that succeeded runs exactly once by the
 * end (destroy waits for pending watches; churned notifiers included), and
 * on one notifier that is never destroyed during the run, every token
 * watched is read back exactly once (each token a distinct number, marked
 * in a bitmap as readers on any thread take it).
 *
 * Rounds: every EVX_STRESS_ROUND_MS (default 500) the workers stop between
 * calls and wait, alive and idle, while the main thread checks that what
 * the round destroyed or released was reclaimed with no further call of
 * the threads that did it: the keeper's tokens are read back and every
 * notifier, event, timer, timeline and stream in the table destroyed; each
 * pool then counts no event in use, and on the host emulation the live
 * streams, contexts and host functions are back to the start of the run.
 * (Live driver events are counted only at the end, after a trim: a trim
 * here would reach the workers' kept driver events, but each worker also
 * keeps up to four freed timers, events and all, until its own trim or
 * its exit.)
 * The keeper is made again and the workers go on.
 *
 * A watchdog thread turns a hang into a failure: a worker whose call has not
 * returned for EVX_STRESS_HANG_SECONDS (default 20) is reported with the
 * call it is in, and the program exits 2.
 *
 * Environment: EVX_STRESS_SECONDS (run time, default 5), EVX_STRESS_THREADS
 * (default 16), EVX_STRESS_SEED. Runs on any driver: EVX_DRIVER=host for
 * the emulation, unset for the GPU. See docs/robustness.md.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h> /* _exit */

#include <evx/evx.h>

#include "hostdebug.h"

enum { MAX_THREADS = 64, NEV = 48, NST = 8, NPOOL = 3, NTIMER = 6, NTL = 3, NNOT = 3 };

/* The shared table: each entry a handle or 0, swapped atomically. A thread
 * may use a handle another thread is destroying: evx answers
 * EVX_ERROR_INVALID_HANDLE for a dead one. */
static uintptr_t events[NEV], streams[NST], pools[NPOOL], timers[NTIMER],
    timelines[NTL], notifiers[NNOT];

/* Notifier accounting (atomics). notifiers[0] is made before the workers
 * start and destroyed only at the end: its tokens are numbered from
 * tok_next and checked exactly once in tok_seen. */
enum { TOK_MAX = 1 << 22 };
static evx_notifier_t keeper;
static unsigned long long cb_watched, cb_run, tok_next, tok_watched, tok_read;
static unsigned char tok_seen[TOK_MAX / 8];
static volatile int tok_dup; /* atomic: a token read twice, or never watched */

static int ndev = 1;
static volatile int stop_flag;
/* Rounds (atomics): workers stop between calls while pause_flag is set, and
 * count themselves in `parked` (a worker that ends counts too). */
static int pause_flag, parked;

typedef struct worker {
    pthread_t th;
    int id;
    uint64_t rng;
    const char *in_call;        /* the evx call running, or NULL (atomic) */
    long long call_started_us;  /* when it started (atomic) */
    unsigned long long calls;
    unsigned long long failures; /* statuses other than SUCCESS/NOT_READY */
    int bad;                    /* atomic: the main thread reads it */
    char first_bad[512];
} worker;

static worker workers[MAX_THREADS];
static int nthreads = 16;

static void pause_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static uint64_t next(worker *w)
{
    uint64_t x = w->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return w->rng = x;
}

static unsigned pick(worker *w, unsigned n) { return (unsigned)(next(w) % n); }

static uintptr_t load(uintptr_t *slot)
{
    return __atomic_load_n(slot, __ATOMIC_ACQUIRE);
}

static uintptr_t take(uintptr_t *slot)
{
    return __atomic_exchange_n(slot, (uintptr_t)0, __ATOMIC_ACQ_REL);
}

/* Puts h in an empty slot; returns 0 if the slot was taken meanwhile. */
static int put(uintptr_t *slot, uintptr_t h)
{
    uintptr_t empty = 0;
    return __atomic_compare_exchange_n(slot, &empty, h, 0, __ATOMIC_ACQ_REL,
                                       __ATOMIC_ACQUIRE);
}

/* ---- status checks ------------------------------------------------------- */

/* Statuses a call on shared handles may return here. Anything else, an
 * unrecognised code included, is a failure. */
static int allowed(evx_status_t st)
{
    switch (st) {
    case EVX_SUCCESS:
    case EVX_ERROR_NOT_READY:
    case EVX_ERROR_INVALID_HANDLE:  /* destroyed by another thread */
    case EVX_ERROR_INVALID_VALUE:   /* an event released to the wrong pool */
    case EVX_ERROR_ILLEGAL_STATE:   /* a timer stopped before it started */
    case EVX_ERROR_OUT_OF_MEMORY:   /* a full pool or timeline */
        return 1;
    default:
        return 0;
    }
}

static void bad(worker *w, const char *call, const char *fmt, evx_status_t st)
{
    if (__atomic_fetch_add(&w->bad, 1, __ATOMIC_ACQ_REL) == 0)
        snprintf(w->first_bad, sizeof w->first_bad, "%s -> %s (%d): %s: %s",
                 call, evx_status_name(st), (int)st, fmt,
                 evx_last_error_message());
}

static void enter(worker *w, const char *call)
{
    __atomic_store_n(&w->call_started_us, (long long)(now_ms() * 1e3),
                     __ATOMIC_RELAXED);
    __atomic_store_n(&w->in_call, call, __ATOMIC_RELEASE);
    evx_clear_last_error();
}

static evx_status_t leave(worker *w, const char *call, evx_status_t st)
{
    const char *m;
    __atomic_store_n(&w->in_call, (const char *)NULL, __ATOMIC_RELEASE);
    w->calls++;
    if (!allowed(st)) {
        bad(w, call, "a status this call may not return here", st);
        return st;
    }
    if (st == EVX_SUCCESS || st == EVX_ERROR_NOT_READY)
        return st;
    w->failures++;
    m = evx_last_error_message();
    if (m == NULL || m[0] == '\0')
        bad(w, call, "failed without a message", st);
    else if (evx_last_error() != st)
        bad(w, call, "evx_last_error() disagrees", st);
    return st;
}

#define CALL(w, expr) (enter((w), #expr), leave((w), #expr, (expr)))

/* ---- the actions ----------------------------------------------------------- */

static void host_pause(void *arg)
{
    struct timespec t = {0, (long)(uintptr_t)arg * 1000L};
    nanosleep(&t, NULL);
}

/* A handle from the table: a few tries for a live one, else what the last
 * try found (possibly NULL, which evx refuses with a message). */
static uintptr_t any_of(worker *w, uintptr_t *slots, unsigned n)
{
    uintptr_t h = 0;
    int tries;
    for (tries = 0; tries < 3 && h == 0; tries++)
        h = load(&slots[pick(w, n)]);
    return h;
}

static evx_event_t ev_at(worker *w) { return (evx_event_t)any_of(w, events, NEV); }
static evx_stream_t st_at(worker *w) { return (evx_stream_t)any_of(w, streams, NST); }

static evx_status_t d_event(uintptr_t h) { return evx_event_destroy((evx_event_t)h); }
static evx_status_t d_stream(uintptr_t h) { return evx_stream_destroy((evx_stream_t)h); }
static evx_status_t d_pool(uintptr_t h) { return evx_event_pool_destroy((evx_event_pool_t)h); }
static evx_status_t d_timer(uintptr_t h) { return evx_timer_destroy((evx_timer_t)h); }
static evx_status_t d_timeline(uintptr_t h) { return evx_timeline_destroy((evx_timeline_t)h); }

static evx_status_t new_timer(int dev, uintptr_t *out)
{
    evx_timer_t t = NULL;
    evx_status_t st = evx_device_create_timer(dev, &t);
    *out = (uintptr_t)t;
    return st;
}

static evx_status_t d_notifier(uintptr_t h)
{
    return evx_notifier_destroy((evx_notifier_t)h);
}

static evx_status_t new_notifier(int dev, uintptr_t *out)
{
    evx_notifier_t n = NULL;
    evx_status_t st = evx_notifier_create(NULL, &n);
    (void)dev;
    *out = (uintptr_t)n;
    return st;
}

/* Runs on a driver thread: counts, and nothing else. */
static void count_callback(void *arg)
{
    (void)arg;
    __atomic_fetch_add(&cb_run, 1, __ATOMIC_RELAXED);
}

/* Marks tokens of the keeper read; a second read (or a token never handed
 * out) is a failure. */
static void mark_tokens(const uint64_t *t, uint32_t n)
{
    uint32_t i;
    for (i = 0; i < n; i++) {
        const uint64_t k = t[i];
        unsigned char bit;
        if (k >= __atomic_load_n(&tok_next, __ATOMIC_ACQUIRE) || k >= TOK_MAX) {
            __atomic_store_n(&tok_dup, 1, __ATOMIC_RELEASE);
            continue;
        }
        bit = (unsigned char)(1u << (k % 8));
        if (__atomic_fetch_or(&tok_seen[k / 8], bit, __ATOMIC_ACQ_REL) & bit)
            __atomic_store_n(&tok_dup, 1, __ATOMIC_RELEASE);
    }
    __atomic_fetch_add(&tok_read, n, __ATOMIC_RELAXED);
}

static evx_status_t new_timeline(int dev, uintptr_t *out)
{
    evx_timeline_t t = NULL;
    evx_status_t st = evx_device_create_timeline(dev, 16, &t);
    *out = (uintptr_t)t;
    return st;
}

/* Destroys the object in a random slot (1 time in 6), or fills it if empty. */
typedef struct kind_ops {
    const char *create_name, *destroy_name; /* for the watchdog and failures */
    evx_status_t (*create)(int dev, uintptr_t *out);
    evx_status_t (*destroy)(uintptr_t h);
} kind_ops;

static const kind_ops timer_ops = {"evx_device_create_timer", "evx_timer_destroy",
                                   new_timer, d_timer};
static const kind_ops timeline_ops = {"evx_device_create_timeline",
                                      "evx_timeline_destroy", new_timeline,
                                      d_timeline};
static const kind_ops notifier_ops = {"evx_notifier_create", "evx_notifier_destroy",
                                      new_notifier, d_notifier};

static evx_status_t destroy_one(worker *w, const kind_ops *k, uintptr_t h)
{
    enter(w, k->destroy_name);
    return leave(w, k->destroy_name, k->destroy(h));
}

static void churn(worker *w, uintptr_t *slots, unsigned n, int dev,
                  const kind_ops *k)
{
    unsigned i = pick(w, n);
    uintptr_t h = 0;
    if (pick(w, 6) == 0) {
        h = take(&slots[i]);
        if (h)
            destroy_one(w, k, h);
    } else if (load(&slots[i]) == 0) {
        evx_status_t st;
        enter(w, k->create_name);
        st = leave(w, k->create_name, k->create(dev, &h));
        if (st == EVX_SUCCESS && !put(&slots[i], h))
            destroy_one(w, k, h);
    }
}

static void act(worker *w)
{
    const int dev = (int)pick(w, (unsigned)ndev);
    const unsigned what = pick(w, 28);
    float ms = 0, iv[4];
    uint32_t n = 0;

    switch (what) {
    case 0: { /* create an event into an empty slot */
        evx_event_t e = NULL;
        unsigned flags = pick(w, 2) ? EVX_EVENT_DISABLE_TIMING : 0;
        if (CALL(w, evx_device_create_event(dev, flags, &e)) == EVX_SUCCESS &&
            !put(&events[pick(w, NEV)], (uintptr_t)e))
            CALL(w, evx_event_destroy(e));
        break;
    }
    case 1: { /* destroy an event others may be using */
        uintptr_t h = take(&events[pick(w, NEV)]);
        if (h)
            CALL(w, evx_event_destroy((evx_event_t)h));
        break;
    }
    case 2: {
        evx_stream_t s = NULL;
        if (CALL(w, evx_device_create_stream(dev, pick(w, 2), 0, &s)) ==
                EVX_SUCCESS &&
            !put(&streams[pick(w, NST)], (uintptr_t)s))
            CALL(w, evx_stream_destroy(s));
        break;
    }
    case 3: {
        uintptr_t h = pick(w, 4) == 0 ? take(&streams[pick(w, NST)]) : 0;
        if (h)
            CALL(w, evx_stream_destroy((evx_stream_t)h));
        break;
    }
    case 4:
    case 5:
    case 6:
        CALL(w, evx_event_record(ev_at(w), st_at(w)));
        break;
    case 7:
        CALL(w, evx_event_query(ev_at(w)));
        break;
    case 8:
        CALL(w, evx_event_synchronize(ev_at(w)));
        break;
    case 9:
        CALL(w, evx_event_elapsed_time(&ms, ev_at(w), ev_at(w)));
        break;
    case 10:
        CALL(w, evx_stream_wait_event(st_at(w), ev_at(w), 0));
        break;
    case 11:
        CALL(w, evx_stream_query(st_at(w)));
        break;
    case 12:
        CALL(w, evx_stream_launch_host_func(st_at(w), host_pause,
                                            (void *)(uintptr_t)pick(w, 300)));
        break;
    case 13:
        if (pick(w, 8) == 0)
            CALL(w, evx_stream_synchronize(st_at(w)));
        break;
    case 14: { /* pools: create, or destroy one in use */
        unsigned i = pick(w, NPOOL);
        if (pick(w, 3) == 0) {
            uintptr_t h = take(&pools[i]);
            if (h)
                CALL(w, evx_event_pool_destroy((evx_event_pool_t)h));
        } else if (load(&pools[i]) == 0) {
            evx_event_pool_options_t o;
            evx_event_pool_t p = NULL;
            memset(&o, 0, sizeof o);
            o.struct_size = (uint32_t)sizeof o;
            o.capacity = 8;
            o.prewarm = 2;
            if (CALL(w, evx_device_create_event_pool(dev, &o, &p)) == EVX_SUCCESS &&
                !put(&pools[i], (uintptr_t)p))
                CALL(w, evx_event_pool_destroy(p));
        }
        break;
    }
    case 15: { /* acquire into the shared table; release one back */
        evx_event_pool_t p = (evx_event_pool_t)any_of(w, pools, NPOOL);
        if (pick(w, 2)) {
            evx_event_t e = NULL;
            if (CALL(w, evx_event_pool_acquire(p, &e)) == EVX_SUCCESS &&
                !put(&events[pick(w, NEV)], (uintptr_t)e))
                CALL(w, evx_event_destroy(e));
        } else {
            uintptr_t h = take(&events[pick(w, NEV)]);
            /* Not from that pool (or it is gone): the event stays live,
             * and is destroyed instead. */
            if (h && CALL(w, evx_event_pool_release(p, (evx_event_t)h)) !=
                         EVX_SUCCESS)
                CALL(w, evx_event_destroy((evx_event_t)h));
        }
        break;
    }
    case 16: /* timers */
        churn(w, timers, NTIMER, dev, &timer_ops);
        break;
    case 17: {
        evx_timer_t t = (evx_timer_t)any_of(w, timers, NTIMER);
        if (pick(w, 2))
            CALL(w, evx_timer_start(t, st_at(w)));
        else
            CALL(w, evx_timer_stop(t, st_at(w)));
        break;
    }
    case 18: {
        evx_timer_t t = (evx_timer_t)any_of(w, timers, NTIMER);
        if (pick(w, 4))
            CALL(w, evx_timer_elapsed(t, &ms));
        else
            CALL(w, evx_timer_synchronize(t, &ms));
        break;
    }
    case 19: /* timelines */
        churn(w, timelines, NTL, dev, &timeline_ops);
        break;
    case 20:
        CALL(w, evx_timeline_mark((evx_timeline_t)any_of(w, timelines, NTL),
                                  st_at(w), &n));
        break;
    case 21: {
        evx_timeline_t t = (evx_timeline_t)any_of(w, timelines, NTL);
        switch (pick(w, 4)) {
        case 0: CALL(w, evx_timeline_intervals(t, iv, 4, &n)); break;
        case 1: CALL(w, evx_timeline_synchronize(t)); break;
        case 2: CALL(w, evx_timeline_reset(t)); break;
        default: CALL(w, evx_timeline_count(t, &n)); break;
        }
        break;
    }
    case 22:
        if (pick(w, 16) == 0)
            CALL(w, evx_device_trim(dev));
        break;
    case 23: /* notifiers 1 and 2: made and destroyed with watches pending */
        churn(w, notifiers + 1, NNOT - 1, dev, &notifier_ops);
        break;
    case 24: { /* a token watch: on the keeper, counted; else on any */
        if (pick(w, 2)) {
            const uint64_t k = __atomic_fetch_add(&tok_next, 1, __ATOMIC_ACQ_REL);
            if (k < TOK_MAX) {
                if (CALL(w, evx_notifier_watch(keeper, ev_at(w), k)) == EVX_SUCCESS)
                    __atomic_fetch_add(&tok_watched, 1, __ATOMIC_RELAXED);
                else /* never delivered: counts as read so the totals agree */
                    mark_tokens(&k, 1);
                break;
            }
        }
        CALL(w, evx_notifier_watch((evx_notifier_t)any_of(w, notifiers + 1, NNOT - 1),
                                   ev_at(w), next(w)));
        break;
    }
    case 25: /* a callback watch, on any notifier */
        if (CALL(w, evx_notifier_watch_callback((evx_notifier_t)any_of(w, notifiers, NNOT),
                                                ev_at(w), count_callback, NULL)) ==
            EVX_SUCCESS)
            __atomic_fetch_add(&cb_watched, 1, __ATOMIC_RELAXED);
        break;
    case 26: { /* read tokens: the keeper's are checked */
        uint64_t t[16];
        uint32_t got = 0;
        evx_notifier_t n =
            pick(w, 2) ? keeper : (evx_notifier_t)any_of(w, notifiers + 1, NNOT - 1);
        if (CALL(w, evx_notifier_read(n, t, 16, &got)) == EVX_SUCCESS && n == keeper)
            mark_tokens(t, got);
        break;
    }
    case 27: {
        uint64_t pending = 0, queued = 0;
        CALL(w, evx_notifier_get_counts((evx_notifier_t)any_of(w, notifiers, NNOT), &pending,
                                        &queued));
        break;
    }
    default: {
        void *native = NULL;
        CALL(w, evx_event_get_native(ev_at(w), &native));
        break;
    }
    }
}

static void *worker_main(void *arg)
{
    worker *w = (worker *)arg;
    while (!__atomic_load_n(&stop_flag, __ATOMIC_ACQUIRE) &&
           __atomic_load_n(&w->bad, __ATOMIC_ACQUIRE) == 0) {
        if (__atomic_load_n(&pause_flag, __ATOMIC_ACQUIRE)) {
            __atomic_add_fetch(&parked, 1, __ATOMIC_ACQ_REL);
            while (__atomic_load_n(&pause_flag, __ATOMIC_ACQUIRE) &&
                   !__atomic_load_n(&stop_flag, __ATOMIC_ACQUIRE))
                pause_ms(1);
            continue;
        }
        act(w);
    }
    __atomic_add_fetch(&parked, 1, __ATOMIC_ACQ_REL);
    return NULL;
}

/* ---- the watchdog ---------------------------------------------------------- */

static double hang_ms = 20000;
static double deadline_ms; /* the whole run, teardown included; set before start */
static volatile int watchdog_done;

static void *watchdog_main(void *arg)
{
    int i, stuck = 0;
    (void)arg;
    while (!__atomic_load_n(&watchdog_done, __ATOMIC_ACQUIRE)) {
        const double t = now_ms();
        for (i = 0; i < nthreads; i++) {
            const char *c = __atomic_load_n(&workers[i].in_call, __ATOMIC_ACQUIRE);
            const double since =
                (double)__atomic_load_n(&workers[i].call_started_us, __ATOMIC_RELAXED) / 1e3;
            if (c != NULL && t - since > hang_ms) {
                fprintf(stderr, "stress: HANG: thread %d has been in %s for "
                                "%.0f ms\n",
                        i, c, t - since);
                stuck++;
            }
        }
        if (t > deadline_ms) {
            fprintf(stderr, "stress: HANG: the run has not ended %.0f ms after "
                            "its time (teardown stuck?)\n", t - deadline_ms + hang_ms);
            stuck++;
        }
        if (stuck) {
            fprintf(stderr, "stress: FAIL: %d thread(s) stuck\n", stuck);
            fflush(stderr);
            _exit(2);
        }
        pause_ms(200);
    }
    return NULL;
}

/* ---- main -------------------------------------------------------------------- */

static long env_long(const char *name, long dflt, long lo, long hi)
{
    const char *v = getenv(name);
    char *end = NULL;
    long x;
    if (v == NULL || *v == '\0')
        return dflt;
    x = strtol(v, &end, 10);
    if (*end != '\0' || x < lo || x > hi) {
        fprintf(stderr, "stress: %s=%s is not an integer in [%ld, %ld]\n",
                name, v, lo, hi);
        exit(2);
    }
    return x;
}

static void drain(uintptr_t *slots, int n, evx_status_t (*destroy)(uintptr_t),
                  int *fails)
{
    int i;
    for (i = 0; i < n; i++) {
        uintptr_t h = take(&slots[i]);
        evx_status_t st;
        if (h == 0)
            continue;
        st = destroy(h);
        if (st != EVX_SUCCESS) {
            fprintf(stderr, "stress: destroying a handle at the end -> %s: %s\n",
                    evx_status_name(st), evx_last_error_message());
            (*fails)++;
        }
    }
}

/* Reads the keeper's tokens back once nothing is pending on it. */
static void read_keeper(int *fails)
{
    evx_status_t st;
    for (;;) {
        uint64_t pending = 1, t[256];
        uint32_t got = 0;
        if ((st = evx_notifier_get_counts(keeper, &pending, NULL)) != EVX_SUCCESS) {
            fprintf(stderr, "stress: evx_notifier_get_counts -> %s: %s\n",
                    evx_status_name(st), evx_last_error_message());
            (*fails)++;
            break;
        }
        do {
            if ((st = evx_notifier_read(keeper, t, 256, &got)) != EVX_SUCCESS) {
                fprintf(stderr, "stress: evx_notifier_read -> %s\n", evx_status_name(st));
                (*fails)++;
                break;
            }
            mark_tokens(t, got);
        } while (got == 256);
        if (pending == 0 || st != EVX_SUCCESS)
            break;
        pause_ms(1);
    }
}

/* The end of a round, the workers parked: what they destroyed or released
 * must be reclaimed already (see the top of the file). Returns the number
 * of failures. */
static int round_check(int round, int counting, const evx_host_live *start)
{
    int fails = 0, i;
    evx_status_t st;
    read_keeper(&fails);
    drain(notifiers, NNOT, d_notifier, &fails);
    drain(events, NEV, d_event, &fails);
    for (i = 0; i < NPOOL; i++) {
        evx_event_pool_stats_t ps;
        const uintptr_t p = load(&pools[i]);
        if (p == 0)
            continue;
        memset(&ps, 0, sizeof ps);
        ps.struct_size = (uint32_t)sizeof ps;
        if ((st = evx_event_pool_get_stats((evx_event_pool_t)p, &ps)) != EVX_SUCCESS) {
            fprintf(stderr, "stress: round %d: evx_event_pool_get_stats -> %s: %s\n", round,
                    evx_status_name(st), evx_last_error_message());
            fails++;
        } else if (ps.in_use != 0 || ps.idle + ps.pending > ps.capacity) {
            fprintf(stderr, "stress: round %d: pool %d, every event released or destroyed: "
                            "in_use %u, idle %u, pending %u, capacity %u\n",
                    round, i, ps.in_use, ps.idle, ps.pending, ps.capacity);
            fails++;
        }
    }
    drain(timers, NTIMER, d_timer, &fails);
    drain(timelines, NTL, d_timeline, &fails);
    drain(streams, NST, d_stream, &fails);
    if (counting) {
        /* Host functions of destroyed streams still run, on the
         * emulation's threads: waited for, with no call of evx. */
        const host_debug *h = host_debug_get();
        evx_host_live now;
        const double until = now_ms() + 5000;
        for (;;) {
            h->get_live(&now);
            if ((now.streams == start->streams && now.contexts == start->contexts &&
                 now.host_funcs == start->host_funcs) ||
                now_ms() > until)
                break;
            pause_ms(1);
        }
        if (now.streams != start->streams || now.contexts != start->contexts ||
            now.host_funcs != start->host_funcs) {
            fprintf(stderr, "stress: round %d: live driver objects not back with the "
                            "workers idle: streams %lld (%lld), contexts %lld (%lld), "
                            "host functions %lld (%lld)\n",
                    round, now.streams, start->streams, now.contexts, start->contexts,
                    now.host_funcs, start->host_funcs);
            fails++;
        }
    }
    if ((st = evx_notifier_create(NULL, &keeper)) != EVX_SUCCESS) {
        fprintf(stderr, "stress: evx_notifier_create -> %s: %s\n", evx_status_name(st),
                evx_last_error_message());
        keeper = NULL;
        fails++;
    }
    notifiers[0] = (uintptr_t)keeper;
    return fails;
}

/* Stops the workers between calls; 0 when one never stopped (a hang is the
 * watchdog's to report). */
static int park_workers(void)
{
    __atomic_store_n(&parked, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&pause_flag, 1, __ATOMIC_RELEASE);
    while (__atomic_load_n(&parked, __ATOMIC_ACQUIRE) < nthreads)
        pause_ms(1);
    return 1;
}

static void resume_workers(void)
{
    __atomic_store_n(&parked, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&pause_flag, 0, __ATOMIC_RELEASE);
}

int main(void)
{
    const long seconds = env_long("EVX_STRESS_SECONDS", 5, 1, 86400);
    const long seed = env_long("EVX_STRESS_SEED", 12345, 0, 0x7fffffffL);
    const long round_ms = env_long("EVX_STRESS_ROUND_MS", 500, 10, 3600000);
    double round_t0;
    int rounds = 0;
    pthread_t wd;
    evx_host_live start, now;
    int counting, i, fails = 0, emu = 0;
    unsigned long long calls = 0, failures = 0;
    double t0, elapsed;
    evx_status_t st;

    nthreads = (int)env_long("EVX_STRESS_THREADS", 16, 1, MAX_THREADS);
    hang_ms = 1000.0 * (double)env_long("EVX_STRESS_HANG_SECONDS", 20, 1, 3600);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if ((st = evx_device_count(&ndev)) != EVX_SUCCESS || ndev < 1) {
        fprintf(stderr, "stress: no driver: %s: %s\n", evx_status_name(st),
                evx_last_error_message());
        return 1;
    }
    (void)evx_driver_is_emulation(&emu);
    counting = host_live_start(&start);
    printf("stress: %d threads, %ld s, %d device(s), %s, seed %ld\n", nthreads,
           seconds, ndev, emu ? "host emulation" : "GPU driver", seed);

    if ((st = evx_notifier_create(NULL, &keeper)) != EVX_SUCCESS) {
        fprintf(stderr, "stress: evx_notifier_create -> %s: %s\n", evx_status_name(st),
                evx_last_error_message());
        return 1;
    }
    notifiers[0] = (uintptr_t)keeper;
    deadline_ms = now_ms() + 1000.0 * (double)seconds + hang_ms;
    if (pthread_create(&wd, NULL, watchdog_main, NULL) != 0) {
        fprintf(stderr, "stress: cannot start the watchdog\n");
        return 1;
    }
    t0 = now_ms();
    for (i = 0; i < nthreads; i++) {
        workers[i].id = i;
        workers[i].rng = 0x9e3779b97f4a7c15ULL * (uint64_t)(seed + i + 1) | 1;
        if (pthread_create(&workers[i].th, NULL, worker_main, &workers[i]) != 0) {
            fprintf(stderr, "stress: cannot start thread %d\n", i);
            return 1;
        }
    }
    round_t0 = now_ms();
    while (now_ms() - t0 < 1000.0 * (double)seconds) {
        int any_bad = 0;
        for (i = 0; i < nthreads; i++)
            any_bad |= __atomic_load_n(&workers[i].bad, __ATOMIC_ACQUIRE) != 0;
        if (any_bad)
            break;
        if (now_ms() - round_t0 >= (double)round_ms) {
            park_workers();
            fails += round_check(++rounds, counting, &start);
            if (fails || keeper == NULL)
                break;
            resume_workers();
            round_t0 = now_ms();
        }
        pause_ms(10);
    }
    __atomic_store_n(&stop_flag, 1, __ATOMIC_RELEASE);
    for (i = 0; i < nthreads; i++)
        pthread_join(workers[i].th, NULL);
    elapsed = (now_ms() - t0) / 1e3;

    /* Teardown: still under the watchdog (a destroy that hangs fails). */
    read_keeper(&fails);
    drain(notifiers, NNOT, d_notifier, &fails);
    if (tok_dup || tok_read != (tok_next < TOK_MAX ? tok_next : TOK_MAX)) {
        fprintf(stderr, "stress: the keeper's tokens: %llu handed out, %llu watched, "
                        "%llu read back%s\n",
                tok_next, tok_watched, tok_read,
                tok_dup ? ", some twice or never handed out" : "");
        fails++;
    }
    if (cb_run != cb_watched) {
        fprintf(stderr, "stress: %llu callback watches succeeded, %llu callbacks ran\n",
                cb_watched, cb_run);
        fails++;
    }
    printf("stress: notifiers: %llu token watches on the keeper read back once each, "
           "%llu callbacks ran once each\n", tok_watched, cb_run);
    drain(events, NEV, d_event, &fails);
    drain(timers, NTIMER, d_timer, &fails);
    drain(timelines, NTL, d_timeline, &fails);
    drain(pools, NPOOL, d_pool, &fails);
    drain(streams, NST, d_stream, &fails);
    for (i = 0; i < ndev; i++)
        if ((st = evx_device_trim(i)) != EVX_SUCCESS) {
            fprintf(stderr, "stress: evx_device_trim(%d) -> %s: %s\n", i,
                    evx_status_name(st), evx_last_error_message());
            fails++;
        }
    __atomic_store_n(&watchdog_done, 1, __ATOMIC_RELEASE);
    pthread_join(wd, NULL);

    for (i = 0; i < nthreads; i++) {
        calls += workers[i].calls;
        failures += workers[i].failures;
        if (workers[i].bad) {
            fprintf(stderr, "stress: thread %d: %d bad result(s), first: %s\n",
                    i, workers[i].bad, workers[i].first_bad);
            fails++;
        }
    }
    printf("stress: %llu calls in %.1f s (%.0f/s), %llu expected failures "
           "(stale handles, full pools, unstarted timers)\n",
           calls, elapsed, (double)calls / elapsed, failures);
    printf("stress: %d round(s) ended with the workers idle and checked (pools%s)\n",
           rounds, counting ? "; live streams, contexts, host functions" : "");
    if (counting) {
        if (host_live_settle(&start, &now, 5000)) {
            printf("stress: live driver objects back to the start\n");
        } else {
            fprintf(stderr, "stress: live driver objects not back to the start: "
                            "events %lld (%lld), streams %lld (%lld), contexts "
                            "%lld (%lld), host functions %lld (%lld)\n",
                    now.events, start.events, now.streams, start.streams,
                    now.contexts, start.contexts, now.host_funcs,
                    start.host_funcs);
            fails++;
        }
    } else {
        printf("stress: the driver cannot count its live objects (not the "
               "emulation): leak check not done\n");
    }
    printf("stress: %s\n", fails ? "FAIL" : "ok");
    return fails ? 1 : 0;
}
