/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/*
 * The host emulation's test-only calls (src/host/evx_host_debug.h: live
 * driver objects, injected faults, stalls), found in the driver library evx opened
 * with dlopen(RTLD_NOLOAD) + dlsym. No harness needed: the conformance
 * suite, the stress program and the fuzzers share it. On a real driver
 * there is nothing to count: host_debug_get() returns NULL.
 */
#ifndef EVX_TESTS_HOSTDEBUG_H
#define EVX_TESTS_HOSTDEBUG_H

#include "evx_host_debug.h"

typedef struct host_debug {
    void (*get_live)(evx_host_live *out);
    int (*set_fault)(const char *entry, long long nth, int status);
    long long (*faults_fired)(void);
    int (*set_stall)(const char *entry, long long nth);
    long long (*stalled)(void);
    void (*release_stalls)(void);
} host_debug;

/* The calls, or NULL when evx's driver is not the emulation (or it did not
 * open). Looked up once; thread-safe. */
const host_debug *host_debug_get(void);

/* The baseline for a leak check: retains evx's primary context on every
 * device (evx keeps one retain per device it has used, for the process) and
 * trims every device (evx_device_trim: the baseline holds no cached driver
 * events), then reads the counts. Returns 1, or 0 when there is nothing to
 * count. */
int host_live_start(evx_host_live *out);

/* Trims every device (evx_device_trim), then waits up to timeout_ms for the
 * counts to equal *start (host functions and released streams finish on
 * worker threads). *now receives the last counts read. Returns 1 when they
 * are back, 0 when not (or nothing to count: then *now is zeroed). */
int host_live_settle(const evx_host_live *start, evx_host_live *now,
                     int timeout_ms);

#endif /* EVX_TESTS_HOSTDEBUG_H */
