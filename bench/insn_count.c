/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/*
 * evx-insn-count: each hot call of evx, COUNT times after 1,000 warm-up
 * calls, on a stream of device 0, for counting under callgrind the
 * instructions libevx executes per call (scripts/insn_budget.py runs it
 * under valgrind --tool=callgrind --instr-atstart=no and reads one dump per
 * call kind; run alone, it only makes the calls: its smoke test).
 *
 *   evx-insn-count COUNT [KIND...]      (every kind when none is named)
 *
 * Instrumentation covers only the calls of a kind; between batches of at
 * most 1,000 calls it is off while the program tidies up (synchronizes the
 * stream, resets the timeline, reads the notifier's tokens), so that queues
 * stay short and every batch starts from the same state. After a kind's
 * last batch the counters are dumped under the kind's name
 * (CALLGRIND_DUMP_STATS_AT). A kind that makes two calls (create +
 * destroy, start + stop, acquire + release) counts the pair as one call.
 */
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evx/evx.h"

#include "callgrind_marks.h"

#ifndef CALLGRIND_DUMP_STATS_AT
#define CALLGRIND_DUMP_STATS_AT(name) ((void)(name))
#endif

/* The objects every kind uses, made once. */
typedef struct ctx {
    evx_stream_t s;
    evx_event_t done, a, b; /* completed: done (timing off), a and b (timing) */
    evx_event_t rec;        /* recorded again and again */
    evx_fence_t f;
    evx_timer_t t;
    evx_timeline_t tl;
    evx_event_pool_t pool;
    evx_notifier_t nt;
    uint64_t n; /* calls made so far (fence values) */
    int open;   /* the gate's flag (atomic) */
} ctx;

static void check(evx_status_t st, const char *call)
{
    if (st == EVX_SUCCESS) return;
    fprintf(stderr, "evx-insn-count: %s -> %s: %s\n", call, evx_status_name(st),
            evx_last_error_message());
    exit(1);
}

static evx_status_t empty_host_fn(void *user_data)
{
    (void)user_data;
    return EVX_SUCCESS;
}

/* Holds the stream until c->open is set: host functions launched behind it
 * run only after instrumentation is off, so that only the launches count
 * (the driver's thread runs them at a moment no program controls). */
static void gate_fn(void *arg)
{
    ctx *c = arg;
    while (!__atomic_load_n(&c->open, __ATOMIC_ACQUIRE)) sched_yield();
}

static void gate_close(ctx *c)
{
    __atomic_store_n(&c->open, 0, __ATOMIC_RELEASE);
    check(evx_stream_launch_host_func(c->s, gate_fn, c), "evx_stream_launch_host_func");
}

static void gate_open(ctx *c) { __atomic_store_n(&c->open, 1, __ATOMIC_RELEASE); }

static void k_record(ctx *c) { check(evx_event_record(c->rec, c->s), "evx_event_record"); }
static void k_query(ctx *c) { check(evx_event_query(c->done), "evx_event_query"); }
static void k_sync(ctx *c) { check(evx_event_synchronize(c->done), "evx_event_synchronize"); }
static void k_elapsed(ctx *c)
{
    float ms;
    check(evx_event_elapsed_time(&ms, c->a, c->b), "evx_event_elapsed_time");
}
static void k_wait(ctx *c) { check(evx_stream_wait_event(c->s, c->done, 0), "evx_stream_wait_event"); }
static void k_timer(ctx *c)
{
    check(evx_timer_start(c->t, c->s), "evx_timer_start");
    check(evx_timer_stop(c->t, c->s), "evx_timer_stop");
}
static void k_mark(ctx *c) { check(evx_timeline_mark(c->tl, c->s, NULL), "evx_timeline_mark"); }
static void k_signal(ctx *c) { check(evx_fence_signal(c->f, c->s, ++c->n), "evx_fence_signal"); }
static void k_fwait(ctx *c) { check(evx_stream_wait_fence(c->s, c->f, 1), "evx_stream_wait_fence"); }
static void k_fread(ctx *c)
{
    uint64_t v;
    check(evx_fence_get_value(c->f, &v), "evx_fence_get_value");
}
static void k_pair(ctx *c)
{
    evx_event_t e;
    (void)c;
    check(evx_device_create_event(0, 0, &e), "evx_device_create_event");
    check(evx_event_destroy(e), "evx_event_destroy");
}
static void k_pool(ctx *c)
{
    evx_event_t e;
    check(evx_event_pool_acquire(c->pool, &e), "evx_event_pool_acquire");
    check(evx_event_pool_release(c->pool, e), "evx_event_pool_release");
}
static void k_hostfn(ctx *c)
{
    check(evx_stream_launch_host_func_status(c->s, empty_host_fn, NULL, NULL),
          "evx_stream_launch_host_func_status");
}
static void k_watch(ctx *c)
{
    check(evx_notifier_watch(c->nt, c->done, ++c->n), "evx_notifier_watch");
}

/* Between batches, instrumentation off: the state every batch starts from. */
static void tidy(ctx *c)
{
    uint64_t tokens[256];
    uint32_t got;
    check(evx_stream_synchronize(c->s), "evx_stream_synchronize");
    check(evx_timeline_reset(c->tl), "evx_timeline_reset");
    do
        check(evx_notifier_read(c->nt, tokens, 256, &got), "evx_notifier_read");
    while (got > 0);
}

typedef struct kind {
    const char *name;
    void (*call)(ctx *);
    int gated; /* the stream is held while the calls are made */
} kind;

static const kind kKinds[] = {
    {"record", k_record, 0},
    {"query", k_query, 0},
    {"synchronize", k_sync, 0},
    {"elapsed", k_elapsed, 0},
    {"stream_wait", k_wait, 0},
    {"timer_start_stop", k_timer, 0},
    {"timeline_mark", k_mark, 0},
    {"fence_signal", k_signal, 0},
    {"fence_wait", k_fwait, 0},
    {"fence_read", k_fread, 0},
    {"create_destroy_pair", k_pair, 0},
    {"pool_acquire_release", k_pool, 0},
    {"host_func_launch", k_hostfn, 1},
    {"notifier_watch", k_watch, 0},
};
#define NKINDS (sizeof kKinds / sizeof kKinds[0])

static void run(ctx *c, const kind *k, long count)
{
    /* A full batch first: the timeline's events are made, kept across
     * resets, and every later batch reuses them. */
    if (k->gated) gate_close(c);
    for (int i = 0; i < 1000; i++) k->call(c);
    if (k->gated) gate_open(c);
    tidy(c);
    for (long i = 0; i < count;) {
        long batch = count - i < 1000 ? count - i : 1000;
        if (k->gated) gate_close(c);
        CALLGRIND_START_INSTRUMENTATION;
        for (long j = 0; j < batch; j++) k->call(c);
        CALLGRIND_STOP_INSTRUMENTATION;
        if (k->gated) gate_open(c);
        tidy(c);
        i += batch;
    }
    CALLGRIND_DUMP_STATS_AT(k->name);
}

/* COUNT creates, then COUNT destroys, the first in the process: more than
 * evx has kept for reuse by then, so most creates reach the driver. */
static void run_bulk(long count)
{
    evx_event_t *ev = calloc((size_t)count, sizeof *ev);
    if (ev == NULL) exit(1);
    for (int i = 0; i < 200; i++) k_pair(NULL); /* the driver opened, the thread known */
    CALLGRIND_START_INSTRUMENTATION;
    for (long i = 0; i < count; i++)
        check(evx_device_create_event(0, 0, &ev[i]), "evx_device_create_event");
    for (long i = 0; i < count; i++) check(evx_event_destroy(ev[i]), "evx_event_destroy");
    CALLGRIND_STOP_INSTRUMENTATION;
    CALLGRIND_DUMP_STATS_AT("create_destroy_bulk");
    free(ev);
}

static void setup(ctx *c)
{
    evx_event_pool_options_t po = EVX_EVENT_POOL_OPTIONS_INIT;
    memset(c, 0, sizeof *c);
    check(evx_device_create_stream(0, EVX_STREAM_NON_BLOCKING, 0, &c->s), "create_stream");
    check(evx_device_create_event(0, EVX_EVENT_DISABLE_TIMING, &c->done), "create_event");
    check(evx_device_create_event(0, EVX_EVENT_DISABLE_TIMING, &c->rec), "create_event");
    check(evx_device_create_event(0, 0, &c->a), "create_event");
    check(evx_device_create_event(0, 0, &c->b), "create_event");
    check(evx_device_create_fence(0, 1, 0, &c->f), "create_fence");
    check(evx_device_create_timer(0, &c->t), "create_timer");
    check(evx_device_create_timeline(0, 1024, &c->tl), "create_timeline");
    po.capacity = 4;
    po.prewarm = 4;
    check(evx_device_create_event_pool(0, &po, &c->pool), "create_event_pool");
    check(evx_notifier_create(NULL, &c->nt), "notifier_create");
    check(evx_event_record(c->done, c->s), "evx_event_record");
    check(evx_event_record(c->a, c->s), "evx_event_record");
    check(evx_event_record(c->b, c->s), "evx_event_record");
    c->n = 1;
    check(evx_stream_synchronize(c->s), "evx_stream_synchronize");
}

static void teardown(ctx *c)
{
    tidy(c);
    check(evx_notifier_destroy(c->nt), "notifier_destroy");
    check(evx_event_pool_destroy(c->pool), "pool_destroy");
    check(evx_timeline_destroy(c->tl), "timeline_destroy");
    check(evx_timer_destroy(c->t), "timer_destroy");
    check(evx_fence_destroy(c->f), "fence_destroy");
    evx_event_t ev[] = {c->done, c->rec, c->a, c->b};
    for (size_t i = 0; i < 4; i++) check(evx_event_destroy(ev[i]), "event_destroy");
    check(evx_stream_destroy(c->s), "stream_destroy");
}

int main(int argc, char **argv)
{
    long count = argc > 1 ? atol(argv[1]) : 0;
    int want_bulk = argc <= 2;
    ctx c;
    if (count < 1) {
        fprintf(stderr, "usage: evx-insn-count COUNT [KIND...]\n");
        return 2;
    }
    for (int i = 2; i < argc; i++) {
        int known = !strcmp(argv[i], "create_destroy_bulk");
        for (size_t k = 0; k < NKINDS; k++) known |= !strcmp(argv[i], kKinds[k].name);
        if (!known) {
            fprintf(stderr, "evx-insn-count: no kind %s\n", argv[i]);
            return 2;
        }
        want_bulk |= !strcmp(argv[i], "create_destroy_bulk");
    }
    if (want_bulk) run_bulk(count); /* first: no stream, no thread of the driver yet */
    setup(&c);
    for (size_t k = 0; k < NKINDS; k++) {
        int want = argc <= 2;
        for (int i = 2; i < argc; i++) want |= !strcmp(argv[i], kKinds[k].name);
        if (want) run(&c, &kKinds[k], count);
    }
    teardown(&c);
    return 0;
}
