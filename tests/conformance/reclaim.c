/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/* Reclaim: an object destroyed (or a pooled event released) by one thread
 * while another thread is inside a call on it is reclaimed once both calls
 * have returned, with no further call of any thread and no thread exiting:
 * a pooled event is idle or pending again and can be acquired, an owned
 * driver stream is destroyed, an interprocess event's driver event is
 * destroyed, a plain event's, a timer's or timeline's driver events are back
 * in evx's cache (for a plain event: where a trim on a third thread destroys
 * it), a notifier's internal streams are destroyed and its descriptor
 * closed.
 *
 * Each case runs three threads: B makes the racing call, A destroys or
 * releases, the case's thread checks. A and B then stay alive and idle
 * (parked) until the checks are done: a thread's exit must not be what
 * reclaims.
 *
 * How B is held inside its call:
 *  - on the host emulation, a stall (evx_host_set_stall) blocks B's driver
 *    call until A has returned: deterministic for every call. A
 *    synchronize is let go at once and then waits for a gate (a blocking
 *    host function) that opens after A has returned;
 *  - on a real driver a synchronize waits for a gate the same way, A
 *    destroying 200 ms after B started (B's SUCCESS shows it got in
 *    first); the calls that never wait (query, record, wait, elapsed) are
 *    made by B in a loop until the handle dies, A destroying after B's
 *    20th call, over several rounds. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "util.h"

enum obj { O_POOL, O_IPC, O_PLAIN, O_STREAM, O_TIMER, O_TIMELINE, O_NOTIFIER };
enum op { P_SYNC, P_QUERY, P_RECORD, P_WAIT, P_ELAPSED, P_WATCH };
enum how { H_DESTROY, H_RELEASE };

typedef struct scene {
    int obj, op, how;
    int loop; /* B calls until the handle dies (real driver, calls that never wait) */
    evx_event_pool_t pool;
    evx_event_t ev;     /* O_POOL, O_IPC, O_PLAIN: the event that dies */
    evx_stream_t s;     /* the work stream (O_STREAM: the stream that dies) */
    evx_stream_t other; /* a second stream of the device */
    evx_event_t mark;   /* a recorded timing event of `other` */
    evx_timer_t timer;
    evx_timeline_t timeline;
    evx_notifier_t notifier;
    int fd; /* the notifier's */
    evx_host_live base; /* the emulation: alive before the object was made */
    /* threads (atomics) */
    evx_status_t a_st, b_st;
    char b_msg[256]; /* B's last error message, written before b_done */
    int a_go, a_done, b_calls, b_done, leave_a, leave_b;
} scene;

static int aload(const int *p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }
static void astore(int *p, int v) { __atomic_store_n(p, v, __ATOMIC_SEQ_CST); }

static int wait_flag(const int *p, int want, int timeout_ms)
{
    double until = now_ms() + timeout_ms;
    while (aload(p) < want) {
        if (now_ms() > until)
            return 0;
        sleep_ms(1);
    }
    return 1;
}

/* The racing call. */
static evx_status_t racing_call(scene *sc)
{
    float ms[4];
    uint32_t n = 0;
    switch (sc->obj) {
    case O_POOL:
    case O_IPC:
    case O_PLAIN:
        switch (sc->op) {
        case P_SYNC: return evx_event_synchronize(sc->ev);
        case P_QUERY: return evx_event_query(sc->ev);
        case P_RECORD: return evx_event_record(sc->ev, sc->s);
        case P_WAIT: return evx_stream_wait_event(sc->other, sc->ev, 0);
        default: return evx_event_elapsed_time(ms, sc->mark, sc->ev);
        }
    case O_STREAM:
        switch (sc->op) {
        case P_SYNC: return evx_stream_synchronize(sc->s);
        case P_QUERY: return evx_stream_query(sc->s);
        case P_RECORD: return evx_event_record(sc->mark, sc->s);
        default: return evx_stream_wait_event(sc->s, sc->mark, 0);
        }
    case O_TIMER:
        switch (sc->op) {
        case P_SYNC: return evx_timer_synchronize(sc->timer, ms);
        case P_RECORD: return evx_timer_start(sc->timer, sc->s);
        default: return evx_timer_elapsed(sc->timer, ms);
        }
    case O_NOTIFIER:
        return evx_notifier_watch(sc->notifier, sc->mark, 1);
    default:
        switch (sc->op) {
        case P_SYNC: return evx_timeline_synchronize(sc->timeline);
        case P_RECORD: return evx_timeline_mark(sc->timeline, sc->s, &n);
        default: return evx_timeline_intervals(sc->timeline, ms, 4, &n);
        }
    }
}

/* The driver entry the racing call reaches, where the emulation stalls it. */
static const char *racing_entry(const scene *sc)
{
    switch (sc->op) {
    case P_SYNC: return sc->obj == O_STREAM ? "cuStreamSynchronize" : "cuEventSynchronize";
    case P_QUERY: return sc->obj == O_STREAM ? "cuStreamQuery" : "cuEventQuery";
    case P_RECORD: return "cuEventRecord";
    case P_WAIT: return "cuStreamWaitEvent";
    case P_WATCH: return "cuEventQuery"; /* of the watched event, before the watch counts */
    default: return sc->obj == O_TIMELINE ? "cuEventQuery" : "cuEventElapsedTime";
    }
}

static void *b_main(void *arg)
{
    scene *sc = (scene *)arg;
    evx_status_t st;
    do {
        st = racing_call(sc);
        __atomic_add_fetch(&sc->b_calls, 1, __ATOMIC_SEQ_CST);
    } while (sc->loop && st != EVX_ERROR_INVALID_HANDLE);
    strncpy(sc->b_msg, evx_last_error_message(), sizeof sc->b_msg - 1);
    __atomic_store_n(&sc->b_st, st, __ATOMIC_SEQ_CST);
    astore(&sc->b_done, 1);
    (void)wait_flag(&sc->leave_b, 1, 60000);
    return NULL;
}

static evx_status_t end_object(scene *sc)
{
    switch (sc->obj) {
    case O_POOL:
        return sc->how == H_RELEASE ? evx_event_pool_release(sc->pool, sc->ev)
                                    : evx_event_destroy(sc->ev);
    case O_IPC:
    case O_PLAIN: return evx_event_destroy(sc->ev);
    case O_STREAM: return evx_stream_destroy(sc->s);
    case O_TIMER: return evx_timer_destroy(sc->timer);
    case O_NOTIFIER: return evx_notifier_destroy(sc->notifier);
    default: return evx_timeline_destroy(sc->timeline);
    }
}

static void *a_main(void *arg)
{
    scene *sc = (scene *)arg;
    (void)wait_flag(&sc->a_go, 1, 60000);
    __atomic_store_n(&sc->a_st, end_object(sc), __ATOMIC_SEQ_CST);
    astore(&sc->a_done, 1);
    (void)wait_flag(&sc->leave_a, 1, 60000);
    return NULL;
}

static void read_live(evx_host_live *out)
{
    const host_debug *h = host_debug_get();
    memset(out, 0, sizeof *out);
    if (h != NULL)
        h->get_live(out);
}

static void trim_all(void)
{
    int d;
    for (d = 0; d < conf_device_count(); d++)
        EXPECT_OK(evx_device_trim(d));
}

/* Makes the scene's objects and their recorded work; `gate` (may be NULL)
 * holds the work the racing synchronize waits for. sc->base: the
 * emulation's counts before the work stream and the object were made,
 * evx's caches emptied: what is alive once the object is reclaimed (and,
 * for events, trimmed). */
static int scene_make(scene *sc, conf_gate *gate)
{
    evx_event_pool_options_t o = EVX_EVENT_POOL_OPTIONS_INIT;
    uint32_t n = 0;
    if ((sc->other = make_stream(0)) == NULL || (sc->mark = make_event(0, 0)) == NULL)
        return 0;
    if (!EXPECT_OK(evx_event_record(sc->mark, sc->other)))
        return 0;
    if (host_debug_get() != NULL)
        trim_all();
    read_live(&sc->base);
    if ((sc->s = make_stream(0)) == NULL)
        return 0;
    switch (sc->obj) {
    case O_POOL:
        o.capacity = 1;
        if (!EXPECT_OK(evx_device_create_event_pool(0, &o, &sc->pool)) ||
            !EXPECT_OK(evx_event_pool_acquire(sc->pool, &sc->ev)))
            return 0;
        break;
    case O_IPC:
        if ((sc->ev = make_event(0, EVX_EVENT_INTERPROCESS | EVX_EVENT_DISABLE_TIMING)) ==
            NULL)
            return 0;
        break;
    case O_PLAIN:
        if ((sc->ev = make_event(0, 0)) == NULL)
            return 0;
        break;
    case O_TIMER:
        if (!EXPECT_OK(evx_device_create_timer(0, &sc->timer)) ||
            !EXPECT_OK(evx_timer_start(sc->timer, sc->s)))
            return 0;
        break;
    case O_TIMELINE:
        if (!EXPECT_OK(evx_device_create_timeline(0, 4, &sc->timeline)) ||
            !EXPECT_OK(evx_timeline_mark(sc->timeline, sc->s, &n)))
            return 0;
        break;
    case O_NOTIFIER: {
        /* A watch of held work gives the notifier an internal stream; it is
         * delivered before the race (nothing pending then). */
        conf_gate *g = gate_new();
        evx_event_t first = NULL;
        uint64_t pending = 1;
        double until = now_ms() + 5000;
        if (!EXPECT_OK(evx_notifier_create(NULL, &sc->notifier)) ||
            !EXPECT_OK(evx_notifier_get_fd(sc->notifier, &sc->fd)) ||
            (first = make_event(0, EVX_EVENT_DISABLE_TIMING)) == NULL)
            return 0;
        if (!EXPECT_OK(gate_launch(sc->s, g)) || !EXPECT_OK(evx_event_record(first, sc->s)) ||
            !EXPECT_OK(evx_notifier_watch(sc->notifier, first, 7))) {
            gate_open(g);
            drop_event(&first);
            return 0;
        }
        gate_open(g);
        while (EXPECT_OK(evx_notifier_get_counts(sc->notifier, &pending, NULL)) &&
               pending != 0 && now_ms() < until)
            sleep_ms(1);
        drop_event(&first);
        return EXPECTF(pending == 0, "the first watch was not delivered");
    }
    default:
        break;
    }
    if (gate != NULL && !EXPECT_OK(gate_launch(sc->s, gate)))
        return 0;
    switch (sc->obj) {
    case O_POOL:
    case O_IPC:
    case O_PLAIN: return EXPECT_OK(evx_event_record(sc->ev, sc->s));
    case O_TIMER: return EXPECT_OK(evx_timer_stop(sc->timer, sc->s));
    case O_TIMELINE: return EXPECT_OK(evx_timeline_mark(sc->timeline, sc->s, &n));
    default: return 1;
    }
}

static void scene_drop(scene *sc)
{
    if (sc->s != NULL)
        EXPECT_OK(evx_stream_synchronize(sc->s));
    drop_event(&sc->mark);
    drop_stream(&sc->s);
    drop_stream(&sc->other);
    drop_pool(&sc->pool);
}

/* Waits up to 2 s for the emulation's count of streams (else events) to be
 * `want`. */
static int live_becomes(int streams, long long want)
{
    evx_host_live now;
    double until = now_ms() + 2000;
    for (;;) {
        read_live(&now);
        if ((streams ? now.streams : now.events) == want)
            return 1;
        if (now_ms() > until)
            return 0;
        sleep_ms(1);
    }
}

/* One round; returns 0 when the case should stop (a failure). */
static int round_once(int obj, int op, int how, int *raced)
{
    const host_debug *h = host_debug_get();
    const int stall = h != NULL;
    scene sc;
    conf_gate *gate = NULL;
    pthread_t ta, tb;
    int a_started = 0, b_started = 0, ok = 0;
    evx_event_pool_stats_t stats = EVX_EVENT_POOL_STATS_INIT;
    evx_event_t again = NULL;

    memset(&sc, 0, sizeof sc);
    sc.obj = obj;
    sc.op = op;
    sc.how = how;
    sc.loop = !stall && op != P_SYNC;
    if (op == P_SYNC)
        gate = gate_new();
    if (!scene_make(&sc, gate))
        goto out;
    if (stall && !EXPECTF(h->set_stall(racing_entry(&sc), 1) == 0, "set_stall(%s)",
                          racing_entry(&sc)))
        goto out;
    if (pthread_create(&ta, NULL, a_main, &sc) != 0)
        goto out;
    a_started = 1;
    if (pthread_create(&tb, NULL, b_main, &sc) != 0)
        goto out;
    b_started = 1;
    if (stall) {
        double until = now_ms() + 5000;
        while (h->stalled() < 1 && now_ms() < until)
            sleep_ms(1);
        if (!EXPECTF(h->stalled() == 1, "the racing call never reached %s",
                     racing_entry(&sc)))
            goto out;
        if (op == P_SYNC)
            h->release_stalls(); /* on into the synchronize, which waits for the gate */
    } else if (op == P_SYNC) {
        sleep_ms(200);
    } else if (!wait_flag(&sc.b_calls, 20, 5000)) {
        EXPECTF(0, "the racing call did not run");
        goto out;
    }
    astore(&sc.a_go, 1);
    if (!EXPECTF(wait_flag(&sc.a_done, 1, 5000), "the destroy did not return"))
        goto out;
    if (stall)
        h->release_stalls();
    if (gate != NULL)
        gate_open(gate);
    if (!EXPECTF(wait_flag(&sc.b_done, 1, 10000), "the racing call did not return"))
        goto out;
    EXPECTF(sc.a_st == EVX_SUCCESS, "the %s returned %s",
            how == H_RELEASE ? "release" : "destroy", evx_status_name(sc.a_st));
    if (sc.loop) {
        EXPECTF(sc.b_st == EVX_ERROR_INVALID_HANDLE, "the racing call ended with %s",
                evx_status_name(sc.b_st));
        ++*raced; /* a round: whether A hit B inside a call is up to the scheduler */
    } else if (obj == O_NOTIFIER) {
        /* B passed the handle check, then found the notifier closed. */
        if (!EXPECTF(sc.b_st == EVX_ERROR_INVALID_HANDLE &&
                         str_has(sc.b_msg, "being destroyed"),
                     "the racing watch returned %s (\"%s\"): it did not get in before "
                     "the destroy", evx_status_name(sc.b_st), sc.b_msg))
            goto out;
        ++*raced;
    } else {
        /* B was inside the call when A ended the object (its handle was
         * still live when it looked). */
        if (!EXPECTF(sc.b_st == EVX_SUCCESS || sc.b_st == EVX_ERROR_NOT_READY,
                     "the racing call returned %s: it did not get in before the %s",
                     evx_status_name(sc.b_st), how == H_RELEASE ? "release" : "destroy"))
            goto out;
        ++*raced;
    }

    /* Both calls have returned; A and B stay parked. */
    if (obj == O_POOL) {
        if (EXPECT_OK(evx_event_pool_get_stats(sc.pool, &stats)))
            EXPECTF(stats.in_use == 0 && stats.idle + stats.pending == 1,
                    "after both calls returned: in_use %u, idle %u, pending %u "
                    "(capacity 1)",
                    stats.in_use, stats.idle, stats.pending);
        if (stats.pending == 1 && sc.s != NULL)
            EXPECT_OK(evx_stream_synchronize(sc.s));
        if (EXPECT_OK(evx_event_pool_acquire(sc.pool, &again)))
            EXPECT_OK(evx_event_pool_release(sc.pool, again));
    }
    if (h != NULL && obj == O_STREAM)
        EXPECTF(live_becomes(1, sc.base.streams),
                "the destroyed stream's driver stream is still alive after both calls "
                "returned (streams: want %lld)", sc.base.streams);
    if (obj == O_NOTIFIER) {
        errno = 0;
        EXPECTF(fcntl(sc.fd, F_GETFD) == -1 && errno == EBADF,
                "the destroyed notifier's descriptor %d is still open after both calls "
                "returned", sc.fd);
        if (h != NULL)
            EXPECTF(live_becomes(1, sc.base.streams + 1),
                    "the destroyed notifier's internal stream is still alive after both "
                    "calls returned (streams: want %lld, the work stream's included)",
                    sc.base.streams + 1);
    }
    if (h != NULL && obj == O_IPC)
        EXPECTF(live_becomes(0, sc.base.events),
                "the destroyed interprocess event's driver event is still alive after "
                "both calls returned (events: want %lld)", sc.base.events);
    if (h != NULL && obj == O_PLAIN) {
        /* Kept for reuse, by A's or B's thread: a trim on this third thread
         * reaches it wherever it is kept. */
        trim_all();
        EXPECTF(live_becomes(0, sc.base.events),
                "the destroyed event's driver event is still alive after both calls "
                "returned and a trim on another thread (events: want %lld)",
                sc.base.events);
    }
    astore(&sc.leave_b, 1);
    pthread_join(tb, NULL);
    b_started = 0;
    if (h != NULL && (obj == O_TIMER || obj == O_TIMELINE)) {
        /* B freed the object into its cache, which its exit moved to the
         * depot: a trim reaches it. (A is still parked.) */
        trim_all();
        EXPECTF(live_becomes(0, sc.base.events),
                "the destroyed %s's driver events were not back in evx's cache after both "
                "calls returned (events: want %lld)", obj == O_TIMER ? "timer" : "timeline",
                sc.base.events);
    }
    ok = 1;
out:
    if (stall)
        h->release_stalls();
    if (gate != NULL)
        gate_open(gate);
    astore(&sc.a_go, 1);
    astore(&sc.leave_a, 1);
    astore(&sc.leave_b, 1);
    if (b_started)
        pthread_join(tb, NULL);
    if (a_started)
        pthread_join(ta, NULL);
    if (sc.a_done) {
        /* ended by A (a failure too leaves the handle dead) */
        if (obj == O_STREAM)
            sc.s = NULL;
    } else if (obj == O_POOL) {
        if (sc.ev != NULL)
            EXPECT_OK(evx_event_pool_release(sc.pool, sc.ev));
    } else if (obj == O_IPC || obj == O_PLAIN) {
        drop_event(&sc.ev);
    } else if (obj == O_TIMER) {
        drop_timer(&sc.timer);
    } else if (obj == O_TIMELINE) {
        drop_timeline(&sc.timeline);
    } else if (obj == O_NOTIFIER && sc.notifier != NULL) {
        EXPECT_OK(evx_notifier_destroy(sc.notifier));
    }
    scene_drop(&sc);
    return ok;
}

static void run(int obj, int op, int how)
{
    const int rounds = host_debug_get() != NULL || op == P_SYNC ? 1 : 20;
    int i, raced = 0;
    for (i = 0; i < rounds; i++)
        if (!round_once(obj, op, how, &raced))
            return;
    if (host_debug_get() == NULL && obj != O_POOL && obj != O_NOTIFIER)
        conf_note("a real driver cannot count its live objects: only the statuses of "
                  "the two calls are checked here (the emulation checks the reclaim)");
    if (rounds > 1)
        conf_note("%d rounds of the racing call in a loop (a real driver: these calls "
                  "never wait, so the scheduler decides how often the destroy lands "
                  "inside one)", raced);
}

/* A thread makes and destroys `n` plain events of its own (recorded), then
 * stays parked: a trim on this thread destroys their driver events, whether
 * the destroying thread still collects them (its batch: fewer than 32
 * destroys) or keeps them in its own cache (the rest). */
typedef struct churn {
    int n;
    evx_stream_t s;
    evx_status_t st;
    const char *call;
    int done, leave;
} churn;

static void *churn_main(void *arg)
{
    churn *c = (churn *)arg;
    evx_event_t ev[40];
    int i, made = 0;
    for (; made < c->n && c->st == EVX_SUCCESS; made++) {
        if ((c->st = evx_device_create_event(0, 0, &ev[made])) != EVX_SUCCESS) {
            c->call = "evx_device_create_event";
            break;
        }
        if ((c->st = evx_event_record(ev[made], c->s)) != EVX_SUCCESS)
            c->call = "evx_event_record";
    }
    for (i = 0; i < made; i++) {
        evx_status_t st = evx_event_destroy(ev[i]);
        if (st != EVX_SUCCESS && c->st == EVX_SUCCESS) {
            c->st = st;
            c->call = "evx_event_destroy";
        }
    }
    astore(&c->done, 1);
    (void)wait_flag(&c->leave, 1, 60000);
    return NULL;
}

static void plain_trim(int n)
{
    churn c;
    evx_host_live base;
    pthread_t t;
    if (host_debug_get() == NULL) {
        conf_skip("a real driver cannot count its live events");
        return;
    }
    memset(&c, 0, sizeof c);
    c.n = n;
    if ((c.s = make_stream(0)) == NULL)
        return;
    trim_all();
    read_live(&base);
    if (!EXPECT(pthread_create(&t, NULL, churn_main, &c) == 0)) {
        drop_stream(&c.s);
        return;
    }
    if (EXPECTF(wait_flag(&c.done, 1, 10000), "the destroying thread did not finish") &&
        EXPECTF(c.st == EVX_SUCCESS, "%s returned %s on the destroying thread", c.call,
                evx_status_name(c.st))) {
        /* The destroying thread is parked: it makes no further call. */
        trim_all();
        EXPECTF(live_becomes(0, base.events),
                "destroyed on a parked thread (%d events), their driver events are still "
                "alive after a trim on another thread (events: want %lld)",
                n, base.events);
    }
    astore(&c.leave, 1);
    pthread_join(t, NULL);
    EXPECT_OK(evx_stream_synchronize(c.s));
    drop_stream(&c.s);
}

static void t_plain_trim_1(void) { plain_trim(1); }
static void t_plain_trim_40(void) { plain_trim(40); }

#define CASE(name, obj, op, how) \
    static void t_##name(void) { run(obj, op, how); }
CASE(pool_release_sync, O_POOL, P_SYNC, H_RELEASE)
CASE(pool_release_query, O_POOL, P_QUERY, H_RELEASE)
CASE(pool_release_record, O_POOL, P_RECORD, H_RELEASE)
CASE(pool_release_wait, O_POOL, P_WAIT, H_RELEASE)
CASE(pool_release_elapsed, O_POOL, P_ELAPSED, H_RELEASE)
CASE(pool_destroy_sync, O_POOL, P_SYNC, H_DESTROY)
CASE(pool_destroy_query, O_POOL, P_QUERY, H_DESTROY)
CASE(pool_destroy_record, O_POOL, P_RECORD, H_DESTROY)
CASE(pool_destroy_wait, O_POOL, P_WAIT, H_DESTROY)
CASE(pool_destroy_elapsed, O_POOL, P_ELAPSED, H_DESTROY)
CASE(ipc_destroy_sync, O_IPC, P_SYNC, H_DESTROY)
CASE(ipc_destroy_query, O_IPC, P_QUERY, H_DESTROY)
CASE(ipc_destroy_record, O_IPC, P_RECORD, H_DESTROY)
CASE(ipc_destroy_wait, O_IPC, P_WAIT, H_DESTROY)
CASE(plain_destroy_sync, O_PLAIN, P_SYNC, H_DESTROY)
CASE(plain_destroy_query, O_PLAIN, P_QUERY, H_DESTROY)
CASE(plain_destroy_record, O_PLAIN, P_RECORD, H_DESTROY)
CASE(plain_destroy_wait, O_PLAIN, P_WAIT, H_DESTROY)
CASE(plain_destroy_elapsed, O_PLAIN, P_ELAPSED, H_DESTROY)
CASE(stream_destroy_sync, O_STREAM, P_SYNC, H_DESTROY)
CASE(stream_destroy_query, O_STREAM, P_QUERY, H_DESTROY)
CASE(stream_destroy_record, O_STREAM, P_RECORD, H_DESTROY)
CASE(stream_destroy_wait, O_STREAM, P_WAIT, H_DESTROY)
CASE(timer_destroy_sync, O_TIMER, P_SYNC, H_DESTROY)
CASE(timer_destroy_record, O_TIMER, P_RECORD, H_DESTROY)
CASE(timer_destroy_elapsed, O_TIMER, P_ELAPSED, H_DESTROY)
CASE(timeline_destroy_sync, O_TIMELINE, P_SYNC, H_DESTROY)
CASE(timeline_destroy_record, O_TIMELINE, P_RECORD, H_DESTROY)
CASE(timeline_destroy_elapsed, O_TIMELINE, P_ELAPSED, H_DESTROY)
CASE(notifier_destroy_watch, O_NOTIFIER, P_WATCH, H_DESTROY)

const conf_case conf_reclaim_cases[] = {
    {"reclaim.pool_release_during_synchronize", t_pool_release_sync},
    {"reclaim.pool_release_during_query", t_pool_release_query},
    {"reclaim.pool_release_during_record", t_pool_release_record},
    {"reclaim.pool_release_during_wait", t_pool_release_wait},
    {"reclaim.pool_release_during_elapsed", t_pool_release_elapsed},
    {"reclaim.pool_destroy_during_synchronize", t_pool_destroy_sync},
    {"reclaim.pool_destroy_during_query", t_pool_destroy_query},
    {"reclaim.pool_destroy_during_record", t_pool_destroy_record},
    {"reclaim.pool_destroy_during_wait", t_pool_destroy_wait},
    {"reclaim.pool_destroy_during_elapsed", t_pool_destroy_elapsed},
    {"reclaim.ipc_event_destroy_during_synchronize", t_ipc_destroy_sync},
    {"reclaim.ipc_event_destroy_during_query", t_ipc_destroy_query},
    {"reclaim.ipc_event_destroy_during_record", t_ipc_destroy_record},
    {"reclaim.ipc_event_destroy_during_wait", t_ipc_destroy_wait},
    {"reclaim.plain_event_destroy_during_synchronize", t_plain_destroy_sync},
    {"reclaim.plain_event_destroy_during_query", t_plain_destroy_query},
    {"reclaim.plain_event_destroy_during_record", t_plain_destroy_record},
    {"reclaim.plain_event_destroy_during_wait", t_plain_destroy_wait},
    {"reclaim.plain_event_destroy_during_elapsed", t_plain_destroy_elapsed},
    {"reclaim.plain_events_trimmed_from_another_thread_1", t_plain_trim_1},
    {"reclaim.plain_events_trimmed_from_another_thread_40", t_plain_trim_40},
    {"reclaim.stream_destroy_during_synchronize", t_stream_destroy_sync},
    {"reclaim.stream_destroy_during_query", t_stream_destroy_query},
    {"reclaim.stream_destroy_during_record", t_stream_destroy_record},
    {"reclaim.stream_destroy_during_wait", t_stream_destroy_wait},
    {"reclaim.timer_destroy_during_synchronize", t_timer_destroy_sync},
    {"reclaim.timer_destroy_during_start", t_timer_destroy_record},
    {"reclaim.timer_destroy_during_elapsed", t_timer_destroy_elapsed},
    {"reclaim.timeline_destroy_during_synchronize", t_timeline_destroy_sync},
    {"reclaim.timeline_destroy_during_mark", t_timeline_destroy_record},
    {"reclaim.timeline_destroy_during_intervals", t_timeline_destroy_elapsed},
    {"reclaim.notifier_destroy_during_watch", t_notifier_destroy_watch},
    {NULL, NULL},
};
