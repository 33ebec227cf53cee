/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/* Two devices: an event and a stream of different devices are refused
 * together, before the driver, with both devices named. */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "util.h"

static int names_both(void)
{
    const char *m = evx_last_error_message();
    return EXPECTF(msg_names_device(m, 0) && msg_names_device(m, 1),
                   "the message does not name devices 0 and 1: \"%s\"", m);
}

static void t_record_and_wait(void)
{
    evx_stream_t s0 = NULL, s1 = NULL, def1 = NULL;
    evx_event_t e0 = NULL, e1 = NULL;
    int d = -1;

    NEED_DEVICES(2);
    REQUIRE((s0 = make_stream(0)) != NULL);
    REQUIRE((s1 = make_stream(1)) != NULL);
    REQUIRE((e0 = make_event(0, 0)) != NULL);
    REQUIRE((e1 = make_event(1, 0)) != NULL);
    EXPECT_OK(evx_event_get_device(e1, &d));
    EXPECT(d == 1);
    EXPECT_OK(evx_stream_get_device(s1, &d));
    EXPECT(d == 1);
    REQUIRE_OK(evx_stream_wrap_external(1, NULL, &def1));

    EXPECT_FAIL(evx_event_record(e0, s1), EVX_ERROR_INVALID_HANDLE);
    names_both();
    conf_note("record: %s", evx_last_error_message());
    EXPECT_FAIL(evx_event_record(e1, s0), EVX_ERROR_INVALID_HANDLE);
    names_both();
    EXPECT_FAIL(evx_event_record_with_flags(e0, s1, 0),
                EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_event_record(e0, def1), EVX_ERROR_INVALID_HANDLE);
    names_both();
    EXPECT_FAIL(evx_stream_wait_event(s1, e0, 0), EVX_ERROR_INVALID_HANDLE);
    names_both();
    conf_note("wait: %s", evx_last_error_message());
    EXPECT_FAIL(evx_stream_wait_event(s0, e1, 0), EVX_ERROR_INVALID_HANDLE);
    names_both();
    EXPECT_FAIL(evx_stream_wait_event(def1, e0, 0), EVX_ERROR_INVALID_HANDLE);

    /* The refusals left the events never recorded. */
    EXPECT_OK(evx_event_query(e0));
    {
        float ms;
        EXPECT_FAIL(evx_event_elapsed_time(&ms, e0, e0),
                    EVX_ERROR_INVALID_HANDLE);
    }
    /* Each on its own device is fine. */
    EXPECT_OK(evx_event_record(e0, s0));
    EXPECT_OK(evx_event_record(e1, s1));
    EXPECT_OK(evx_event_record(e1, def1));
    EXPECT_OK(evx_stream_wait_event(s1, e1, 0));
    EXPECT_OK(evx_stream_wait_event(s0, e0, 0));
    EXPECT_OK(evx_stream_synchronize(s0));
    EXPECT_OK(evx_stream_synchronize(s1));
    EXPECT_OK(evx_stream_synchronize(def1));
out:
    drop_stream(&def1);
    drop_event(&e0);
    drop_event(&e1);
    drop_stream(&s0);
    drop_stream(&s1);
}

static void t_elapsed(void)
{
    evx_stream_t s0 = NULL, s1 = NULL;
    evx_event_t e0 = NULL, e1 = NULL;
    float ms = 42.0f;

    NEED_DEVICES(2);
    REQUIRE((s0 = make_stream(0)) != NULL);
    REQUIRE((s1 = make_stream(1)) != NULL);
    REQUIRE((e0 = make_event(0, 0)) != NULL);
    REQUIRE((e1 = make_event(1, 0)) != NULL);
    REQUIRE_OK(evx_event_record(e0, s0));
    REQUIRE_OK(evx_event_record(e1, s1));
    EXPECT_OK(evx_event_synchronize(e0));
    EXPECT_OK(evx_event_synchronize(e1));
    EXPECT_FAIL(evx_event_elapsed_time(&ms, e0, e1), EVX_ERROR_INVALID_HANDLE);
    names_both();
    conf_note("elapsed: %s", evx_last_error_message());
    EXPECT_FAIL(evx_event_elapsed_time(&ms, e1, e0), EVX_ERROR_INVALID_HANDLE);
    EXPECT(ms == 42.0f);
out:
    drop_event(&e0);
    drop_event(&e1);
    drop_stream(&s0);
    drop_stream(&s1);
}

/* Devices run independently: a stuck stream on device 0 does not hold
 * device 1. */
static void t_independent(void)
{
    evx_stream_t s0 = NULL, s1 = NULL;
    evx_event_t e1 = NULL;
    conf_gate *g = NULL;
    evx_event_pool_t p1 = NULL;
    evx_event_pool_options_t o;
    evx_event_t pe = NULL;

    NEED_DEVICES(2);
    g = gate_new();
    memset(&o, 0, sizeof o);
    o.struct_size = (uint32_t)sizeof o;
    o.capacity = 2;
    REQUIRE((s0 = make_stream(0)) != NULL);
    REQUIRE((s1 = make_stream(1)) != NULL);
    REQUIRE((e1 = make_event(1, 0)) != NULL);
    REQUIRE_OK(evx_device_create_event_pool(1, &o, &p1));
    REQUIRE_OK(evx_event_pool_acquire(p1, &pe));
    REQUIRE_OK(gate_launch(s0, g));
    EXPECT_OK(evx_event_record(e1, s1));
    EXPECT_STATUS(poll_event(e1, 10000), EVX_SUCCESS);
    EXPECT_STATUS(evx_stream_query(s0), EVX_ERROR_NOT_READY);
    /* a device-1 pool's event on a device-0 stream */
    EXPECT_FAIL(evx_event_record(pe, s0), EVX_ERROR_INVALID_HANDLE);
    EXPECT_OK(evx_event_record(pe, s1));
    EXPECT_OK(evx_event_synchronize(pe));
out:
    gate_open(g);
    if (s0 != NULL)
        EXPECT_OK(evx_stream_synchronize(s0));
    if (pe != NULL)
        EXPECT_OK(evx_event_pool_release(p1, pe));
    drop_pool(&p1);
    drop_event(&e1);
    drop_stream(&s0);
    drop_stream(&s1);
}

const conf_case conf_crossdev_cases[] = {
    {"crossdev.record_and_wait_refused", t_record_and_wait},
    {"crossdev.elapsed_refused", t_elapsed},
    {"crossdev.devices_independent", t_independent},
    {NULL, NULL},
};
