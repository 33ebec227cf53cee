/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/* Status codes, their names and strings, versions, the per-thread error. */
#define _POSIX_C_SOURCE 200809L

#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "util.h"

#define EVX_CONF_ERRORS(X) \
    X(INVALID_VALUE) \
    X(OUT_OF_MEMORY) \
    X(NOT_INITIALIZED) \
    X(DEINITIALIZED) \
    X(PROFILER_DISABLED) \
    X(PROFILER_NOT_INITIALIZED) \
    X(PROFILER_ALREADY_STARTED) \
    X(PROFILER_ALREADY_STOPPED) \
    X(STUB_LIBRARY) \
    X(CALL_REQUIRES_NEWER_DRIVER) \
    X(DEVICE_UNAVAILABLE) \
    X(NO_DEVICE) \
    X(INVALID_DEVICE) \
    X(DEVICE_NOT_LICENSED) \
    X(INVALID_IMAGE) \
    X(INVALID_CONTEXT) \
    X(CONTEXT_ALREADY_CURRENT) \
    X(MAP_FAILED) \
    X(UNMAP_FAILED) \
    X(ARRAY_IS_MAPPED) \
    X(ALREADY_MAPPED) \
    X(NO_BINARY_FOR_GPU) \
    X(ALREADY_ACQUIRED) \
    X(NOT_MAPPED) \
    X(NOT_MAPPED_AS_ARRAY) \
    X(NOT_MAPPED_AS_POINTER) \
    X(ECC_UNCORRECTABLE) \
    X(UNSUPPORTED_LIMIT) \
    X(CONTEXT_ALREADY_IN_USE) \
    X(PEER_ACCESS_UNSUPPORTED) \
    X(INVALID_PTX) \
    X(INVALID_GRAPHICS_CONTEXT) \
    X(NVLINK_UNCORRECTABLE) \
    X(JIT_COMPILER_NOT_FOUND) \
    X(UNSUPPORTED_PTX_VERSION) \
    X(JIT_COMPILATION_DISABLED) \
    X(UNSUPPORTED_EXEC_AFFINITY) \
    X(UNSUPPORTED_DEVSIDE_SYNC) \
    X(CONTAINED) \
    X(INVALID_SOURCE) \
    X(FILE_NOT_FOUND) \
    X(SHARED_OBJECT_SYMBOL_NOT_FOUND) \
    X(SHARED_OBJECT_INIT_FAILED) \
    X(OPERATING_SYSTEM) \
    X(INVALID_HANDLE) \
    X(ILLEGAL_STATE) \
    X(LOSSY_QUERY) \
    X(NOT_FOUND) \
    X(NOT_READY) \
    X(ILLEGAL_ADDRESS) \
    X(LAUNCH_OUT_OF_RESOURCES) \
    X(LAUNCH_TIMEOUT) \
    X(LAUNCH_INCOMPATIBLE_TEXTURING) \
    X(PEER_ACCESS_ALREADY_ENABLED) \
    X(PEER_ACCESS_NOT_ENABLED) \
    X(PRIMARY_CONTEXT_ACTIVE) \
    X(CONTEXT_IS_DESTROYED) \
    X(ASSERT) \
    X(TOO_MANY_PEERS) \
    X(HOST_MEMORY_ALREADY_REGISTERED) \
    X(HOST_MEMORY_NOT_REGISTERED) \
    X(HARDWARE_STACK_ERROR) \
    X(ILLEGAL_INSTRUCTION) \
    X(MISALIGNED_ADDRESS) \
    X(INVALID_ADDRESS_SPACE) \
    X(INVALID_PC) \
    X(LAUNCH_FAILED) \
    X(COOPERATIVE_LAUNCH_TOO_LARGE) \
    X(TENSOR_MEMORY_LEAK) \
    X(NOT_PERMITTED) \
    X(NOT_SUPPORTED) \
    X(SYSTEM_NOT_READY) \
    X(SYSTEM_DRIVER_MISMATCH) \
    X(COMPAT_NOT_SUPPORTED_ON_DEVICE) \
    X(MPS_CONNECTION_FAILED) \
    X(MPS_RPC_FAILURE) \
    X(MPS_SERVER_NOT_READY) \
    X(MPS_MAX_CLIENTS_REACHED) \
    X(MPS_MAX_CONNECTIONS_REACHED) \
    X(MPS_CLIENT_TERMINATED) \
    X(CDP_NOT_SUPPORTED) \
    X(CDP_VERSION_MISMATCH) \
    X(STREAM_CAPTURE_UNSUPPORTED) \
    X(STREAM_CAPTURE_INVALIDATED) \
    X(STREAM_CAPTURE_MERGE) \
    X(STREAM_CAPTURE_UNMATCHED) \
    X(STREAM_CAPTURE_UNJOINED) \
    X(STREAM_CAPTURE_ISOLATION) \
    X(STREAM_CAPTURE_IMPLICIT) \
    X(CAPTURED_EVENT) \
    X(STREAM_CAPTURE_WRONG_THREAD) \
    X(TIMEOUT) \
    X(GRAPH_EXEC_UPDATE_FAILURE) \
    X(EXTERNAL_DEVICE) \
    X(INVALID_CLUSTER_SIZE) \
    X(FUNCTION_NOT_LOADED) \
    X(INVALID_RESOURCE_TYPE) \
    X(INVALID_RESOURCE_CONFIGURATION) \
    X(KEY_ROTATION) \
    X(UNKNOWN)

typedef struct named_code {
    evx_status_t evx;
    int cuda;
    const char *name;
} named_code;

#define ROW(n) {EVX_ERROR_##n, (int)CUDA_ERROR_##n, "EVX_ERROR_" #n},
static const named_code codes[] = {
    {EVX_SUCCESS, (int)CUDA_SUCCESS, "EVX_SUCCESS"},
    EVX_CONF_ERRORS(ROW)
};
#undef ROW
#define N_CODES (sizeof codes / sizeof codes[0])

static void t_values_match_cuda(void)
{
    size_t i;
    for (i = 0; i < N_CODES; i++)
        EXPECTF(codes[i].evx == codes[i].cuda, "%s is %d, cuda.h says %d",
                codes[i].name, codes[i].evx, codes[i].cuda);
    EXPECT(EVX_SUCCESS == 0);
    EXPECT(EVX_ERROR_INVALID_VALUE == 1);
    EXPECT(EVX_ERROR_OUT_OF_MEMORY == 2);
    EXPECT(EVX_ERROR_NOT_INITIALIZED == 3);
    EXPECT(EVX_ERROR_NO_DEVICE == 100);
    EXPECT(EVX_ERROR_INVALID_DEVICE == 101);
    EXPECT(EVX_ERROR_INVALID_CONTEXT == 201);
    EXPECT(EVX_ERROR_INVALID_HANDLE == 400);
    EXPECT(EVX_ERROR_ILLEGAL_STATE == 401);
    EXPECT(EVX_ERROR_NOT_READY == 600);
    EXPECT(EVX_ERROR_NOT_SUPPORTED == 801);
    EXPECT(EVX_ERROR_UNKNOWN == 999);
    EXPECT(sizeof(evx_status_t) == 4);
}

static void t_names_and_strings(void)
{
    size_t i, j;
    for (i = 0; i < N_CODES; i++) {
        const char *n = evx_status_name(codes[i].evx);
        const char *s = evx_status_string(codes[i].evx);
        if (!EXPECTF(n != NULL, "evx_status_name(%d) is NULL", codes[i].evx))
            continue;
        EXPECTF(strncmp(n, "EVX_", 4) == 0, "name of %d is \"%s\"",
                codes[i].evx, n);
        EXPECTF(strcmp(n, codes[i].name) == 0,
                "evx_status_name(%d) is \"%s\", expected \"%s\"", codes[i].evx,
                n, codes[i].name);
        if (!EXPECTF(s != NULL, "evx_status_string(%d) is NULL", codes[i].evx))
            continue;
        EXPECTF(s[0] != '\0', "evx_status_string(%s) is empty", codes[i].name);
        EXPECTF(strchr(s, '\n') == NULL,
                "evx_status_string(%s) is not one line: \"%s\"", codes[i].name,
                s);
    }
    /* No two named codes share a value, so no two share a name. */
    for (i = 0; i < N_CODES; i++)
        for (j = i + 1; j < N_CODES; j++)
            EXPECTF(codes[i].evx != codes[j].evx, "%s and %s are both %d",
                    codes[i].name, codes[j].name, codes[i].evx);
    /* The strings describe: success and an error do not read the same. */
    EXPECT(strcmp(evx_status_string(EVX_SUCCESS),
                  evx_status_string(EVX_ERROR_INVALID_HANDLE)) != 0);
    EXPECT(strcmp(evx_status_string(EVX_ERROR_INVALID_VALUE),
                  evx_status_string(EVX_ERROR_INVALID_HANDLE)) != 0);
}

static void t_unknown_codes(void)
{
    static const int unknown[] = {12345, -1, 9, 35, 601, 998, 1000,
                                  0x7FFFFFFE, -2147483647 - 1};
    size_t i;
    for (i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        const char *n = evx_status_name(unknown[i]);
        const char *s = evx_status_string(unknown[i]);
        if (EXPECTF(n != NULL, "evx_status_name(%d) is NULL", unknown[i]))
            EXPECTF(strcmp(n, "EVX_STATUS_UNRECOGNIZED") == 0,
                    "evx_status_name(%d) is \"%s\"", unknown[i], n);
        if (EXPECTF(s != NULL, "evx_status_string(%d) is NULL", unknown[i]))
            EXPECTF(s[0] != '\0', "evx_status_string(%d) is empty",
                    unknown[i]);
    }
}

static void t_version(void)
{
    char want[32];
    const char *s = evx_version_string();
    EXPECTF(evx_version() == EVX_VERSION_NUMBER, "evx_version() = %u, "
            "EVX_VERSION_NUMBER = %d", evx_version(), EVX_VERSION_NUMBER);
    EXPECT(EVX_VERSION_NUMBER == EVX_VERSION_MAJOR * 10000 +
                                     EVX_VERSION_MINOR * 100 +
                                     EVX_VERSION_PATCH);
    snprintf(want, sizeof want, "%d.%d.%d", EVX_VERSION_MAJOR,
             EVX_VERSION_MINOR, EVX_VERSION_PATCH);
    if (EXPECT(s != NULL))
        EXPECTF(strcmp(s, want) == 0, "evx_version_string() = \"%s\", "
                "expected \"%s\"", s, want);
    EXPECT(evx_version_string() == s); /* static */
}

/* ---- the per-thread last error ---------------------------------------- */

typedef struct thread_probe {
    int fresh_empty;      /* a new thread starts with "" and SUCCESS */
    int own_failure_seen; /* its own failure is visible to it */
    char msg[512];
} thread_probe;

static void *probe_main(void *arg)
{
    thread_probe *p = (thread_probe *)arg;
    const char *m = evx_last_error_message();
    p->fresh_empty = m != NULL && m[0] == '\0' &&
                     evx_last_error() == EVX_SUCCESS;
    if (evx_event_destroy(NULL) == EVX_ERROR_INVALID_HANDLE &&
        evx_last_error() == EVX_ERROR_INVALID_HANDLE) {
        m = evx_last_error_message();
        p->own_failure_seen = m != NULL && m[0] != '\0';
        if (m != NULL)
            snprintf(p->msg, sizeof p->msg, "%s", m);
    }
    return NULL;
}

static void t_last_error(void)
{
    char first[512];
    const char *m;
    evx_stream_t s = NULL;
    evx_event_t e = NULL, done = NULL;
    conf_gate *g = gate_new();
    thread_probe probe;
    pthread_t th;

    evx_clear_last_error();
    m = evx_last_error_message();
    EXPECT(m != NULL && m[0] == '\0');
    EXPECT_STATUS(evx_last_error(), EVX_SUCCESS);

    /* A failure sets both. */
    EXPECT_STATUS(evx_device_create_event(0, 0x80, &e), EVX_ERROR_INVALID_VALUE);
    EXPECT_STATUS(evx_last_error(), EVX_ERROR_INVALID_VALUE);
    m = evx_last_error_message();
    REQUIRE(m != NULL && m[0] != '\0');
    snprintf(first, sizeof first, "%s", m);
    conf_note("message for flags 0x80: %s", first);

    /* Successful calls leave it alone. */
    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((done = make_event(0, 0)) != NULL);
    EXPECT_OK(evx_event_record(done, s));
    EXPECT_OK(evx_event_synchronize(done));
    EXPECT_OK(evx_event_query(done));
    EXPECT_STATUS(evx_last_error(), EVX_ERROR_INVALID_VALUE);
    EXPECTF(strcmp(evx_last_error_message(), first) == 0,
            "a successful call changed the message to \"%s\"",
            evx_last_error_message());

    /* NOT_READY is an answer, not a failure: it leaves it alone too. */
    REQUIRE((e = make_event(0, 0)) != NULL);
    REQUIRE_OK(gate_launch(s, g));
    REQUIRE_OK(evx_event_record(e, s));
    EXPECT_STATUS(evx_event_query(e), EVX_ERROR_NOT_READY);
    EXPECT_STATUS(evx_stream_query(s), EVX_ERROR_NOT_READY);
    {
        float ms = 0;
        EXPECT_STATUS(evx_event_elapsed_time(&ms, done, e),
                      EVX_ERROR_NOT_READY);
    }
    EXPECT_STATUS(evx_last_error(), EVX_ERROR_INVALID_VALUE);
    EXPECTF(strcmp(evx_last_error_message(), first) == 0,
            "NOT_READY changed the message to \"%s\"",
            evx_last_error_message());

    /* Another thread sees its own error, not this one's, and its failure
     * does not change this thread's. */
    memset(&probe, 0, sizeof probe);
    REQUIRE(pthread_create(&th, NULL, probe_main, &probe) == 0);
    pthread_join(th, NULL);
    EXPECTF(probe.fresh_empty, "a new thread does not start with an empty "
                               "message and EVX_SUCCESS");
    EXPECT(probe.own_failure_seen);
    EXPECT_STATUS(evx_last_error(), EVX_ERROR_INVALID_VALUE);
    EXPECTF(strcmp(evx_last_error_message(), first) == 0,
            "another thread's failure changed this thread's message to "
            "\"%s\"", evx_last_error_message());

    /* A newer failure replaces it; clear forgets it. */
    EXPECT_STATUS(evx_event_query(NULL), EVX_ERROR_INVALID_HANDLE);
    EXPECT_STATUS(evx_last_error(), EVX_ERROR_INVALID_HANDLE);
    EXPECT(strcmp(evx_last_error_message(), first) != 0);
    evx_clear_last_error();
    EXPECT_STATUS(evx_last_error(), EVX_SUCCESS);
    EXPECT(evx_last_error_message()[0] == '\0');
out:
    gate_open(g);
    if (s != NULL)
        EXPECT_OK(evx_stream_synchronize(s));
    drop_event(&e);
    drop_event(&done);
    drop_stream(&s);
}

const conf_case conf_status_cases[] = {
    {"status.values_match_cuda_h", t_values_match_cuda},
    {"status.names_and_strings", t_names_and_strings},
    {"status.unknown_codes", t_unknown_codes},
    {"status.version", t_version},
    {"status.last_error_per_thread", t_last_error},
    {NULL, NULL},
};
