/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/* Events: created from the device, recorded later; the driver's semantics
 * that evx mirrors (RESULTS.md). */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "util.h"

static void t_create_flags(void)
{
    static const unsigned ok_flags[] = {
        EVX_EVENT_DEFAULT,
        EVX_EVENT_BLOCKING_SYNC,
        EVX_EVENT_DISABLE_TIMING,
        EVX_EVENT_BLOCKING_SYNC | EVX_EVENT_DISABLE_TIMING,
        EVX_EVENT_INTERPROCESS | EVX_EVENT_DISABLE_TIMING,
        EVX_EVENT_INTERPROCESS | EVX_EVENT_DISABLE_TIMING |
            EVX_EVENT_BLOCKING_SYNC,
    };
    enum { N = sizeof ok_flags / sizeof ok_flags[0] };
    evx_event_t ev[N];
    void *native[N];
    evx_stream_t s = NULL;
    size_t i, j;

    memset(ev, 0, sizeof ev);
    memset(native, 0, sizeof native);
    REQUIRE((s = make_stream(0)) != NULL);
    for (i = 0; i < N; i++) {
        unsigned f = 0xFFFF;
        int d = -7;
        ev[i] = JUNK(evx_event_t);
        if (!EXPECT_OK(evx_device_create_event(0, ok_flags[i], &ev[i]))) {
            ev[i] = NULL;
            continue;
        }
        EXPECT(ev[i] != NULL);
        EXPECT_OK(evx_event_get_flags(ev[i], &f));
        EXPECTF(f == ok_flags[i], "created with 0x%x, reads 0x%x",
                ok_flags[i], f);
        EXPECT_OK(evx_event_get_device(ev[i], &d));
        EXPECT(d == 0);
        EXPECT_OK(evx_event_get_native(ev[i], &native[i]));
        EXPECT(native[i] != NULL);
        /* each can be recorded and waited for */
        EXPECT_OK(evx_event_record(ev[i], s));
        EXPECT_OK(evx_event_synchronize(ev[i]));
        EXPECT_OK(evx_event_query(ev[i]));
    }
    for (i = 0; i < N; i++)
        for (j = i + 1; j < N; j++)
            if (ev[i] != NULL && ev[j] != NULL) {
                EXPECT(ev[i] != ev[j]);
                EXPECTF(native[i] != native[j],
                        "two live events share the CUevent %p", native[i]);
            }
out:
    for (i = 0; i < N; i++)
        drop_event(&ev[i]);
    drop_stream(&s);
}

static void t_never_recorded(void)
{
    evx_event_t never = NULL, a = NULL, nt1 = NULL, nt2 = NULL;
    evx_stream_t s = NULL;
    char msg_never[512], msg_timing[512];
    float ms = 123.0f;

    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((never = make_event(0, 0)) != NULL);
    REQUIRE((a = make_event(0, 0)) != NULL);
    REQUIRE((nt1 = make_event(0, EVX_EVENT_DISABLE_TIMING)) != NULL);
    REQUIRE((nt2 = make_event(0, EVX_EVENT_DISABLE_TIMING)) != NULL);

    /* A never-recorded event counts as complete. */
    EXPECT_OK(evx_event_query(never));
    EXPECT_OK(evx_event_synchronize(never));

    EXPECT_OK(evx_event_record(a, s));
    EXPECT_OK(evx_event_record(nt1, s));
    EXPECT_OK(evx_event_record(nt2, s));
    EXPECT_OK(evx_stream_synchronize(s));

    /* elapsed with a never-recorded event: refused, either side */
    EXPECT_FAIL(evx_event_elapsed_time(&ms, never, a), EVX_ERROR_INVALID_HANDLE);
    snprintf(msg_never, sizeof msg_never, "%s", evx_last_error_message());
    EXPECT_FAIL(evx_event_elapsed_time(&ms, a, never), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_elapsed_time(&ms, never, never),
                EVX_ERROR_INVALID_HANDLE);
    /* elapsed with timing disabled: refused, either side */
    EXPECT_FAIL(evx_event_elapsed_time(&ms, nt1, nt2), EVX_ERROR_INVALID_HANDLE);
    snprintf(msg_timing, sizeof msg_timing, "%s", evx_last_error_message());
    EXPECT_FAIL(evx_event_elapsed_time(&ms, a, nt1), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_elapsed_time(&ms, nt1, a), EVX_ERROR_INVALID_HANDLE);

    conf_note("never recorded: %s", msg_never);
    conf_note("timing disabled: %s", msg_timing);
    EXPECTF(str_has(msg_never, "never") || str_has(msg_never, "not recorded")
                || str_has(msg_never, "not been recorded"),
            "the never-recorded message does not say so: \"%s\"", msg_never);
    EXPECTF(str_has(msg_timing, "timing"),
            "the timing-disabled message does not say so: \"%s\"", msg_timing);
    EXPECTF(strcmp(msg_never, msg_timing) != 0,
            "the two refusals read the same: \"%s\"", msg_never);
    EXPECT(ms == 123.0f); /* untouched on failure */

    /* Once recorded, the same event times fine. */
    EXPECT_OK(evx_event_record(never, s));
    EXPECT_OK(evx_event_synchronize(never));
    EXPECT_OK(evx_event_elapsed_time(&ms, a, never));
    EXPECTF(ms >= 0.0f, "%f ms", (double)ms);
out:
    drop_event(&never);
    drop_event(&a);
    drop_event(&nt1);
    drop_event(&nt2);
    drop_stream(&s);
}

static void t_pending_not_ready(void)
{
    evx_event_t done = NULL, pend = NULL, untimed = NULL;
    evx_stream_t s = NULL;
    conf_gate *g = gate_new();
    float ms = -1.0f;

    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((done = make_event(0, 0)) != NULL);
    REQUIRE((pend = make_event(0, 0)) != NULL);
    REQUIRE((untimed = make_event(0, EVX_EVENT_DISABLE_TIMING)) != NULL);
    REQUIRE_OK(evx_event_record(done, s));
    REQUIRE_OK(evx_event_synchronize(done));
    REQUIRE_OK(gate_launch(s, g));
    REQUIRE_OK(evx_event_record(untimed, s));
    REQUIRE_OK(evx_event_record(pend, s));

    /* Timing disabled is refused while the work is pending too (evx leaves
     * that test to the driver, and words its refusal, NOT_READY or not). */
    EXPECT_FAIL(evx_event_elapsed_time(&ms, untimed, untimed), EVX_ERROR_INVALID_HANDLE);
    EXPECTF(str_has(evx_last_error_message(), "DISABLE_TIMING"), "message: %s",
            evx_last_error_message());
    EXPECT(ms == -1.0f); /* untouched on failure */

    EXPECT_STATUS(evx_event_query(pend), EVX_ERROR_NOT_READY);
    EXPECT_STATUS(evx_stream_query(s), EVX_ERROR_NOT_READY);
    EXPECT_STATUS(evx_event_elapsed_time(&ms, done, pend), EVX_ERROR_NOT_READY);
    EXPECT_STATUS(evx_event_elapsed_time(&ms, pend, done), EVX_ERROR_NOT_READY);
    EXPECT_STATUS(evx_event_elapsed_time(&ms, pend, pend), EVX_ERROR_NOT_READY);
    EXPECT_OK(evx_event_query(done)); /* the earlier mark is still done */
    EXPECT(gate_passed(g) == 0);

    gate_open(g);
    EXPECT_OK(evx_event_synchronize(pend));
    EXPECT_OK(evx_event_query(pend));
    EXPECT_OK(evx_stream_query(s));
    EXPECT_OK(evx_event_elapsed_time(&ms, done, pend));
    EXPECT(gate_passed(g) == 1);
out:
    gate_open(g);
    if (s != NULL)
        EXPECT_OK(evx_stream_synchronize(s));
    drop_event(&done);
    drop_event(&pend);
    drop_event(&untimed);
    drop_stream(&s);
}

static void t_elapsed_values(void)
{
    evx_event_t a = NULL, b = NULL;
    evx_stream_t s = NULL;
    float ab = 0, ba = 0, aa = -1, bb = -1;

    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((a = make_event(0, 0)) != NULL);
    REQUIRE((b = make_event(0, EVX_EVENT_BLOCKING_SYNC)) != NULL);
    REQUIRE_OK(evx_event_record(a, s));
    REQUIRE_OK(evx_stream_launch_host_func(s, host_sleep_ms, (void *)(intptr_t)2));
    REQUIRE_OK(evx_stream_launch_host_func(s, host_sleep_ms, (void *)(intptr_t)2));
    REQUIRE_OK(evx_event_record(b, s));
    REQUIRE_OK(evx_event_synchronize(b));

    EXPECT_OK(evx_event_elapsed_time(&ab, a, b));
    EXPECTF(ab >= 3.0f && ab < 5000.0f,
            "two 2 ms host functions between the marks: %f ms", (double)ab);
    /* end recorded before start: success and negative */
    EXPECT_OK(evx_event_elapsed_time(&ba, b, a));
    EXPECTF(ba < 0.0f, "end before start gave %f ms", (double)ba);
    EXPECTF(fabs((double)ab + (double)ba) < 0.01,
            "a->b %f ms and b->a %f ms are not opposite", (double)ab,
            (double)ba);
    /* the same event twice: 0 */
    EXPECT_OK(evx_event_elapsed_time(&aa, a, a));
    EXPECT_OK(evx_event_elapsed_time(&bb, b, b));
    EXPECT(aa == 0.0f);
    EXPECT(bb == 0.0f);
    conf_note("a->b %.3f ms, b->a %.3f ms", (double)ab, (double)ba);
out:
    drop_event(&a);
    drop_event(&b);
    drop_stream(&s);
}

static void t_record_flags(void)
{
    evx_event_t e = NULL;
    evx_stream_t s = NULL;

    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((e = make_event(0, 0)) != NULL);
    EXPECT_OK(evx_event_record_with_flags(e, s, EVX_EVENT_RECORD_DEFAULT));
    EXPECT_OK(evx_event_synchronize(e));
    EXPECT_FAIL(evx_event_record_with_flags(e, s, EVX_EVENT_RECORD_EXTERNAL),
                EVX_ERROR_ILLEGAL_STATE);
    EXPECT_FAIL(evx_event_record_with_flags(e, s, 0x40),
                EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_event_record_with_flags(e, s, 0x2),
                EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_event_record_with_flags(e, s, 0x80000000u),
                EVX_ERROR_INVALID_VALUE);
    /* the event is unharmed */
    EXPECT_OK(evx_event_record(e, s));
    EXPECT_OK(evx_event_synchronize(e));
out:
    drop_event(&e);
    drop_stream(&s);
}

static void t_create_refused(void)
{
    static const unsigned bad[] = {
        0x80, 0x8, 0x10, 0x100, 0x80000000u, 0xFFFFFFFFu,
        EVX_EVENT_INTERPROCESS,
        EVX_EVENT_INTERPROCESS | EVX_EVENT_BLOCKING_SYNC,
        EVX_EVENT_DISABLE_TIMING | 0x8,
    };
    size_t i;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        evx_event_t e = JUNK(evx_event_t);
        if (!EXPECT_FAIL(evx_device_create_event(0, bad[i], &e),
                         EVX_ERROR_INVALID_VALUE))
            conf_note("flags 0x%x", bad[i]);
        EXPECTF(e == NULL, "flags 0x%x: *event not set to NULL", bad[i]);
        if (e != NULL && e != JUNK(evx_event_t))
            drop_event(&e);
    }
}

static void t_record_replaces(void)
{
    evx_event_t e = NULL;
    evx_stream_t busy = NULL, idle = NULL;
    conf_gate *g = gate_new();

    REQUIRE((busy = make_stream(0)) != NULL);
    REQUIRE((idle = make_stream(0)) != NULL);
    REQUIRE((e = make_event(0, 0)) != NULL);
    REQUIRE_OK(gate_launch(busy, g));
    REQUIRE_OK(evx_event_record(e, busy));
    EXPECT_STATUS(evx_event_query(e), EVX_ERROR_NOT_READY);
    /* The new record replaces the pending one. */
    REQUIRE_OK(evx_event_record(e, idle));
    EXPECT_STATUS(poll_event(e, 10000), EVX_SUCCESS);
    EXPECT_OK(evx_event_synchronize(e));
    EXPECT(gate_passed(g) == 0);
    EXPECT_STATUS(evx_stream_query(busy), EVX_ERROR_NOT_READY);
out:
    gate_open(g);
    if (busy != NULL)
        EXPECT_OK(evx_stream_synchronize(busy));
    drop_event(&e);
    drop_stream(&busy);
    drop_stream(&idle);
}

static void t_destroy_pending(void)
{
    evx_event_t e = NULL;
    evx_stream_t s = NULL;
    conf_gate *g = gate_new();
    int after = 0;

    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((e = make_event(0, 0)) != NULL);
    REQUIRE_OK(gate_launch(s, g));
    REQUIRE_OK(evx_event_record(e, s));
    REQUIRE_OK(evx_stream_launch_host_func(s, host_set_flag, &after));
    EXPECT_STATUS(evx_event_query(e), EVX_ERROR_NOT_READY);
    /* destroy does not wait for the pending work */
    EXPECT_OK(evx_event_destroy(e));
    EXPECT(gate_passed(g) == 0);
    EXPECT_FAIL(evx_event_query(e), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_destroy(e), EVX_ERROR_INVALID_HANDLE);
    e = NULL;
    gate_open(g);
    EXPECT_OK(evx_stream_synchronize(s));
    EXPECT(flag_get(&after) == 1); /* the work went on */
out:
    gate_open(g);
    if (s != NULL)
        EXPECT_OK(evx_stream_synchronize(s));
    drop_event(&e);
    drop_stream(&s);
}

static void sync_waits(unsigned flags)
{
    evx_event_t e = NULL;
    evx_stream_t s = NULL;
    conf_gate *g = gate_new();
    int flag = 0;

    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((e = make_event(0, flags)) != NULL);
    REQUIRE_OK(gate_launch(s, g));
    REQUIRE_OK(evx_stream_launch_host_func(s, host_set_flag, &flag));
    REQUIRE_OK(evx_event_record(e, s));
    gate_open_later(g, 20);
    EXPECT_OK(evx_event_synchronize(e));
    EXPECTF(flag_get(&flag) == 1, "synchronize returned before the work "
                                  "the event marks had run");
    EXPECT_OK(evx_event_query(e));
    gate_join_opener(g);
out:
    gate_open(g);
    gate_join_opener(g);
    if (s != NULL)
        EXPECT_OK(evx_stream_synchronize(s));
    drop_event(&e);
    drop_stream(&s);
}

static void t_sync_waits_default(void) { sync_waits(EVX_EVENT_DEFAULT); }
static void t_sync_waits_blocking(void) { sync_waits(EVX_EVENT_BLOCKING_SYNC); }

static void t_default_streams(void)
{
    static void *const natives[] = {NULL, EVX_STREAM_LEGACY,
                                    EVX_STREAM_PER_THREAD};
    static const char *const names[] = {"NULL", "EVX_STREAM_LEGACY",
                                        "EVX_STREAM_PER_THREAD"};
    evx_event_t e = NULL, e2 = NULL;
    size_t i;

    REQUIRE((e = make_event(0, 0)) != NULL);
    REQUIRE((e2 = make_event(0, 0)) != NULL);
    for (i = 0; i < 3; i++) {
        evx_stream_t s = JUNK(evx_stream_t);
        void *native = JUNK(void *);
        int owned = -1, dev = -1;
        float ms = -1.0f;
        conf_note("default stream %s", names[i]);
        if (!EXPECT_OK(evx_stream_wrap_external(0, natives[i], &s)))
            continue;
        EXPECT_OK(evx_stream_get_native(s, &native));
        EXPECTF(native == natives[i], "%s read back as %p", names[i], native);
        EXPECT_OK(evx_stream_is_owned(s, &owned));
        EXPECT(owned == 0);
        EXPECT_OK(evx_stream_get_device(s, &dev));
        EXPECT(dev == 0);
        EXPECT_OK(evx_event_record(e, s));
        EXPECT_OK(evx_stream_launch_host_func(s, host_sleep_ms,
                                              (void *)(intptr_t)1));
        EXPECT_OK(evx_event_record(e2, s));
        EXPECT_OK(evx_event_synchronize(e2));
        EXPECT_OK(evx_event_query(e));
        EXPECT_OK(evx_event_elapsed_time(&ms, e, e2));
        EXPECTF(ms >= 0.5f, "%s: %f ms around a 1 ms host function",
                names[i], (double)ms);
        EXPECT_OK(evx_stream_wait_event(s, e, 0));
        EXPECT_OK(evx_stream_synchronize(s));
        EXPECT_OK(evx_stream_query(s));
        EXPECT_OK(evx_stream_destroy(s));
        EXPECT_FAIL(evx_stream_query(s), EVX_ERROR_INVALID_HANDLE);
    }
out:
    drop_event(&e);
    drop_event(&e2);
}

static void t_any_stream_of_device(void)
{
    evx_event_t e = NULL;
    evx_stream_t s1 = NULL, s2 = NULL, s3 = NULL;
    int i;

    REQUIRE((s1 = make_stream(0)) != NULL);
    REQUIRE((s2 = make_stream(0)) != NULL);
    REQUIRE((s3 = make_stream(0)) != NULL);
    REQUIRE((e = make_event(0, EVX_EVENT_DISABLE_TIMING)) != NULL);
    for (i = 0; i < 300; i++) {
        evx_stream_t on = (i % 3 == 0) ? s1 : (i % 3 == 1) ? s2 : s3;
        evx_stream_t waiter = (i % 3 == 0) ? s2 : (i % 3 == 1) ? s3 : s1;
        if (!EXPECT_OK(evx_event_record(e, on)) ||
            !EXPECT_OK(evx_stream_wait_event(waiter, e, 0)))
            break;
    }
    EXPECT_OK(evx_stream_synchronize(s1));
    EXPECT_OK(evx_stream_synchronize(s2));
    EXPECT_OK(evx_stream_synchronize(s3));
    EXPECT_OK(evx_event_synchronize(e));
out:
    drop_event(&e);
    drop_stream(&s1);
    drop_stream(&s2);
    drop_stream(&s3);
}

const conf_case conf_event_cases[] = {
    {"events.create_every_flag_set", t_create_flags},
    {"events.create_refused_flags", t_create_refused},
    {"events.never_recorded", t_never_recorded},
    {"events.pending_not_ready", t_pending_not_ready},
    {"events.elapsed_values", t_elapsed_values},
    {"events.record_flags", t_record_flags},
    {"events.record_replaces_last", t_record_replaces},
    {"events.destroy_pending", t_destroy_pending},
    {"events.synchronize_waits", t_sync_waits_default},
    {"events.synchronize_waits_blocking_sync", t_sync_waits_blocking},
    {"events.default_streams", t_default_streams},
    {"events.any_stream_of_device", t_any_stream_of_device},
    {NULL, NULL},
};
