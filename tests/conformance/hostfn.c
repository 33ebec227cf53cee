/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/* Host functions that can fail (evx_stream_launch_host_func_status): which
 * later calls report a failure, once, with a message naming the function,
 * and the two driver paths (cuLaunchHostFunc_v2 where the driver has it). */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "hostdebug.h"
#include "util.h"

/* Returns the status user_data points to (0: success), after counting. */
typedef struct outcome {
    evx_status_t status;
    int ran;
} outcome;

static evx_status_t run_outcome(void *user_data)
{
    outcome *o = (outcome *)user_data;
    flag_set(&o->ran, flag_get(&o->ran) + 1);
    return o->status;
}

static evx_status_t launch(evx_stream_t s, outcome *o, const char *name)
{
    evx_host_func_options_t opt = EVX_HOST_FUNC_OPTIONS_INIT;
    opt.name = name;
    return evx_stream_launch_host_func_status(s, run_outcome, o, &opt);
}

/* The failure's message names the call, the function and the status, and
 * evx_last_error_host_func gives its user_data. */
static int reported(evx_status_t got, evx_status_t want, const char *call,
                    const char *name, void *user_data)
{
    void *ud = NULL;
    const char *msg = evx_last_error_message();
    int ok = EXPECT_STATUS(got, want);
    ok &= EXPECTF(str_has(msg, call) && str_has(msg, name) &&
                      str_has(msg, evx_status_name(want)),
                  "message \"%s\" should name %s, the host function %s and %s",
                  msg, call, name, evx_status_name(want));
    ok &= EXPECT_OK(evx_last_error_host_func(&ud));
    ok &= EXPECTF(ud == user_data, "user_data %p, launched with %p", ud,
                  user_data);
    return ok;
}

static void t_stream_sync_reports_once(void)
{
    evx_stream_t s = NULL;
    outcome bad = {EVX_ERROR_ILLEGAL_STATE, 0}, good = {EVX_SUCCESS, 0};
    void *ud = NULL;

    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE_OK(launch(s, &good, "load_batch"));
    REQUIRE_OK(launch(s, &bad, "check_batch"));
    REQUIRE_OK(launch(s, &good, "load_batch"));
    reported(evx_stream_synchronize(s), EVX_ERROR_ILLEGAL_STATE,
             "evx_stream_synchronize", "check_batch", &bad);
    EXPECT(flag_get(&bad.ran) == 1 && flag_get(&good.ran) == 2);
    /* Reported once: the next wait finds nothing. */
    EXPECT_OK(evx_stream_synchronize(s));
    EXPECT_OK(evx_stream_query(s));
    /* Another failure clears what evx_last_error_host_func gives. */
    EXPECT_FAIL(evx_stream_launch_host_func_status(s, NULL, NULL, NULL),
                EVX_ERROR_INVALID_VALUE);
    EXPECT_STATUS(evx_last_error_host_func(&ud), EVX_ERROR_NOT_FOUND);
out:
    drop_stream(&s);
}

static void t_query_reports_when_idle(void)
{
    evx_stream_t s = NULL;
    conf_gate *g = gate_new();
    outcome bad = {EVX_ERROR_INVALID_VALUE, 0};

    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE_OK(gate_launch(s, g));
    REQUIRE_OK(launch(s, &bad, "validate"));
    EXPECT_STATUS(evx_stream_query(s), EVX_ERROR_NOT_READY);
    gate_open(g);
    reported(poll_stream(s, 10000), EVX_ERROR_INVALID_VALUE,
             "evx_stream_query", "validate", &bad);
    EXPECT_OK(evx_stream_query(s));
    EXPECT_OK(evx_stream_synchronize(s));
out:
    gate_open(g);
    drop_stream(&s);
}

/* An event recorded after the host function reports it (and then the
 * stream does not); one recorded before it does not. */
static void t_event_after_reports(void)
{
    evx_stream_t s = NULL;
    evx_event_t before = NULL, after = NULL;
    outcome bad = {EVX_ERROR_NOT_SUPPORTED, 0};

    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((before = make_event(0, EVX_EVENT_DEFAULT)) != NULL);
    REQUIRE((after = make_event(0, EVX_EVENT_DEFAULT)) != NULL);
    REQUIRE_OK(evx_event_record(before, s));
    REQUIRE_OK(launch(s, &bad, "write_checkpoint"));
    REQUIRE_OK(evx_event_record(after, s));
    EXPECT_OK(evx_event_synchronize(before));
    reported(evx_event_synchronize(after), EVX_ERROR_NOT_SUPPORTED,
             "evx_event_synchronize", "write_checkpoint", &bad);
    EXPECT_OK(evx_event_synchronize(after));
    EXPECT_OK(evx_event_query(after));
    EXPECT_OK(evx_stream_synchronize(s));
    /* The other way round: the stream reports it, the event then not. */
    bad.ran = 0;
    REQUIRE_OK(launch(s, &bad, "write_checkpoint"));
    REQUIRE_OK(evx_event_record(after, s));
    reported(evx_stream_synchronize(s), EVX_ERROR_NOT_SUPPORTED,
             "evx_stream_synchronize", "write_checkpoint", &bad);
    EXPECT_OK(evx_event_synchronize(after));
out:
    drop_event(&before);
    drop_event(&after);
    drop_stream(&s);
}

/* An event query that finds the event complete reports too; re-recorded on
 * a stream without failures, the event covers nothing any more. */
static void t_event_query_and_rerecord(void)
{
    evx_stream_t a = NULL, b = NULL;
    evx_event_t ev = NULL;
    outcome bad = {EVX_ERROR_OUT_OF_MEMORY, 0};

    REQUIRE((a = make_stream(0)) != NULL);
    REQUIRE((b = make_stream(0)) != NULL);
    REQUIRE((ev = make_event(0, EVX_EVENT_DEFAULT)) != NULL);
    REQUIRE_OK(launch(a, &bad, "alloc_staging"));
    REQUIRE_OK(evx_event_record(ev, a));
    reported(poll_event(ev, 10000), EVX_ERROR_OUT_OF_MEMORY,
             "evx_event_query", "alloc_staging", &bad);
    EXPECT_OK(evx_event_query(ev));

    REQUIRE_OK(launch(a, &bad, "alloc_staging"));
    REQUIRE_OK(evx_event_record(ev, a));
    REQUIRE_OK(evx_event_record(ev, b));   /* its last record: on b */
    EXPECT_OK(evx_event_synchronize(ev));
    reported(evx_stream_synchronize(a), EVX_ERROR_OUT_OF_MEMORY,
             "evx_stream_synchronize", "alloc_staging", &bad);
out:
    drop_event(&ev);
    drop_stream(&a);
    drop_stream(&b);
}

/* One failure per call, the earliest launched first; failures of another
 * stream are not reported. */
static void t_one_per_call_in_order(void)
{
    evx_stream_t s = NULL, other = NULL;
    outcome first = {EVX_ERROR_INVALID_VALUE, 0};
    outcome second = {EVX_ERROR_ILLEGAL_STATE, 0};

    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((other = make_stream(0)) != NULL);
    REQUIRE_OK(launch(s, &first, "first_step"));
    REQUIRE_OK(launch(s, &second, "second_step"));
    EXPECT_OK(evx_stream_synchronize(other));
    reported(evx_stream_synchronize(s), EVX_ERROR_INVALID_VALUE,
             "evx_stream_synchronize", "first_step", &first);
    reported(evx_stream_synchronize(s), EVX_ERROR_ILLEGAL_STATE,
             "evx_stream_synchronize", "second_step", &second);
    EXPECT_OK(evx_stream_synchronize(s));
    EXPECT_OK(evx_stream_synchronize(other));
out:
    drop_stream(&s);
    drop_stream(&other);
}

/* A failure launched after an event's record is not that event's, even
 * once it has happened when the event is synchronized. */
static void t_later_launch_not_covered(void)
{
    evx_stream_t s = NULL;
    evx_event_t ev = NULL;
    outcome bad = {EVX_ERROR_ILLEGAL_STATE, 0};

    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((ev = make_event(0, EVX_EVENT_DEFAULT)) != NULL);
    REQUIRE_OK(evx_event_record(ev, s));
    REQUIRE_OK(launch(s, &bad, "late"));
    REQUIRE(poll_flag(&bad.ran, 10000));
    EXPECT_OK(evx_event_synchronize(ev));   /* recorded before it */
    reported(evx_stream_synchronize(s), EVX_ERROR_ILLEGAL_STATE,
             "evx_stream_synchronize", "late", &bad);
out:
    drop_event(&ev);
    drop_stream(&s);
}

/* A destroyed stream's failure is still reported by an event recorded
 * after it. */
static void t_event_outlives_stream(void)
{
    evx_stream_t s = NULL;
    evx_event_t ev = NULL;
    outcome bad = {EVX_ERROR_ILLEGAL_STATE, 0};

    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((ev = make_event(0, EVX_EVENT_DEFAULT)) != NULL);
    REQUIRE_OK(launch(s, &bad, "flush"));
    REQUIRE_OK(evx_event_record(ev, s));
    drop_stream(&s);
    reported(evx_event_synchronize(ev), EVX_ERROR_ILLEGAL_STATE,
             "evx_event_synchronize", "flush", &bad);
out:
    drop_event(&ev);
    drop_stream(&s);
}

/* Timers and timelines report the failures their marks cover. */
static void t_timer_and_timeline(void)
{
    evx_stream_t s = NULL, other = NULL;
    evx_timer_t tm = NULL;
    evx_timeline_t tl = NULL;
    outcome bad = {EVX_ERROR_ILLEGAL_STATE, 0};
    float ms = -1.0f;

    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((other = make_stream(0)) != NULL);
    REQUIRE_OK(evx_device_create_timer(0, &tm));
    REQUIRE_OK(evx_device_create_timeline(0, 8, &tl));
    REQUIRE_OK(evx_timer_start(tm, s));
    REQUIRE_OK(launch(s, &bad, "timed_step"));
    REQUIRE_OK(evx_timer_stop(tm, s));
    reported(evx_timer_synchronize(tm, &ms), EVX_ERROR_ILLEGAL_STATE,
             "evx_timer_synchronize", "timed_step", &bad);
    EXPECTF(ms >= 0.0f, "ms %f", (double)ms);
    EXPECT_OK(evx_timer_synchronize(tm, &ms));
    EXPECT_OK(evx_stream_synchronize(s));

    REQUIRE_OK(evx_timeline_mark(tl, s, NULL));
    REQUIRE_OK(launch(s, &bad, "marked_step"));
    REQUIRE_OK(evx_timeline_mark(tl, other, NULL)); /* the last mark: other */
    REQUIRE(poll_flag(&bad.ran, 10000));
    EXPECT_OK(evx_timeline_synchronize(tl));   /* covers nothing of s */
    reported(evx_stream_synchronize(s), EVX_ERROR_ILLEGAL_STATE,
             "evx_stream_synchronize", "marked_step", &bad);
    bad.ran = 0;
    REQUIRE_OK(launch(s, &bad, "marked_step"));
    REQUIRE_OK(evx_timeline_mark(tl, s, NULL));
    reported(evx_timeline_synchronize(tl), EVX_ERROR_ILLEGAL_STATE,
             "evx_timeline_synchronize", "marked_step", &bad);
    EXPECT_OK(evx_timeline_synchronize(tl));
    EXPECT_OK(evx_stream_synchronize(s));
out:
    drop_timer(&tm);
    drop_timeline(&tl);
    drop_stream(&s);
    drop_stream(&other);
}

/* Success runs the function in order and reports nothing; a borrowed
 * default stream works too. */
static void t_success_and_default_stream(void)
{
    evx_stream_t s = NULL;
    outcome good = {EVX_SUCCESS, 0};
    int i;

    REQUIRE_OK(evx_stream_wrap_external(0, EVX_STREAM_LEGACY, &s));
    for (i = 0; i < 10; i++)
        REQUIRE_OK(evx_stream_launch_host_func_status(s, run_outcome, &good,
                                                      NULL));
    EXPECT_OK(evx_stream_synchronize(s));
    EXPECT(flag_get(&good.ran) == 10);
out:
    drop_stream(&s);
}

/* Without a name the message gives the function's address (a static
 * function has no exported symbol). */
/* Another function than run_outcome, at another address. */
static evx_status_t run_outcome_other(void *user_data)
{
    outcome *o = (outcome *)user_data;
    flag_set(&o->ran, flag_get(&o->ran) + 10);
    return o->status;
}

static void t_default_name(void)
{
    evx_stream_t s = NULL;
    outcome bad = {EVX_ERROR_ILLEGAL_STATE, 0};
    char addr[64], other[64];
    evx_host_fn_status_t f = run_outcome, g = run_outcome_other;
    void *p;

    memcpy(&p, &f, sizeof p);
    snprintf(addr, sizeof addr, "%p", p);
    memcpy(&p, &g, sizeof p);
    snprintf(other, sizeof other, "%p", p);
    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE_OK(evx_stream_launch_host_func_status(s, run_outcome, &bad, NULL));
    reported(evx_stream_synchronize(s), EVX_ERROR_ILLEGAL_STATE,
             "evx_stream_synchronize", addr, &bad);
    /* The same function again (named from evx's last look-up), then
     * another one (looked up anew). */
    REQUIRE_OK(evx_stream_launch_host_func_status(s, run_outcome, &bad, NULL));
    reported(evx_stream_synchronize(s), EVX_ERROR_ILLEGAL_STATE,
             "evx_stream_synchronize", addr, &bad);
    REQUIRE_OK(evx_stream_launch_host_func_status(s, run_outcome_other, &bad, NULL));
    reported(evx_stream_synchronize(s), EVX_ERROR_ILLEGAL_STATE,
             "evx_stream_synchronize", other, &bad);
    EXPECTF(!str_has(evx_last_error_message(), addr), "\"%s\" names %s",
            evx_last_error_message(), addr);
out:
    drop_stream(&s);
}

static void t_bad_input(void)
{
    evx_stream_t s = NULL;
    outcome o = {EVX_SUCCESS, 0};
    evx_host_func_options_t opt = EVX_HOST_FUNC_OPTIONS_INIT;
    char longname[200];
    void *ud = NULL;
    int has = -1;

    REQUIRE((s = make_stream(0)) != NULL);
    EXPECT_FAIL(evx_stream_launch_host_func_status(s, NULL, &o, NULL),
                EVX_ERROR_INVALID_VALUE);
    opt.flags = 0x2;
    EXPECT_FAIL(evx_stream_launch_host_func_status(s, run_outcome, &o, &opt),
                EVX_ERROR_INVALID_VALUE);
    EXPECT(msg_has_int(evx_last_error_message(), 0) ||
           str_has(evx_last_error_message(), "0x2"));
    opt.flags = 0;
    opt.struct_size = 8;
    EXPECT_FAIL(evx_stream_launch_host_func_status(s, run_outcome, &o, &opt),
                EVX_ERROR_INVALID_VALUE);
    opt.struct_size = (uint32_t)sizeof opt;
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    opt.name = longname;
    EXPECT_FAIL(evx_stream_launch_host_func_status(s, run_outcome, &o, &opt),
                EVX_ERROR_INVALID_VALUE);
    EXPECT(msg_has_int(evx_last_error_message(), 199));
    EXPECT_FAIL(evx_stream_launch_host_func_status(FORGE(evx_stream_t, 0x1234),
                                                   run_outcome, &o, NULL),
                EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_last_error_host_func(NULL), EVX_ERROR_INVALID_VALUE);
    EXPECT_STATUS(evx_last_error_host_func(&ud), EVX_ERROR_NOT_FOUND);
    EXPECT_FAIL(evx_driver_has_host_func_sync_mode(NULL),
                EVX_ERROR_INVALID_VALUE);
    EXPECT_OK(evx_driver_has_host_func_sync_mode(&has));
    EXPECT(has == 0 || has == 1);
    EXPECT_OK(evx_stream_synchronize(s));
    EXPECTF(flag_get(&o.ran) == 0, "a refused launch ran the function");
    /* A value that is no status code is reported as EVX_ERROR_UNKNOWN. */
    o.status = 123456;
    opt.name = "odd";
    REQUIRE_OK(evx_stream_launch_host_func_status(s, run_outcome, &o, &opt));
    EXPECT_STATUS(evx_stream_synchronize(s), EVX_ERROR_UNKNOWN);
    EXPECT(msg_has_int(evx_last_error_message(), 123456) &&
           str_has(evx_last_error_message(), "odd"));
    o.status = -3;
    REQUIRE_OK(evx_stream_launch_host_func_status(s, run_outcome, &o, &opt));
    EXPECT_STATUS(evx_stream_synchronize(s), EVX_ERROR_UNKNOWN);
out:
    drop_stream(&s);
}

/* EVX_HOST_FUNC_SPINWAIT on both paths: the emulation as a CUDA 13.0 driver
 * (this process) and as a 13.2 one (a child), which has cuLaunchHostFunc_v2. */
static int sync_mode_run(int want_has)
{
    evx_stream_t s = NULL;
    evx_event_t ev = NULL;
    outcome bad = {EVX_ERROR_ILLEGAL_STATE, 0}, good = {EVX_SUCCESS, 0};
    evx_host_func_options_t opt = EVX_HOST_FUNC_OPTIONS_INIT;
    int has = -1, ok = 1;

    opt.flags = EVX_HOST_FUNC_SPINWAIT;
    opt.name = "spin_step";
    ok &= EXPECT_OK(evx_driver_has_host_func_sync_mode(&has));
    if (want_has >= 0)
        ok &= EXPECTF(has == want_has, "has %d, expected %d", has, want_has);
    if (!(s = make_stream(0)) || !(ev = make_event(0, EVX_EVENT_DEFAULT)))
        return 0;
    ok &= EXPECT_OK(evx_stream_launch_host_func_status(s, run_outcome, &good,
                                                       &opt));
    ok &= EXPECT_OK(evx_stream_launch_host_func_status(s, run_outcome, &bad,
                                                       &opt));
    ok &= EXPECT_OK(evx_event_record(ev, s));
    ok &= reported(evx_event_synchronize(ev), EVX_ERROR_ILLEGAL_STATE,
                   "evx_event_synchronize", "spin_step", &bad);
    ok &= EXPECT(flag_get(&good.ran) == 1 && flag_get(&bad.ran) == 1);
    ok &= EXPECT_OK(evx_stream_synchronize(s));
    drop_event(&ev);
    drop_stream(&s);
    return ok;
}

int conf_hostfn_child(void)
{
    return sync_mode_run(1) ? 0 : 1;
}

static void t_sync_mode_paths(void)
{
    int rc;
    sync_mode_run(host_debug_get() != NULL ? 0 : -1);
    if (host_debug_get() == NULL) {
        conf_note("the real driver: only its own path runs here");
        return;
    }
    rc = run_child_env("hostfn-v2", (const char *const[]){
                                        "EVX_HOST_DRIVER_VERSION=13020", NULL});
    EXPECTF(rc == 0, "the child (a CUDA 13.2 emulation) exited %d", rc);
}

/* Waits until the notifier has `want` tokens queued. */
static int queued_reaches(evx_notifier_t n, uint64_t want, int timeout_ms)
{
    double until = now_ms() + timeout_ms;
    for (;;) {
        uint64_t q = 0;
        if (!EXPECT_OK(evx_notifier_get_counts(n, NULL, &q)))
            return 0;
        if (q >= want)
            return 1;
        if (now_ms() > until)
            return EXPECTF(0, "%llu tokens queued after %d ms, expected %llu",
                           (unsigned long long)q, timeout_ms, (unsigned long long)want);
        sleep_ms(1);
    }
}

/* The notifier's delivery: evx_notifier_read_checked reports the failure a
 * token's watch covers (once, stopping after that token); an event recorded
 * before the function covers none; evx_notifier_read reports nothing and
 * leaves the failure to the next waiting call. */
static void t_notifier_read_checked(void)
{
    evx_stream_t s = NULL, clean = NULL;
    evx_event_t before = NULL, after = NULL, other = NULL;
    evx_notifier_t n = NULL;
    outcome bad = {EVX_ERROR_ILLEGAL_STATE, 0}, bad2 = {EVX_ERROR_NOT_SUPPORTED, 0};
    uint64_t tok[4] = {0, 0, 0, 0};
    uint32_t c = 0;

    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((clean = make_stream(0)) != NULL);
    REQUIRE((before = make_event(0, EVX_EVENT_DEFAULT)) != NULL);
    REQUIRE((after = make_event(0, EVX_EVENT_DEFAULT)) != NULL);
    REQUIRE((other = make_event(0, EVX_EVENT_DEFAULT)) != NULL);
    REQUIRE_OK(evx_notifier_create(NULL, &n));

    /* before (no failure), then after (covers parse_record) */
    REQUIRE_OK(evx_event_record(before, s));
    REQUIRE_OK(launch(s, &bad, "parse_record"));
    REQUIRE_OK(evx_event_record(after, s));
    REQUIRE_OK(evx_notifier_watch(n, before, 1));
    REQUIRE(queued_reaches(n, 1, 10000));
    REQUIRE_OK(evx_notifier_watch(n, after, 2));
    REQUIRE(queued_reaches(n, 2, 10000));
    /* a third token behind it, of a stream without failures */
    REQUIRE_OK(evx_event_record(other, clean));
    REQUIRE_OK(evx_notifier_watch(n, other, 3));
    REQUIRE(queued_reaches(n, 3, 10000));
    reported(evx_notifier_read_checked(n, tok, 4, &c), EVX_ERROR_ILLEGAL_STATE,
             "evx_notifier_read_checked", "parse_record", &bad);
    EXPECTF(c == 2 && tok[0] == 1 && tok[1] == 2,
            "%u tokens (%llu, %llu): expected 1 and 2, stopping after the failed one", c,
            (unsigned long long)tok[0], (unsigned long long)tok[1]);
    EXPECT_OK(evx_notifier_read_checked(n, tok, 4, &c));
    EXPECTF(c == 1 && tok[0] == 3, "%u tokens (%llu): expected 3", c,
            (unsigned long long)tok[0]);
    /* reported once: the stream and the event have nothing left */
    EXPECT_OK(evx_event_synchronize(after));
    EXPECT_OK(evx_stream_synchronize(s));

    /* evx_notifier_read leaves the failure to the next waiting call */
    REQUIRE_OK(launch(s, &bad2, "write_shard"));
    REQUIRE_OK(evx_event_record(after, s));
    REQUIRE_OK(evx_notifier_watch(n, after, 4));
    REQUIRE(queued_reaches(n, 1, 10000));
    EXPECT_OK(evx_notifier_read(n, tok, 4, &c));
    EXPECT(c == 1 && tok[0] == 4);
    reported(evx_stream_synchronize(s), EVX_ERROR_NOT_SUPPORTED, "evx_stream_synchronize",
             "write_shard", &bad2);

    /* a waiting call first: the checked read then finds nothing */
    REQUIRE_OK(launch(s, &bad, "parse_record"));
    REQUIRE_OK(evx_event_record(after, s));
    REQUIRE_OK(evx_notifier_watch(n, after, 5));
    REQUIRE(queued_reaches(n, 1, 10000));
    reported(evx_event_synchronize(after), EVX_ERROR_ILLEGAL_STATE, "evx_event_synchronize",
             "parse_record", &bad);
    EXPECT_OK(evx_notifier_read_checked(n, tok, 4, &c));
    EXPECT(c == 1 && tok[0] == 5);
    EXPECT(flag_get(&bad.ran) == 2 && flag_get(&bad2.ran) == 1);
out:
    if (n != NULL)
        EXPECT_OK(evx_notifier_destroy(n));
    drop_event(&before);
    drop_event(&after);
    drop_event(&other);
    drop_stream(&clean);
    drop_stream(&s);
}

/* What a status callback saw: the status, and the message and host
 * function evx gives during the callback. */
typedef struct seen {
    evx_status_t status;
    char message[512];
    void *host_data;
    int host_st;
    int ran;
} seen;

static void on_status(evx_status_t status, void *user_data)
{
    seen *w = (seen *)user_data;
    w->status = status;
    if (status != EVX_SUCCESS) {
        snprintf(w->message, sizeof w->message, "%s", evx_last_error_message());
        w->host_st = evx_last_error_host_func(&w->host_data);
    }
    flag_set(&w->ran, 1);
}

/* The status callback: the status of a failed host function before the
 * event, once, with its message and user_data during the callback. */
static void t_notifier_callback_status(void)
{
    evx_stream_t s = NULL;
    evx_event_t before = NULL, after = NULL;
    evx_notifier_t n = NULL;
    outcome bad = {EVX_ERROR_INVALID_VALUE, 0};
    seen a, b, c;

    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    memset(&c, 0, sizeof c);
    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((before = make_event(0, EVX_EVENT_DEFAULT)) != NULL);
    REQUIRE((after = make_event(0, EVX_EVENT_DEFAULT)) != NULL);
    REQUIRE_OK(evx_notifier_create(NULL, &n));
    EXPECT_FAIL(evx_notifier_watch_callback_status(n, after, NULL, NULL),
                EVX_ERROR_INVALID_VALUE);
    REQUIRE_OK(evx_event_record(before, s));
    REQUIRE_OK(launch(s, &bad, "decode_batch"));
    REQUIRE_OK(evx_event_record(after, s));
    REQUIRE_OK(evx_notifier_watch_callback_status(n, before, on_status, &a));
    REQUIRE(poll_flag(&a.ran, 10000));
    REQUIRE_OK(evx_notifier_watch_callback_status(n, after, on_status, &b));
    REQUIRE(poll_flag(&b.ran, 10000));
    EXPECT_OK(a.status);
    EXPECT_STATUS(b.status, EVX_ERROR_INVALID_VALUE);
    EXPECTF(str_has(b.message, "evx_notifier_watch_callback_status") &&
                str_has(b.message, "decode_batch"),
            "message \"%s\" should name the call and the host function", b.message);
    EXPECTF(b.host_st == EVX_SUCCESS && b.host_data == &bad,
            "evx_last_error_host_func in the callback: %d, %p (launched with %p)", b.host_st,
            b.host_data, (void *)&bad);
    /* reported once: a second watch and the stream have nothing left */
    REQUIRE_OK(evx_notifier_watch_callback_status(n, after, on_status, &c));
    REQUIRE(poll_flag(&c.ran, 10000));
    EXPECT_OK(c.status);
    EXPECT_OK(evx_stream_synchronize(s));
out:
    if (n != NULL)
        EXPECT_OK(evx_notifier_destroy(n));
    drop_event(&before);
    drop_event(&after);
    drop_stream(&s);
}

/* ---- captured into a graph ---------------------------------------------- */

/* A captured host function: fails at the launches whose bit is set in
 * fail_mask (bit k: the k-th run, from 1), counts its runs and its
 * release. */
typedef struct graph_fn {
    unsigned fail_mask;
    int runs;
    int released;
} graph_fn;

static evx_status_t run_graph_fn(void *user_data)
{
    graph_fn *g = (graph_fn *)user_data;
    const int k = flag_get(&g->runs) + 1;
    flag_set(&g->runs, k);
    return (g->fail_mask >> k) & 1u ? EVX_ERROR_ILLEGAL_STATE : EVX_SUCCESS;
}

static void release_graph_fn(void *user_data)
{
    graph_fn *g = (graph_fn *)user_data;
    flag_set(&g->released, flag_get(&g->released) + 1);
}

static evx_status_t launch_graph_fn(evx_stream_t s, graph_fn *g, const char *name)
{
    evx_host_func_options_t o = EVX_HOST_FUNC_OPTIONS_INIT;
    o.name = name;
    o.release = release_graph_fn;
    return evx_stream_launch_host_func_status(s, run_graph_fn, g, &o);
}

static int have_capture(const conf_cu *cu)
{
    if (cu != NULL && cu->stream_begin_capture != NULL && cu->stream_end_capture != NULL &&
        cu->graph_instantiate != NULL && cu->graph_launch != NULL &&
        cu->graph_exec_destroy != NULL && cu->graph_destroy != NULL)
        return 1;
    if (!EXPECTF(host_debug_get() == NULL, "the host emulation lacks a capture or graph call"))
        return 0;
    conf_skip("the driver has no stream capture or graphs");
    return 0;
}

/* Captures `g`'s function on `s` (relaxed mode) into *graph and instantiates
 * it into *exec with device 0's primary context current. */
static int capture_graph_fn(const conf_cu *cu, evx_stream_t s, graph_fn *g, const char *name,
                            CUgraph *graph, CUgraphExec *exec)
{
    void *native = NULL;
    CUcontext ctx = NULL, popped = NULL;
    int ok;
    if (!EXPECT_OK(evx_stream_get_native(s, &native)) ||
        !EXPECT(cu->stream_begin_capture((CUstream)native, CU_STREAM_CAPTURE_MODE_RELAXED) ==
                CUDA_SUCCESS))
        return 0;
    ok = EXPECT_OK(launch_graph_fn(s, g, name));
    ok &= EXPECT(cu->stream_end_capture((CUstream)native, graph) == CUDA_SUCCESS);
    if (!ok || *graph == NULL)
        return 0;
    EXPECTF(flag_get(&g->runs) == 0, "the captured function ran %d time(s) at capture",
            flag_get(&g->runs));
    if (!EXPECT(cu->primary_retain(&ctx, conf_cu_device(0)) == CUDA_SUCCESS))
        return 0;
    EXPECT(cu->ctx_push_current(ctx) == CUDA_SUCCESS);
    ok = EXPECT(cu->graph_instantiate(exec, *graph, 0) == CUDA_SUCCESS);
    EXPECT(cu->ctx_pop_current(&popped) == CUDA_SUCCESS);
    EXPECT(cu->primary_release(conf_cu_device(0)) == CUDA_SUCCESS);
    return ok;
}

/* The message of a failure in a graph launch names the call, the function
 * and says it ran in a launch of its graph. */
static int reported_in_graph(evx_status_t got, const char *call, const char *name,
                             void *user_data)
{
    const char *msg = evx_last_error_message();
    int ok = reported(got, EVX_ERROR_ILLEGAL_STATE, call, name, user_data);
    ok &= EXPECTF(str_has(msg, "launch of its graph"),
                  "message \"%s\" should say the function ran in a graph launch", msg);
    return ok;
}

/* Replays of a graph holding a host function that can fail: each replay
 * runs it; a replay's failure is reported once, by the first waiting call
 * on the device to end its wait after it (a stream synchronize on the
 * stream the graph was launched on, an event or timeline synchronize, a
 * status callback of the notifier), never by calls that waited before it;
 * destroying the graph and its executable releases the user data. */
static void t_graph_replays(void)
{
    const conf_cu *cu = conf_cu_get();
    evx_stream_t cap = NULL, s = NULL;
    evx_event_t e = NULL;
    evx_timeline_t tl = NULL;
    evx_notifier_t n = NULL;
    CUgraph graph = NULL;
    CUgraphExec exec = NULL;
    void *native = NULL;
    /* fails at runs 2, 4, 5 and 6 */
    graph_fn g = {(1u << 2) | (1u << 4) | (1u << 5) | (1u << 6), 0, 0};
    seen w;

    memset(&w, 0, sizeof w);
    if (!have_capture(cu))
        return;
    REQUIRE((cap = make_stream(0)) != NULL);
    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((e = make_event(0, EVX_EVENT_DEFAULT)) != NULL);
    REQUIRE_OK(evx_device_create_timeline(0, 4, &tl));
    REQUIRE_OK(evx_notifier_create(NULL, &n));
    REQUIRE_OK(evx_stream_get_native(s, &native));
    REQUIRE(capture_graph_fn(cu, cap, &g, "graph_step_check", &graph, &exec));

    /* run 1 succeeds */
    EXPECT(cu->graph_launch(exec, (CUstream)native) == CUDA_SUCCESS);
    EXPECT_OK(evx_stream_synchronize(s));
    EXPECT(flag_get(&g.runs) == 1);
    /* run 2 fails: the stream synchronize that waited for it reports it */
    EXPECT(cu->graph_launch(exec, (CUstream)native) == CUDA_SUCCESS);
    reported_in_graph(evx_stream_synchronize(s), "evx_stream_synchronize",
                      "graph_step_check", &g);
    EXPECT(flag_get(&g.runs) == 2);
    /* once: nothing left for the next waits, on any stream of the device */
    EXPECT_OK(evx_stream_synchronize(s));
    EXPECT_OK(evx_stream_synchronize(cap));
    /* run 3 succeeds, run 4 fails: an event recorded after it reports it */
    EXPECT(cu->graph_launch(exec, (CUstream)native) == CUDA_SUCCESS);
    EXPECT(cu->graph_launch(exec, (CUstream)native) == CUDA_SUCCESS);
    REQUIRE_OK(evx_event_record(e, s));
    reported_in_graph(evx_event_synchronize(e), "evx_event_synchronize", "graph_step_check",
                      &g);
    EXPECT(flag_get(&g.runs) == 4);
    EXPECT_OK(evx_event_synchronize(e));
    EXPECT_OK(evx_stream_synchronize(s));
    /* run 5 fails: a timeline marked after it */
    EXPECT(cu->graph_launch(exec, (CUstream)native) == CUDA_SUCCESS);
    REQUIRE_OK(evx_timeline_mark(tl, s, NULL));
    reported_in_graph(evx_timeline_synchronize(tl), "evx_timeline_synchronize",
                      "graph_step_check", &g);
    EXPECT_OK(evx_timeline_synchronize(tl));
    /* run 6 fails: a status callback of a watch of an event after it */
    EXPECT(cu->graph_launch(exec, (CUstream)native) == CUDA_SUCCESS);
    REQUIRE_OK(evx_event_record(e, s));
    REQUIRE_OK(evx_notifier_watch_callback_status(n, e, on_status, &w));
    REQUIRE(poll_flag(&w.ran, 10000));
    EXPECT_STATUS(w.status, EVX_ERROR_ILLEGAL_STATE);
    EXPECTF(str_has(w.message, "evx_notifier_watch_callback_status") &&
                str_has(w.message, "graph_step_check") &&
                str_has(w.message, "launch of its graph"),
            "callback message \"%s\" should name the call and the function", w.message);
    EXPECTF(w.host_st == EVX_SUCCESS && w.host_data == &g,
            "evx_last_error_host_func in the callback: %d, %p (launched with %p)", w.host_st,
            w.host_data, (void *)&g);
    EXPECT_OK(evx_stream_synchronize(s));
    EXPECT(flag_get(&g.runs) == 6);
    /* the graph and its executable hold the record: released once both go */
    EXPECT(flag_get(&g.released) == 0);
    EXPECT(cu->graph_exec_destroy(exec) == CUDA_SUCCESS);
    exec = NULL;
    EXPECT(cu->graph_destroy(graph) == CUDA_SUCCESS);
    graph = NULL;
    /* the driver runs a user object's destructor on its own thread */
    EXPECTF(poll_flag(&g.released, 10000) && flag_get(&g.released) == 1,
            "release called %d time(s) after the graph and its executable were destroyed",
            flag_get(&g.released));
out:
    if (exec != NULL)
        EXPECT(cu->graph_exec_destroy(exec) == CUDA_SUCCESS);
    if (graph != NULL)
        EXPECT(cu->graph_destroy(graph) == CUDA_SUCCESS);
    if (n != NULL)
        EXPECT_OK(evx_notifier_destroy(n));
    if (tl != NULL)
        EXPECT_OK(evx_timeline_destroy(tl));
    drop_event(&e);
    drop_stream(&s);
    drop_stream(&cap);
}

/* A replay's failure is the device's: a wait on another device does not
 * report it, and a wait that ended before the replay ran does not either
 * (the replay is held back by a gate). */
static void t_graph_failure_device(void)
{
    const conf_cu *cu = conf_cu_get();
    evx_stream_t cap = NULL, s = NULL, other = NULL;
    conf_gate *gate = gate_new();
    CUgraph graph = NULL;
    CUgraphExec exec = NULL;
    void *native = NULL;
    graph_fn g = {1u << 1, 0, 0};

    if (!have_capture(cu))
        return;
    REQUIRE((cap = make_stream(0)) != NULL);
    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE_OK(evx_stream_get_native(s, &native));
    REQUIRE(capture_graph_fn(cu, cap, &g, "gated_check", &graph, &exec));
    REQUIRE_OK(gate_launch(s, gate));
    EXPECT(cu->graph_launch(exec, (CUstream)native) == CUDA_SUCCESS);
    /* not run yet: a wait on the device that ends now has nothing */
    EXPECT_OK(evx_stream_synchronize(cap));
    EXPECT(flag_get(&g.runs) == 0);
    gate_open(gate);
    REQUIRE(poll_flag(&g.runs, 10000));
    if (conf_device_count() > 1) {
        REQUIRE((other = make_stream(1)) != NULL);
        EXPECT_OK(evx_stream_synchronize(other));
    }
    reported_in_graph(evx_stream_synchronize(s), "evx_stream_synchronize", "gated_check", &g);
    EXPECT_OK(evx_stream_synchronize(cap));
out:
    gate_open(gate);
    if (exec != NULL)
        EXPECT(cu->graph_exec_destroy(exec) == CUDA_SUCCESS);
    if (graph != NULL)
        EXPECT(cu->graph_destroy(graph) == CUDA_SUCCESS);
    drop_stream(&other);
    drop_stream(&s);
    drop_stream(&cap);
}

/* release: called once after the single run outside a capture; not called
 * when the launch fails (the caller keeps the data); for a graph never
 * instantiated, called when the graph is destroyed, without a run. */
static void t_release(void)
{
    const conf_cu *cu = conf_cu_get();
    evx_stream_t s = NULL;
    graph_fn once = {0, 0, 0}, refused = {0, 0, 0}, captured = {0, 0, 0};
    evx_host_func_options_t o = EVX_HOST_FUNC_OPTIONS_INIT;
    void *native = NULL;
    CUgraph graph = NULL;

    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE_OK(launch_graph_fn(s, &once, "once"));
    EXPECT_OK(evx_stream_synchronize(s));
    EXPECTF(poll_flag(&once.released, 10000) && flag_get(&once.released) == 1 &&
                flag_get(&once.runs) == 1,
            "ran %d, released %d times", flag_get(&once.runs), flag_get(&once.released));
    o.release = release_graph_fn;
    o.flags = 0x80;
    EXPECT_FAIL(evx_stream_launch_host_func_status(s, run_graph_fn, &refused, &o),
                EVX_ERROR_INVALID_VALUE);
    EXPECT_OK(evx_stream_synchronize(s));
    EXPECT(flag_get(&refused.released) == 0 && flag_get(&refused.runs) == 0);
    if (!have_capture(cu))
        goto out;
    REQUIRE_OK(evx_stream_get_native(s, &native));
    REQUIRE(cu->stream_begin_capture((CUstream)native, CU_STREAM_CAPTURE_MODE_RELAXED) ==
            CUDA_SUCCESS);
    EXPECT_OK(launch_graph_fn(s, &captured, "captured"));
    EXPECT(cu->stream_end_capture((CUstream)native, &graph) == CUDA_SUCCESS);
    EXPECT(flag_get(&captured.released) == 0);
    if (graph != NULL)
        EXPECT(cu->graph_destroy(graph) == CUDA_SUCCESS);
    EXPECTF(poll_flag(&captured.released, 10000) && flag_get(&captured.released) == 1 &&
                flag_get(&captured.runs) == 0,
            "captured: ran %d, released %d times", flag_get(&captured.runs),
            flag_get(&captured.released));
out:
    drop_stream(&s);
}

/* Launch records come from the launching thread's own list and are given
 * back to it by the driver's thread (hostfn.cpp, HostHome): a thread that
 * exits with launches in flight leaves them to the next thread that takes
 * its record, and a burst of launches beyond what a thread keeps is given
 * back and deleted. Every function runs once, its release is called once,
 * and the failure of one launched by the exited thread is reported. */
typedef struct burst {
    evx_stream_t s;
    int n;          /* launches to make */
    int fail_at;    /* the launch (0-based) that fails, or -1 */
    graph_fn fn[2]; /* [0] succeeds, [1] fails (its fail_mask nonzero) */
    evx_status_t st;
} burst;

/* Counts a run; fails when the function's fail_mask is nonzero. */
static evx_status_t run_burst_fn(void *user_data)
{
    graph_fn *g = (graph_fn *)user_data;
    flag_set(&g->runs, flag_get(&g->runs) + 1);
    return g->fail_mask ? EVX_ERROR_ILLEGAL_STATE : EVX_SUCCESS;
}

static void *burst_thread(void *arg)
{
    burst *b = (burst *)arg;
    evx_host_func_options_t o = EVX_HOST_FUNC_OPTIONS_INIT;
    o.release = release_graph_fn;
    b->st = EVX_SUCCESS;
    for (int i = 0; i < b->n && b->st == EVX_SUCCESS; i++) {
        o.name = i == b->fail_at ? "burst_fail" : "burst_ok";
        b->st = evx_stream_launch_host_func_status(b->s, run_burst_fn,
                                                   &b->fn[i == b->fail_at], &o);
    }
    return NULL;
}

static void t_records_cross_threads(void)
{
    evx_stream_t s = NULL;
    conf_gate *gate = gate_new();
    burst a, b;
    pthread_t th;

    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    REQUIRE(gate != NULL && (s = make_stream(0)) != NULL);
    a.s = b.s = s;
    a.n = 300;
    a.fail_at = 150;
    a.fn[1].fail_mask = 1u;
    b.n = 5000;             /* more than a thread keeps */
    b.fail_at = -1;
    REQUIRE_OK(gate_launch(s, gate));
    /* The first thread exits with all its launches held by the gate. */
    REQUIRE(pthread_create(&th, NULL, burst_thread, &a) == 0);
    pthread_join(th, NULL);
    EXPECT_OK(a.st);
    gate_open(gate);
    /* The second launches while the driver gives the first's back. */
    REQUIRE(pthread_create(&th, NULL, burst_thread, &b) == 0);
    pthread_join(th, NULL);
    EXPECT_OK(b.st);
    reported(evx_stream_synchronize(s), EVX_ERROR_ILLEGAL_STATE, "evx_stream_synchronize",
             "burst_fail", &a.fn[1]);
    EXPECT_OK(evx_stream_synchronize(s));
    EXPECTF(flag_get(&a.fn[0].runs) == a.n - 1 && flag_get(&a.fn[0].released) == a.n - 1 &&
                flag_get(&a.fn[1].runs) == 1 && flag_get(&a.fn[1].released) == 1,
            "first thread: ran %d + %d, released %d + %d of %d", flag_get(&a.fn[0].runs),
            flag_get(&a.fn[1].runs), flag_get(&a.fn[0].released),
            flag_get(&a.fn[1].released), a.n);
    EXPECTF(flag_get(&b.fn[0].runs) == b.n && flag_get(&b.fn[0].released) == b.n,
            "second thread: ran %d, released %d of %d", flag_get(&b.fn[0].runs),
            flag_get(&b.fn[0].released), b.n);
out:
    drop_stream(&s);
}

const conf_case conf_hostfn_cases[] = {
    {"hostfn.stream_sync_reports_once", t_stream_sync_reports_once},
    {"hostfn.query_reports_when_idle", t_query_reports_when_idle},
    {"hostfn.event_after_reports", t_event_after_reports},
    {"hostfn.event_query_and_rerecord", t_event_query_and_rerecord},
    {"hostfn.one_per_call_in_order", t_one_per_call_in_order},
    {"hostfn.later_launch_not_covered", t_later_launch_not_covered},
    {"hostfn.event_outlives_stream", t_event_outlives_stream},
    {"hostfn.timer_and_timeline", t_timer_and_timeline},
    {"hostfn.success_and_default_stream", t_success_and_default_stream},
    {"hostfn.default_name", t_default_name},
    {"hostfn.bad_input", t_bad_input},
    {"hostfn.sync_mode_paths", t_sync_mode_paths},
    {"hostfn.notifier_read_checked", t_notifier_read_checked},
    {"hostfn.notifier_callback_status", t_notifier_callback_status},
    {"hostfn.graph_replays", t_graph_replays},
    {"hostfn.graph_failure_device", t_graph_failure_device},
    {"hostfn.release", t_release},
    {"hostfn.records_cross_threads", t_records_cross_threads},
    {NULL, NULL},
};
