/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/* Threads: independent work in parallel, and destroy racing with use. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "hostdebug.h"
#include "util.h"

static int aload(const int *p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }
static void astore(int *p, int v) { __atomic_store_n(p, v, __ATOMIC_SEQ_CST); }
static void ainc(int *p) { __atomic_add_fetch(p, 1, __ATOMIC_SEQ_CST); }

/* ---- 8 threads, each with its own stream ------------------------------ */

typedef struct own_worker {
    int device;
    int bad;
    char first_bad[256];
} own_worker;

static void note_bad(own_worker *w, const char *what, evx_status_t st)
{
    if (w->bad++ == 0)
        snprintf(w->first_bad, sizeof w->first_bad, "%s -> %s: %s", what,
                 evx_status_name(st), evx_last_error_message());
}

static void *own_main(void *arg)
{
    own_worker *w = (own_worker *)arg;
    evx_stream_t s = NULL;
    evx_event_t first = NULL;
    evx_status_t st;
    int i;

    if ((st = evx_device_create_stream(w->device, EVX_STREAM_NON_BLOCKING, 0,
                                       &s)) != EVX_SUCCESS) {
        note_bad(w, "create stream", st);
        return NULL;
    }
    if ((st = evx_device_create_event(w->device, 0, &first)) != EVX_SUCCESS)
        note_bad(w, "create event", st);
    else if ((st = evx_event_record(first, s)) != EVX_SUCCESS)
        note_bad(w, "record", st);
    for (i = 0; i < 2000; i++) {
        evx_event_t e = NULL;
        float ms;
        unsigned flags = (i % 2) ? EVX_EVENT_DISABLE_TIMING : 0;
        if ((st = evx_device_create_event(w->device, flags, &e)) !=
            EVX_SUCCESS) {
            note_bad(w, "create event", st);
            break;
        }
        if ((st = evx_event_record(e, s)) != EVX_SUCCESS)
            note_bad(w, "record", st);
        st = evx_event_query(e);
        if (st != EVX_SUCCESS && st != EVX_ERROR_NOT_READY)
            note_bad(w, "query", st);
        if (i % 50 == 0) {
            if ((st = evx_event_synchronize(e)) != EVX_SUCCESS)
                note_bad(w, "synchronize", st);
            if (flags == 0 && first != NULL &&
                (st = evx_event_elapsed_time(&ms, first, e)) != EVX_SUCCESS)
                note_bad(w, "elapsed", st);
        }
        if ((st = evx_event_destroy(e)) != EVX_SUCCESS)
            note_bad(w, "destroy", st);
    }
    if ((st = evx_stream_synchronize(s)) != EVX_SUCCESS)
        note_bad(w, "stream synchronize", st);
    if (first != NULL && (st = evx_event_destroy(first)) != EVX_SUCCESS)
        note_bad(w, "destroy", st);
    if ((st = evx_stream_destroy(s)) != EVX_SUCCESS)
        note_bad(w, "stream destroy", st);
    return NULL;
}

static void t_own_streams(void)
{
    enum { T = 8 };
    own_worker w[T];
    pthread_t th[T];
    int i, started = 0;

    memset(w, 0, sizeof w);
    for (i = 0; i < T; i++) {
        w[i].device = i % conf_device_count();
        if (pthread_create(&th[i], NULL, own_main, &w[i]) != 0)
            break;
        started++;
    }
    for (i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    EXPECT(started == T);
    for (i = 0; i < T; i++)
        EXPECTF(w[i].bad == 0, "thread %d: %d bad results, first: %s", i,
                w[i].bad, w[i].first_bad);
}

/* ---- destroy racing with use ------------------------------------------ */

enum { RACERS = 6, ROUNDS = 25, ITER_BEFORE = 40, ITER_AFTER = 40 };

typedef struct race {
    /* shared */
    evx_event_t event;   /* the event destroyed in the event race */
    evx_event_t done;    /* a completed event to time against */
    evx_stream_t stream; /* the stream destroyed in the stream race */
    evx_timer_t timer;
    evx_timeline_t timeline;
    int stop;
    int destroyed;
    int kind; /* 0 event, 1 stream, 2 timer, 3 timeline */
} race;

typedef struct racer {
    race *r;
    evx_stream_t own_stream;
    evx_event_t own_event;
    int iterations;      /* total */
    int after_destroy;   /* iterations that began after the destroy */
    int dead_seen;
    int unexpected;      /* a status outside the allowed set */
    int resurrected;     /* live again after INVALID_HANDLE */
    char first_bad[256];
} racer;

static void judge(racer *me, const char *what, evx_status_t st, int allow_nr,
                  int allow_illegal)
{
    int ok = st == EVX_SUCCESS || st == EVX_ERROR_INVALID_HANDLE ||
             (allow_nr && st == EVX_ERROR_NOT_READY) ||
             (allow_illegal && st == EVX_ERROR_ILLEGAL_STATE);
    if (!ok) {
        if (me->unexpected++ == 0)
            snprintf(me->first_bad, sizeof me->first_bad, "%s -> %s (%d): %s",
                     what, evx_status_name(st), st, evx_last_error_message());
        return;
    }
    if (st == EVX_ERROR_INVALID_HANDLE) {
        me->dead_seen = 1;
    } else if (me->dead_seen) {
        if (me->resurrected++ == 0)
            snprintf(me->first_bad, sizeof me->first_bad,
                     "%s -> %s after an earlier INVALID_HANDLE", what,
                     evx_status_name(st));
    }
}

static void host_nothing(void *user_data) { (void)user_data; }

static void racer_step(racer *me, int i)
{
    race *r = me->r;
    float ms;
    unsigned fl;
    int prio;
    uint32_t c;
    switch (r->kind) {
    case 0:
        switch (i % 5) {
        case 0: judge(me, "record", evx_event_record(r->event, me->own_stream), 0, 0); break;
        case 1: judge(me, "query", evx_event_query(r->event), 1, 0); break;
        case 2: judge(me, "elapsed", evx_event_elapsed_time(&ms, r->done, r->event), 1, 0); break;
        case 3: judge(me, "wait", evx_stream_wait_event(me->own_stream, r->event, 0), 0, 0); break;
        default: judge(me, "get_flags", evx_event_get_flags(r->event, &fl), 0, 0); break;
        }
        break;
    case 1:
        switch (i % 5) {
        case 0: judge(me, "record on", evx_event_record(me->own_event, r->stream), 0, 0); break;
        case 1: judge(me, "stream query", evx_stream_query(r->stream), 1, 0); break;
        case 2: judge(me, "stream wait", evx_stream_wait_event(r->stream, me->own_event, 0), 0, 0); break;
        case 3: judge(me, "get_priority", evx_stream_get_priority(r->stream, &prio), 0, 0); break;
        default: judge(me, "host func", evx_stream_launch_host_func(r->stream, host_nothing, NULL), 0, 0); break;
        }
        break;
    case 2:
        switch (i % 3) {
        case 0: judge(me, "timer elapsed", evx_timer_elapsed(r->timer, &ms), 1, 1); break;
        case 1: judge(me, "timer start", evx_timer_start(r->timer, me->own_stream), 0, 0); break;
        default: judge(me, "timer stop", evx_timer_stop(r->timer, me->own_stream), 0, 1); break;
        }
        break;
    default:
        switch (i % 3) {
        case 0: judge(me, "timeline count", evx_timeline_count(r->timeline, &c), 0, 0); break;
        case 1: judge(me, "timeline intervals", evx_timeline_intervals(r->timeline, NULL, 0, &c), 1, 0); break;
        default: {
            /* a full timeline answers OUT_OF_MEMORY: reset it now and then */
            evx_status_t st = evx_timeline_mark(r->timeline, me->own_stream, NULL);
            if (st == EVX_ERROR_OUT_OF_MEMORY)
                st = evx_timeline_reset(r->timeline);
            judge(me, "timeline mark/reset", st, 0, 0);
            break;
        }
        }
        break;
    }
}

static void *racer_main(void *arg)
{
    racer *me = (racer *)arg;
    int i = 0;
    while (!aload(&me->r->stop)) {
        int after = aload(&me->r->destroyed);
        racer_step(me, i++);
        if (after)
            ainc(&me->after_destroy);
        ainc(&me->iterations);
    }
    return NULL;
}

static int all_reached(racer *rs, int n, int use_after, int target)
{
    int i;
    for (i = 0; i < n; i++)
        if ((use_after ? aload(&rs[i].after_destroy)
                       : aload(&rs[i].iterations)) < target)
            return 0;
    return 1;
}

/* Waits (with a generous limit, for a stuck thread) until every racer has
 * done `target` iterations of the kind asked. */
static int wait_all(racer *rs, int n, int use_after, int target)
{
    double end = now_ms() + 30000;
    while (!all_reached(rs, n, use_after, target)) {
        if (now_ms() > end)
            return 0;
        sleep_ms(0);
    }
    return 1;
}

static void destroy_race(int kind)
{
    race r;
    racer rs[RACERS];
    pthread_t th[RACERS];
    int round, i, started, round_ok;
    int unexpected = 0, resurrected = 0, never_dead = 0;
    char first[256] = "";

    for (round = 0; round < ROUNDS; round++) {
        round_ok = 0;
        memset(&r, 0, sizeof r);
        memset(rs, 0, sizeof rs);
        r.kind = kind;
        REQUIRE((r.done = make_event(0, 0)) != NULL);
        REQUIRE((r.stream = make_stream(0)) != NULL);
        REQUIRE((r.event = make_event(0, 0)) != NULL);
        REQUIRE_OK(evx_event_record(r.done, r.stream));
        REQUIRE_OK(evx_event_record(r.event, r.stream));
        REQUIRE_OK(evx_stream_synchronize(r.stream));
        REQUIRE_OK(evx_device_create_timer(0, &r.timer));
        REQUIRE_OK(evx_device_create_timeline(0, 8, &r.timeline));
        for (i = 0; i < RACERS; i++) {
            rs[i].r = &r;
            REQUIRE((rs[i].own_stream = make_stream(0)) != NULL);
            REQUIRE((rs[i].own_event = make_event(0, EVX_EVENT_DISABLE_TIMING))
                    != NULL);
        }
        started = 0;
        for (i = 0; i < RACERS; i++) {
            if (pthread_create(&th[i], NULL, racer_main, &rs[i]) != 0)
                break;
            started++;
        }
        EXPECT(started == RACERS);
        EXPECT(wait_all(rs, started, 0, ITER_BEFORE));
        /* destroy while they hammer it */
        switch (kind) {
        case 0: EXPECT_OK(evx_event_destroy(r.event)); break;
        case 1: EXPECT_OK(evx_stream_destroy(r.stream)); break;
        case 2: EXPECT_OK(evx_timer_destroy(r.timer)); break;
        default: EXPECT_OK(evx_timeline_destroy(r.timeline)); break;
        }
        astore(&r.destroyed, 1);
        EXPECT(wait_all(rs, started, 1, ITER_AFTER));
        astore(&r.stop, 1);
        for (i = 0; i < started; i++)
            pthread_join(th[i], NULL);
        for (i = 0; i < started; i++) {
            unexpected += rs[i].unexpected;
            resurrected += rs[i].resurrected;
            /* iterations that began after the destroy saw it */
            if (!rs[i].dead_seen)
                never_dead++;
            if (first[0] == '\0' && rs[i].first_bad[0] != '\0')
                snprintf(first, sizeof first, "%s", rs[i].first_bad);
        }
        /* afterwards the handle is dead */
        switch (kind) {
        case 0:
            EXPECT_FAIL(evx_event_query(r.event), EVX_ERROR_INVALID_HANDLE);
            EXPECT_FAIL(evx_event_destroy(r.event), EVX_ERROR_INVALID_HANDLE);
            r.event = NULL;
            break;
        case 1:
            EXPECT_FAIL(evx_stream_query(r.stream), EVX_ERROR_INVALID_HANDLE);
            EXPECT_FAIL(evx_stream_destroy(r.stream), EVX_ERROR_INVALID_HANDLE);
            r.stream = NULL;
            break;
        case 2: {
            float ms;
            EXPECT_FAIL(evx_timer_elapsed(r.timer, &ms),
                        EVX_ERROR_INVALID_HANDLE);
            r.timer = NULL;
            break;
        }
        default: {
            uint32_t c;
            EXPECT_FAIL(evx_timeline_count(r.timeline, &c),
                        EVX_ERROR_INVALID_HANDLE);
            r.timeline = NULL;
            break;
        }
        }
        round_ok = 1;
    out:
        astore(&r.stop, 1);
        for (i = 0; i < RACERS; i++) {
            if (rs[i].own_stream != NULL)
                EXPECT_OK(evx_stream_synchronize(rs[i].own_stream));
            drop_stream(&rs[i].own_stream);
            if (rs[i].own_event != NULL)
                EXPECT_OK(evx_event_synchronize(rs[i].own_event));
            drop_event(&rs[i].own_event);
        }
        if (r.stream != NULL)
            EXPECT_OK(evx_stream_synchronize(r.stream));
        drop_stream(&r.stream);
        drop_event(&r.event);
        drop_event(&r.done);
        drop_timer(&r.timer);
        drop_timeline(&r.timeline);
        if (!round_ok || unexpected || resurrected || never_dead)
            break;
    }
    EXPECTF(unexpected == 0, "%d results outside SUCCESS/NOT_READY/"
            "INVALID_HANDLE; first: %s", unexpected, first);
    EXPECTF(resurrected == 0, "%d calls succeeded after the same thread had "
            "seen INVALID_HANDLE; first: %s", resurrected, first);
    EXPECTF(never_dead == 0, "%d threads never saw the destroyed handle "
            "refused", never_dead);
}

static void t_race_event(void) { destroy_race(0); }
static void t_race_stream(void) { destroy_race(1); }
static void t_race_timer(void) { destroy_race(2); }
static void t_race_timeline(void) { destroy_race(3); }

/* ---- two threads destroying the same handle --------------------------- */

typedef struct dd {
    pthread_barrier_t *barrier;
    int kind;
    void *handle;
    evx_status_t result;
} dd;

static void *dd_main(void *arg)
{
    dd *d = (dd *)arg;
    pthread_barrier_wait(d->barrier);
    switch (d->kind) {
    case 0: d->result = evx_event_destroy((evx_event_t)d->handle); break;
    case 1: d->result = evx_stream_destroy((evx_stream_t)d->handle); break;
    case 2: d->result = evx_timer_destroy((evx_timer_t)d->handle); break;
    case 3: d->result = evx_timeline_destroy((evx_timeline_t)d->handle); break;
    default: d->result = evx_event_pool_destroy((evx_event_pool_t)d->handle); break;
    }
    return NULL;
}

static void t_double_destroy_race(void)
{
    static const char *const kinds[] = {"event", "stream", "timer", "timeline",
                                        "pool"};
    pthread_barrier_t barrier;
    int kind, round, bad = 0;
    evx_event_pool_options_t o;

    memset(&o, 0, sizeof o);
    o.struct_size = (uint32_t)sizeof o;
    o.capacity = 2;
    o.prewarm = 2;
    REQUIRE(pthread_barrier_init(&barrier, NULL, 2) == 0);
    for (kind = 0; kind < 5; kind++) {
        for (round = 0; round < 200; round++) {
            dd a, b;
            pthread_t ta, tb;
            void *h = NULL;
            evx_status_t st = EVX_ERROR_UNKNOWN;
            switch (kind) {
            case 0: { evx_event_t e = NULL; st = evx_device_create_event(0, 0, &e); h = e; break; }
            case 1: { evx_stream_t s = NULL; st = evx_device_create_stream(0, 0, 0, &s); h = s; break; }
            case 2: { evx_timer_t t = NULL; st = evx_device_create_timer(0, &t); h = t; break; }
            case 3: { evx_timeline_t t = NULL; st = evx_device_create_timeline(0, 2, &t); h = t; break; }
            default: { evx_event_pool_t p = NULL; st = evx_device_create_event_pool(0, &o, &p); h = p; break; }
            }
            if (!EXPECT_OK(st))
                break;
            a.barrier = b.barrier = &barrier;
            a.kind = b.kind = kind;
            a.handle = b.handle = h;
            a.result = b.result = EVX_ERROR_UNKNOWN;
            if (pthread_create(&ta, NULL, dd_main, &a) != 0)
                break;
            if (pthread_create(&tb, NULL, dd_main, &b) != 0) {
                /* let the first go through the barrier alone: destroy here */
                dd c = a;
                dd_main(&c);
                pthread_join(ta, NULL);
                break;
            }
            pthread_join(ta, NULL);
            pthread_join(tb, NULL);
            if (!((a.result == EVX_SUCCESS &&
                   b.result == EVX_ERROR_INVALID_HANDLE) ||
                  (b.result == EVX_SUCCESS &&
                   a.result == EVX_ERROR_INVALID_HANDLE))) {
                if (bad++ == 0)
                    EXPECTF(0, "two destroys of one %s returned %s and %s",
                            kinds[kind], evx_status_name(a.result),
                            evx_status_name(b.result));
            }
        }
    }
    EXPECTF(bad == 0, "%d rounds without exactly one SUCCESS", bad);
    pthread_barrier_destroy(&barrier);
out:
    return;
}

/* ---- calls on handles that another thread destroys as soon as made ---- */

/* One thread makes a stream (owned, or a borrow of a native stream, in
 * turn), hands it out and destroys it at once, over and over; the others
 * take whatever handle is out and query it. A call either refuses the
 * handle (evx's INVALID_HANDLE) or finds its stream alive: the driver must
 * never see a destroyed stream, nor (under AddressSanitizer) evx read a
 * freed one. This is the race a call's hazard and the destroy's scan of
 * the hazards settle (docs/design.md, "Safe use against a racing
 * destroy"); its window is a few instructions wide, so the case makes many
 * rounds. */

enum { CHURN_READERS = 3, CHURN_MAKES = 4000 };

typedef struct churn {
    uintptr_t out; /* the handle out now, or 0 (atomic) */
    int stop;
    int made;
    int bad;
    char first_bad[256];
} churn;

static void churn_bad(churn *c, const char *what, evx_status_t st)
{
    if (__atomic_fetch_add(&c->bad, 1, __ATOMIC_SEQ_CST) == 0)
        snprintf(c->first_bad, sizeof c->first_bad, "%s -> %s: %s", what,
                 evx_status_name(st), evx_last_error_message());
}

static void *churn_reader(void *arg)
{
    churn *c = (churn *)arg;
    while (!aload(&c->stop)) {
        evx_stream_t s = (evx_stream_t)__atomic_load_n(&c->out, __ATOMIC_ACQUIRE);
        evx_status_t st;
        if (s == NULL)
            continue;
        st = evx_stream_query(s);
        /* A stale handle is evx's refusal, which names no driver call. */
        if (st != EVX_SUCCESS && st != EVX_ERROR_NOT_READY &&
            !(st == EVX_ERROR_INVALID_HANDLE &&
              strstr(evx_last_error_message(), "cuStream") == NULL))
            churn_bad(c, "evx_stream_query", st);
    }
    return NULL;
}

static void t_churn_lookup_destroy(void)
{
    churn c;
    pthread_t th[CHURN_READERS];
    evx_stream_t native_owner = NULL;
    void *native = NULL;
    int i, started = 0;
    double end = now_ms() + 3000;

    memset(&c, 0, sizeof c);
    REQUIRE((native_owner = make_stream(0)) != NULL);
    REQUIRE_OK(evx_stream_get_native(native_owner, &native));
    for (i = 0; i < CHURN_READERS; i++) {
        if (pthread_create(&th[i], NULL, churn_reader, &c) != 0)
            break;
        started++;
    }
    EXPECT(started == CHURN_READERS);
    for (i = 0; i < CHURN_MAKES && now_ms() < end; i++) {
        evx_stream_t s = NULL;
        evx_status_t st = (i & 1) ? evx_stream_wrap_external(0, native, &s)
                                  : evx_device_create_stream(0, EVX_STREAM_NON_BLOCKING, 0, &s);
        if (!EXPECT_OK(st))
            break;
        __atomic_store_n(&c.out, (uintptr_t)s, __ATOMIC_RELEASE);
        /* Destroyed while it is out: a reader may be inside a call on it. */
        if (!EXPECT_OK(evx_stream_destroy(s)))
            break;
        c.made++;
    }
    astore(&c.stop, 1);
    for (i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    EXPECTF(c.bad == 0, "%d calls saw a destroyed stream (of %d made); first: %s", c.bad,
            c.made, c.first_bad);
out:
    astore(&c.stop, 1);
    drop_stream(&native_owner);
}

/* ---- one timeline marked from several threads at once --------------- */

/* Each thread marks the shared timeline on its own stream, half of the
 * marks labeled with the thread's name, and reads its count now and then
 * (the timeline's lock, contended). Every mark must get an index of its
 * own, the count must be the number of marks, and each index must read back
 * the label and stream of the call that got it. */
enum { TLM_THREADS = 4, TLM_PER = 200, TLM_MARKS = TLM_THREADS * TLM_PER };

typedef struct tlm_shared {
    evx_timeline_t tl;
    evx_stream_t streams[TLM_THREADS];
    int owner[TLM_MARKS]; /* 1 + 2 * thread + labeled; 0: no mark got it */
    int dup, bad;
    char first_bad[256];
} tlm_shared;

typedef struct tlm_arg {
    tlm_shared *sh;
    int id;
} tlm_arg;

static void tlm_bad(tlm_shared *sh, const char *what, evx_status_t st)
{
    if (__atomic_fetch_add(&sh->bad, 1, __ATOMIC_SEQ_CST) == 0)
        snprintf(sh->first_bad, sizeof sh->first_bad, "%s -> %s: %s", what,
                 evx_status_name(st), evx_last_error_message());
}

static void *tlm_main(void *p)
{
    tlm_arg *a = (tlm_arg *)p;
    tlm_shared *sh = a->sh;
    char label[16];
    int i;
    snprintf(label, sizeof label, "t%d", a->id);
    for (i = 0; i < TLM_PER; i++) {
        uint32_t idx = UINT32_MAX, n = 0;
        const int labeled = i & 1;
        const evx_status_t st =
            labeled ? evx_timeline_mark_labeled(sh->tl, sh->streams[a->id], label,
                                                EVX_MARK_POINT, &idx)
                    : evx_timeline_mark(sh->tl, sh->streams[a->id], &idx);
        if (st != EVX_SUCCESS) {
            tlm_bad(sh, "evx_timeline_mark", st);
        } else if (idx >= TLM_MARKS) {
            tlm_bad(sh, "an index past the marks made", st);
        } else {
            int none = 0;
            if (!__atomic_compare_exchange_n(&sh->owner[idx], &none, 1 + 2 * a->id + labeled,
                                             0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
                ainc(&sh->dup);
        }
        if (i % 16 == 0) {
            const evx_status_t cst = evx_timeline_count(sh->tl, &n);
            if (cst != EVX_SUCCESS || n > TLM_MARKS)
                tlm_bad(sh, "evx_timeline_count", cst);
        }
    }
    return NULL;
}

static void t_timeline_marked_by_threads(void)
{
    static tlm_shared sh;
    tlm_arg args[TLM_THREADS];
    pthread_t th[TLM_THREADS];
    int i, started = 0, wrong = 0;
    uint32_t count = 0;
    memset(&sh, 0, sizeof sh);
    REQUIRE_OK(evx_device_create_timeline(0, TLM_MARKS, &sh.tl));
    for (i = 0; i < TLM_THREADS; i++)
        REQUIRE((sh.streams[i] = make_stream(0)) != NULL);
    for (i = 0; i < TLM_THREADS; i++) {
        args[i].sh = &sh;
        args[i].id = i;
        if (!EXPECT(pthread_create(&th[i], NULL, tlm_main, &args[i]) == 0))
            break;
        started++;
    }
    for (i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    REQUIRE(started == TLM_THREADS);
    EXPECTF(sh.bad == 0, "%d calls failed; first: %s", sh.bad, sh.first_bad);
    EXPECTF(sh.dup == 0, "%d marks got an index another mark had", sh.dup);
    REQUIRE_OK(evx_timeline_count(sh.tl, &count));
    EXPECTF(count == TLM_MARKS, "count %u after %d marks", count, TLM_MARKS);
    for (i = 0; i < TLM_THREADS; i++)
        REQUIRE_OK(evx_stream_synchronize(sh.streams[i]));
    for (i = 0; i < TLM_MARKS; i++) {
        evx_timeline_mark_info_t info;
        char want[16] = "";
        const int t = (sh.owner[i] - 1) / 2;
        if (sh.owner[i] == 0) {
            wrong++;
            continue;
        }
        if ((sh.owner[i] - 1) % 2)
            snprintf(want, sizeof want, "t%d", t);
        memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        REQUIRE_OK(evx_timeline_get_mark(sh.tl, (uint32_t)i, &info));
        if (strcmp(info.label, want) != 0 || info.stream != sh.streams[t] ||
            info.index != (uint32_t)i)
            wrong++;
    }
    EXPECTF(wrong == 0, "%d of %d marks read back another call's label, stream or index", wrong,
            TLM_MARKS);
out:
    for (i = 0; i < TLM_THREADS; i++)
        drop_stream(&sh.streams[i]);
    drop_timeline(&sh.tl);
}

/* ---- a create while a trim on another thread takes its cache ----------- */

/* A thread's kept driver events are its own (no lock); evx_device_trim on
 * another thread reaches into them only as a thief (steal_others(),
 * src/thread.hpp), and the owner's fast path (own_try_enter()) must then
 * back off to the path that waits for the thief, not take an event the
 * thief is destroying. On the emulation the thief is held in the driver
 * entry that destroys the owner's kept events (a stall on cuEventDestroy),
 * with the owner's steal flag set: the owner's create must not return until
 * the thief is let go. */
typedef struct cache_owner {
    int ready, go, done;
    evx_status_t churn, st;
    evx_event_t e;
} cache_owner;

static void *cache_owner_main(void *arg)
{
    cache_owner *o = (cache_owner *)arg;
    evx_event_t ev[96];
    int i, n = 0;
    /* The create must be one the fast path could serve: 1,500 pairs fill
     * the thread's ring of free slots past its quarantine (1,024), and 96
     * destroys (three retire batches) leave driver events on its own stack
     * of (device 0, default flags). */
    o->churn = EVX_SUCCESS;
    for (i = 0; i < 1500 && o->churn == EVX_SUCCESS; i++)
        if ((o->churn = evx_device_create_event(0, 0, &ev[0])) == EVX_SUCCESS)
            o->churn = evx_event_destroy(ev[0]);
    for (i = 0; i < 96 && o->churn == EVX_SUCCESS; i++)
        if ((o->churn = evx_device_create_event(0, 0, &ev[i])) == EVX_SUCCESS)
            n++;
    for (i = 0; i < n; i++)
        if (evx_event_destroy(ev[i]) != EVX_SUCCESS && o->churn == EVX_SUCCESS)
            o->churn = EVX_ERROR_UNKNOWN;
    astore(&o->ready, 1);
    while (!aload(&o->go))
        sleep_ms(1);
    if (o->churn == EVX_SUCCESS)
        o->st = evx_device_create_event(0, 0, &o->e);
    astore(&o->done, 1);
    return NULL;
}

static void *cache_thief_main(void *arg)
{
    *(evx_status_t *)arg = evx_device_trim(0);
    return NULL;
}

static void t_create_waits_for_trim(void)
{
    const host_debug *dbg = host_debug_get();
    cache_owner o;
    pthread_t owner, thief;
    evx_status_t trim_st = EVX_ERROR_UNKNOWN;
    int owner_started = 0, thief_started = 0;
    double until;
    evx_stream_t s = NULL;

    if (dbg == NULL) {
        conf_skip("the driver is not the host emulation: only it can hold the trim inside "
                  "its destroy of another thread's kept events");
        return;
    }
    memset(&o, 0, sizeof o);
    REQUIRE(pthread_create(&owner, NULL, cache_owner_main, &o) == 0);
    owner_started = 1;
    until = now_ms() + 10000;
    while (!aload(&o.ready) && now_ms() < until)
        sleep_ms(1);
    if (!EXPECTF(aload(&o.ready) && o.churn == EVX_SUCCESS,
                 "the owner's creates and destroys: status %d", (int)o.churn))
        goto out;
    REQUIRE(dbg->set_stall("cuEventDestroy", 1) == 0);
    REQUIRE(pthread_create(&thief, NULL, cache_thief_main, &trim_st) == 0);
    thief_started = 1;
    until = now_ms() + 10000;
    while (dbg->stalled() < 1 && now_ms() < until)
        sleep_ms(1);
    if (!EXPECTF(dbg->stalled() == 1, "the trim never destroyed a kept event"))
        goto out;
    astore(&o.go, 1);
    sleep_ms(100);
    EXPECTF(!aload(&o.done), "the owner's create returned while the trim held its cache");
    dbg->release_stalls();
    pthread_join(thief, NULL);
    thief_started = 0;
    pthread_join(owner, NULL);
    owner_started = 0;
    EXPECTF(trim_st == EVX_SUCCESS, "evx_device_trim: status %d", (int)trim_st);
    EXPECTF(o.st == EVX_SUCCESS, "the owner's create: status %d", (int)o.st);
    if (o.st == EVX_SUCCESS) {
        /* The event it got is a working one, not one the trim destroyed. */
        REQUIRE((s = make_stream(0)) != NULL);
        EXPECT_OK(evx_event_record(o.e, s));
        EXPECT_OK(evx_event_synchronize(o.e));
        EXPECT_OK(evx_event_destroy(o.e));
        EXPECT_OK(evx_stream_destroy(s));
    }
    return;
out:
    dbg->set_fault(NULL, 0, 0);
    dbg->release_stalls();
    astore(&o.go, 1);
    if (thief_started)
        pthread_join(thief, NULL);
    if (owner_started)
        pthread_join(owner, NULL);
    if (o.e != NULL)
        evx_event_destroy(o.e);
}

const conf_case conf_thread_cases[] = {
    {"threads.eight_own_streams", t_own_streams},
    {"threads.destroy_event_while_used", t_race_event},
    {"threads.destroy_stream_while_used", t_race_stream},
    {"threads.destroy_timer_while_used", t_race_timer},
    {"threads.destroy_timeline_while_used", t_race_timeline},
    {"threads.two_destroys_one_success", t_double_destroy_race},
    {"threads.one_timeline_marked_by_four", t_timeline_marked_by_threads},
    {"threads.calls_on_streams_destroyed_as_made", t_churn_lookup_destroy},
    {"threads.create_waits_for_a_trim_of_its_cache", t_create_waits_for_trim},
    {NULL, NULL},
};
