/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
#define _GNU_SOURCE /* RTLD_NOLOAD */

#include "hostdebug.h"

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include <evx/evx.h>

static host_debug found;
static int have;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void find(void)
{
    const char *path = NULL;
    int emu = 0;
    void *lib, *get, *set, *fired, *stall, *stalled, *release;
    if (evx_driver_is_emulation(&emu) != EVX_SUCCESS || !emu ||
        evx_driver_get_path(&path) != EVX_SUCCESS || path == NULL)
        return;
    /* The library evx holds open; NOLOAD: never a second copy. */
    lib = dlopen(path, RTLD_NOLOAD | RTLD_LAZY);
    if (lib == NULL)
        return;
    get = dlsym(lib, "evx_host_get_live");
    set = dlsym(lib, "evx_host_set_fault");
    fired = dlsym(lib, "evx_host_faults_fired");
    stall = dlsym(lib, "evx_host_set_stall");
    stalled = dlsym(lib, "evx_host_stalled");
    release = dlsym(lib, "evx_host_release_stalls");
    if (get != NULL && set != NULL && fired != NULL && stall != NULL &&
        stalled != NULL && release != NULL) {
        memcpy(&found.get_live, &get, sizeof get);
        memcpy(&found.set_fault, &set, sizeof set);
        memcpy(&found.faults_fired, &fired, sizeof fired);
        memcpy(&found.set_stall, &stall, sizeof stall);
        memcpy(&found.stalled, &stalled, sizeof stalled);
        memcpy(&found.release_stalls, &release, sizeof release);
        have = 1;
    }
    /* The handle is kept: evx keeps the library open for the process. */
}

const host_debug *host_debug_get(void)
{
    pthread_once(&once, find);
    return have ? &found : NULL;
}

int host_live_start(evx_host_live *out)
{
    const host_debug *h = host_debug_get();
    struct timespec pause = {0, 1000000};
    int n = 0, d, least, greatest, waited;
    memset(out, 0, sizeof *out);
    if (h == NULL)
        return 0;
    if (evx_device_count(&n) == EVX_SUCCESS)
        for (d = 0; d < n; d++) {
            (void)evx_device_stream_priority_range(d, &least, &greatest);
            (void)evx_device_trim(d);
        }
    /* A host function an earlier test queued may still be returning on the
     * emulation's worker (a notifier's delivery ends the watch, which its
     * destroy waits for, and then returns): it is no part of this baseline.
     * Up to 5 s (a loaded machine); one that never returns stays in it. */
    for (waited = 0;; waited++) {
        h->get_live(out);
        if (out->host_funcs == 0 || waited >= 5000)
            break;
        nanosleep(&pause, NULL);
    }
    return 1;
}

static int same(const evx_host_live *a, const evx_host_live *b)
{
    return a->events == b->events && a->streams == b->streams &&
           a->contexts == b->contexts && a->host_funcs == b->host_funcs &&
           a->user_objects == b->user_objects;
}

int host_live_settle(const evx_host_live *start, evx_host_live *now,
                     int timeout_ms)
{
    const host_debug *h = host_debug_get();
    struct timespec pause = {0, 1000000};
    int n = 0, d, waited = 0;
    memset(now, 0, sizeof *now);
    if (h == NULL)
        return 0;
    if (evx_device_count(&n) == EVX_SUCCESS)
        for (d = 0; d < n; d++)
            (void)evx_device_trim(d);
    for (;;) {
        h->get_live(now);
        if (same(start, now) || waited >= timeout_ms)
            return same(start, now);
        nanosleep(&pause, NULL);
        waited += 1;
    }
}
