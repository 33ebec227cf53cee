/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/* Handles: dead stays dead, values are not handed out again soon. */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "hostdebug.h"
#include "util.h"

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Returns how many values occur more than once. */
static size_t duplicates(uint64_t *v, size_t n, uint64_t *example)
{
    size_t i, d = 0;
    qsort(v, n, sizeof *v, cmp_u64);
    for (i = 1; i < n; i++)
        if (v[i] == v[i - 1]) {
            if (d == 0)
                *example = v[i];
            d++;
        }
    return d;
}

#define OLD 64

static void t_dead_after_reuse(void)
{
    evx_event_t old_e[OLD];
    evx_stream_t old_s[OLD];
    evx_timer_t old_t[OLD];
    evx_timeline_t old_tl[OLD];
    evx_event_pool_t old_p[8];
    evx_stream_t s = NULL;
    evx_event_pool_options_t o;
    int i;
    float ms;
    uint32_t c;
    unsigned fl;

    memset(&o, 0, sizeof o);
    o.struct_size = (uint32_t)sizeof o;
    o.capacity = 2;
    REQUIRE((s = make_stream(0)) != NULL);
    /* Make and destroy some of every kind; recorded events so that their
     * driver events come back for reuse. */
    for (i = 0; i < OLD; i++) {
        REQUIRE_OK(evx_device_create_event(0, 0, &old_e[i]));
        EXPECT_OK(evx_event_record(old_e[i], s));
        REQUIRE_OK(evx_device_create_stream(0, 0, 0, &old_s[i]));
        REQUIRE_OK(evx_device_create_timer(0, &old_t[i]));
        REQUIRE_OK(evx_device_create_timeline(0, 2, &old_tl[i]));
    }
    for (i = 0; i < 8; i++)
        REQUIRE_OK(evx_device_create_event_pool(0, &o, &old_p[i]));
    EXPECT_OK(evx_stream_synchronize(s));
    for (i = 0; i < OLD; i++) {
        EXPECT_OK(evx_event_destroy(old_e[i]));
        EXPECT_OK(evx_stream_destroy(old_s[i]));
        EXPECT_OK(evx_timer_destroy(old_t[i]));
        EXPECT_OK(evx_timeline_destroy(old_tl[i]));
    }
    for (i = 0; i < 8; i++)
        EXPECT_OK(evx_event_pool_destroy(old_p[i]));
    /* Churn: slots and driver events get reused. */
    for (i = 0; i < 3000; i++) {
        evx_event_t e = NULL;
        if (!EXPECT_OK(evx_device_create_event(0, 0, &e)))
            break;
        if (i % 3 == 0)
            EXPECT_OK(evx_event_record(e, s));
        EXPECT_OK(evx_event_destroy(e));
        if (i % 10 == 0) {
            evx_stream_t t = NULL;
            evx_timer_t tm = NULL;
            if (EXPECT_OK(evx_device_create_stream(0, 0, 0, &t)))
                EXPECT_OK(evx_stream_destroy(t));
            if (EXPECT_OK(evx_device_create_timer(0, &tm)))
                EXPECT_OK(evx_timer_destroy(tm));
        }
    }
    EXPECT_OK(evx_stream_synchronize(s));
    /* Every old handle is still dead. */
    for (i = 0; i < OLD; i++) {
        EXPECT_FAIL(evx_event_query(old_e[i]), EVX_ERROR_INVALID_HANDLE);
        EXPECT_FAIL(evx_event_get_flags(old_e[i], &fl),
                    EVX_ERROR_INVALID_HANDLE);
        EXPECT_FAIL(evx_event_record(old_e[i], s), EVX_ERROR_INVALID_HANDLE);
        EXPECT_FAIL(evx_event_destroy(old_e[i]), EVX_ERROR_INVALID_HANDLE);
        EXPECT_FAIL(evx_stream_query(old_s[i]), EVX_ERROR_INVALID_HANDLE);
        EXPECT_FAIL(evx_stream_destroy(old_s[i]), EVX_ERROR_INVALID_HANDLE);
        EXPECT_FAIL(evx_timer_elapsed(old_t[i], &ms), EVX_ERROR_INVALID_HANDLE);
        EXPECT_FAIL(evx_timer_destroy(old_t[i]), EVX_ERROR_INVALID_HANDLE);
        EXPECT_FAIL(evx_timeline_count(old_tl[i], &c),
                    EVX_ERROR_INVALID_HANDLE);
        EXPECT_FAIL(evx_timeline_destroy(old_tl[i]), EVX_ERROR_INVALID_HANDLE);
    }
    for (i = 0; i < 8; i++)
        EXPECT_FAIL(evx_event_pool_destroy(old_p[i]), EVX_ERROR_INVALID_HANDLE);
out:
    drop_stream(&s);
}

static void t_not_reissued(void)
{
    enum { EVENTS = 10000, STREAMS = 2000, TIMERS = 2000, TIMELINES = 1000,
           POOLS = 500 };
    size_t cap = EVENTS + STREAMS + TIMERS + TIMELINES + POOLS, n = 0, d;
    uint64_t *v = (uint64_t *)malloc(cap * sizeof *v), example = 0;
    evx_stream_t s = NULL;
    evx_event_pool_options_t o;
    int i;

    memset(&o, 0, sizeof o);
    o.struct_size = (uint32_t)sizeof o;
    o.capacity = 1;
    REQUIRE(v != NULL);
    REQUIRE((s = make_stream(0)) != NULL);
    for (i = 0; i < EVENTS; i++) {
        evx_event_t e = NULL;
        if (!EXPECT_OK(evx_device_create_event(0, (unsigned)(i & 3), &e)))
            break;
        v[n++] = (uint64_t)(uintptr_t)e;
        if (i % 7 == 0)
            EXPECT_OK(evx_event_record(e, s));
        if (!EXPECT_OK(evx_event_destroy(e)))
            break;
    }
    for (i = 0; i < STREAMS; i++) {
        evx_stream_t t = NULL;
        if (!EXPECT_OK(evx_device_create_stream(0, 0, 0, &t)))
            break;
        v[n++] = (uint64_t)(uintptr_t)t;
        if (!EXPECT_OK(evx_stream_destroy(t)))
            break;
    }
    for (i = 0; i < TIMERS; i++) {
        evx_timer_t t = NULL;
        if (!EXPECT_OK(evx_device_create_timer(0, &t)))
            break;
        v[n++] = (uint64_t)(uintptr_t)t;
        if (!EXPECT_OK(evx_timer_destroy(t)))
            break;
    }
    for (i = 0; i < TIMELINES; i++) {
        evx_timeline_t t = NULL;
        if (!EXPECT_OK(evx_device_create_timeline(0, 2, &t)))
            break;
        v[n++] = (uint64_t)(uintptr_t)t;
        if (!EXPECT_OK(evx_timeline_destroy(t)))
            break;
    }
    for (i = 0; i < POOLS; i++) {
        evx_event_pool_t p = NULL;
        if (!EXPECT_OK(evx_device_create_event_pool(0, &o, &p)))
            break;
        v[n++] = (uint64_t)(uintptr_t)p;
        if (!EXPECT_OK(evx_event_pool_destroy(p)))
            break;
    }
    EXPECT_OK(evx_stream_synchronize(s));
    EXPECT(n == cap);
    d = duplicates(v, n, &example);
    EXPECTF(d == 0, "%lu handle values were handed out twice in %lu "
            "create/destroy cycles (e.g. 0x%llx)", (unsigned long)d,
            (unsigned long)n, (unsigned long long)example);
    /* and none of them is 0 */
    EXPECT(n == 0 || v[0] != 0);
out:
    free(v);
    drop_stream(&s);
}

static void t_live_distinct(void)
{
    enum { N = 1000 };
    evx_event_t *ev = (evx_event_t *)calloc(N, sizeof *ev);
    uint64_t *vals = (uint64_t *)calloc(N, sizeof *vals);
    uint64_t *nat = (uint64_t *)calloc(N, sizeof *nat);
    uint64_t example = 0;
    int i, made = 0;

    REQUIRE(ev != NULL && vals != NULL && nat != NULL);
    for (i = 0; i < N; i++) {
        void *p = NULL;
        if (!EXPECT_OK(evx_device_create_event(0, EVX_EVENT_DISABLE_TIMING,
                                               &ev[i])))
            break;
        made++;
        EXPECT_OK(evx_event_get_native(ev[i], &p));
        vals[i] = (uint64_t)(uintptr_t)ev[i];
        nat[i] = (uint64_t)(uintptr_t)p;
    }
    EXPECTF(duplicates(vals, (size_t)made, &example) == 0,
            "two live events share the handle 0x%llx",
            (unsigned long long)example);
    EXPECTF(duplicates(nat, (size_t)made, &example) == 0,
            "two live events share the CUevent 0x%llx",
            (unsigned long long)example);
    for (i = 0; i < made; i++)
        EXPECT_OK(evx_event_destroy(ev[i]));
out:
    free(ev);
    free(vals);
    free(nat);
}

static void t_double_destroy(void)
{
    evx_event_t e = NULL;
    evx_stream_t s = NULL;
    evx_timer_t t = NULL;
    evx_timeline_t tl = NULL;
    evx_event_pool_t p = NULL;
    evx_event_pool_options_t o;

    memset(&o, 0, sizeof o);
    o.struct_size = (uint32_t)sizeof o;
    o.capacity = 2;
    REQUIRE_OK(evx_device_create_event(0, 0, &e));
    REQUIRE_OK(evx_device_create_stream(0, 0, 0, &s));
    REQUIRE_OK(evx_device_create_timer(0, &t));
    REQUIRE_OK(evx_device_create_timeline(0, 3, &tl));
    REQUIRE_OK(evx_device_create_event_pool(0, &o, &p));
    EXPECT_OK(evx_event_destroy(e));
    EXPECT_FAIL(evx_event_destroy(e), EVX_ERROR_INVALID_HANDLE);
    EXPECT_OK(evx_stream_destroy(s));
    EXPECT_FAIL(evx_stream_destroy(s), EVX_ERROR_INVALID_HANDLE);
    EXPECT_OK(evx_timer_destroy(t));
    EXPECT_FAIL(evx_timer_destroy(t), EVX_ERROR_INVALID_HANDLE);
    EXPECT_OK(evx_timeline_destroy(tl));
    EXPECT_FAIL(evx_timeline_destroy(tl), EVX_ERROR_INVALID_HANDLE);
    EXPECT_OK(evx_event_pool_destroy(p));
    EXPECT_FAIL(evx_event_pool_destroy(p), EVX_ERROR_INVALID_HANDLE);
    return;
out:
    /* only reached if a create failed; what was made is still live */
    if (e != NULL)
        evx_event_destroy(e);
    if (s != NULL)
        evx_stream_destroy(s);
    if (t != NULL)
        evx_timer_destroy(t);
    if (tl != NULL)
        evx_timeline_destroy(tl);
}

/* Whether the thread's last error message contains `part`. */
static int message_has(const char *part)
{
    const char *m = evx_last_error_message();
    int ok = strstr(m, part) != NULL;
    if (!ok)
        conf_note("message \"%s\" lacks \"%s\"", m, part);
    return ok;
}

/* A handle's index bits above the table's capacity (kMaxSlots, 2^24 slots,
 * or fewer) name no slot: a live handle with such a bit set reads its own
 * slot under the table's mask, and fails the key compare. */
static void t_beyond_table(void)
{
    evx_event_t e = NULL, dead = NULL;
    evx_stream_t s = NULL;
    uint64_t v, forged[3];
    size_t i;

    REQUIRE_OK(evx_device_create_event(0, 0, &e));
    REQUIRE((s = make_stream(0)) != NULL);
    v = (uint64_t)(uintptr_t)e;
    forged[0] = v | (1ULL << (4 + 24));        /* index + 2^24: aliases e's slot */
    forged[1] = v | (0xFFFFFFFULL << 4);       /* every index bit */
    forged[2] = v | (1ULL << (4 + 27));        /* the top index bit */
    for (i = 0; i < 3; i++) {
        conf_note("forged value 0x%llx", (unsigned long long)forged[i]);
        EXPECT_FAIL(evx_event_query(FORGE(evx_event_t, forged[i])), EVX_ERROR_INVALID_HANDLE);
        EXPECT(message_has("was never made by evx (forged or corrupted: its slot"));
        EXPECT(message_has("beyond the handle table's"));
        EXPECT_FAIL(evx_event_record(FORGE(evx_event_t, forged[i]), s),
                    EVX_ERROR_INVALID_HANDLE);
        EXPECT_FAIL(evx_stream_wait_event(s, FORGE(evx_event_t, forged[i]), 0),
                    EVX_ERROR_INVALID_HANDLE);
        EXPECT_FAIL(evx_event_destroy(FORGE(evx_event_t, forged[i])), EVX_ERROR_INVALID_HANDLE);
        EXPECT(message_has("was never made by evx"));
    }
    /* The messages of the other bad handles stay what they were. */
    EXPECT_FAIL(evx_event_query(FORGE(evx_event_t, (v & 0xFFFFFFFFULL) | (2ULL << 32))),
                EVX_ERROR_INVALID_HANDLE);
    EXPECT(message_has("was never made by evx (forged or corrupted)"));
    REQUIRE_OK(evx_device_create_event(0, 0, &dead));
    EXPECT_OK(evx_event_destroy(dead));
    EXPECT_FAIL(evx_event_query(dead), EVX_ERROR_INVALID_HANDLE);
    EXPECT(message_has("is stale: it was destroyed"));
    EXPECT_FAIL(evx_event_query(FORGE(evx_event_t, v + (2ULL << 32))), EVX_ERROR_INVALID_HANDLE);
    EXPECT(message_has("is not live"));
    /* The refused calls did nothing to the live ones. */
    EXPECT_OK(evx_event_record(e, s));
    EXPECT_OK(evx_event_synchronize(e));
out:
    if (s != NULL)
        EXPECT_OK(evx_stream_destroy(s));
    if (e != NULL)
        EXPECT_OK(evx_event_destroy(e));
}

/* The values a destroyed handle's slot could hold for it: its generation
 * made even with the kind bits 0, at its own index (the key a destroy once
 * left) and at the next one (the key it leaves now). A caller that
 * forges either (a bit flip of NULL gives such values) gets a status: the
 * lookup reads the kind from the slot, so a dead key at the slot's own
 * index would match and reach the freed object. */
static uint64_t dead_value(const void *h, int next)
{
    uint64_t v = (uint64_t)(uintptr_t)h;
    return (v + (1ULL << 32) + (next ? 1ULL << 4 : 0)) & ~0xFULL;
}

static int refused_as_forged(evx_status_t st, uint64_t value)
{
    if (st != EVX_ERROR_INVALID_HANDLE) {
        conf_note("forged 0x%llx: status %d, not INVALID_HANDLE", (unsigned long long)value,
                  (int)st);
        return 0;
    }
    return message_has("not an evx handle");
}

static void t_dead_key_refused(void)
{
    evx_event_t e = NULL, pe = NULL;
    evx_stream_t s = NULL, own = NULL, borrowed = NULL;
    evx_event_pool_t p = NULL;
    evx_timer_t t = NULL;
    evx_timeline_t tl = NULL;
    evx_fence_t f = NULL;
    evx_event_pool_options_t o;
    CUstream native = NULL;
    int prio = 0, next;
    uint32_t count = 0;
    uint64_t value = 0;
    float ms = 0;

    memset(&o, 0, sizeof o);
    o.struct_size = (uint32_t)sizeof o;
    o.capacity = 2;
    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE_OK(evx_device_create_event(0, 0, &e));
    REQUIRE_OK(evx_device_create_stream(0, 0, 0, &own));
    REQUIRE_OK(evx_stream_get_native(s, (void **)&native));
    REQUIRE_OK(evx_stream_wrap_external(0, native, &borrowed));
    REQUIRE_OK(evx_device_create_event_pool(0, &o, &p));
    REQUIRE_OK(evx_event_pool_acquire(p, &pe));
    REQUIRE_OK(evx_device_create_timer(0, &t));
    REQUIRE_OK(evx_device_create_timeline(0, 2, &tl));
    REQUIRE_OK(evx_device_create_fence(0, 0, 0, &f));
    EXPECT_OK(evx_event_destroy(e));
    EXPECT_OK(evx_stream_destroy(own));
    EXPECT_OK(evx_stream_destroy(borrowed));
    EXPECT_OK(evx_event_pool_release(p, pe));
    EXPECT_OK(evx_timer_destroy(t));
    EXPECT_OK(evx_timeline_destroy(tl));
    EXPECT_OK(evx_fence_destroy(f));
    for (next = 0; next <= 1; next++) {
        uint64_t v;
        v = dead_value(e, next);
        EXPECT(refused_as_forged(evx_event_query(FORGE(evx_event_t, v)), v));
        EXPECT(refused_as_forged(evx_event_record(FORGE(evx_event_t, v), s), v));
        EXPECT(refused_as_forged(evx_event_destroy(FORGE(evx_event_t, v)), v));
        v = dead_value(pe, next);
        EXPECT(refused_as_forged(evx_event_query(FORGE(evx_event_t, v)), v));
        EXPECT(refused_as_forged(evx_event_pool_release(p, FORGE(evx_event_t, v)), v));
        v = dead_value(own, next);
        EXPECT(refused_as_forged(evx_stream_get_priority(FORGE(evx_stream_t, v), &prio), v));
        EXPECT(refused_as_forged(evx_stream_destroy(FORGE(evx_stream_t, v)), v));
        v = dead_value(borrowed, next);
        EXPECT(refused_as_forged(evx_stream_get_priority(FORGE(evx_stream_t, v), &prio), v));
        EXPECT(refused_as_forged(evx_stream_synchronize(FORGE(evx_stream_t, v)), v));
        v = dead_value(t, next);
        EXPECT(refused_as_forged(evx_timer_elapsed(FORGE(evx_timer_t, v), &ms), v));
        v = dead_value(tl, next);
        EXPECT(refused_as_forged(evx_timeline_count(FORGE(evx_timeline_t, v), &count), v));
        v = dead_value(f, next);
        EXPECT(refused_as_forged(evx_fence_get_value(FORGE(evx_fence_t, v), &value), v));
        EXPECT(refused_as_forged(evx_fence_destroy(FORGE(evx_fence_t, v)), v));
    }
    /* The stale handles themselves still say so. */
    EXPECT_FAIL(evx_stream_get_priority(own, &prio), EVX_ERROR_INVALID_HANDLE);
    EXPECT(message_has("is stale: it was destroyed"));
    EXPECT_FAIL(evx_fence_get_value(f, &value), EVX_ERROR_INVALID_HANDLE);
    EXPECT(message_has("is stale: it was destroyed"));
out:
    if (p != NULL)
        EXPECT_OK(evx_event_pool_destroy(p));
    if (s != NULL)
        EXPECT_OK(evx_stream_destroy(s));
}

/* A hot call whose driver call fails names its handles from the slots it
 * holds (held_handle(), src/handle.hpp), not from registers kept across the
 * driver call. When another thread destroyed them meanwhile, the slots hold
 * dead keys, which the message must turn back into the handles the caller
 * passed. On the emulation the racing call is held in its driver entry (a
 * stall) while both handles are destroyed, then fails (a fault on the same
 * call). */
enum { HELD_RECORD, HELD_SIGNAL, HELD_WAIT };

typedef struct held_race {
    int op;
    evx_event_t e;
    evx_fence_t f;
    evx_stream_t s;
    evx_status_t warm, st;
    int ready, go;
    char msg[512];
} held_race;

static void *held_racer(void *arg)
{
    held_race *h = (held_race *)arg;
    /* First the same call once, so that the racing one takes the hot path
     * (for a fence: the stream one of its fast ones, this thread its
     * claimer), whose failure reads the handles from the held slots. */
    if (h->op == HELD_RECORD)
        h->warm = evx_event_record(h->e, h->s);
    else if ((h->warm = evx_fence_signal(h->f, h->s, 6)) == EVX_SUCCESS)
        h->warm = evx_stream_wait_fence(h->s, h->f, 6);
    if (h->warm == EVX_SUCCESS)
        h->warm = evx_stream_synchronize(h->s);
    __atomic_store_n(&h->ready, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&h->go, __ATOMIC_SEQ_CST))
        sleep_ms(1);
    if (h->warm != EVX_SUCCESS)
        return NULL;
    switch (h->op) {
    case HELD_RECORD: h->st = evx_event_record(h->e, h->s); break;
    case HELD_SIGNAL: h->st = evx_fence_signal(h->f, h->s, 9); break;
    default: h->st = evx_stream_wait_fence(h->s, h->f, 10); break; /* not reached yet */
    }
    snprintf(h->msg, sizeof h->msg, "%s", evx_last_error_message());
    return NULL;
}

static void held_one(const host_debug *dbg, int op)
{
    static const char *const entry[] = {"cuEventRecord", "cuStreamWriteValue64",
                                        "cuStreamWaitValue64"};
    held_race h;
    pthread_t t;
    char want[64];
    double until;
    int started = 0;
    uint64_t first;

    memset(&h, 0, sizeof h);
    h.op = op;
    REQUIRE_OK(evx_device_create_stream(0, 0, 0, &h.s));
    if (op == HELD_RECORD)
        REQUIRE_OK(evx_device_create_event(0, 0, &h.e));
    else
        REQUIRE_OK(evx_device_create_fence(0, 5, 0, &h.f));
    first = op == HELD_RECORD ? (uint64_t)(uintptr_t)h.e : (uint64_t)(uintptr_t)h.f;
    REQUIRE(pthread_create(&t, NULL, held_racer, &h) == 0);
    started = 1;
    until = now_ms() + 10000;
    while (!__atomic_load_n(&h.ready, __ATOMIC_SEQ_CST) && now_ms() < until)
        sleep_ms(1);
    if (!EXPECTF(h.ready && h.warm == EVX_SUCCESS, "the racing thread's first call: status %d",
                 (int)h.warm))
        goto out;
    REQUIRE(dbg->set_fault(entry[op], 1, CUDA_ERROR_OUT_OF_MEMORY) == 0);
    REQUIRE(dbg->set_stall(entry[op], 1) == 0);
    __atomic_store_n(&h.go, 1, __ATOMIC_SEQ_CST);
    while (dbg->stalled() < 1 && now_ms() < until)
        sleep_ms(1);
    if (!EXPECTF(dbg->stalled() == 1, "the call never reached %s", entry[op]))
        goto out;
    if (op == HELD_RECORD)
        EXPECT_OK(evx_event_destroy(h.e));
    else
        EXPECT_OK(evx_fence_destroy(h.f));
    EXPECT_OK(evx_stream_destroy(h.s));
    dbg->release_stalls();
    pthread_join(t, NULL);
    started = 0;
    conf_note("%s: %s", entry[op], h.msg);
    /* (The status and message are the racing thread's.) */
    EXPECTF(h.st == EVX_ERROR_OUT_OF_MEMORY, "status %d, not the injected fault's", (int)h.st);
    snprintf(want, sizeof want, "%s 0x%" PRIx64, op == HELD_RECORD ? "event" : "fence", first);
    EXPECTF(strstr(h.msg, want) != NULL, "the message names \"%s\"", want);
    snprintf(want, sizeof want, "stream 0x%" PRIx64, (uint64_t)(uintptr_t)h.s);
    EXPECTF(strstr(h.msg, want) != NULL, "the message names \"%s\"", want);
    /* Destroyed, and still so after the failed call. */
    EXPECT_FAIL(evx_stream_query(h.s), EVX_ERROR_INVALID_HANDLE);
    EXPECT(message_has("is stale: it was destroyed"));
    return;
out:
    dbg->set_fault(NULL, 0, 0);
    dbg->release_stalls();
    if (started) {
        __atomic_store_n(&h.go, 1, __ATOMIC_SEQ_CST);
        pthread_join(t, NULL);
    }
}

static void t_failure_names_destroyed(void)
{
    const host_debug *dbg = host_debug_get();
    if (dbg == NULL) {
        conf_skip("the driver is not the host emulation: only it can hold a call and make it "
                  "fail");
        return;
    }
    held_one(dbg, HELD_RECORD);
    held_one(dbg, HELD_SIGNAL);
    held_one(dbg, HELD_WAIT);
}

const conf_case conf_handle_cases[] = {
    {"handles.beyond_table", t_beyond_table},
    {"handles.dead_after_slot_and_event_reuse", t_dead_after_reuse},
    {"handles.not_reissued", t_not_reissued},
    {"handles.live_values_distinct", t_live_distinct},
    {"handles.double_destroy", t_double_destroy},
    {"handles.dead_key_refused", t_dead_key_refused},
    {"handles.failure_names_destroyed", t_failure_names_destroyed},
    {NULL, NULL},
};
