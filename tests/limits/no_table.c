/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/* With no address space for the handle table at all (no_reserve.c, preloaded,
 * refuses the reservation): the library loads, every call that makes a
 * handle fails with OUT_OF_MEMORY and a message that says why, and every
 * lookup fails cleanly. */
#include <evx/evx.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int failures = 0;

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "no_table: %s failed: %s\n", what, evx_last_error_message());
        failures++;
    }
}

#define CHECK(cond) check((cond) != 0, #cond)
#define SAYS(part) CHECK(strstr(evx_last_error_message(), part) != NULL)

int main(void)
{
    evx_event_t e = NULL;
    evx_stream_t s = NULL;
    evx_timer_t t = NULL;
    const evx_event_t forged = (evx_event_t)(uintptr_t)0x100000011ULL;
    const evx_stream_t forged_s = (evx_stream_t)(uintptr_t)0x100000022ULL;

    CHECK(evx_device_create_event(0, 0, &e) == EVX_ERROR_OUT_OF_MEMORY);
    SAYS("no address space for the handle table");
    CHECK(e == NULL);
    CHECK(evx_device_create_stream(0, 0, 0, &s) == EVX_ERROR_OUT_OF_MEMORY);
    SAYS("no address space for the handle table");
    CHECK(evx_device_create_timer(0, &t) == EVX_ERROR_OUT_OF_MEMORY);
    CHECK(evx_event_query(forged) == EVX_ERROR_INVALID_HANDLE);
    SAYS("was never made by evx");
    CHECK(evx_event_record(forged, forged_s) == EVX_ERROR_INVALID_HANDLE);
    CHECK(evx_stream_wait_event(forged_s, forged, 0) == EVX_ERROR_INVALID_HANDLE);
    CHECK(evx_event_destroy(forged) == EVX_ERROR_INVALID_HANDLE);
    CHECK(evx_stream_destroy(forged_s) == EVX_ERROR_INVALID_HANDLE);
    printf("no_table: %d passed, %d failed\n", failures ? 0 : 1, failures ? 1 : 0);
    return failures ? 1 : 0;
}
