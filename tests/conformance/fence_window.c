/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/* Fences under contention (issue 30; docs/fences.md, "What is atomic"):
 *
 * - the window of a host signal, between its claim of the value and its
 *   store of the counter, held open by libevx's debug hook
 *   (evx_debug_fence_window(), defined here) as a debugger would hold a
 *   thread there: another thread's queued signal, or host signal, of a
 *   larger value then runs, and the counter must not go back nor the host
 *   signal be refused; on a fence one thread claims alone (the plain
 *   claim), on one two threads claimed (the compare-and-swap) and on an
 *   IPC fence;
 * - histories of threads signalling (from the host and on a stream),
 *   reading and waiting, recorded with a ticket at each call and return and
 *   checked against a sequential fence (check_history());
 * - a fence re-exported by a process that opened it, refused there.
 *
 * The hook is in libevx on every driver: the cases run alike on the host
 * emulation and on a GPU (scripts/gpu-check.sh conformance). */
#define _GNU_SOURCE

#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "util.h"

/* ---- the hook ------------------------------------------------------------ */

/* Called by libevx's host signal between its claim and its store (a weak
 * reference there: this definition is found because this executable
 * exports it). Holds the thread whose signal matches the armed fence and
 * value until released. */
void evx_debug_fence_window(evx_fence_t fence, uint64_t value);

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    evx_fence_t fence;
    uint64_t value;
    int armed, held, released;
} hold = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, 0, 0, 0};

void evx_debug_fence_window(evx_fence_t fence, uint64_t value)
{
    pthread_mutex_lock(&hold.mu);
    if (hold.armed && fence == hold.fence && value == hold.value) {
        hold.armed = 0;
        hold.held = 1;
        pthread_cond_broadcast(&hold.cv);
        while (!hold.released)
            pthread_cond_wait(&hold.cv, &hold.mu);
    }
    pthread_mutex_unlock(&hold.mu);
}

static void arm_window(evx_fence_t f, uint64_t value)
{
    pthread_mutex_lock(&hold.mu);
    hold.fence = f;
    hold.value = value;
    hold.armed = 1;
    hold.held = 0;
    hold.released = 0;
    pthread_mutex_unlock(&hold.mu);
}

/* Waits up to 5 s for a thread to be held; 1 when one is. */
static int wait_held(void)
{
    struct timespec until;
    int held;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    pthread_mutex_lock(&hold.mu);
    while (!hold.held && pthread_cond_timedwait(&hold.cv, &hold.mu, &until) == 0) {
    }
    held = hold.held;
    pthread_mutex_unlock(&hold.mu);
    return held;
}

static void release_window(void)
{
    pthread_mutex_lock(&hold.mu);
    hold.armed = 0;
    hold.released = 1;
    pthread_cond_broadcast(&hold.cv);
    pthread_mutex_unlock(&hold.mu);
}

/* ---- one call on a thread --------------------------------------------- */

typedef struct call {
    evx_fence_t f;
    evx_stream_t s;     /* NULL: a host signal */
    uint64_t value;
    evx_status_t st;
    char msg[256];
    int done;           /* atomic */
    pthread_t th;
} call;

static void *run_call(void *arg)
{
    call *c = (call *)arg;
    c->st = c->s ? evx_fence_signal(c->f, c->s, c->value) : evx_fence_signal_host(c->f, c->value);
    if (c->st != EVX_SUCCESS)
        snprintf(c->msg, sizeof c->msg, "%s", evx_last_error_message());
    __atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static int start_call(call *c, evx_fence_t f, evx_stream_t s, uint64_t value)
{
    memset(c, 0, sizeof *c);
    c->f = f;
    c->s = s;
    c->value = value;
    c->st = -1;
    return pthread_create(&c->th, NULL, run_call, c) == 0;
}

/* Waits up to ms for the call to return; 1 when it has. */
static int wait_done(const call *c, int ms)
{
    for (int i = 0; i < ms; i++) {
        if (__atomic_load_n(&c->done, __ATOMIC_ACQUIRE))
            return 1;
        sleep_ms(1);
    }
    return __atomic_load_n(&c->done, __ATOMIC_ACQUIRE);
}

static uint64_t read_value(evx_fence_t f)
{
    uint64_t v = UINT64_MAX;
    EXPECT_OK(evx_fence_get_value(f, &v));
    return v;
}

/* ---- the window -------------------------------------------------------- */

enum kind { kFresh, kShared, kIpc };
static const char *const kind_names[] = {"a fence one thread claims (plain claims)",
                                         "a fence two threads claimed (compare-and-swap)",
                                         "an IPC fence"};

/* A fence of that kind at 1 (kShared: 1 signalled by this thread, so that
 * the window's thread is a second claimer: a thread that exited would
 * leave its record, and with it its claims, to the next thread made), or
 * at 0. */
static evx_fence_t fence_of(enum kind k, uint64_t *base)
{
    evx_fence_t f = NULL;
    *base = 0;
    if (!EXPECT_OK(evx_device_create_fence(0, 0, k == kIpc ? EVX_FENCE_INTERPROCESS : 0, &f)))
        return NULL;
    if (k == kShared && EXPECT_OK(evx_fence_signal_host(f, 1)))
        *base = 1;
    return f;
}

/* A host signal of base + 1 is held between its claim and its store; then
 * another thread signals base + 2, queued on a stream (queued: 1) or from
 * the host. Where the window's claim is a compare-and-swap, that signal
 * completes (and, queued, runs) while the first one is held; on a plain
 * claim it waits for the held one (its claim takes the plain claims away
 * and waits for the claim under way, store included). Either way: both
 * succeed, the counter never reads less than base + 2 once it has, and a
 * later wait for base + 2 and signal of base + 3 work. */
static void window_case(enum kind k, int queued)
{
    evx_fence_t f = NULL;
    evx_stream_t s = NULL;
    call held, other;
    int started = 0, during = 0;
    uint64_t base = 0, v;

    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((f = fence_of(k, &base)) != NULL);
    arm_window(f, base + 1);
    REQUIRE(start_call(&held, f, NULL, base + 1) && ++started);
    if (!EXPECTF(wait_held(), "the host signal of %" PRIu64 " never reached the window: is "
                 "evx_debug_fence_window exported by this program?", base + 1))
        goto out;
    EXPECT(read_value(f) == base);  /* claimed, not stored */
    REQUIRE(start_call(&other, f, queued ? s : NULL, base + 2) && ++started);
    during = wait_done(&other, 300);
    if (during) {
        EXPECTF(other.st == EVX_SUCCESS, "%s: the %s signal of %" PRIu64 " while %" PRIu64
                " is in its window: %s", kind_names[k], queued ? "queued" : "host", base + 2,
                base + 1, other.msg);
        if (queued)
            EXPECT_OK(evx_stream_synchronize(s));
        EXPECT(read_value(f) == base + 2);
    } else {
        EXPECTF(k == kFresh, "%s: the signal of %" PRIu64 " waited for the held one, which "
                "only a plain claim may make it do", kind_names[k], base + 2);
    }
    release_window();
    pthread_join(held.th, NULL);
    pthread_join(other.th, NULL);
    started = 0;
    EXPECTF(held.st == EVX_SUCCESS, "%s: the held host signal: %s", kind_names[k], held.msg);
    EXPECTF(other.st == EVX_SUCCESS, "%s: the signal of %" PRIu64 ": %s", kind_names[k],
            base + 2, other.msg);
    EXPECT_OK(evx_stream_synchronize(s));
    v = read_value(f);
    EXPECTF(v == base + 2, "%s: the counter reads %" PRIu64 " after signals of %" PRIu64
            " and %" PRIu64 " (set back by the held store?)", kind_names[k], v, base + 1,
            base + 2);
    EXPECT_OK(evx_fence_wait_host(f, base + 2, 1000000000ull));
    EXPECTF(evx_fence_signal_host(f, base + 3) == EVX_SUCCESS, "%s: a host signal after both: %s",
            kind_names[k], evx_last_error_message());
    EXPECT(read_value(f) == base + 3);
    conf_note("%s, %s: the second signal %s the held one", kind_names[k],
              queued ? "queued" : "host", during ? "completed during" : "waited for");
out:
    release_window();
    if (started) {
        pthread_join(held.th, NULL);
        if (started > 1)
            pthread_join(other.th, NULL);
    }
    if (s != NULL)
        EXPECT_OK(evx_stream_synchronize(s));
    if (f != NULL)
        EXPECT_OK(evx_fence_destroy(f));
    drop_stream(&s);
}

static void t_window_then_queued(void)
{
    for (int k = kFresh; k <= kIpc; k++)
        window_case((enum kind)k, 1);
}

static void t_window_then_host(void)
{
    for (int k = kFresh; k <= kIpc; k++)
        window_case((enum kind)k, 0);
}

/* ---- histories ------------------------------------------------------------ */

enum op { kSignalHost, kSignalQueued, kRead, kWait };

typedef struct rec {
    uint64_t call, ret;  /* tickets */
    uint64_t value;      /* signalled, read, waited for */
    enum op op;
    evx_status_t st;
} rec;

#define HIST_OPS 64

typedef struct hist_thread {
    evx_fence_t f;
    evx_stream_t s;      /* the queuing thread's stream; NULL for the others */
    uint64_t *ticket, *hint;
    unsigned seed;
    rec r[HIST_OPS];
    int n;
    pthread_t th;
} hist_thread;

static uint64_t tick(uint64_t *t) { return __atomic_fetch_add(t, 1, __ATOMIC_SEQ_CST); }

static void *hist_run(void *arg)
{
    hist_thread *h = (hist_thread *)arg;
    for (h->n = 0; h->n < HIST_OPS; h->n++) {
        rec *r = &h->r[h->n];
        const unsigned x = (unsigned)rand_r(&h->seed);
        const uint64_t next = __atomic_load_n(h->hint, __ATOMIC_RELAXED) + 1 + x % 3;
        static const enum op host_ops[4] = {kSignalHost, kRead, kSignalHost, kWait};
        r->op = h->s ? (x % 4 == 0 ? kRead : kSignalQueued) : host_ops[x % 4];
        r->value = r->op == kRead ? 0 : r->op == kWait ? (next > 3 ? next - 3 : 0) : next;
        r->call = tick(h->ticket);
        switch (r->op) {
        case kSignalHost: r->st = evx_fence_signal_host(h->f, r->value); break;
        case kSignalQueued: r->st = evx_fence_signal(h->f, h->s, r->value); break;
        case kRead: r->st = evx_fence_get_value(h->f, &r->value); break;
        case kWait: r->st = evx_fence_wait_host(h->f, r->value, 0); break;
        }
        r->ret = tick(h->ticket);
        /* a hint for the next values, racy on purpose: some are refused */
        if ((r->op == kSignalHost || r->op == kSignalQueued) && r->st == EVX_SUCCESS)
            __atomic_store_n(h->hint, r->value, __ATOMIC_RELAXED);
        /* the queuing thread lets its stream run now and then */
        if (h->s && x % 8 == 0)
            evx_stream_synchronize(h->s);
    }
    return NULL;
}

/* Checks a history against a sequential fence (a counter that a host
 * signal sets at one instant inside its call, a queued signal at one
 * instant after its call, in claim order, and that reads and waits see):
 * 1. no value is accepted twice, and accepted signals whose calls do not
 *    overlap are in increasing order (claims are linearizable);
 * 2. a host signal has taken effect by its return: a read or wait called
 *    after it sees at least its value;
 * 3. reads do not go back: a read called after another returned reads at
 *    least as much; a read sees only a value that an accepted signal called
 *    before it returned set (or the initial 0), a successful wait one at
 *    least its own;
 * 4. INVALID_VALUE only where an accepted signal of at least that value
 *    was called before the refusal returned; ILLEGAL_STATE only where a
 *    queued signal was accepted before the refusal returned (a history
 *    without queued signals has none);
 * Returns the number of violations (each reported). */
static int check_history(rec **all, int n, const char *what)
{
    int bad = 0;
#define VIOL(...)                                       \
    do {                                                \
        if (bad++ < 5) EXPECTF(0, __VA_ARGS__);        \
    } while (0)
    for (int i = 0; i < n; i++) {
        const rec *a = all[i];
        const int a_sig = a->op == kSignalHost || a->op == kSignalQueued;
        int justified = 0;
        for (int j = 0; j < n; j++) {
            const rec *b = all[j];
            const int b_sig = b->op == kSignalHost || b->op == kSignalQueued;
            if (i == j)
                continue;
            if (a_sig && b_sig && a->st == EVX_SUCCESS && b->st == EVX_SUCCESS) {
                if (a->value == b->value)
                    VIOL("%s: value %" PRIu64 " accepted twice", what, a->value);
                if (a->ret < b->call && a->value >= b->value)
                    VIOL("%s: %" PRIu64 " accepted after %" PRIu64 " returned", what, b->value,
                         a->value);
            }
            if (a->op == kSignalHost && a->st == EVX_SUCCESS && a->ret < b->call &&
                ((b->op == kRead && b->value < a->value) ||
                 (b->op == kWait && b->value <= a->value && b->st != EVX_SUCCESS)))
                VIOL("%s: a %s called after the host signal of %" PRIu64 " returned %s %" PRIu64,
                     what, b->op == kRead ? "read" : "wait", a->value,
                     b->op == kRead ? "read" : "timed out for", b->value);
            if (a->op == kRead && b->op == kRead && a->ret < b->call && b->value < a->value)
                VIOL("%s: a read of %" PRIu64 " after a read of %" PRIu64, what, b->value,
                     a->value);
            /* what justifies a: */
            if (b_sig && b->st == EVX_SUCCESS && b->call < a->ret) {
                if ((a->op == kRead && b->value == a->value) ||
                    (a->op == kWait && a->st == EVX_SUCCESS && b->value >= a->value))
                    justified = 1;
                if (a_sig && a->st == EVX_ERROR_INVALID_VALUE && b->value >= a->value)
                    justified = 1;
                if (a_sig && a->st == EVX_ERROR_ILLEGAL_STATE && b->op == kSignalQueued)
                    justified = 1;
            }
        }
        if (a->op == kRead && a->value == 0)
            justified = 1;  /* the initial value */
        if (a->op == kWait && (a->st != EVX_SUCCESS || a->value == 0))
            justified = 1;
        if (a_sig && a->st == EVX_SUCCESS)
            justified = 1;
        if (!justified)
            VIOL("%s: %s of %" PRIu64 " returned %d with nothing before it to explain it", what,
                 a->op == kRead ? "a read" : a->op == kWait ? "a wait" : "a signal", a->value,
                 (int)a->st);
        if (a->st != EVX_SUCCESS && !(a_sig && (a->st == EVX_ERROR_INVALID_VALUE ||
                                                a->st == EVX_ERROR_ILLEGAL_STATE)) &&
            !(a->op == kWait && a->st == EVX_ERROR_TIMEOUT))
            VIOL("%s: a call failed with status %d", what, (int)a->st);
    }
#undef VIOL
    return bad;
}

/* Rounds of 2 to 12 threads (EVX_CONF_FENCE_ROUNDS, default 12), on a
 * plain and an IPC fence in turn: one thread queues signals on a stream
 * (with queued = 1), the others signal from the host, read and wait. Each
 * history is checked; at the end the counter is the largest value
 * accepted. */
static void histories(int queued)
{
    const char *env = getenv("EVX_CONF_FENCE_ROUNDS");
    const int rounds = env ? atoi(env) : 12;
    int failed_rounds = 0;
    for (int round = 0; round < rounds && failed_rounds == 0; round++) {
        const int nt = 2 + round % 11;
        const int ipc = round % 2;
        hist_thread *t = (hist_thread *)calloc((size_t)nt, sizeof *t);
        rec **all = (rec **)calloc((size_t)nt * HIST_OPS, sizeof *all);
        uint64_t ticket = 0, hint = 0, top = 0;
        evx_fence_t f = NULL;
        evx_stream_t s = NULL;
        int started = 0, n = 0;
        char what[96];
        REQUIRE(t != NULL && all != NULL);
        REQUIRE_OK(evx_device_create_fence(0, 0, ipc ? EVX_FENCE_INTERPROCESS : 0, &f));
        if (queued)
            REQUIRE((s = make_stream(0)) != NULL);
        for (int k = 0; k < nt; k++) {
            t[k].f = f;
            t[k].s = k == 0 ? s : NULL;
            t[k].ticket = &ticket;
            t[k].hint = &hint;
            t[k].seed = (unsigned)(round * 131 + k * 7 + 1);
        }
        for (int k = 0; k < nt; k++)
            if (pthread_create(&t[k].th, NULL, hist_run, &t[k]) == 0)
                started++;
        for (int k = 0; k < started; k++)
            pthread_join(t[k].th, NULL);
        EXPECT(started == nt);
        if (s != NULL)
            EXPECT_OK(evx_stream_synchronize(s));
        for (int k = 0; k < started; k++)
            for (int i = 0; i < t[k].n; i++) {
                all[n++] = &t[k].r[i];
                if ((t[k].r[i].op == kSignalHost || t[k].r[i].op == kSignalQueued) &&
                    t[k].r[i].st == EVX_SUCCESS && t[k].r[i].value > top)
                    top = t[k].r[i].value;
            }
        snprintf(what, sizeof what, "round %d (%d threads, %s fence%s)", round, nt,
                 ipc ? "an IPC" : "a", queued ? ", one queuing" : "");
        failed_rounds += check_history(all, n, what) > 0;
        {
            const uint64_t v = read_value(f);
            EXPECTF(v == top, "%s: the counter is %" PRIu64 " at the end, the largest value "
                    "accepted %" PRIu64, what, v, top);
            failed_rounds += v != top;
        }
    out:
        if (s != NULL)
            EXPECT_OK(evx_stream_synchronize(s));
        if (f != NULL)
            EXPECT_OK(evx_fence_destroy(f));
        drop_stream(&s);
        free(all);
        free(t);
    }
}

static void t_history_host(void) { histories(0); }
static void t_history_queued(void) { histories(1); }

/* ---- a re-exported IPC fence ---------------------------------------------- */

/* The child of fence.ipc_reexport: opens the handle in EVX_CONF_FENCE,
 * exports its own fence again and opens that: INVALID_CONTEXT, naming the
 * same process. Exit status 0 when so. */
int conf_fence_reexport_child(void)
{
    const char *hex = getenv("EVX_CONF_FENCE");
    evx_ipc_fence_handle_t h, again;
    evx_fence_t f = NULL, g = NULL;
    evx_status_t st;
    if (hex == NULL || strlen(hex) != 2 * sizeof h.reserved)
        return 10;
    for (size_t i = 0; i < sizeof h.reserved; i++) {
        unsigned x;
        if (sscanf(hex + 2 * i, "%2x", &x) != 1)
            return 10;
        h.reserved[i] = (unsigned char)x;
    }
    if (evx_device_open_ipc_fence(0, &h, &f) != EVX_SUCCESS) {
        fprintf(stderr, "reexport child: open: %s\n", evx_last_error_message());
        return 11;
    }
    if (evx_fence_get_ipc_handle(f, &again) != EVX_SUCCESS)
        return 12;
    st = evx_device_open_ipc_fence(0, &again, &g);
    if (st != EVX_ERROR_INVALID_CONTEXT ||
        !str_has(evx_last_error_message(), "exported by this same process")) {
        fprintf(stderr, "reexport child: own export: status %d: %s\n", (int)st,
                evx_last_error_message());
        if (g != NULL)
            evx_fence_destroy(g);
        return 13;
    }
    if (g != NULL)
        return 14;
    /* the exporter's handle still opens here a second time */
    if (evx_device_open_ipc_fence(0, &h, &g) != EVX_SUCCESS)
        return 15;
    evx_fence_signal_host(g, 5);
    evx_fence_destroy(g);
    evx_fence_destroy(f);
    return 0;
}

static void t_ipc_reexport(void)
{
    evx_fence_t f = NULL;
    evx_ipc_fence_handle_t h;
    char var[32 + 2 * EVX_IPC_FENCE_HANDLE_SIZE];
    const char *vars[2] = {var, NULL};
    int rc, len;

    REQUIRE_OK(evx_device_create_fence(0, 0, EVX_FENCE_INTERPROCESS, &f));
    REQUIRE_OK(evx_fence_get_ipc_handle(f, &h));
    len = snprintf(var, sizeof var, "EVX_CONF_FENCE=");
    for (size_t i = 0; i < sizeof h.reserved; i++)
        len += snprintf(var + len, sizeof var - (size_t)len, "%02x", h.reserved[i]);
    rc = run_child_env("fence-reexport", vars);
    EXPECTF(rc == 0, "the child exited %d (13: its own export opened)", rc);
    EXPECT(read_value(f) == 5);
out:
    if (f != NULL)
        EXPECT_OK(evx_fence_destroy(f));
}

const conf_case conf_fence_window_cases[] = {
    {"fence.window_then_queued", t_window_then_queued},
    {"fence.window_then_host", t_window_then_host},
    {"fence.history_host", t_history_host},
    {"fence.history_queued", t_history_queued},
    {"fence.ipc_reexport", t_ipc_reexport},
    {NULL, NULL},
};
