/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/* Fence calls never wait for the device (docs/fences.md, "Destroying a
 * fence"). The driver's cuMemFreeHost and cuMemHostUnregister wait until
 * the work queued on the context has completed (an H200 held both behind a
 * host function for as long as it ran), so a fence call that freed pinned
 * memory waited for every queued piece of work of the device: a destroy
 * behind a gated stream once hung 30 s. Here a stream of device 0 is held
 * by a gate that another thread opens after a few seconds, and each call
 * must return while it is still closed: create and destroy of a fence never
 * used, destroy of one whose work has run, evx_fence_reclaim (which frees
 * its memory), and a further create. Plain and interprocess fences; the
 * emulation's pinned ranges count the words of the pool and its pages. */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "hostdebug.h"
#include "util.h"

/* How long the gate stays closed when nothing opens it: longer than any of
 * the calls takes, short enough that a call that waits fails in seconds. */
#define HOLD_MS 3000

/* A gate on `s` that another thread opens after HOLD_MS; it has started
 * running when this returns (its host function holds the stream). */
static conf_gate *hold(evx_stream_t s)
{
    conf_gate *g = gate_new();
    double until = now_ms() + 5000;
    if (!EXPECT_OK(gate_launch(s, g))) {
        gate_open(g);
        return g;
    }
    while (gate_entered(g) == 0 && now_ms() < until)
        sleep_ms(1);
    EXPECT(gate_entered(g) == 1);
    gate_open_later(g, HOLD_MS);
    return g;
}

static void release(conf_gate *g, evx_stream_t s)
{
    gate_open(g);
    EXPECT_OK(evx_stream_synchronize(s));
    gate_join_opener(g);
}

/* The call `what` returned with the gate still closed. */
#define STILL_CLOSED(g, what) \
    EXPECTF(gate_passed(g) == 0, \
            "%s returned only once the gate had opened: it waited for the device's work", what)

static long long pinned_now(void)
{
    const host_debug *hd = host_debug_get();
    evx_host_live l;
    if (hd == NULL)
        return -1;
    hd->get_live(&l);
    return l.pinned;
}

/* Calls evx_fence_reclaim, each call checked to return while the gate is
 * closed, until nothing is pending or `ms` passed; the last pending count. */
static uint64_t reclaim_while_held(conf_gate *g, int ms)
{
    uint64_t pending = 0, kept = 0;
    double until = now_ms() + ms;
    for (;;) {
        EXPECT_OK(evx_fence_reclaim(&pending, &kept));
        if (!STILL_CLOSED(g, "evx_fence_reclaim") || pending == 0 || now_ms() > until)
            return pending;
        sleep_ms(1);
    }
}

static void settle(void)
{
    uint64_t pending = 1, kept = 0;
    double until = now_ms() + 20000;
    while (EXPECT_OK(evx_fence_reclaim(&pending, &kept)) && pending != 0 && now_ms() < until)
        sleep_ms(1);
    EXPECTF(pending == 0, "%" PRIu64 " destroyed fences still pending", pending);
}

/* Each step behind a gate of its own, so that each fails by itself. */
static void never_waits(unsigned flags)
{
    const int ipc = (flags & EVX_FENCE_INTERPROCESS) != 0;
    evx_stream_t a = NULL, b = NULL;
    evx_fence_t f = NULL, used = NULL;
    uint64_t kept0 = 0, kept = 0;
    conf_gate *g;
    REQUIRE((a = make_stream(0)) != NULL);
    REQUIRE((b = make_stream(0)) != NULL);
    settle();
    /* 1. A fence never used: create, destroy. */
    g = hold(a);
    EXPECT_OK(evx_device_create_fence(0, 0, flags, &f));
    STILL_CLOSED(g, "evx_device_create_fence");
    if (f != NULL)
        EXPECT_OK(evx_fence_destroy(f));
    f = NULL;
    STILL_CLOSED(g, "evx_fence_destroy of a fence never used");
    release(g, a);
    /* 2. A used fence whose work has run (on stream b), destroyed behind
     *    the gate on a; then reclaimed. */
    REQUIRE_OK(evx_device_create_fence(0, 0, flags, &used));
    REQUIRE_OK(evx_fence_signal(used, b, 1));
    REQUIRE_OK(evx_stream_wait_fence(b, used, 1));
    REQUIRE_OK(evx_stream_synchronize(b));
    EXPECT_OK(evx_fence_reclaim(NULL, &kept0));
    g = hold(a);
    EXPECT_OK(evx_fence_destroy(used));
    used = NULL;
    STILL_CLOSED(g, "evx_fence_destroy of a used fence whose work has run");
    /* Once the mark on b completed nothing stays pending: a plain fence's
     * word goes back to evx's pool, an interprocess fence's page is kept
     * (counted kept) for a trim, whose cuMemHostUnregister may wait. */
    {
        const uint64_t pending = reclaim_while_held(g, 2000);
        EXPECTF(pending == 0, "%" PRIu64 " pending behind the gate", pending);
    }
    EXPECT_OK(evx_fence_reclaim(NULL, &kept));
    EXPECTF(kept == kept0 + (uint64_t)ipc, "kept %" PRIu64 ", before the destroy %" PRIu64, kept,
            kept0);
    /* 3. A further create (which reclaims too) and its destroy. */
    EXPECT_OK(evx_device_create_fence(0, 0, flags, &f));
    STILL_CLOSED(g, "evx_device_create_fence after a reclaim");
    if (f != NULL)
        EXPECT_OK(evx_fence_destroy(f));
    f = NULL;
    STILL_CLOSED(g, "evx_fence_destroy after a reclaim");
    release(g, a);
    settle();
out:
    if (f != NULL)
        EXPECT_OK(evx_fence_destroy(f));
    if (used != NULL)
        EXPECT_OK(evx_fence_destroy(used));
    drop_stream(&a);
    drop_stream(&b);
}

static void t_never_waits(void) { never_waits(EVX_FENCE_DEFAULT); }

static void t_ipc_never_waits(void) { never_waits(EVX_FENCE_INTERPROCESS); }

/* Fence words come from a pool of pinned pages of each device, words handed
 * out one by one: the emulation's pinned ranges count the pages. After a
 * trim (where a page with no word in use is freed), a fence takes a page;
 * more fences share it, up to the words a page holds; a destroyed fence's
 * word is reused; a page with a word in use, or still pending for work
 * queued on it, is not freed by a trim; one whose words are all free is. */
#define PAGE_WORDS 32 /* 4096-byte pages, 128-byte words */

static void t_word_pool(void)
{
    evx_fence_t f[PAGE_WORDS + 1] = {0};
    evx_stream_t a = NULL;
    conf_gate *g = NULL;
    long long pinned0;
    int i;
    if (host_debug_get() == NULL) {
        conf_skip("the driver is not the host emulation: its pinned pages cannot be counted");
        return;
    }
    REQUIRE((a = make_stream(0)) != NULL);
    settle();
    EXPECT_OK(evx_device_trim(0));
    pinned0 = pinned_now();
    for (i = 0; i < PAGE_WORDS; i++)
        REQUIRE_OK(evx_device_create_fence(0, (uint64_t)i, 0, &f[i]));
    EXPECTF(pinned_now() == pinned0 + 1, "%d fences: %lld pages (one expected)", PAGE_WORDS,
            pinned_now() - pinned0);
    REQUIRE_OK(evx_device_create_fence(0, 0, 0, &f[PAGE_WORDS]));
    EXPECTF(pinned_now() == pinned0 + 2, "%d fences: %lld pages (two expected)", PAGE_WORDS + 1,
            pinned_now() - pinned0);
    /* A reused word starts at its fence's initial value, not at the old one. */
    EXPECT_OK(evx_fence_destroy(f[3]));
    REQUIRE_OK(evx_device_create_fence(0, 77, 0, &f[3]));
    EXPECT(pinned_now() == pinned0 + 2);
    {
        uint64_t v = 0;
        EXPECT_OK(evx_fence_get_value(f[3], &v));
        EXPECTF(v == 77, "a reused word reads %" PRIu64 ", not its initial value 77", v);
    }
    /* The second page's only fence destroyed: the trim frees that page. */
    EXPECT_OK(evx_fence_destroy(f[PAGE_WORDS]));
    f[PAGE_WORDS] = NULL;
    EXPECT_OK(evx_device_trim(0));
    EXPECT(pinned_now() == pinned0 + 1);
    /* A word whose queued signal has not run keeps its page from a trim. */
    g = gate_new();
    REQUIRE_OK(gate_launch(a, g));
    gate_open_later(g, HOLD_MS); /* a destroy that waits fails, not hangs */
    REQUIRE_OK(evx_fence_signal(f[0], a, 1));
    for (i = 0; i < PAGE_WORDS; i++) {
        EXPECT_OK(evx_fence_destroy(f[i]));
        f[i] = NULL;
    }
    STILL_CLOSED(g, "evx_fence_destroy of 32 fences");
    EXPECT_OK(evx_device_trim(0));
    EXPECTF(pinned_now() == pinned0 + 1, "a page freed while a signal queued on its word waits");
    STILL_CLOSED(g, "evx_device_trim with no page to free");
    gate_open(g);
    EXPECT_OK(evx_stream_synchronize(a));
    settle();
    EXPECT_OK(evx_device_trim(0));
    EXPECTF(pinned_now() == pinned0, "%lld pages left after the trim", pinned_now() - pinned0);
out:
    if (g != NULL) {
        gate_open(g);
        gate_join_opener(g);
    }
    for (i = 0; i <= PAGE_WORDS; i++)
        if (f[i] != NULL)
            EXPECT_OK(evx_fence_destroy(f[i]));
    drop_stream(&a);
}

const conf_case conf_fence_nowait_cases[] = {
    {"fence.calls_never_wait", t_never_waits},
    {"fence.ipc_calls_never_wait", t_ipc_never_waits},
    {"fence.word_pool", t_word_pool},
    {NULL, NULL},
};
