/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/* Labeled timeline marks, evx_timeline_get_mark and the Chrome trace of
 * evx_timeline_write_trace (the Python tests parse the JSON itself). */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "util.h"

#define SLEEP2 ((void *)(intptr_t)2)

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf;
    long n;
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = (char *)calloc((size_t)n + 1, 1);
    if (buf != NULL && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    return buf;
}

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    const char *p = hay;
    while ((p = strstr(p, needle)) != NULL) {
        n++;
        p += strlen(needle);
    }
    return n;
}

static void t_labels_and_info(void)
{
    evx_stream_t a = NULL, b = NULL;
    evx_timeline_t tl = NULL;
    evx_timeline_mark_info_t info;
    uint32_t idx = 99;

    REQUIRE((a = make_stream(0)) != NULL);
    REQUIRE((b = make_stream(0)) != NULL);
    REQUIRE_OK(evx_device_create_timeline(0, 8, &tl));
    REQUIRE_OK(evx_timeline_mark_labeled(tl, a, "step", EVX_MARK_BEGIN, &idx));
    EXPECT(idx == 0);
    REQUIRE_OK(evx_stream_launch_host_func(a, host_sleep_ms, SLEEP2));
    REQUIRE_OK(evx_timeline_mark(tl, a, &idx));
    REQUIRE_OK(evx_timeline_mark_labeled(tl, a, "step", EVX_MARK_END, NULL));
    REQUIRE_OK(evx_timeline_synchronize(tl));

    memset(&info, 0xff, sizeof info);
    info.struct_size = (uint32_t)sizeof info;
    EXPECT_OK(evx_timeline_get_mark(tl, 0, &info));
    EXPECT(info.kind == EVX_MARK_BEGIN && info.index == 0 && info.ms == 0.0f &&
           info.stream == a && strcmp(info.label, "step") == 0);
    info.struct_size = (uint32_t)sizeof info;
    EXPECT_OK(evx_timeline_get_mark(tl, 1, &info));
    EXPECTF(info.kind == EVX_MARK_POINT && info.label[0] == '\0' &&
                info.ms >= 1.5f,
            "mark 1: kind %u label \"%s\" at %f ms", info.kind, info.label,
            (double)info.ms);
    EXPECT_FAIL(evx_timeline_get_mark(tl, 3, &info), EVX_ERROR_INVALID_VALUE);
    EXPECT(msg_has_int(evx_last_error_message(), 3));
    info.struct_size = 16;
    EXPECT_FAIL(evx_timeline_get_mark(tl, 0, &info), EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_timeline_get_mark(tl, 0, NULL), EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_timeline_mark_labeled(tl, b, NULL, EVX_MARK_POINT, NULL),
                EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_timeline_mark_labeled(tl, b, "x", 3, NULL),
                EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_timeline_mark_labeled(
                    tl, b,
                    "a label that is longer than sixty-three bytes, which evx refuses",
                    EVX_MARK_POINT, NULL),
                EVX_ERROR_INVALID_VALUE);
    {
        uint32_t count = 0;
        EXPECT_OK(evx_timeline_count(tl, &count));
        EXPECTF(count == 3, "refused marks were recorded: %u marks", count);
    }
out:
    drop_timeline(&tl);
    drop_stream(&a);
    drop_stream(&b);
}

static void t_write_trace(void)
{
    evx_stream_t a = NULL, b = NULL;
    evx_timeline_t tl = NULL;
    char path[] = "/tmp/evx-trace-XXXXXX";
    char *text = NULL;
    int fd = -1;

    REQUIRE((fd = mkstemp(path)) >= 0);
    close(fd);
    REQUIRE((a = make_stream(0)) != NULL);
    REQUIRE((b = make_stream(0)) != NULL);
    REQUIRE_OK(evx_device_create_timeline(0, 16, &tl));
    EXPECT_FAIL(evx_timeline_write_trace(tl, path, NULL),
                EVX_ERROR_INVALID_VALUE); /* no marks */
    REQUIRE_OK(evx_timeline_mark_labeled(tl, a, "train \"step\"", EVX_MARK_BEGIN, NULL));
    REQUIRE_OK(evx_timeline_mark_labeled(tl, a, "forward", EVX_MARK_BEGIN, NULL));
    REQUIRE_OK(evx_stream_launch_host_func(a, host_sleep_ms, SLEEP2));
    REQUIRE_OK(evx_timeline_mark_labeled(tl, a, "forward", EVX_MARK_END, NULL));
    REQUIRE_OK(evx_timeline_mark_labeled(tl, a, "loss", EVX_MARK_POINT, NULL));
    REQUIRE_OK(evx_timeline_mark(tl, a, NULL));
    REQUIRE_OK(evx_timeline_mark_labeled(tl, a, "", EVX_MARK_END, NULL));
    REQUIRE_OK(evx_stream_synchronize(a));
    REQUIRE_OK(evx_timeline_mark_labeled(tl, b, "copy", EVX_MARK_POINT, NULL));
    REQUIRE_OK(evx_timeline_mark(tl, b, NULL));
    EXPECT_FAIL(evx_timeline_write_trace(tl, NULL, NULL), EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_timeline_write_trace(tl, "/nonexistent-dir/t.json", NULL),
                EVX_ERROR_OPERATING_SYSTEM);
    EXPECT(str_has(evx_last_error_message(), "/nonexistent-dir/t.json"));
    REQUIRE_OK(evx_timeline_write_trace(tl, path, "conformance"));
    REQUIRE((text = slurp(path)) != NULL);
    EXPECT(strncmp(text, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[", 38) == 0);
    EXPECTF(count_of(text, "\"ph\":\"B\"") == 2 &&
                count_of(text, "\"ph\":\"E\"") == 2,
            "two ranges: %s", text);
    /* loss and the unlabeled mark after it are intervals; the last mark is
     * an instant; copy is an interval of stream b. */
    EXPECTF(count_of(text, "\"ph\":\"X\"") == 3 &&
                count_of(text, "\"ph\":\"i\"") == 1,
            "three intervals and an instant: %s", text);
    EXPECT(strstr(text, "\"name\":\"train \\\"step\\\"\"") != NULL);
    EXPECT(strstr(text, "\"name\":\"interval 4\"") != NULL);
    EXPECT(strstr(text, "\"name\":\"conformance\"") != NULL);
    EXPECT(count_of(text, "\"thread_name\"") == 2);
    EXPECT(strstr(text, "\"tid\":2") != NULL);

    /* A range left open, or closed twice, is refused. */
    REQUIRE_OK(evx_timeline_reset(tl));
    REQUIRE_OK(evx_timeline_mark_labeled(tl, a, "open", EVX_MARK_BEGIN, NULL));
    EXPECT_FAIL(evx_timeline_write_trace(tl, path, NULL), EVX_ERROR_INVALID_VALUE);
    EXPECT(str_has(evx_last_error_message(), "open"));
    REQUIRE_OK(evx_timeline_mark_labeled(tl, a, "", EVX_MARK_END, NULL));
    REQUIRE_OK(evx_timeline_mark_labeled(tl, a, "", EVX_MARK_END, NULL));
    EXPECT_FAIL(evx_timeline_write_trace(tl, path, NULL), EVX_ERROR_INVALID_VALUE);
    EXPECT(msg_has_int(evx_last_error_message(), 2));
out:
    free(text);
    if (fd >= 0)
        unlink(path);
    drop_timeline(&tl);
    drop_stream(&a);
    drop_stream(&b);
}

/* Set by a host function: CLOCK_MONOTONIC when it ran. */
static uint64_t g_host_ns;

static void host_clock(void *data)
{
    struct timespec ts;
    (void)data;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    g_host_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void t_anchor(void)
{
    evx_stream_t a = NULL;
    evx_timeline_t tl = NULL;
    evx_timeline_anchor_info_t an, got;
    evx_timeline_mark_info_t info;
    char path[] = "/tmp/evx-anchor-XXXXXX";
    char *text = NULL;
    int fd = -1;
    double mid_ns, mark_ns;

    REQUIRE((fd = mkstemp(path)) >= 0);
    close(fd);
    REQUIRE((a = make_stream(0)) != NULL);
    REQUIRE_OK(evx_device_create_timeline(0, 8, &tl));
    REQUIRE_OK(evx_timeline_mark(tl, a, NULL));
    REQUIRE_OK(evx_stream_launch_host_func(a, host_clock, NULL));
    REQUIRE_OK(evx_timeline_mark_labeled(tl, a, "after", EVX_MARK_POINT, NULL));
    REQUIRE_OK(evx_stream_synchronize(a));
    memset(&an, 0, sizeof an);
    an.struct_size = 16;
    EXPECT_FAIL(evx_timeline_anchor(tl, a, &an), EVX_ERROR_INVALID_VALUE);
    an.struct_size = (uint32_t)sizeof an;
    REQUIRE_OK(evx_timeline_anchor(tl, a, &an));
    EXPECTF(an.index == 2 && an.monotonic_before_ns <= an.monotonic_after_ns &&
                an.realtime_ns != 0,
            "anchor: index %u, window %llu..%llu", an.index,
            (unsigned long long)an.monotonic_before_ns,
            (unsigned long long)an.monotonic_after_ns);
    info.struct_size = (uint32_t)sizeof info;
    REQUIRE_OK(evx_timeline_get_mark(tl, 2, &info));
    EXPECT(info.kind == EVX_MARK_ANCHOR && strcmp(info.label, "anchor") == 0);
    /* The mark after the host function is, on the host's clock, no earlier
     * than the function's run, up to the anchor's window. */
    mid_ns = 0.5 * ((double)an.monotonic_before_ns + (double)an.monotonic_after_ns);
    REQUIRE_OK(evx_timeline_get_mark(tl, 1, &info));
    {
        evx_timeline_mark_info_t am;
        am.struct_size = (uint32_t)sizeof am;
        REQUIRE_OK(evx_timeline_get_mark(tl, 2, &am));
        mark_ns = mid_ns + ((double)info.ms - (double)am.ms) * 1e6;
    }
    EXPECTF(mark_ns + (double)(an.monotonic_after_ns - an.monotonic_before_ns) + 1e5 >=
                (double)g_host_ns,
            "the mark after the host function maps to %.0f ns, the function ran at %llu",
            mark_ns, (unsigned long long)g_host_ns);

    memset(&got, 0, sizeof got);
    got.struct_size = (uint32_t)sizeof got;
    EXPECT_OK(evx_timeline_get_anchor(tl, 2, &got));
    EXPECT(got.index == 2 && got.monotonic_before_ns == an.monotonic_before_ns &&
           got.monotonic_after_ns == an.monotonic_after_ns && got.realtime_ns == an.realtime_ns);
    EXPECT_FAIL(evx_timeline_get_anchor(tl, 1, &got), EVX_ERROR_INVALID_VALUE);
    EXPECT(str_has(evx_last_error_message(), "not an anchor"));
    EXPECT_FAIL(evx_timeline_get_anchor(tl, 2, NULL), EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_timeline_mark_labeled(tl, a, "x", EVX_MARK_ANCHOR, NULL),
                EVX_ERROR_INVALID_VALUE);
    EXPECT(str_has(evx_last_error_message(), "evx_timeline_anchor"));
    EXPECT_OK(evx_timeline_anchor(tl, a, NULL));

    REQUIRE_OK(evx_timeline_write_trace(tl, path, "anchored"));
    REQUIRE((text = slurp(path)) != NULL);
    EXPECTF(count_of(text, "\"name\":\"anchor\",\"cat\":\"evx\",\"ph\":\"i\"") == 2 &&
                strstr(text, "\"evx\":{\"clock\":\"CLOCK_MONOTONIC\",\"anchors\":[") != NULL &&
                count_of(text, "\"monotonic_before_ns\":") == 2,
            "two anchors: %s", text);
    REQUIRE_OK(evx_timeline_reset(tl));
    REQUIRE_OK(evx_timeline_mark(tl, a, NULL));
    EXPECT_FAIL(evx_timeline_get_anchor(tl, 0, &got), EVX_ERROR_INVALID_VALUE);
    REQUIRE_OK(evx_timeline_mark(tl, a, NULL));
    free(text);
    text = NULL;
    REQUIRE_OK(evx_timeline_write_trace(tl, path, NULL));
    REQUIRE((text = slurp(path)) != NULL);
    EXPECTF(strstr(text, "\"evx\":{") == NULL, "anchors after a reset: %s", text);
out:
    free(text);
    if (fd >= 0)
        unlink(path);
    drop_timeline(&tl);
    drop_stream(&a);
}

const conf_case conf_trace_cases[] = {
    {"trace.labels_and_mark_info", t_labels_and_info},
    {"trace.write_trace", t_write_trace},
    {"trace.anchor", t_anchor},
    {NULL, NULL},
};
