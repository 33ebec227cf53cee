/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/* A client of an installed evx, written only against the public headers:
 * built with `pkg-config --cflags --libs evx` by install_test.sh. It prints
 * the driver evx found, then times a little work on it. */
#include <evx/evx.h>

#include <stdio.h>

static int check(evx_status_t s, const char *what)
{
    if (s != EVX_SUCCESS) {
        fprintf(stderr, "install_client: %s -> %s: %s\n", what,
                evx_status_name(s), evx_last_error_message());
        return 0;
    }
    return 1;
}

static void host_work(void *user_data)
{
    /* a little work on the stream, run by the driver on the host */
    volatile unsigned long n = 0;
    (void)user_data;
    while (n < 1000000UL)
        n++;
}

int main(void)
{
    const char *path = NULL;
    int emulation = -1, devices = 0, ok;
    evx_stream_t stream = NULL;
    evx_event_t start = NULL, end = NULL;
    float ms = -1.0f;

    if (!check(evx_driver_open(), "evx_driver_open") ||
        !check(evx_driver_get_path(&path), "evx_driver_get_path") ||
        !check(evx_driver_is_emulation(&emulation),
               "evx_driver_is_emulation") ||
        !check(evx_device_count(&devices), "evx_device_count"))
        return 1;
    printf("version=%s\n", evx_version_string());
    printf("driver=%s\n", path);
    printf("emulation=%d\n", emulation);
    printf("devices=%d\n", devices);

    ok = check(evx_device_create_stream(0, EVX_STREAM_NON_BLOCKING, 0,
                                        &stream), "create stream") &&
         check(evx_device_create_event(0, EVX_EVENT_DEFAULT, &start),
               "create event") &&
         check(evx_device_create_event(0, EVX_EVENT_DEFAULT, &end),
               "create event") &&
         check(evx_event_record(start, stream), "record") &&
         check(evx_stream_launch_host_func(stream, host_work, NULL),
               "host function") &&
         check(evx_event_record(end, stream), "record") &&
         check(evx_event_synchronize(end), "synchronize") &&
         check(evx_event_elapsed_time(&ms, start, end), "elapsed");
    if (ok)
        printf("elapsed_ms=%.3f\n", (double)ms);
    if (end != NULL)
        ok &= check(evx_event_destroy(end), "destroy event");
    if (start != NULL)
        ok &= check(evx_event_destroy(start), "destroy event");
    if (stream != NULL)
        ok &= check(evx_stream_destroy(stream), "destroy stream");
    return ok ? 0 : 1;
}
