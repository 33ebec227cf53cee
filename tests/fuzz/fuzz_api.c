/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/*
 * A libFuzzer harness over evx's whole C API, on the host emulation with two
 * devices. See docs/fuzzing.md.
 *
 * An input is a program: a sequence of operations, each an opcode byte and
 * the argument bytes it reads, over a small table of handles (events,
 * streams, pools, timers, timelines, notifiers, exported IPC handles) and a
 * ring of handles destroyed earlier. Arguments are live handles, dead ones, NULL, handles of the wrong
 * kind, random values, live handles with a bit flipped or the generation
 * shifted; valid and invalid devices, flags, priorities, sizes; NULL
 * out-pointers. When the input runs out, everything still alive is
 * destroyed, each device trimmed, and the emulation's live driver objects
 * must be back to where they were before the first input.
 *
 * Besides the sanitizers (the harness, libevx and libevx-host are built with
 * ASan + UBSan), every call is checked against the contract:
 *   - every status is one evx_status_name() knows;
 *   - every failure (not EVX_ERROR_NOT_READY, which is an answer) leaves a
 *     non-empty evx_last_error_message() and evx_last_error() equal to it;
 *   - a failed create sets its out-pointer to NULL;
 *   - a handle this program destroyed stays dead: every call on it returns
 *     EVX_ERROR_INVALID_HANDLE, and so does a NULL or wrong-kind handle;
 *   - destroying a live handle succeeds; a never-recorded event queries and
 *     synchronizes as done; an event keeps its device and flags; a stream
 *     says whether it is owned;
 *   - each notifier token watch is read exactly once, each callback watch
 *     runs once before its notifier's destroy returns, and a callback cannot
 *     destroy its own notifier; a borrow's release callback runs once per
 *     successful wrap and never for a failed one; an IPC handle never opens
 *     in the process that exported it;
 *   - stream capture (begun and ended with the driver's calls, in each
 *     mode, as a framework would): the calls on capturing streams keep the
 *     rules above; a stream never captured says EVX_CAPTURE_STATUS_NONE
 *     and a capturing one does not; graphs are instantiated, launched and
 *     destroyed, their host functions that can fail run at each launch
 *     and are released with the graph (the leak check counts the
 *     emulation's user objects).
 * A broken rule prints what happened and aborts, so libFuzzer saves the
 * input. The number of evx calls made is printed at exit.
 */
#define _GNU_SOURCE

#include <dlfcn.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <evx/evx.h>

#include "hostdebug.h"

/* ---- the input --------------------------------------------------------- */

typedef struct reader {
    const uint8_t *p;
    size_t n;
} reader;

static uint8_t u8(reader *r)
{
    if (r->n == 0) return 0;
    r->n--;
    return *r->p++;
}

static uint32_t u32(reader *r)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)u8(r) << (8 * i);
    return v;
}

static uint64_t u64(reader *r)
{
    return (uint64_t)u32(r) | ((uint64_t)u32(r) << 32);
}

/* ---- counting and checking --------------------------------------------- */

static unsigned long long g_calls, g_inputs, g_failures, g_leak_checks;
static unsigned long long g_status_count[1000], g_status_other;

static void finding(const char *what, const char *call, int line)
    __attribute__((noreturn));
static void finding(const char *what, const char *call, int line)
{
    fprintf(stderr, "\nevx-fuzz: CONTRACT BROKEN at fuzz_api.c:%d: %s\n  call: %s\n"
                    "  last error: %s (%d): %s\n",
            line, what, call, evx_status_name(evx_last_error()), evx_last_error(),
            evx_last_error_message());
    abort();
}

static int known_status(evx_status_t st)
{
    return strcmp(evx_status_name(st), "EVX_STATUS_UNRECOGNIZED") != 0;
}

/* Checks one status just returned by `call`. */
static int g_trace;  /* EVX_FUZZ_TRACE=1: print every call and its status */

static evx_status_t check(evx_status_t st, const char *call, int line)
{
    g_calls++;
    if (g_trace) fprintf(stderr, "  %-60s -> %s\n", call, evx_status_name(st));
    if (st >= 0 && st < 1000)
        g_status_count[st]++;
    else
        g_status_other++;
    if (!known_status(st)) {
        fprintf(stderr, "evx-fuzz: status %d\n", st);
        finding("unknown status code", call, line);
    }
    if (st != EVX_SUCCESS && st != EVX_ERROR_NOT_READY) {
        const char *msg = evx_last_error_message();
        g_failures++;
        if (msg == NULL || msg[0] == '\0')
            finding("a failure left no message", call, line);
        if (evx_last_error() != st)
            finding("evx_last_error() differs from the status returned", call, line);
    }
    return st;
}

/* Every evx call that returns a status goes through C(). */
#define C(call) (evx_clear_last_error(), check((call), #call, __LINE__))
#define REQUIRE(cond, what) \
    do { if (!(cond)) finding(what, #cond, __LINE__); } while (0)
/* A call on a handle known not to be a live one of its kind. */
#define C_DEAD(call) \
    REQUIRE(C(call) == EVX_ERROR_INVALID_HANDLE, \
            "a dead, NULL or wrong-kind handle was not refused with INVALID_HANDLE")

/* ---- the handle table -------------------------------------------------- */

enum kind { K_EVENT, K_STREAM, K_POOL, K_TIMER, K_TIMELINE, K_NOTIFIER, K_COUNT };
enum { NE = 6, NS = 4, NP = 2, NT = 2, NL = 2, NN = 2, NIPC = 4, NDEAD = 16, MAX_OPS = 200 };

static const unsigned kind_size[K_COUNT] = {NE, NS, NP, NT, NL, NN};

typedef struct ev_slot {
    evx_event_t h;
    int dev;
    unsigned flags;
    int recorded;     /* a record of it succeeded */
    int captured;     /* its last record was made in a capture (no EXTERNAL
                         flag): the driver refuses most uses of it */
    evx_event_pool_t pool;  /* the pool it came from, or NULL */
} ev_slot;

typedef struct st_slot {
    evx_stream_t h;
    int dev;
    int owned;
    evx_stream_t owner;  /* a borrow of a table stream's CUstream: that stream */
} st_slot;

typedef struct obj_slot {  /* pools, timers, timelines */
    void *h;
    int dev;
} obj_slot;

typedef struct nt_slot {  /* notifiers */
    evx_notifier_t h;
    unsigned long long tokens_due;  /* token watches that succeeded, not yet read */
} nt_slot;

typedef struct ipc_slot {  /* a handle evx_event_get_ipc_handle gave */
    evx_ipc_event_handle_t bytes;
    int used;
} ipc_slot;

typedef struct dead_handle {
    uint64_t v;
    int kind;
} dead_handle;

static struct table {
    ev_slot ev[NE];
    st_slot st[NS];
    obj_slot pool[NP], timer[NT], tl[NL];
    nt_slot nt[NN];
    ipc_slot ipc[NIPC];
    dead_handle dead[NDEAD];
    unsigned dead_n, dead_next;
} T;

static void bury(const void *h, int kind)
{
    T.dead[T.dead_next].v = (uint64_t)(uintptr_t)h;
    T.dead[T.dead_next].kind = kind;
    T.dead_next = (T.dead_next + 1) % NDEAD;
    if (T.dead_n < NDEAD) T.dead_n++;
}

static int n_devices;

/* What a chosen handle argument is, as far as this program knows. */
enum hclass { H_LIVE, H_NULL, H_DEAD, H_WRONG, H_FORGED };

/* A live handle of any kind, or NULL when the table is empty there. */
static void *live_of_kind(int kind, unsigned i)
{
    switch (kind) {
    case K_EVENT: return (void *)T.ev[i % NE].h;
    case K_STREAM: return (void *)T.st[i % NS].h;
    case K_POOL: return T.pool[i % NP].h;
    case K_TIMER: return T.timer[i % NT].h;
    case K_TIMELINE: return T.tl[i % NL].h;
    default: return (void *)T.nt[i % NN].h;
    }
}

/* Reads a handle argument of `kind`: *slot is the table index when it is a
 * live table entry, else -1; *cls says what it is. */
static void *pick(reader *r, int kind, int *slot, int *cls)
{
    const uint8_t sel = u8(r);
    *slot = -1;
    switch (sel >> 4) {
    case 10:
        *cls = H_NULL;
        return NULL;
    case 11:
        if (T.dead_n == 0) break;
        {
            /* sel & 8: not the handle but the value its slot's key had once
             * it was destroyed (generation + 1, kind bits 0): no handle, but
             * the slot's own value, which must not pass its lookup. */
            const dead_handle *d = &T.dead[(sel & 7) % T.dead_n];
            *cls = d->kind == kind ? H_DEAD : H_WRONG;
            if (sel & 8) return (void *)(uintptr_t)((d->v + (1ull << 32)) & ~15ull);
            return (void *)(uintptr_t)d->v;
        }
    case 12: {
        const int other = (kind + 1 + (sel & 3)) % K_COUNT;
        void *h = live_of_kind(other, sel >> 2);
        *cls = h ? H_WRONG : H_NULL;
        return h;
    }
    case 13:
        *cls = H_FORGED;
        return (void *)(uintptr_t)u64(r);
    case 14: {  /* a live (or NULL) handle with one bit flipped */
        const uint64_t v = (uint64_t)(uintptr_t)live_of_kind(kind, sel);
        *cls = H_FORGED;
        return (void *)(uintptr_t)(v ^ (1ull << (u8(r) & 63)));
    }
    case 15: {  /* a live handle with its generation shifted */
        const uint64_t v = (uint64_t)(uintptr_t)live_of_kind(kind, sel);
        const int8_t delta = (int8_t)u8(r);
        *cls = H_FORGED;
        return (void *)(uintptr_t)(v + ((uint64_t)(int64_t)delta << 32));
    }
    default:
        break;
    }
    {
        const unsigned i = sel % kind_size[kind];
        void *h = live_of_kind(kind, i);
        *slot = h ? (int)i : -1;
        *cls = h ? H_LIVE : H_NULL;
        return h;
    }
}

static int not_live(int cls) { return cls == H_NULL || cls == H_DEAD || cls == H_WRONG; }

/* ---- arguments --------------------------------------------------------- */

static int pick_device(reader *r)
{
    const uint8_t b = u8(r);
    switch (b & 15) {
    case 0: case 1: case 2: case 3: case 4: case 5: return 0;
    case 6: case 7: case 8: case 9: case 10: return 1;
    case 11: return 2;  /* one past the last */
    case 12: return -1;
    case 13: return INT_MIN;
    case 14: return INT_MAX;
    default: return (int)u32(r);
    }
}

/* Valid combinations most of the time, any bits sometimes. */
static unsigned pick_flags(reader *r, unsigned valid_mask)
{
    const uint8_t b = u8(r);
    if ((b & 3) != 3) return (b >> 2) & valid_mask;
    if ((b & 12) == 0) return 1u << ((b >> 4) & 31);
    return u32(r);
}

/* The struct_size of an options or stats struct of `size` bytes: mostly
 * that; sometimes smaller (up to `mask`), or larger, as a caller compiled
 * against a later version of the struct (the union it sits in has room). */
static uint32_t pick_struct_size(reader *r, uint32_t size, unsigned mask)
{
    const uint8_t sz = u8(r);
    return sz < 192 ? size : sz < 224 ? (uint32_t)(sz & mask) : size + (sz & mask & 31);
}

/* Whether an out-pointer is NULL (one time in eight). */
static int null_out(reader *r) { return (u8(r) & 7) == 7; }

#define JUNK ((void *)(uintptr_t)0x5eed5eed5eed0001ull)

/* ---- destroying what the table holds ----------------------------------- */

static int host_fn_runs;
static void host_fn(void *user_data)
{
    (void)user_data;
    __atomic_add_fetch(&host_fn_runs, 1, __ATOMIC_RELAXED);
}

/* A host function that can fail: odd user data fails. */
static evx_status_t host_fn_status(void *user_data)
{
    __atomic_add_fetch(&host_fn_runs, 1, __ATOMIC_RELAXED);
    return ((uintptr_t)user_data & 1) ? EVX_ERROR_ILLEGAL_STATE : EVX_SUCCESS;
}

static int find_event(evx_event_t h)
{
    for (int i = 0; i < NE; i++)
        if (h && T.ev[i].h == h) return i;
    return -1;
}

/* Marks the table entry of a handle just destroyed by the program as empty;
 * slot -1: a forged value that named a live handle, looked up here. */
static void forget(int kind, int slot, void *h)
{
    if (slot < 0) {
        for (unsigned i = 0; i < kind_size[kind] && slot < 0; i++)
            if (h && live_of_kind(kind, i) == h) slot = (int)i;
        if (slot < 0) finding("a destroy succeeded on a handle that is no live one", "forget",
                              __LINE__);
    }
    bury(h, kind);
    switch (kind) {
    case K_EVENT: memset(&T.ev[slot], 0, sizeof T.ev[slot]); break;
    case K_STREAM: memset(&T.st[slot], 0, sizeof T.st[slot]); break;
    case K_POOL: memset(&T.pool[slot], 0, sizeof T.pool[slot]); break;
    case K_TIMER: memset(&T.timer[slot], 0, sizeof T.timer[slot]); break;
    case K_TIMELINE: memset(&T.tl[slot], 0, sizeof T.tl[slot]); break;
    default: memset(&T.nt[slot], 0, sizeof T.nt[slot]); break;
    }
}

static evx_status_t destroy_any(int kind, void *h)
{
    switch (kind) {
    case K_EVENT: return C(evx_event_destroy((evx_event_t)h));
    case K_STREAM: return C(evx_stream_destroy((evx_stream_t)h));
    case K_POOL: return C(evx_event_pool_destroy((evx_event_pool_t)h));
    case K_TIMER: return C(evx_timer_destroy((evx_timer_t)h));
    case K_TIMELINE: return C(evx_timeline_destroy((evx_timeline_t)h));
    default: return C(evx_notifier_destroy((evx_notifier_t)h));
    }
}

/* Destroys what a table slot holds, if anything (it must succeed). */
static void drop(int kind, int slot)
{
    void *h = live_of_kind(kind, (unsigned)slot);
    if (!h) return;
    REQUIRE(destroy_any(kind, h) == EVX_SUCCESS, "destroying a live handle failed");
    forget(kind, slot, h);
}

/* ---- the operations ---------------------------------------------------- */

static int capturing_native(void *native);
static void *native_of(evx_stream_t s);
/* Whether a capture this program began is on: in global mode the driver
 * then refuses a query or synchronize that reaches it on this thread (an
 * interprocess event's always does), which invalidates the capture. */
static int capture_on(void);
/* Whether the status of a waiting call is a failure of a host function in
 * a graph launch on the call's device, which any waiting call on that
 * device may report (an exported interprocess event counts as recorded:
 * its query is one). */
static int graph_failure(evx_status_t st)
{
    const char *msg = evx_last_error_message();
    return st == EVX_ERROR_ILLEGAL_STATE && msg && strstr(msg, "in a launch of its graph");
}

/* After a create into table slot `slot` of `kind`: checks the status against
 * the out-pointer (NULL: refused; failure: set to NULL) and, on success,
 * frees the slot for the new handle. Returns whether to store it. */
static int created(int kind, int slot, evx_status_t st, int null, const void *out, int line)
{
    if (null) {
        if (st != EVX_ERROR_INVALID_VALUE)
            finding("a NULL out-pointer was not refused", "create", line);
        return 0;
    }
    if (st != EVX_SUCCESS) {
        if (out != NULL) finding("a failed create left its out-pointer set", "create", line);
        return 0;
    }
    drop(kind, slot);
    return 1;
}

/* A destroy op: any handle; a live one must go, a dead one be refused. */
static void op_destroy(reader *r, int kind)
{
    int slot, cls;
    void *h = pick(r, kind, &slot, &cls);
    const evx_status_t st = destroy_any(kind, h);
    if (not_live(cls))
        REQUIRE(st == EVX_ERROR_INVALID_HANDLE, "destroying a dead handle was not refused");
    if (cls == H_LIVE) REQUIRE(st == EVX_SUCCESS, "destroying a live handle failed");
    if (st == EVX_SUCCESS) forget(kind, slot, h);
}

static void op_event_create(reader *r)
{
    const int dev = pick_device(r);
    const unsigned flags = pick_flags(r, 7);
    const int slot = u8(r) % NE;
    evx_event_t e = (evx_event_t)JUNK;
    const int null = null_out(r);
    const evx_status_t st = C(evx_device_create_event(dev, flags, null ? NULL : &e));
    if (!created(K_EVENT, slot, st, null, e, __LINE__)) return;
    T.ev[slot].h = e;
    T.ev[slot].dev = dev;
    T.ev[slot].flags = flags;
}

static void op_event_record(reader *r, int with_flags)
{
    int es, ec, ss, sc;
    evx_event_t e = (evx_event_t)pick(r, K_EVENT, &es, &ec);
    evx_stream_t s = (evx_stream_t)pick(r, K_STREAM, &ss, &sc);
    const unsigned flags = pick_flags(r, 1);
    const evx_status_t st = with_flags ? C(evx_event_record_with_flags(e, s, flags))
                                       : C(evx_event_record(e, s));
    const int bad_flags = with_flags && (flags & ~1u);
    if (not_live(ec) || not_live(sc))
        REQUIRE(st == EVX_ERROR_INVALID_HANDLE || (bad_flags && st == EVX_ERROR_INVALID_VALUE),
                "recording with a dead handle was not refused");
    if (st == EVX_SUCCESS) {  /* a forged handle may name a table event too */
        es = find_event(e);
        if (es >= 0) {
            T.ev[es].recorded = 1;
            T.ev[es].captured = capturing_native(native_of(s)) && !(with_flags && (flags & 1));
        }
    }
    if (ec == H_LIVE && sc == H_LIVE && T.ev[es].dev != T.st[ss].dev)
        REQUIRE(st == EVX_ERROR_INVALID_HANDLE || (bad_flags && st == EVX_ERROR_INVALID_VALUE),
                "a record across devices was not refused");
}

static void op_event_query(reader *r)
{
    int slot, cls;
    evx_event_t e = (evx_event_t)pick(r, K_EVENT, &slot, &cls);
    const int sync = u8(r) & 1;
    const evx_status_t st = sync ? C(evx_event_synchronize(e)) : C(evx_event_query(e));
    if (not_live(cls))
        REQUIRE(st == EVX_ERROR_INVALID_HANDLE, "a dead event was not refused");
    if (cls == H_LIVE && !T.ev[slot].recorded && !capture_on())
        REQUIRE(st == EVX_SUCCESS || graph_failure(st), "a never-recorded event is not done");
}

static void op_event_elapsed(reader *r)
{
    int s0, c0, s1, c1;
    evx_event_t a = (evx_event_t)pick(r, K_EVENT, &s0, &c0);
    evx_event_t b = (evx_event_t)pick(r, K_EVENT, &s1, &c1);
    float ms = -1.0f;
    const int null = null_out(r);
    const evx_status_t st = C(evx_event_elapsed_time(null ? NULL : &ms, a, b));
    if (null)
        REQUIRE(st == EVX_ERROR_INVALID_VALUE, "a NULL out-pointer was not refused");
    else if (not_live(c0) || not_live(c1))
        REQUIRE(st == EVX_ERROR_INVALID_HANDLE, "timing a dead event was not refused");
    else if (c0 == H_LIVE && c1 == H_LIVE && (!T.ev[s0].recorded || !T.ev[s1].recorded))
        REQUIRE(st == EVX_ERROR_INVALID_HANDLE, "timing a never-recorded event was not refused");
}

static void op_event_get(reader *r)
{
    int slot, cls;
    evx_event_t e = (evx_event_t)pick(r, K_EVENT, &slot, &cls);
    const uint8_t which = u8(r) % 3;
    const int null = null_out(r);
    evx_status_t st;
    unsigned flags = 0xdead;
    int dev = -7;
    void *native = NULL;
    switch (which) {
    case 0: st = C(evx_event_get_flags(e, null ? NULL : &flags)); break;
    case 1: st = C(evx_event_get_device(e, null ? NULL : &dev)); break;
    default: st = C(evx_event_get_native(e, null ? NULL : &native)); break;
    }
    if (!null && not_live(cls))
        REQUIRE(st == EVX_ERROR_INVALID_HANDLE, "a dead event was not refused");
    if (null && cls == H_LIVE)
        REQUIRE(st == EVX_ERROR_INVALID_VALUE, "a NULL out-pointer was not refused");
    if (!null && cls == H_LIVE) {
        REQUIRE(st == EVX_SUCCESS, "a getter failed on a live event");
        if (which == 0) REQUIRE(flags == T.ev[slot].flags, "an event's flags changed");
        if (which == 1) REQUIRE(dev == T.ev[slot].dev, "an event's device changed");
        if (which == 2) REQUIRE(native != NULL, "a live event has no native event");
    }
}

static void op_stream_create(reader *r)
{
    const int dev = pick_device(r);
    const unsigned flags = pick_flags(r, 1);
    const uint8_t pb = u8(r);
    const int prio = pb < 200 ? -(int)(pb % 7) : pb < 240 ? (int)(pb % 3) : (int)u32(r);
    const int slot = u8(r) % NS;
    const int null = null_out(r);
    evx_stream_t s = (evx_stream_t)JUNK;
    const evx_status_t st = C(evx_device_create_stream(dev, flags, prio, null ? NULL : &s));
    if (st == EVX_SUCCESS)
        REQUIRE(prio <= 0 && prio >= -5, "a priority outside the range was accepted");
    if (!created(K_STREAM, slot, st, null, s, __LINE__)) return;
    T.st[slot].h = s;
    T.st[slot].dev = dev;
    T.st[slot].owned = 1;
    T.st[slot].owner = NULL;
}

/* Release callbacks of borrows (evx_stream_wrap_external_with_release):
 * each successful wrap's runs exactly once, when its stream is destroyed;
 * a failed wrap's never. Counted per input. */
#define RELEASE_COOKIE ((void *)(uintptr_t)0x7e1ea5e0ull)
static unsigned long long g_release_runs, g_release_wraps, g_release_bad;
static void on_release(void *user_data)
{
    if (user_data != RELEASE_COOKIE) __atomic_add_fetch(&g_release_bad, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&g_release_runs, 1, __ATOMIC_RELAXED);
}

static void op_stream_wrap(reader *r, int with_release)
{
    const uint8_t how = u8(r);
    int dev = (how & 0x80) ? EVX_DEVICE_FROM_STREAM : pick_device(r);
    void *native;
    evx_stream_t owner = NULL;
    switch (how & 7) {
    case 0: native = NULL; break;
    case 1: native = EVX_STREAM_LEGACY; break;
    case 2: native = EVX_STREAM_PER_THREAD; break;
    case 3: case 4: case 5: {  /* a table stream's own CUstream */
        const st_slot *s = &T.st[u8(r) % NS];
        owner = s->owned ? s->h : s->owner;  /* the stream that owns the CUstream */
        native = NULL;
        if (s->h && C(evx_stream_get_native(s->h, &native)) != EVX_SUCCESS) return;
        break;
    }
    case 6: native = (void *)(uintptr_t)(u8(r) & 31); break;
    default: native = (void *)(uintptr_t)u64(r); break;
    }
    const int slot = u8(r) % NS;
    const int null = null_out(r);
    const int null_release = with_release && null_out(r);
    const unsigned long long runs = __atomic_load_n(&g_release_runs, __ATOMIC_RELAXED);
    evx_stream_t s = (evx_stream_t)JUNK;
    const evx_status_t st =
        with_release ? C(evx_stream_wrap_external_with_release(
                           dev, native, null_release ? NULL : on_release, RELEASE_COOKIE,
                           null ? NULL : &s))
                     : C(evx_stream_wrap_external(dev, native, null ? NULL : &s));
    if (with_release) {
        REQUIRE(__atomic_load_n(&g_release_runs, __ATOMIC_RELAXED) == runs,
                "a wrap ran a release callback");
        if (null_release)
            REQUIRE(st == EVX_ERROR_INVALID_VALUE && (null || s == NULL),
                    "a NULL release callback was not refused");
        if (st == EVX_SUCCESS) g_release_wraps++;
    }
    if (st == EVX_SUCCESS && dev == EVX_DEVICE_FROM_STREAM &&
        C(evx_stream_get_device(s, &dev)) != EVX_SUCCESS)
        finding("a wrapped stream has no device", "evx_stream_get_device", __LINE__);
    if (!created(K_STREAM, slot, st, null, s, __LINE__)) return;
    T.st[slot].h = s;
    T.st[slot].dev = dev;
    T.st[slot].owned = 0;
    T.st[slot].owner = owner;
}

static void op_stream_wait(reader *r)
{
    int ss, sc, es, ec;
    evx_stream_t s = (evx_stream_t)pick(r, K_STREAM, &ss, &sc);
    evx_event_t e = (evx_event_t)pick(r, K_EVENT, &es, &ec);
    const unsigned flags = pick_flags(r, 1);
    const evx_status_t st = C(evx_stream_wait_event(s, e, flags));
    if (not_live(sc) || not_live(ec))
        REQUIRE(st == EVX_ERROR_INVALID_HANDLE || st == EVX_ERROR_INVALID_VALUE,
                "waiting with a dead handle was not refused");
    if (sc == H_LIVE && ec == H_LIVE && T.st[ss].dev != T.ev[es].dev)
        REQUIRE(st == EVX_ERROR_INVALID_HANDLE || (flags > 1 && st == EVX_ERROR_INVALID_VALUE),
                "a wait across devices was not refused");
}

static void op_stream_query(reader *r)
{
    int slot, cls;
    evx_stream_t s = (evx_stream_t)pick(r, K_STREAM, &slot, &cls);
    const evx_status_t st = (u8(r) & 1) ? C(evx_stream_synchronize(s)) : C(evx_stream_query(s));
    if (not_live(cls))
        REQUIRE(st == EVX_ERROR_INVALID_HANDLE, "a dead stream was not refused");
}

static void op_stream_host_func(reader *r)
{
    int slot, cls;
    evx_stream_t s = (evx_stream_t)pick(r, K_STREAM, &slot, &cls);
    const int null_fn = null_out(r);
    const uint8_t b = u8(r);
    if (!(b & 1)) {
        (void)C(evx_stream_launch_host_func(s, null_fn ? NULL : host_fn, (void *)(uintptr_t)u8(r)));
        return;
    }
    /* The variant that can fail, with options of any size, flags and name. */
    /* A name longer than the 127 bytes evx keeps, which it refuses. */
    static char long_name[160];
    if (!long_name[0]) memset(long_name, 'n', sizeof long_name - 1);
    evx_host_func_options_t o = EVX_HOST_FUNC_OPTIONS_INIT;
    o.struct_size = (b & 2) ? o.struct_size : (uint32_t)(u8(r) % 32);
    o.flags = u8(r) % 4;
    o.name = (b & 4) ? NULL : (b & 8) ? "fuzzed" : long_name;
    const evx_status_t st = C(evx_stream_launch_host_func_status(
        s, null_fn ? NULL : host_fn_status, (void *)(uintptr_t)u8(r), (b & 16) ? NULL : &o));
    if (null_fn || (!(b & 16) && (o.struct_size < 16 || o.flags > 1 || !(b & 4 || b & 8))))
        REQUIRE(st != EVX_SUCCESS, "a bad host function launch was accepted");
    if (not_live(cls)) REQUIRE(st != EVX_SUCCESS, "a dead stream was not refused");
}

static void op_stream_get(reader *r)
{
    int slot, cls;
    evx_stream_t s = (evx_stream_t)pick(r, K_STREAM, &slot, &cls);
    const uint8_t which = u8(r) % 5;
    const int null = null_out(r);
    int i = -7;
    unsigned u = 0xdead;
    void *native = JUNK;
    evx_status_t st;
    switch (which) {
    case 0: st = C(evx_stream_get_priority(s, null ? NULL : &i)); break;
    case 1: st = C(evx_stream_get_flags(s, null ? NULL : &u)); break;
    case 2: st = C(evx_stream_get_device(s, null ? NULL : &i)); break;
    case 3: st = C(evx_stream_get_native(s, null ? NULL : &native)); break;
    default: st = C(evx_stream_is_owned(s, null ? NULL : &i)); break;
    }
    if (!null && not_live(cls))
        REQUIRE(st == EVX_ERROR_INVALID_HANDLE, "a dead stream was not refused");
    if (null && cls == H_LIVE)
        REQUIRE(st == EVX_ERROR_INVALID_VALUE, "a NULL out-pointer was not refused");
    if (!null && cls == H_LIVE) {
        if (which == 2) REQUIRE(st == EVX_SUCCESS && i == T.st[slot].dev,
                                "a stream's device changed");
        if (which == 4) REQUIRE(st == EVX_SUCCESS && i == T.st[slot].owned,
                                "a stream's ownership changed");
        if (which == 3) REQUIRE(st == EVX_SUCCESS, "a live stream has no native stream");
    }
}

static void op_pool_create(reader *r)
{
    /* room for a caller compiled against a later, larger struct */
    union {
        evx_event_pool_options_t o;
        unsigned char bytes[64];
    } u;
    memset(&u, 0, sizeof u);
    u.o.struct_size = pick_struct_size(r, sizeof u.o, 31);
    const int dev = pick_device(r);
    u.o.event_flags = pick_flags(r, 7);
    const uint8_t cap = u8(r);
    u.o.capacity = cap < 240 ? cap % 6 : cap < 250 ? 0xFFFFFFFFu : u32(r);
    u.o.prewarm = u8(r) % 5;
    const int slot = u8(r) % NP;
    const int null_opts = (u8(r) & 15) == 15, null = null_out(r);
    evx_event_pool_t p = (evx_event_pool_t)JUNK;
    const evx_status_t st = C(evx_device_create_event_pool(dev, null_opts ? NULL : &u.o, null ? NULL : &p));
    if (null_opts && !null) {
        REQUIRE(st == EVX_ERROR_INVALID_VALUE && p == NULL, "NULL options were not refused");
        return;
    }
    if (!created(K_POOL, slot, st, null, p, __LINE__)) return;
    T.pool[slot].h = p;
    T.pool[slot].dev = dev;
}

static void op_pool_prewarm(reader *r)
{
    int slot, cls;
    evx_event_pool_t p = (evx_event_pool_t)pick(r, K_POOL, &slot, &cls);
    const uint8_t b = u8(r);
    uint32_t count = b < 250 ? b % 6 : u32(r);
    if (count > 64) {
        /* a large count only where it exceeds the capacity (refused): the
         * pool would otherwise make that many driver events, as asked */
        evx_event_pool_stats_t stats;
        memset(&stats, 0, sizeof stats);
        stats.struct_size = sizeof stats;
        if (C(evx_event_pool_get_stats(p, &stats)) == EVX_SUCCESS && count <= stats.capacity)
            count %= 6;
    }
    const evx_status_t st = C(evx_event_pool_prewarm(p, count));
    if (not_live(cls))
        REQUIRE(st == EVX_ERROR_INVALID_HANDLE, "a dead pool was not refused");
}

static void op_pool_acquire(reader *r)
{
    int slot, cls;
    evx_event_pool_t p = (evx_event_pool_t)pick(r, K_POOL, &slot, &cls);
    const int eslot = u8(r) % NE;
    const int null = null_out(r);
    evx_event_t e = (evx_event_t)JUNK;
    const evx_status_t st = C(evx_event_pool_acquire(p, null ? NULL : &e));
    if (!null && not_live(cls))
        REQUIRE(st == EVX_ERROR_INVALID_HANDLE, "a dead pool was not refused");
    if (null || st != EVX_SUCCESS) {
        if (!null) REQUIRE(e == NULL, "a failed acquire left its out-pointer set");
        return;
    }
    drop(K_EVENT, eslot);
    T.ev[eslot].h = e;
    T.ev[eslot].pool = p;
    if (cls == H_LIVE) {
        T.ev[eslot].dev = T.pool[slot].dev;
        REQUIRE(C(evx_event_get_flags(e, &T.ev[eslot].flags)) == EVX_SUCCESS,
                "an acquired event has no flags");
    } else {  /* a forged handle hit a live pool: ask the event itself */
        REQUIRE(C(evx_event_get_flags(e, &T.ev[eslot].flags)) == EVX_SUCCESS &&
                    C(evx_event_get_device(e, &T.ev[eslot].dev)) == EVX_SUCCESS,
                "an acquired event has no flags or device");
    }
}

static void op_pool_release(reader *r)
{
    int ps, pc, es, ec;
    evx_event_pool_t p = (evx_event_pool_t)pick(r, K_POOL, &ps, &pc);
    evx_event_t e = (evx_event_t)pick(r, K_EVENT, &es, &ec);
    const evx_status_t st = C(evx_event_pool_release(p, e));
    if (not_live(pc) || not_live(ec))
        REQUIRE(st == EVX_ERROR_INVALID_HANDLE, "releasing with a dead handle was not refused");
    if (pc == H_LIVE && ec == H_LIVE) {
        if (T.ev[es].pool == p)
            REQUIRE(st == EVX_SUCCESS, "releasing an event to its pool failed");
        else
            REQUIRE(st == EVX_ERROR_INVALID_VALUE, "releasing an event to another pool "
                                                   "was not refused");
    }
    if (st == EVX_SUCCESS) forget(K_EVENT, ec == H_LIVE ? es : -1, e);
}

static void op_pool_stats(reader *r)
{
    int slot, cls;
    evx_event_pool_t p = (evx_event_pool_t)pick(r, K_POOL, &slot, &cls);
    union {
        evx_event_pool_stats_t s;
        unsigned char bytes[96];
    } u;
    memset(&u, 0, sizeof u);
    u.s.struct_size = pick_struct_size(r, sizeof u.s, 63);
    const int null = null_out(r);
    const evx_status_t st = C(evx_event_pool_get_stats(p, null ? NULL : &u.s));
    if (!null && not_live(cls) && u.s.struct_size >= sizeof u.s)
        REQUIRE(st == EVX_ERROR_INVALID_HANDLE || st == EVX_ERROR_INVALID_VALUE,
                "a dead pool was not refused");
    if (st == EVX_SUCCESS && u.s.struct_size >= sizeof u.s)
        REQUIRE(u.s.idle + u.s.in_use + u.s.pending <= u.s.capacity,
                "a pool holds more than its capacity");
}

static void op_timer(reader *r)
{
    const uint8_t which = u8(r) % 6;
    if (which == 0) {  /* create */
        const int dev = pick_device(r);
        const int slot = u8(r) % NT;
        const int null = null_out(r);
        evx_timer_t t = (evx_timer_t)JUNK;
        const evx_status_t st = C(evx_device_create_timer(dev, null ? NULL : &t));
        if (!created(K_TIMER, slot, st, null, t, __LINE__)) return;
        T.timer[slot].h = t;
        T.timer[slot].dev = dev;
        return;
    }
    if (which == 1) {
        op_destroy(r, K_TIMER);
        return;
    }
    int slot, cls;
    evx_timer_t t = (evx_timer_t)pick(r, K_TIMER, &slot, &cls);
    evx_status_t st;
    if (which == 2 || which == 3) {
        int ss, sc;
        evx_stream_t s = (evx_stream_t)pick(r, K_STREAM, &ss, &sc);
        st = which == 2 ? C(evx_timer_start(t, s)) : C(evx_timer_stop(t, s));
        if (not_live(sc)) REQUIRE(st == EVX_ERROR_INVALID_HANDLE, "a dead stream was not refused");
        if (cls == H_LIVE && sc == H_LIVE && T.timer[slot].dev != T.st[ss].dev)
            REQUIRE(st == EVX_ERROR_INVALID_HANDLE, "a timer mark across devices was not refused");
    } else {
        const int null = null_out(r);
        float ms;
        st = which == 4 ? C(evx_timer_elapsed(t, null ? NULL : &ms))
                        : C(evx_timer_synchronize(t, null ? NULL : &ms));
        if (null) return;
    }
    if (not_live(cls)) REQUIRE(st == EVX_ERROR_INVALID_HANDLE, "a dead timer was not refused");
}

static void op_timeline(reader *r)
{
    const uint8_t which = u8(r) % 11;
    if (which == 0) {  /* create */
        const int dev = pick_device(r);
        const uint8_t cb = u8(r);
        const uint32_t cap = cb < 240 ? cb % 6 : cb < 250 ? 0xFFFFFFFFu : u32(r);
        const int slot = u8(r) % NL;
        const int null = null_out(r);
        evx_timeline_t t = (evx_timeline_t)JUNK;
        const evx_status_t st = C(evx_device_create_timeline(dev, cap, null ? NULL : &t));
        if (!created(K_TIMELINE, slot, st, null, t, __LINE__)) return;
        T.tl[slot].h = t;
        T.tl[slot].dev = dev;
        return;
    }
    if (which == 1) {
        op_destroy(r, K_TIMELINE);
        return;
    }
    int slot, cls;
    evx_timeline_t t = (evx_timeline_t)pick(r, K_TIMELINE, &slot, &cls);
    evx_status_t st;
    uint32_t n = 0;
    switch (which) {
    case 2: {
        int ss, sc;
        evx_stream_t s = (evx_stream_t)pick(r, K_STREAM, &ss, &sc);
        st = C(evx_timeline_mark(t, s, null_out(r) ? NULL : &n));
        if (not_live(sc)) REQUIRE(st == EVX_ERROR_INVALID_HANDLE, "a dead stream was not refused");
        if (cls == H_LIVE && sc == H_LIVE && T.tl[slot].dev != T.st[ss].dev)
            REQUIRE(st == EVX_ERROR_INVALID_HANDLE, "a timeline mark across devices was not refused");
        break;
    }
    case 3:
        if (null_out(r)) {
            REQUIRE(C(evx_timeline_count(t, NULL)) != EVX_SUCCESS, "a NULL count was accepted");
            return;
        }
        st = C(evx_timeline_count(t, &n));
        break;
    case 4: {
        float ms[8];
        const uint8_t b = u8(r);
        const int null_ms = (b & 1) != 0;
        const uint32_t max = null_ms ? ((b & 2) ? 0 : u32(r)) : (uint32_t)((b >> 2) % 9);
        st = C(evx_timeline_intervals(t, null_ms ? NULL : ms, max, null_out(r) ? NULL : &n));
        if (null_ms && max != 0) {
            REQUIRE(st == EVX_ERROR_INVALID_VALUE || st == EVX_ERROR_INVALID_HANDLE,
                    "a NULL buffer with room was accepted");
            return;
        }
        break;
    }
    case 5: st = C(evx_timeline_synchronize(t)); break;
    case 8: {  /* a labeled mark: any kind, a label of any length */
        static const char labels[] =
            "a label of sixty-four bytes or more is refused whole, never cut short";
        int ss, sc;
        evx_stream_t s = (evx_stream_t)pick(r, K_STREAM, &ss, &sc);
        const uint8_t b = u8(r);
        const unsigned kind = b % 4;
        const size_t len = (size_t)(u8(r) % (sizeof labels));
        char label[sizeof labels];
        memcpy(label, labels, len);
        label[len] = '\0';
        st = C(evx_timeline_mark_labeled(t, s, (b & 4) ? NULL : label, kind,
                                         null_out(r) ? NULL : &n));
        if (not_live(sc)) REQUIRE(st != EVX_SUCCESS, "a dead stream was not refused");
        if ((b & 4) || kind > 2 || len >= EVX_MARK_LABEL_SIZE) {
            /* refused before the handles are looked at */
            REQUIRE(st == EVX_ERROR_INVALID_VALUE, "a bad labeled mark was accepted");
            return;
        }
        break;
    }
    case 9: {  /* one mark's info, with any struct size and index */
        evx_timeline_mark_info_t info;
        memset(&info, 0xab, sizeof info);
        info.struct_size = (u8(r) & 1) ? (uint32_t)sizeof info : (uint32_t)u8(r);
        const int null = null_out(r);
        st = C(evx_timeline_get_mark(t, u8(r) % 8, null ? NULL : &info));
        if (null || info.struct_size < 88) {  /* refused before the handle */
            REQUIRE(st == EVX_ERROR_INVALID_VALUE, "bad mark info was accepted");
            return;
        }
        if (st == EVX_SUCCESS)
            REQUIRE(info.struct_size < sizeof info ||
                        memchr(info.label, '\0', sizeof info.label) != NULL,
                    "a mark's label is not terminated");
        break;
    }
    case 10: {  /* the trace, to nowhere */
        const int null = null_out(r);
        st = C(evx_timeline_write_trace(t, null ? NULL : "/dev/null", (u8(r) & 1) ? NULL : "fuzz"));
        if (null) {
            REQUIRE(st == EVX_ERROR_INVALID_VALUE, "a NULL path was accepted");
            return;
        }
        break;
    }
    default: st = C(evx_timeline_reset(t)); break;
    }
    if (not_live(cls)) REQUIRE(st == EVX_ERROR_INVALID_HANDLE, "a dead timeline was not refused");
}

static void op_device(reader *r)
{
    const uint8_t which = u8(r) % 8;
    int a = 0, b = 0;
    const char *path = NULL;
    switch (which) {
    case 0: {
        const int null = null_out(r);
        const evx_status_t st = C(evx_device_count(null ? NULL : &a));
        REQUIRE(null ? st == EVX_ERROR_INVALID_VALUE : (st == EVX_SUCCESS && a == n_devices),
                "evx_device_count changed its answer");
        break;
    }
    case 1: {
        const int dev = pick_device(r);
        const uint8_t ptrs = u8(r) & 3;
        const evx_status_t st = C(evx_device_stream_priority_range(
            dev, (ptrs & 1) ? &a : NULL, (ptrs & 2) ? &b : NULL));
        if (ptrs == 0) REQUIRE(st == EVX_ERROR_INVALID_VALUE, "two NULL out-pointers were accepted");
        if (ptrs && (dev < 0 || dev >= n_devices))
            REQUIRE(st == EVX_ERROR_INVALID_DEVICE, "a bad device was accepted");
        break;
    }
    case 2: {
        const int dev = pick_device(r);
        const evx_status_t st = C(evx_device_trim(dev));
        REQUIRE((dev >= 0 && dev < n_devices) == (st == EVX_SUCCESS),
                "evx_device_trim's answer does not match the device");
        break;
    }
    case 3: (void)C(evx_driver_get_version(null_out(r) ? NULL : &a)); break;
    case 4: (void)C(evx_driver_get_path(null_out(r) ? NULL : &path)); break;
    case 5: (void)C(evx_driver_is_emulation(null_out(r) ? NULL : &a)); break;
    case 6: REQUIRE(C(evx_driver_open()) == EVX_SUCCESS, "evx_driver_open failed"); break;
    default: {
        g_calls += 2;
        REQUIRE(evx_version() == EVX_VERSION_NUMBER, "evx_version differs from the header");
        REQUIRE(evx_version_string() && evx_version_string()[0], "no version string");
        break;
    }
    }
}

static void op_status(reader *r)
{
    const uint8_t which = u8(r) & 3;
    const evx_status_t st = (evx_status_t)u32(r);
    const char *s;
    g_calls++;
    switch (which) {
    case 0:
        s = evx_status_name(st);
        REQUIRE(s && s[0], "evx_status_name gave no name");
        break;
    case 1:
        s = evx_status_string(st);
        REQUIRE(s && s[0], "evx_status_string gave no text");
        break;
    case 2:
        evx_clear_last_error();
        REQUIRE(evx_last_error() == EVX_SUCCESS, "evx_clear_last_error left a status");
        s = evx_last_error_message();
        REQUIRE(s && s[0] == '\0', "evx_clear_last_error left a message");
        break;
    default:
        /* a failure's status and message stay until the next failure */
        (void)C(evx_event_query(NULL));
        REQUIRE(evx_last_error() == EVX_ERROR_INVALID_HANDLE, "the last error was lost");
        break;
    }
}

/* ---- capture status, notifiers, IPC ------------------------------------ */

/* The table slot of a live handle of `kind` (a forged value may name one),
 * or -1. */
static int find_live(int kind, const void *h)
{
    for (unsigned i = 0; h && i < kind_size[kind]; i++)
        if (live_of_kind(kind, i) == h) return (int)i;
    return -1;
}

/* ---- stream capture and graphs ----------------------------------------- */

/* The driver's capture and graph calls, found in the library evx opened, as
 * a framework (PyTorch, an engine) would call them. */
static struct cu_calls {
    int (*begin)(void *, int);
    int (*end)(void *, void **);
    int (*instantiate)(void **, void *, unsigned long long);
    int (*launch)(void *, void *);
    int (*exec_destroy)(void *);
    int (*graph_destroy)(void *);
    int (*retain)(void **, int);
    int (*release)(int);
    int (*push)(void *);
    int (*pop)(void **);
} CU;

static void *cu_sym(void *lib, const char *name)
{
    void *p = dlsym(lib, name);
    if (p == NULL) {
        fprintf(stderr, "evx-fuzz: the emulation has no %s\n", name);
        exit(1);
    }
    return p;
}

static void cu_load(void)
{
    const char *path = NULL;
    void *lib, *p;
    if (evx_driver_get_path(&path) != EVX_SUCCESS || path == NULL ||
        (lib = dlopen(path, RTLD_NOLOAD | RTLD_LAZY)) == NULL) {
        fprintf(stderr, "evx-fuzz: cannot find the driver library evx opened\n");
        exit(1);
    }
#define CU_LOAD(field, name) (p = cu_sym(lib, name), memcpy(&CU.field, &p, sizeof p))
    CU_LOAD(begin, "cuStreamBeginCapture_v2");
    CU_LOAD(end, "cuStreamEndCapture");
    CU_LOAD(instantiate, "cuGraphInstantiateWithFlags");
    CU_LOAD(launch, "cuGraphLaunch");
    CU_LOAD(exec_destroy, "cuGraphExecDestroy");
    CU_LOAD(graph_destroy, "cuGraphDestroy");
    CU_LOAD(retain, "cuDevicePrimaryCtxRetain");
    CU_LOAD(release, "cuDevicePrimaryCtxRelease_v2");
    CU_LOAD(push, "cuCtxPushCurrent_v2");
    CU_LOAD(pop, "cuCtxPopCurrent_v2");
#undef CU_LOAD
}

/* The device's primary context current around a driver call (a default
 * stream's handle names the current context's stream; instantiation needs
 * one). */
static void ctx_in(int dev)
{
    void *ctx = NULL;
    REQUIRE(CU.retain(&ctx, dev) == 0 && CU.push(ctx) == 0, "making the primary context current");
}

static void ctx_out(int dev)
{
    void *popped = NULL;
    REQUIRE(CU.pop(&popped) == 0 && CU.release(dev) == 0, "popping the primary context");
}

enum { NCAP = 2, NGRAPH = 2, NEXEC = 2 };
static struct graphs {
    void *cap[NCAP];  /* CUstreams whose capture this program began, not ended */
    int cap_dev[NCAP];
    /* The owned table stream whose CUstream it is (NULL: a default stream):
     * its destroy ends the capture. */
    evx_stream_t cap_owner[NCAP];
    int captures;     /* entries of cap in use */
    void *graph[NGRAPH];
    int graph_dev[NGRAPH];
    void *exec[NEXEC];
    int exec_dev[NEXEC];
} G;

/* Forgets the captures whose stream was destroyed (which ended them). */
static void captures_prune(void)
{
    for (int i = 0; i < NCAP; i++)
        if (G.cap[i] && G.cap_owner[i] && find_live(K_STREAM, G.cap_owner[i]) < 0) {
            G.cap[i] = NULL;
            G.cap_owner[i] = NULL;
            G.captures--;
        }
}

static int capture_on(void)
{
    captures_prune();
    return G.captures > 0;
}

/* Whether `native` is an owned table stream's CUstream (still live) that
 * this program captures. */
static int owned_capture(void *native)
{
    for (int i = 0; i < NCAP; i++)
        if (native && G.cap[i] == native && G.cap_owner[i]) return 1;
    return 0;
}

/* Whether driver stream `native` is one this program captures. */
static int capturing_native(void *native)
{
    for (int i = 0; i < NCAP; i++)
        if (native && G.cap[i] == native) return 1;
    return 0;
}

/* The CUstream of a live table stream, or NULL. */
static void *native_of(evx_stream_t s)
{
    void *n = NULL;
    return s && C(evx_stream_get_native(s, &n)) == EVX_SUCCESS ? n : NULL;
}

static void put_graph(void *g, int dev)
{
    for (int i = 0; i < NGRAPH; i++)
        if (!G.graph[i]) {
            G.graph[i] = g;
            G.graph_dev[i] = dev;
            return;
        }
    /* full: the oldest goes */
    REQUIRE(CU.graph_destroy(G.graph[0]) == 0, "cuGraphDestroy of a graph failed");
    G.graph[0] = g;
    G.graph_dev[0] = dev;
}

/* A driver call's result, in the trace (EVX_FUZZ_TRACE=1). */
static int cu_traced(int rc, const char *call)
{
    if (g_trace) fprintf(stderr, "  %-60s -> CUresult %d\n", call, rc);
    return rc;
}
#define CU_CALL(call) cu_traced((call), #call)

static void end_capture_slot(int i)
{
    void *g = NULL;
    G.cap_owner[i] = NULL;
    ctx_in(G.cap_dev[i]);
    const int rc = CU_CALL(CU.end(G.cap[i], &g));
    ctx_out(G.cap_dev[i]);
    /* an invalidated capture, or one the wrong thread ends, gives no graph */
    REQUIRE(rc == 0 ? g != NULL : g == NULL, "cuStreamEndCapture's graph and status disagree");
    if (g) put_graph(g, G.cap_dev[i]);
    G.cap[i] = NULL;
    G.captures--;
}

/* Begins a capture of a table stream in a mode the input chooses (global,
 * thread-local, relaxed, or an unknown one the driver refuses), or ends
 * one this program began. */
static void op_capture_begin_end(reader *r)
{
    const uint8_t b = u8(r);
    captures_prune();
    if (b & 1) {
        const int i = (b >> 1) % NCAP;
        if (G.cap[i]) end_capture_slot(i);
        return;
    }
    int slot, cls;
    evx_stream_t s = (evx_stream_t)pick(r, K_STREAM, &slot, &cls);
    if (cls != H_LIVE || (T.st[slot].owner && find_live(K_STREAM, T.st[slot].owner) < 0)) return;
    void *native = native_of(s);
    int free_slot = -1;
    for (int i = NCAP - 1; i >= 0; i--)
        if (!G.cap[i]) free_slot = i;  /* the first free one */
    if (free_slot < 0 || capturing_native(native)) return;
    const int mode = (b >> 1) % 8 < 7 ? (b >> 1) % 3 : 3 + (b >> 4);
    ctx_in(T.st[slot].dev);
    const int rc = CU_CALL(CU.begin(native, mode));
    ctx_out(T.st[slot].dev);
    if (mode > 2) REQUIRE(rc != 0, "cuStreamBeginCapture took an unknown mode");
    if (rc != 0) return;  /* the legacy stream, an unknown mode */
    G.cap[free_slot] = native;
    G.cap_dev[free_slot] = T.st[slot].dev;
    G.cap_owner[free_slot] = T.st[slot].owned ? s : T.st[slot].owner;
    G.captures++;
}

/* Instantiates, launches on a table stream of the graph's device, or
 * destroys a graph or an executable. */
static void op_graph(reader *r)
{
    const uint8_t b = u8(r);
    const int gi = (b >> 2) % NGRAPH, xi = (b >> 4) % NEXEC;
    switch (b & 3) {
    case 0: {  /* instantiate, with the graph's context current */
        void *x = NULL;
        if (!G.graph[gi]) return;
        const int dev = G.graph_dev[gi];
        ctx_in(dev);
        const int rc = CU_CALL(CU.instantiate(&x, G.graph[gi], 0));
        ctx_out(dev);
        REQUIRE(rc == 0 && x != NULL, "cuGraphInstantiateWithFlags of a captured graph failed");
        if (G.exec[xi]) REQUIRE(CU.exec_destroy(G.exec[xi]) == 0, "cuGraphExecDestroy failed");
        G.exec[xi] = x;
        G.exec_dev[xi] = dev;
        return;
    }
    case 1: {  /* launch: runs the graph's host functions (and records) */
        int slot, cls;
        evx_stream_t s = (evx_stream_t)pick(r, K_STREAM, &slot, &cls);
        if (!G.exec[xi] || cls != H_LIVE || T.st[slot].dev != G.exec_dev[xi] ||
            (T.st[slot].owner && find_live(K_STREAM, T.st[slot].owner) < 0))
            return;
        void *native = native_of(s);
        ctx_in(G.exec_dev[xi]);
        const int rc = CU_CALL(CU.launch(G.exec[xi], native));
        ctx_out(G.exec_dev[xi]);
        /* refused into a capture (which it invalidates), or on the legacy
         * stream while a blocking stream captures */
        if (!capture_on()) REQUIRE(rc == 0, "cuGraphLaunch with no capture on failed");
        return;
    }
    case 2:
        if (!G.graph[gi]) return;
        REQUIRE(CU.graph_destroy(G.graph[gi]) == 0, "cuGraphDestroy failed");
        G.graph[gi] = NULL;
        return;
    default:
        if (!G.exec[xi]) return;
        REQUIRE(CU.exec_destroy(G.exec[xi]) == 0, "cuGraphExecDestroy failed");
        G.exec[xi] = NULL;
        return;
    }
}

/* Ends the captures and destroys the graphs and executables (before the
 * streams go: a stream destroyed while captured ends its capture). */
static void graphs_teardown(void)
{
    captures_prune();
    for (int i = 0; i < NCAP; i++)
        if (G.cap[i]) end_capture_slot(i);
    for (int i = 0; i < NEXEC; i++)
        if (G.exec[i]) REQUIRE(CU.exec_destroy(G.exec[i]) == 0, "cuGraphExecDestroy failed");
    for (int i = 0; i < NGRAPH; i++)
        if (G.graph[i]) REQUIRE(CU.graph_destroy(G.graph[i]) == 0, "cuGraphDestroy failed");
    memset(&G, 0, sizeof G);
}

static void op_capture(reader *r)
{
    int slot, cls;
    evx_stream_t s = (evx_stream_t)pick(r, K_STREAM, &slot, &cls);
    const int null = null_out(r);
    evx_capture_status_t cs = (evx_capture_status_t)77;
    const evx_status_t st = C(evx_stream_get_capture_status(s, null ? NULL : &cs));
    if (null)
        REQUIRE(st == EVX_ERROR_INVALID_VALUE, "a NULL out-pointer was not refused");
    else if (not_live(cls))
        REQUIRE(st == EVX_ERROR_INVALID_HANDLE, "a dead stream was not refused");
    else if (cls == H_LIVE && (!T.st[slot].owner || find_live(K_STREAM, T.st[slot].owner) >= 0)) {
        /* (a borrow whose CUstream's owner was destroyed names a dead
         * driver stream: the caller's error) */
        if (!capture_on())
            REQUIRE(st == EVX_SUCCESS && cs == EVX_CAPTURE_STATUS_NONE,
                    "a stream with no capture on is not EVX_CAPTURE_STATUS_NONE");
        else if (owned_capture(native_of(s)))
            REQUIRE(st == EVX_SUCCESS && cs != EVX_CAPTURE_STATUS_NONE,
                    "a capturing stream says EVX_CAPTURE_STATUS_NONE");
    }
}

/* Notifier callbacks: each successful evx_notifier_watch_callback's runs
 * exactly once before its notifier's destroy returns. One kind of callback
 * tries to destroy its own notifier, which must be refused. Counted per
 * input. */
static unsigned long long g_cb_runs, g_cb_watches, g_cb_bad;
static void on_notify(void *user_data)
{
    if (user_data != RELEASE_COOKIE) __atomic_add_fetch(&g_cb_bad, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&g_cb_runs, 1, __ATOMIC_RELAXED);
}
/* The status callback: a failure comes with a message during the call. */
static void on_notify_status(evx_status_t status, void *user_data)
{
    const char *msg;
    if (user_data != RELEASE_COOKIE ||
        (status != EVX_SUCCESS && (!(msg = evx_last_error_message()) || !msg[0])))
        __atomic_add_fetch(&g_cb_bad, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&g_cb_runs, 1, __ATOMIC_RELAXED);
}
static void on_notify_destroy(void *user_data)
{
    const char *msg;
    if (evx_notifier_destroy((evx_notifier_t)user_data) != EVX_ERROR_NOT_PERMITTED ||
        !(msg = evx_last_error_message()) || !msg[0])
        __atomic_add_fetch(&g_cb_bad, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&g_cb_runs, 1, __ATOMIC_RELAXED);
}

static void op_notifier_create(reader *r)
{
    union {  /* room for a caller compiled against a later, larger struct */
        evx_notifier_options_t o;
        unsigned char bytes[32];
    } u;
    memset(&u, 0, sizeof u);
    u.o.struct_size = pick_struct_size(r, sizeof u.o, 15);
    u.o.flags = pick_flags(r, 0);
    const uint8_t mb = u8(r);
    u.o.max_streams_per_device = mb < 200 ? mb % 9
                               : mb < 230 ? EVX_NOTIFIER_MAX_STREAMS
                               : mb < 240 ? EVX_NOTIFIER_MAX_STREAMS + 1 : u32(r);
    const int slot = u8(r) % NN;
    const int null_opts = (u8(r) & 7) == 7, null = null_out(r);
    evx_notifier_t n = (evx_notifier_t)JUNK;
    const evx_status_t st = C(evx_notifier_create(null_opts ? NULL : &u.o, null ? NULL : &n));
    if (!null && !null_opts) {
        const int bad = u.o.struct_size < sizeof u.o || u.o.flags != 0 ||
                        u.o.max_streams_per_device > EVX_NOTIFIER_MAX_STREAMS;
        if (bad) REQUIRE(st == EVX_ERROR_INVALID_VALUE, "bad notifier options were accepted");
        if (!bad && u.o.struct_size == sizeof u.o)
            REQUIRE(st == EVX_SUCCESS, "good notifier options were refused");
    }
    if (!null && null_opts) REQUIRE(st == EVX_SUCCESS, "NULL notifier options were refused");
    if (!created(K_NOTIFIER, slot, st, null, n, __LINE__)) return;
    T.nt[slot].h = n;
    T.nt[slot].tokens_due = 0;
}

/* Reads every token queued (the caller knows none is on its way). */
static unsigned long long drain_tokens(evx_notifier_t n)
{
    unsigned long long total = 0;
    uint64_t buf[16];
    uint32_t got;
    do {
        got = 0;
        REQUIRE(C(evx_notifier_read(n, buf, 16, &got)) == EVX_SUCCESS && got <= 16,
                "reading a live notifier failed");
        total += got;
    } while (got == 16);
    return total;
}

/* Waits (up to 5 s) until nothing is pending on a live notifier; returns
 * the number of tokens queued. */
static uint64_t notifier_settle(evx_notifier_t n)
{
    uint64_t pending = 1, queued = 0;
    for (int i = 0; i < 5000; i++) {
        REQUIRE(C(evx_notifier_get_counts(n, &pending, &queued)) == EVX_SUCCESS,
                "evx_notifier_get_counts failed on a live notifier");
        if (pending == 0) return queued;
        const struct timespec ms = {0, 1000 * 1000};
        nanosleep(&ms, NULL);
    }
    finding("a notifier's watches were still pending after 5 s", "evx_notifier_get_counts",
            __LINE__);
}

static void op_notifier(reader *r)
{
    const uint8_t which = u8(r) % 8;
    if (which == 0) {
        op_notifier_create(r);
        return;
    }
    if (which == 1) {  /* also with watches pending */
        op_destroy(r, K_NOTIFIER);
        return;
    }
    int slot, cls;
    evx_notifier_t n = (evx_notifier_t)pick(r, K_NOTIFIER, &slot, &cls);
    const int live = find_live(K_NOTIFIER, n);
    evx_status_t st;
    switch (which) {
    case 2: {
        const int null = null_out(r);
        int fd = -7;
        st = C(evx_notifier_get_fd(n, null ? NULL : &fd));
        if (null) {
            REQUIRE(st == EVX_ERROR_INVALID_VALUE, "a NULL out-pointer was not refused");
            return;
        }
        if (cls == H_LIVE) REQUIRE(st == EVX_SUCCESS && fd >= 0, "a live notifier has no fd");
        break;
    }
    case 3: case 4: {  /* watch, watch_callback */
        int es, ec;
        evx_event_t e = (evx_event_t)pick(r, K_EVENT, &es, &ec);
        const uint8_t b = u8(r);
        if (which == 3) {
            st = C(evx_notifier_watch(n, e, u64(r)));
            if (st == EVX_SUCCESS) {
                REQUIRE(live >= 0, "a watch succeeded on a notifier that is no live one");
                T.nt[live].tokens_due++;
            }
        } else {
            const int null_fn = (b & 7) == 7;
            evx_notify_fn_t fn = null_fn ? NULL : (b & 8) ? on_notify_destroy : on_notify;
            void *user = (b & 8) ? (void *)n : RELEASE_COOKIE;
            st = (b & 16) ? C(evx_notifier_watch_callback_status(
                                n, e, null_fn ? NULL : on_notify_status, RELEASE_COOKIE))
                          : C(evx_notifier_watch_callback(n, e, fn, user));
            if (null_fn) {
                REQUIRE(st == EVX_ERROR_INVALID_VALUE, "a NULL callback was accepted");
                return;
            }
            if (st == EVX_SUCCESS) g_cb_watches++;
        }
        if (not_live(ec)) REQUIRE(st == EVX_ERROR_INVALID_HANDLE, "a dead event was not refused");
        if (cls == H_LIVE && ec == H_LIVE && !T.ev[es].captured)
            REQUIRE(st == EVX_SUCCESS, "a watch failed");
        break;
    }
    case 5: {  /* read into small and NULL buffers */
        uint64_t buf[9];
        memset(buf, 0xab, sizeof buf);
        const uint8_t b = u8(r);
        const int null_tokens = (b & 3) == 3, null_count = null_out(r);
        const uint32_t cap = null_tokens ? ((b & 4) ? 0 : u32(r)) : (uint32_t)((b >> 2) % 9);
        uint32_t got = 0xdead;
        /* the checked read: a failed host function's status comes with
         * the tokens taken up to the token whose watch covers it */
        const int checked = u8(r) & 1;
        st = checked ? C(evx_notifier_read_checked(n, null_tokens ? NULL : buf, cap,
                                                   null_count ? NULL : &got))
                     : C(evx_notifier_read(n, null_tokens ? NULL : buf, cap,
                                           null_count ? NULL : &got));
        if (null_count || null_tokens || cap == 0) {
            REQUIRE(st == EVX_ERROR_INVALID_VALUE, "a bad buffer was accepted");
            if (!null_count) REQUIRE(got == 0, "a refused read left its count set");
            return;
        }
        if (st == EVX_SUCCESS || (checked && got > 0)) {
            REQUIRE(got <= cap, "a read gave more tokens than the buffer holds");
            for (unsigned i = got; i < 9; i++)
                REQUIRE(buf[i] == 0xababababababababull, "a read wrote past its tokens");
            if (live >= 0) {
                REQUIRE(got <= T.nt[live].tokens_due, "a read gave tokens nobody watched for");
                T.nt[live].tokens_due -= got;
            }
        }
        break;
    }
    default: {
        const uint8_t ptrs = u8(r) & 3;
        uint64_t pending = 7, queued = 7;
        st = C(evx_notifier_get_counts(n, (ptrs & 1) ? &pending : NULL,
                                       (ptrs & 2) ? &queued : NULL));
        if (ptrs == 0) {
            REQUIRE(st == EVX_ERROR_INVALID_VALUE, "two NULL out-pointers were accepted");
            return;
        }
        if (st == EVX_SUCCESS && ptrs == 3 && live >= 0) {
            REQUIRE(queued <= T.nt[live].tokens_due, "more tokens queued than watched for");
            if (pending == 0) {  /* every token watch delivered, none on its way */
                int fd = -1;
                struct pollfd p;
                REQUIRE(queued == T.nt[live].tokens_due, "a token watch was lost");
                REQUIRE(C(evx_notifier_get_fd(n, &fd)) == EVX_SUCCESS, "no fd");
                p.fd = fd;
                p.events = POLLIN;
                p.revents = 0;
                REQUIRE(poll(&p, 1, 0) >= 0, "poll failed on a notifier's fd");
                REQUIRE(((p.revents & POLLIN) != 0) == (queued > 0),
                        "the notifier's fd is readable exactly while tokens are queued");
            }
        }
        break;
    }
    }
    if (not_live(cls)) REQUIRE(st == EVX_ERROR_INVALID_HANDLE, "a dead notifier was not refused");
}

static void op_ipc(reader *r)
{
    const uint8_t which = u8(r) & 1;
    if (which == 0) {  /* export */
        int slot, cls;
        evx_event_t e = (evx_event_t)pick(r, K_EVENT, &slot, &cls);
        ipc_slot *x = &T.ipc[u8(r) % NIPC];
        const int null = null_out(r);
        evx_ipc_event_handle_t h;
        const evx_status_t st = C(evx_event_get_ipc_handle(e, null ? NULL : &h));
        if (null)
            REQUIRE(st == EVX_ERROR_INVALID_VALUE, "a NULL out-pointer was not refused");
        else if (not_live(cls))
            REQUIRE(st == EVX_ERROR_INVALID_HANDLE, "a dead event was not refused");
        else if (cls == H_LIVE)
            REQUIRE(st == ((T.ev[slot].flags & EVX_EVENT_INTERPROCESS) ? EVX_SUCCESS
                                                                       : EVX_ERROR_INVALID_HANDLE),
                    "exporting answered against the event's EVX_EVENT_INTERPROCESS flag");
        if (st == EVX_SUCCESS) {
            x->bytes = h;
            x->used = 1;
        }
        return;
    }
    /* open: a handle this process exported (the driver refuses it with
     * CUDA_ERROR_INVALID_CONTEXT), with a bit flipped, or forged */
    ipc_slot *x = &T.ipc[u8(r) % NIPC];
    evx_ipc_event_handle_t h = x->bytes;
    const uint8_t how = u8(r);
    int exported = x->used;
    if (how >= 128 && how < 192) {
        h.reserved[u8(r) % EVX_IPC_HANDLE_SIZE] ^= (unsigned char)(1u << (how & 7));
        exported = 0;
    } else if (how >= 192) {  /* forged: random bytes, or the emulation's magic first */
        for (int i = 0; i < EVX_IPC_HANDLE_SIZE; i++) h.reserved[i] = u8(r);
        if (how & 1) memcpy(h.reserved, "evxhipc1/evxh-", 14);
        exported = 0;
    }
    const int dev = pick_device(r);
    const int null_handle = (u8(r) & 15) == 15, null = null_out(r);
    evx_event_t e = (evx_event_t)JUNK;
    const evx_status_t st =
        C(evx_device_open_ipc_event(dev, null_handle ? NULL : &h, null ? NULL : &e));
    if (!null) REQUIRE(st != EVX_SUCCESS || e != NULL, "an opened event is NULL");
    if (!null && st != EVX_SUCCESS) REQUIRE(e == NULL, "a failed open left its out-pointer set");
    if (null || null_handle)
        REQUIRE(st == EVX_ERROR_INVALID_VALUE, "a NULL handle or out-pointer was not refused");
    else if (dev < 0 || dev >= n_devices)
        REQUIRE(st == EVX_ERROR_INVALID_DEVICE, "a bad device was accepted");
    REQUIRE(st != EVX_SUCCESS, "an IPC handle opened in its own process (or a forged one)");
    if (exported && dev >= 0 && dev < n_devices && !null && !null_handle) {
        /* still exported by a live table event: the driver's own refusal */
        for (int i = 0; i < NE; i++) {
            evx_ipc_event_handle_t mine;
            if (T.ev[i].h && (T.ev[i].flags & EVX_EVENT_INTERPROCESS) &&
                C(evx_event_get_ipc_handle(T.ev[i].h, &mine)) == EVX_SUCCESS &&
                memcmp(&mine, &h, sizeof h) == 0)
                REQUIRE(st == EVX_ERROR_INVALID_CONTEXT,
                        "opening a handle exported by this process was not refused with "
                        "INVALID_CONTEXT");
        }
    }
}

/* A live table stream of `dev` whose driver stream is alive (a borrow
 * whose CUstream's owner was destroyed names a dead driver stream: the
 * caller's error, which the driver refuses). */
static int good_stream(int slot, int cls, int dev)
{
    return cls == H_LIVE && T.st[slot].dev == dev &&
           (!T.st[slot].owner || find_live(K_STREAM, T.st[slot].owner) >= 0);
}

/* A fence made, used by a run of calls the input chooses, and destroyed
 * (evx/fence.h). Waits (on streams and by a notifier) are only for values
 * already signalled or queued, and a stream waits for the last value
 * before it signals the next (so signals run in order), so none can block
 * a stream for good. The
 * oracle: a signal succeeds exactly when its value is above every value
 * signalled or queued before (and, from the host, no queued signal is
 * still to run), and the counter then reads it. */
static void op_fence(reader *r)
{
    /* Not while a capture is on: a memory operation on a capturing stream
     * is a node of the graph, run only at a launch (and the legacy
     * stream's is refused while a blocking stream captures), which would
     * break the order of signals this op keeps, and a watch of a value
     * never signalled would hold its notifier for good. */
    if (capture_on()) return;
    const int dev = pick_device(r);
    const uint8_t fb = u8(r);
    const unsigned flags = (fb & 1) ? EVX_FENCE_INTERPROCESS : (fb & 2) ? (unsigned)u8(r) : 0;
    uint64_t initial = (fb & 4) ? u64(r) : (uint64_t)(u8(r));
    evx_fence_t f = (evx_fence_t)JUNK;
    evx_status_t st = C(evx_device_create_fence(dev, initial, flags, &f));
    if (st != EVX_SUCCESS) {
        REQUIRE(f == NULL, "a failed fence creation left its out-pointer set");
        REQUIRE(dev < 0 || dev >= n_devices || (flags & ~EVX_FENCE_INTERPROCESS) ||
                    initial > EVX_FENCE_MAX_VALUE,
                "a fence with good arguments was refused");
        return;
    }
    REQUIRE(dev >= 0 && dev < n_devices && !(flags & ~EVX_FENCE_INTERPROCESS) &&
                initial <= EVX_FENCE_MAX_VALUE,
            "a fence with bad arguments was made");
    uint64_t last = initial;
    const int steps = 1 + (u8(r) & 7);
    for (int i = 0; i < steps; i++) {
        const uint8_t op = u8(r);
        const uint64_t v = (op & 0x80) ? u64(r) : last + (u8(r) & 7);
        uint64_t now = 0;
        int slot, cls;
        switch (op & 7) {
        case 0: {  /* host signal */
            st = C(evx_fence_signal_host(f, v));
            if (v <= last || v > EVX_FENCE_MAX_VALUE)
                REQUIRE(st == EVX_ERROR_INVALID_VALUE, "a host signal not above the last was taken");
            else
                REQUIRE(st == EVX_SUCCESS || st == EVX_ERROR_ILLEGAL_STATE,
                        "a good host signal was refused");
            if (st == EVX_SUCCESS) {
                last = v;
                REQUIRE(C(evx_fence_get_value(f, &now)) == EVX_SUCCESS && now == v,
                        "the counter does not read the host signal's value");
            }
            break;
        }
        case 1: {  /* queued signal */
            evx_stream_t s = (evx_stream_t)pick(r, K_STREAM, &slot, &cls);
            /* Signals must also run in increasing order (evx/fence.h): the
             * stream first waits for the last value, as a program signalling
             * from several streams must. */
            if (good_stream(slot, cls, dev))
                REQUIRE(C(evx_stream_wait_fence(s, f, last)) == EVX_SUCCESS,
                        "a good fence wait was refused");
            st = C(evx_fence_signal(f, s, v));
            if (st == EVX_SUCCESS) {
                REQUIRE(v > last && v <= EVX_FENCE_MAX_VALUE, "a signal not above the last was queued");
                last = v;
            } else if (good_stream(slot, cls, dev) && v > last && v <= EVX_FENCE_MAX_VALUE) {
                REQUIRE(0, "a good queued signal was refused");
            }
            break;
        }
        case 2: {  /* queued wait, for a value signalled or queued already */
            evx_stream_t s = (evx_stream_t)pick(r, K_STREAM, &slot, &cls);
            st = C(evx_stream_wait_fence(s, f, v <= last ? v : last));
            if (good_stream(slot, cls, dev))
                REQUIRE(st == EVX_SUCCESS, "a good fence wait was refused");
            break;
        }
        case 3:
            st = C(evx_fence_wait_host(f, v, 0));
            REQUIRE(st == EVX_SUCCESS || st == EVX_ERROR_TIMEOUT || st == EVX_ERROR_INVALID_VALUE,
                    "a fence query answered neither reached nor not yet");
            break;
        case 4: {
            evx_ipc_fence_handle_t h;
            evx_fence_t o = (evx_fence_t)JUNK;
            st = C(evx_fence_get_ipc_handle(f, null_out(r) ? NULL : &h));
            if (st == EVX_SUCCESS) {
                st = C(evx_device_open_ipc_fence(dev, &h, &o));
                REQUIRE(st == EVX_ERROR_INVALID_CONTEXT && o == NULL,
                        "a fence handle opened in the process that exported it");
            }
            break;
        }
        case 5: {  /* a watch of a value signalled or queued, delivered before destroy ends */
            evx_notifier_t n = NULL;
            if (C(evx_notifier_create(NULL, &n)) != EVX_SUCCESS) break;
            st = C(evx_notifier_watch_fence(n, f, v <= last ? v : last, v));
            REQUIRE(st == EVX_SUCCESS, "a fence watch was refused");
            REQUIRE(C(evx_notifier_destroy(n)) == EVX_SUCCESS, "a notifier destroy failed");
            break;
        }
        default:
            st = C(evx_fence_get_value(null_out(r) ? (evx_fence_t)pick(r, K_EVENT, &slot, &cls) : f,
                                       &now));
            break;
        }
    }
    REQUIRE(C(evx_fence_destroy(f)) == EVX_SUCCESS, "a fence destroy failed");
    REQUIRE(C(evx_fence_destroy(f)) == EVX_ERROR_INVALID_HANDLE, "a fence was destroyed twice");
}

/* Events made and destroyed in a burst, recorded or not: more than evx
 * retires at once (32) and than a thread keeps per device and flags (64),
 * so that the events made after it reuse driver events with a former
 * life, which must behave as new ones. */
static void op_churn(reader *r)
{
    const uint8_t b = u8(r);
    const int n = 1 + (b & 127) % 100, all_live = b >> 7;  /* all made, then all destroyed */
    const int dev = pick_device(r);
    const unsigned flags = pick_flags(r, 7);
    int ss, sc, made = 0;
    evx_stream_t s = (evx_stream_t)pick(r, K_STREAM, &ss, &sc);
    evx_event_t live[100];
    for (int i = 0; i < n; i++) {
        evx_event_t e = NULL;
        if (C(evx_device_create_event(dev, flags, &e)) != EVX_SUCCESS) break;
        const evx_status_t st = C(evx_event_query(e));
        REQUIRE(st == EVX_SUCCESS || capture_on() || graph_failure(st),
                "a never-recorded event is not done");
        if (s) (void)C(evx_event_record(e, s));
        if (all_live)
            live[made++] = e;
        else
            REQUIRE(C(evx_event_destroy(e)) == EVX_SUCCESS, "destroying a live event failed");
    }
    for (int i = 0; i < made; i++)
        REQUIRE(C(evx_event_destroy(live[i])) == EVX_SUCCESS, "destroying a live event failed");
}

/* Every call on a handle this program destroyed is refused, also a second
 * destroy; a live handle of the right kind is passed where one is needed. */
static void op_probe_dead(reader *r)
{
    if (T.dead_n == 0) return;
    const dead_handle *d = &T.dead[u8(r) % T.dead_n];
    void *h = (void *)(uintptr_t)d->v;
    evx_stream_t live_s = NULL;
    evx_event_t live_e = NULL;
    evx_notifier_t live_n = NULL;
    unsigned u;
    int i;
    float ms;
    void *p;
    for (int k = 0; k < NS; k++)
        if (T.st[k].h) live_s = T.st[k].h;
    for (int k = 0; k < NE; k++)
        if (T.ev[k].h) live_e = T.ev[k].h;
    for (int k = 0; k < NN; k++)
        if (T.nt[k].h) live_n = T.nt[k].h;
    switch (d->kind) {
    case K_EVENT: {
        evx_event_t e = (evx_event_t)h;
        C_DEAD(evx_event_query(e));
        C_DEAD(evx_event_synchronize(e));
        C_DEAD(evx_event_get_flags(e, &u));
        C_DEAD(evx_event_get_device(e, &i));
        C_DEAD(evx_event_get_native(e, &p));
        if (live_s) C_DEAD(evx_event_record(e, live_s));
        if (live_s) C_DEAD(evx_stream_wait_event(live_s, e, 0));
        {
            evx_ipc_event_handle_t ipc;
            C_DEAD(evx_event_get_ipc_handle(e, &ipc));
        }
        if (live_n) C_DEAD(evx_notifier_watch(live_n, e, 1));
        if (live_n) C_DEAD(evx_notifier_watch_callback(live_n, e, on_notify, RELEASE_COOKIE));
        C_DEAD(evx_event_destroy(e));
        break;
    }
    case K_STREAM: {
        evx_stream_t s = (evx_stream_t)h;
        C_DEAD(evx_stream_query(s));
        C_DEAD(evx_stream_synchronize(s));
        C_DEAD(evx_stream_get_priority(s, &i));
        C_DEAD(evx_stream_get_flags(s, &u));
        C_DEAD(evx_stream_get_device(s, &i));
        C_DEAD(evx_stream_get_native(s, &p));
        C_DEAD(evx_stream_is_owned(s, &i));
        C_DEAD(evx_stream_launch_host_func(s, host_fn, NULL));
        {
            evx_capture_status_t cs;
            C_DEAD(evx_stream_get_capture_status(s, &cs));
        }
        C_DEAD(evx_stream_destroy(s));
        break;
    }
    case K_POOL: {
        evx_event_pool_t pool = (evx_event_pool_t)h;
        evx_event_pool_stats_t stats;
        evx_event_t e = (evx_event_t)JUNK;
        memset(&stats, 0, sizeof stats);
        stats.struct_size = sizeof stats;
        C_DEAD(evx_event_pool_prewarm(pool, 0));
        C_DEAD(evx_event_pool_acquire(pool, &e));
        REQUIRE(e == NULL, "a failed acquire left its out-pointer set");
        C_DEAD(evx_event_pool_get_stats(pool, &stats));
        C_DEAD(evx_event_pool_destroy(pool));
        break;
    }
    case K_TIMER: {
        evx_timer_t t = (evx_timer_t)h;
        C_DEAD(evx_timer_elapsed(t, &ms));
        C_DEAD(evx_timer_synchronize(t, &ms));
        if (live_s) C_DEAD(evx_timer_start(t, live_s));
        if (live_s) C_DEAD(evx_timer_stop(t, live_s));
        C_DEAD(evx_timer_destroy(t));
        break;
    }
    case K_TIMELINE: {
        evx_timeline_t t = (evx_timeline_t)h;
        uint32_t n;
        C_DEAD(evx_timeline_count(t, &n));
        C_DEAD(evx_timeline_intervals(t, NULL, 0, &n));
        C_DEAD(evx_timeline_synchronize(t));
        C_DEAD(evx_timeline_reset(t));
        if (live_s) C_DEAD(evx_timeline_mark(t, live_s, &n));
        C_DEAD(evx_timeline_destroy(t));
        break;
    }
    default: {
        evx_notifier_t n = (evx_notifier_t)h;
        uint64_t tokens[2], pending, queued;
        uint32_t got;
        C_DEAD(evx_notifier_get_fd(n, &i));
        C_DEAD(evx_notifier_watch(n, live_e, 1));
        C_DEAD(evx_notifier_watch_callback(n, live_e, on_notify, RELEASE_COOKIE));
        C_DEAD(evx_notifier_read(n, tokens, 2, &got));
        C_DEAD(evx_notifier_get_counts(n, &pending, &queued));
        C_DEAD(evx_notifier_destroy(n));
        break;
    }
    }
}

/* ---- leak accounting --------------------------------------------------- */

static evx_host_live g_baseline;

/* Destroys everything, trims both devices, and waits (briefly: the work
 * queued is only host functions that return at once) for the emulation's
 * live objects to come back to the baseline. */
static void end_of_input(void)
{
    evx_host_live now;
    graphs_teardown();
    for (int i = 0; i < NS; i++)
        if (T.st[i].h) (void)C(evx_stream_synchronize(T.st[i].h));
    /* every token watch delivered exactly once, then the notifiers go */
    for (int i = 0; i < NN; i++) {
        if (!T.nt[i].h) continue;
        const uint64_t queued = notifier_settle(T.nt[i].h);
        REQUIRE(queued == T.nt[i].tokens_due, "a notifier lost or made up a token");
        REQUIRE(drain_tokens(T.nt[i].h) == queued, "a notifier read fewer tokens than queued");
        drop(K_NOTIFIER, i);
    }
    /* each callback watch ran its callback once before its notifier died */
    REQUIRE(g_cb_runs == g_cb_watches, "notifier callbacks ran other than once per watch");
    REQUIRE(g_cb_bad == 0, "a notifier callback got another user_data, or destroying its "
                           "own notifier from a callback was not refused");
    g_cb_runs = g_cb_watches = 0;
    for (int i = 0; i < NE; i++) drop(K_EVENT, i);
    for (int i = 0; i < NP; i++) drop(K_POOL, i);
    for (int i = 0; i < NT; i++) drop(K_TIMER, i);
    for (int i = 0; i < NL; i++) drop(K_TIMELINE, i);
    for (int i = 0; i < NS; i++) drop(K_STREAM, i);
    REQUIRE(g_release_runs == g_release_wraps,
            "release callbacks ran other than once per successful wrap");
    REQUIRE(g_release_bad == 0, "a release callback got another user_data");
    g_release_runs = g_release_wraps = 0;
    memset(T.ipc, 0, sizeof T.ipc);
    g_calls += (unsigned long long)n_devices;  /* the trims */
    g_leak_checks++;
    /* A destroyed fence's memory, and the events that mark its streams,
     * are freed by a later fence call once the GPU passed them
     * (evx_fence_reclaim()): make that call, as a program's leak check
     * would, until they went or the time is up. */
    for (int tries = 0; tries < 50; tries++) {
        (void)evx_fence_reclaim(NULL, NULL);
        if (host_live_settle(&g_baseline, &now, 100)) return;
    }
    fprintf(stderr,
            "evx-fuzz: live driver objects after teardown and trim: events %lld streams %lld "
            "contexts %lld host_funcs %lld user_objects %lld; at start: events %lld streams "
            "%lld contexts %lld host_funcs %lld user_objects %lld\n",
            now.events, now.streams, now.contexts, now.host_funcs, now.user_objects,
            g_baseline.events, g_baseline.streams, g_baseline.contexts, g_baseline.host_funcs,
            g_baseline.user_objects);
    finding("driver objects leaked", "end of input", __LINE__);
}

/* ---- libFuzzer --------------------------------------------------------- */

static void print_totals(void)
{
    fprintf(stderr, "evx-fuzz: %llu evx calls in %llu inputs (%llu failures refused with "
                    "a message, %llu leak checks passed); statuses:",
            g_calls, g_inputs, g_failures, g_leak_checks);
    for (int i = 0; i < 1000; i++)
        if (g_status_count[i]) fprintf(stderr, " %s %llu", evx_status_name(i), g_status_count[i]);
    if (g_status_other) fprintf(stderr, " other %llu", g_status_other);
    fprintf(stderr, "\n");
}

/* The sanitizers stop at the first report, so libFuzzer sees it. */
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void) { return "halt_on_error=1:print_stacktrace=1"; }

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    g_trace = getenv("EVX_FUZZ_TRACE") && atoi(getenv("EVX_FUZZ_TRACE")) > 0;
    setenv("EVX_DRIVER", "host", 1);
    setenv("EVX_HOST_DEVICES", "2", 1);
    if (evx_driver_open() != EVX_SUCCESS || evx_device_count(&n_devices) != EVX_SUCCESS ||
        n_devices != 2) {
        fprintf(stderr, "evx-fuzz: cannot open the host emulation with 2 devices: %s\n",
                evx_last_error_message());
        exit(1);
    }
    if (host_debug_get() == NULL) {
        fprintf(stderr, "evx-fuzz: the driver has no evx_host_get_live (not the host emulation?)\n");
        exit(1);
    }
    /* What lives for the whole process: each device's primary context (evx
     * retains it on first use) and this thread's per-thread streams. */
    for (int d = 0; d < n_devices; d++) {
        evx_event_t e;
        evx_stream_t s;
        if (evx_device_create_event(d, 0, &e) || evx_event_destroy(e) ||
            evx_stream_wrap_external(d, EVX_STREAM_PER_THREAD, &s) || evx_stream_query(s) ||
            evx_stream_destroy(s) || evx_stream_wrap_external(d, EVX_STREAM_LEGACY, &s) ||
            evx_stream_query(s) || evx_stream_destroy(s) || evx_device_trim(d)) {
            fprintf(stderr, "evx-fuzz: warm-up on device %d failed: %s\n", d,
                    evx_last_error_message());
            exit(1);
        }
    }
    cu_load();
    host_live_start(&g_baseline);
    atexit(print_totals);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    reader r = {data, size};
    g_inputs++;
    for (int ops = 0; r.n > 0 && ops < MAX_OPS; ops++) {
        switch (u8(&r) % 30) {
        case 0: op_event_create(&r); break;
        case 1: op_destroy(&r, K_EVENT); break;
        case 2: op_event_record(&r, 0); break;
        case 3: op_event_record(&r, 1); break;
        case 4: op_event_query(&r); break;
        case 5: op_event_elapsed(&r); break;
        case 6: op_event_get(&r); break;
        case 7: op_stream_create(&r); break;
        case 8: op_stream_wrap(&r, 0); break;
        case 9: op_destroy(&r, K_STREAM); break;
        case 10: op_stream_wait(&r); break;
        case 11: op_stream_query(&r); break;
        case 12: op_stream_host_func(&r); break;
        case 13: op_stream_get(&r); break;
        case 14: op_pool_create(&r); break;
        case 15: op_destroy(&r, K_POOL); break;
        case 16: op_pool_prewarm(&r); break;
        case 17: op_pool_acquire(&r); break;
        case 18: op_pool_release(&r); break;
        case 19: op_pool_stats(&r); break;
        case 20: op_timer(&r); break;
        case 21: op_timeline(&r); break;
        case 22: op_device(&r); break;
        case 24: op_notifier(&r); break;
        case 25: op_ipc(&r); break;
        case 26: op_stream_wrap(&r, 1); break;
        case 27: op_capture(&r); break;
        case 28: op_capture_begin_end(&r); break;
        case 29: op_graph(&r); break;
        default: {
            const uint8_t b = u8(&r);
            if (b & 1)
                op_status(&r);
            else if (b & 2)
                op_churn(&r);
            else if (b & 4)
                op_fence(&r);
            else
                op_probe_dead(&r);
            break;
        }
        }
    }
    end_of_input();
    return 0;
}
