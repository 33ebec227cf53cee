/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/* Timers and timelines. Work of known length is host functions that sleep:
 * the marks around them are at least that far apart. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "util.h"

#define SLEEP2 ((void *)(intptr_t)2)

static void t_timer_basic(void)
{
    evx_timer_t t = NULL;
    evx_stream_t s = NULL;
    float ms = -1, again = -2;

    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE_OK(evx_device_create_timer(0, &t));
    REQUIRE_OK(evx_timer_start(t, s));
    REQUIRE_OK(evx_stream_launch_host_func(s, host_sleep_ms, SLEEP2));
    REQUIRE_OK(evx_stream_launch_host_func(s, host_sleep_ms, SLEEP2));
    REQUIRE_OK(evx_timer_stop(t, s));
    EXPECT_OK(evx_timer_synchronize(t, &ms));
    EXPECTF(ms >= 3.0f && ms < 5000.0f, "two 2 ms sleeps timed as %f ms",
            (double)ms);
    EXPECT_OK(evx_timer_elapsed(t, &again));
    EXPECT(again == ms);
    /* a timer is reusable: start again, stop again */
    REQUIRE_OK(evx_timer_start(t, s));
    REQUIRE_OK(evx_timer_stop(t, s));
    EXPECT_OK(evx_timer_synchronize(t, &ms));
    EXPECTF(ms >= 0.0f && ms < 50.0f, "an empty span timed as %f ms",
            (double)ms);
out:
    drop_timer(&t);
    drop_stream(&s);
}

static void t_timer_not_ready(void)
{
    evx_timer_t t = NULL;
    evx_stream_t s = NULL;
    conf_gate *g = gate_new();
    float ms = -1, ms2 = -2;

    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE_OK(evx_device_create_timer(0, &t));
    REQUIRE_OK(evx_timer_start(t, s));
    REQUIRE_OK(gate_launch(s, g));
    REQUIRE_OK(evx_stream_launch_host_func(s, host_sleep_ms, SLEEP2));
    REQUIRE_OK(evx_timer_stop(t, s));
    EXPECT_STATUS(evx_timer_elapsed(t, &ms), EVX_ERROR_NOT_READY);
    EXPECT_STATUS(evx_timer_elapsed(t, &ms), EVX_ERROR_NOT_READY);
    gate_open_later(g, 20);
    EXPECT_OK(evx_timer_synchronize(t, &ms));
    EXPECT(gate_passed(g) == 1);
    EXPECTF(ms >= 1.5f, "%f ms", (double)ms);
    EXPECT_OK(evx_timer_elapsed(t, &ms2));
    EXPECT(ms2 == ms);
    gate_join_opener(g);
out:
    gate_open(g);
    gate_join_opener(g);
    if (s != NULL)
        EXPECT_OK(evx_stream_synchronize(s));
    drop_timer(&t);
    drop_stream(&s);
}

static void t_timer_two_streams(void)
{
    evx_timer_t t = NULL;
    evx_stream_t s1 = NULL, s2 = NULL;
    evx_event_t e = NULL;
    float ms = -1;

    REQUIRE((s1 = make_stream(0)) != NULL);
    REQUIRE((s2 = make_stream(0)) != NULL);
    REQUIRE((e = make_event(0, EVX_EVENT_DISABLE_TIMING)) != NULL);
    REQUIRE_OK(evx_device_create_timer(0, &t));
    REQUIRE_OK(evx_timer_start(t, s1));
    REQUIRE_OK(evx_stream_launch_host_func(s1, host_sleep_ms, SLEEP2));
    REQUIRE_OK(evx_event_record(e, s1));
    REQUIRE_OK(evx_stream_wait_event(s2, e, 0));
    REQUIRE_OK(evx_stream_launch_host_func(s2, host_sleep_ms, SLEEP2));
    REQUIRE_OK(evx_timer_stop(t, s2));
    EXPECT_OK(evx_timer_synchronize(t, &ms));
    EXPECTF(ms >= 3.0f, "start on one stream, stop on another after two "
            "2 ms sleeps: %f ms", (double)ms);
out:
    drop_timer(&t);
    drop_event(&e);
    drop_stream(&s1);
    drop_stream(&s2);
}

/* The stop mark completes first: the start waits behind a gate on one
 * stream, the stop is on an idle one. evx_timer_synchronize waits for the
 * stop, then (the driver answering NOT_READY for the pending start) for the
 * start; it never returns NOT_READY. The interval's sign is the driver's
 * business (the stop's timestamp is the earlier one) and is not checked. */
static void t_timer_start_completes_last(void)
{
    evx_timer_t t = NULL;
    evx_stream_t s1 = NULL, s2 = NULL;
    conf_gate *g = gate_new();
    float ms = -1;

    REQUIRE((s1 = make_stream(0)) != NULL);
    REQUIRE((s2 = make_stream(0)) != NULL);
    REQUIRE_OK(evx_device_create_timer(0, &t));
    REQUIRE_OK(gate_launch(s1, g));
    REQUIRE_OK(evx_timer_start(t, s1));
    REQUIRE_OK(evx_timer_stop(t, s2));
    REQUIRE_OK(evx_stream_synchronize(s2));
    EXPECT_STATUS(evx_timer_elapsed(t, &ms), EVX_ERROR_NOT_READY);
    gate_open_later(g, 20);
    EXPECT_OK(evx_timer_synchronize(t, &ms));
    EXPECT(gate_passed(g) == 1);
    EXPECTF(isfinite(ms), "%f ms", (double)ms);
    conf_note("stop before start: %.3f ms", (double)ms);
    gate_join_opener(g);
out:
    gate_open(g);
    gate_join_opener(g);
    if (s1 != NULL)
        EXPECT_OK(evx_stream_synchronize(s1));
    drop_timer(&t);
    drop_stream(&s1);
    drop_stream(&s2);
}

static void t_timer_restart(void)
{
    evx_timer_t t = NULL;
    evx_stream_t s = NULL;
    float ms = -1;

    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE_OK(evx_device_create_timer(0, &t));
    REQUIRE_OK(evx_timer_start(t, s));
    REQUIRE_OK(evx_timer_stop(t, s));
    EXPECT_OK(evx_timer_synchronize(t, &ms));
    /* a new start forgets the old stop */
    REQUIRE_OK(evx_timer_start(t, s));
    EXPECT_FAIL(evx_timer_elapsed(t, &ms), EVX_ERROR_ILLEGAL_STATE);
    EXPECT_FAIL(evx_timer_synchronize(t, &ms), EVX_ERROR_ILLEGAL_STATE);
    REQUIRE_OK(evx_timer_stop(t, s));
    EXPECT_OK(evx_timer_synchronize(t, &ms));
out:
    drop_timer(&t);
    drop_stream(&s);
}

static void t_timer_destroy_pending(void)
{
    evx_timer_t t = NULL;
    evx_stream_t s = NULL;
    conf_gate *g = gate_new();
    float ms;

    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE_OK(evx_device_create_timer(0, &t));
    REQUIRE_OK(evx_timer_start(t, s));
    REQUIRE_OK(gate_launch(s, g));
    REQUIRE_OK(evx_timer_stop(t, s));
    EXPECT_OK(evx_timer_destroy(t));
    EXPECT_FAIL(evx_timer_elapsed(t, &ms), EVX_ERROR_INVALID_HANDLE);
    t = NULL;
    EXPECT(gate_passed(g) == 0);
out:
    gate_open(g);
    if (s != NULL)
        EXPECT_OK(evx_stream_synchronize(s));
    drop_timer(&t);
    drop_stream(&s);
}

static void t_timeline_one_stream(void)
{
    evx_timeline_t tl = NULL;
    evx_timer_t t = NULL;
    evx_stream_t s = NULL;
    float iv[8], part[2], total = -1;
    double sum = 0;
    uint32_t idx, count = 0, w = 0, k;

    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE_OK(evx_device_create_timeline(0, 6, &tl));
    REQUIRE_OK(evx_device_create_timer(0, &t));
    REQUIRE_OK(evx_timer_start(t, s));
    for (k = 0; k < 5; k++) {
        if (k > 0)
            REQUIRE_OK(evx_stream_launch_host_func(s, host_sleep_ms, SLEEP2));
        idx = 99;
        REQUIRE_OK(evx_timeline_mark(tl, s, &idx));
        EXPECTF(idx == k, "mark %u got index %u", k, idx);
    }
    REQUIRE_OK(evx_timer_stop(t, s));
    EXPECT_OK(evx_timeline_synchronize(tl));
    EXPECT_OK(evx_timer_synchronize(t, &total));
    EXPECT_OK(evx_timeline_count(tl, &count));
    EXPECT(count == 5);
    EXPECT_OK(evx_timeline_intervals(tl, NULL, 0, &w));
    EXPECTF(w == 4, "5 marks: %u intervals", w);
    w = 0;
    EXPECT_OK(evx_timeline_intervals(tl, iv, 8, &w));
    EXPECT(w == 4);
    for (k = 0; k < w && k < 8; k++) {
        EXPECTF(iv[k] >= 1.5f && iv[k] < 5000.0f,
                "interval %u around a 2 ms sleep: %f ms", k, (double)iv[k]);
        sum += iv[k];
    }
    /* The intervals add up to first-to-last. The timer's marks enclose
     * the first and last marks with nothing queued between, so its span is
     * at least the sum and exceeds it only by the record gaps (microseconds
     * on a GPU; the slack allows for a preempted emulation thread, and is
     * still less than one 2 ms interval). */
    EXPECTF(sum <= (double)total + 0.01 &&
                sum >= (double)total - (1.0 + 0.05 * (double)total),
            "intervals add up to %f ms, the timer around them says %f ms",
            sum, (double)total);
    EXPECT(sum >= 6.0);
    conf_note("intervals %.3f %.3f %.3f %.3f, sum %.3f, timer %.3f",
              (double)iv[0], (double)iv[1], (double)iv[2], (double)iv[3], sum,
              (double)total);
    /* less room than intervals: the first ones */
    w = 0;
    EXPECT_OK(evx_timeline_intervals(tl, part, 2, &w));
    EXPECT(w == 2);
    EXPECT(part[0] == iv[0] && part[1] == iv[1]);
out:
    drop_timer(&t);
    drop_timeline(&tl);
    drop_stream(&s);
}

static void t_timeline_two_streams(void)
{
    evx_timeline_t tl = NULL;
    evx_stream_t s1 = NULL, s2 = NULL;
    evx_event_t e = NULL;
    float iv[4];
    uint32_t w = 0;

    REQUIRE((s1 = make_stream(0)) != NULL);
    REQUIRE((s2 = make_stream(0)) != NULL);
    REQUIRE((e = make_event(0, EVX_EVENT_DISABLE_TIMING)) != NULL);
    REQUIRE_OK(evx_device_create_timeline(0, 3, &tl));
    REQUIRE_OK(evx_timeline_mark(tl, s1, NULL));
    REQUIRE_OK(evx_stream_launch_host_func(s1, host_sleep_ms, SLEEP2));
    REQUIRE_OK(evx_timeline_mark(tl, s1, NULL));
    REQUIRE_OK(evx_event_record(e, s1));
    REQUIRE_OK(evx_stream_wait_event(s2, e, 0));
    REQUIRE_OK(evx_stream_launch_host_func(s2, host_sleep_ms, SLEEP2));
    REQUIRE_OK(evx_timeline_mark(tl, s2, NULL));
    EXPECT_OK(evx_timeline_synchronize(tl));
    EXPECT_OK(evx_stream_synchronize(s1));
    EXPECT_OK(evx_timeline_intervals(tl, iv, 4, &w));
    EXPECT(w == 2);
    EXPECTF(w >= 2 && iv[0] >= 1.5f && iv[1] >= 1.5f,
            "intervals %f, %f ms around 2 ms sleeps on two streams",
            (double)iv[0], (double)iv[1]);
out:
    drop_timeline(&tl);
    drop_event(&e);
    drop_stream(&s1);
    drop_stream(&s2);
}

static void t_timeline_not_ready(void)
{
    evx_timeline_t tl = NULL;
    evx_stream_t s = NULL;
    conf_gate *g = gate_new();
    float iv[3] = {-7.0f, -7.0f, -7.0f};
    uint32_t w = 77;
    int flag = 0;

    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE_OK(evx_device_create_timeline(0, 4, &tl));
    REQUIRE_OK(evx_timeline_mark(tl, s, NULL));
    REQUIRE_OK(gate_launch(s, g));
    REQUIRE_OK(evx_stream_launch_host_func(s, host_set_flag, &flag));
    REQUIRE_OK(evx_timeline_mark(tl, s, NULL));
    EXPECT_STATUS(evx_timeline_intervals(tl, iv, 3, &w), EVX_ERROR_NOT_READY);
    EXPECT(iv[0] == -7.0f && iv[1] == -7.0f); /* nothing written */
    gate_open_later(g, 20);
    EXPECT_OK(evx_timeline_synchronize(tl));
    EXPECT(flag_get(&flag) == 1);
    w = 0;
    EXPECT_OK(evx_timeline_intervals(tl, iv, 3, &w));
    EXPECT(w == 1);
    EXPECT(iv[0] >= 0.0f);
    gate_join_opener(g);
out:
    gate_open(g);
    gate_join_opener(g);
    if (s != NULL)
        EXPECT_OK(evx_stream_synchronize(s));
    drop_timeline(&tl);
    drop_stream(&s);
}

static void t_timeline_capacity(void)
{
    evx_timeline_t tl = NULL;
    evx_stream_t s = NULL;
    uint32_t i, idx, count = 9, w = 9;
    float iv[4];

    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE_OK(evx_device_create_timeline(0, 3, &tl));
    EXPECT_OK(evx_timeline_synchronize(tl)); /* no marks: fine */
    EXPECT_OK(evx_timeline_intervals(tl, iv, 4, &w));
    EXPECT(w == 0);
    for (i = 0; i < 3; i++)
        EXPECT_OK(evx_timeline_mark(tl, s, NULL));
    EXPECT_FAIL(evx_timeline_mark(tl, s, &idx), EVX_ERROR_OUT_OF_MEMORY);
    EXPECT_OK(evx_timeline_count(tl, &count));
    EXPECT(count == 3);
    EXPECT_OK(evx_timeline_synchronize(tl));
    EXPECT_OK(evx_timeline_intervals(tl, iv, 4, &w));
    EXPECT(w == 2);
    EXPECT_OK(evx_timeline_reset(tl));
    EXPECT_OK(evx_timeline_count(tl, &count));
    EXPECT(count == 0);
    w = 9;
    EXPECT_OK(evx_timeline_intervals(tl, iv, 4, &w));
    EXPECT(w == 0);
    for (i = 0; i < 3; i++) {
        idx = 99;
        EXPECT_OK(evx_timeline_mark(tl, s, &idx));
        EXPECT(idx == i);
    }
    EXPECT_OK(evx_timeline_synchronize(tl));
    /* one mark: no interval */
    EXPECT_OK(evx_timeline_reset(tl));
    EXPECT_OK(evx_timeline_mark(tl, s, NULL));
    EXPECT_OK(evx_timeline_synchronize(tl));
    w = 9;
    EXPECT_OK(evx_timeline_intervals(tl, NULL, 0, &w));
    EXPECT(w == 0);
out:
    drop_timeline(&tl);
    drop_stream(&s);
}

static void t_other_device(void)
{
    evx_timer_t t = NULL;
    evx_timeline_t tl = NULL;
    evx_stream_t s0 = NULL, s1 = NULL;
    uint32_t count = 9;
    const char *m;

    NEED_DEVICES(2);
    REQUIRE((s0 = make_stream(0)) != NULL);
    REQUIRE((s1 = make_stream(1)) != NULL);
    REQUIRE_OK(evx_device_create_timer(0, &t));
    REQUIRE_OK(evx_device_create_timeline(0, 4, &tl));
    EXPECT_FAIL(evx_timer_start(t, s1), EVX_ERROR_INVALID_HANDLE);
    m = evx_last_error_message();
    EXPECTF(msg_names_device(m, 0) && msg_names_device(m, 1),
            "the message does not name both devices: \"%s\"", m);
    EXPECT_OK(evx_timer_start(t, s0));
    EXPECT_FAIL(evx_timer_stop(t, s1), EVX_ERROR_INVALID_HANDLE);
    EXPECT_OK(evx_timer_stop(t, s0));
    EXPECT_FAIL(evx_timeline_mark(tl, s1, NULL), EVX_ERROR_INVALID_HANDLE);
    EXPECT_OK(evx_timeline_count(tl, &count));
    EXPECT(count == 0);
    EXPECT_OK(evx_timeline_mark(tl, s0, NULL));
    EXPECT_OK(evx_timeline_synchronize(tl));
    {
        float ms;
        EXPECT_OK(evx_timer_synchronize(t, &ms));
    }
out:
    drop_timer(&t);
    drop_timeline(&tl);
    drop_stream(&s0);
    drop_stream(&s1);
}

const conf_case conf_timing_cases[] = {
    {"timing.timer_basic", t_timer_basic},
    {"timing.timer_not_ready", t_timer_not_ready},
    {"timing.timer_stop_on_other_stream", t_timer_two_streams},
    {"timing.timer_start_completes_last", t_timer_start_completes_last},
    {"timing.timer_restart_forgets", t_timer_restart},
    {"timing.timer_destroy_pending", t_timer_destroy_pending},
    {"timing.timeline_one_stream", t_timeline_one_stream},
    {"timing.timeline_two_streams", t_timeline_two_streams},
    {"timing.timeline_not_ready", t_timeline_not_ready},
    {"timing.timeline_capacity_and_reset", t_timeline_capacity},
    {"timing.other_device", t_other_device},
    {NULL, NULL},
};
