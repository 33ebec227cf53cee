/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/* The driver evx opened, its devices, and what happens when none opens. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "util.h"

extern char **environ;

static void t_open(void)
{
    EXPECT_OK(evx_driver_open());
    EXPECT_OK(evx_driver_open()); /* once per process: the same outcome */
}

static void t_info(void)
{
    const char *path = NULL, *path2 = NULL;
    const char *env = getenv("EVX_DRIVER");
    int version = -1, emu = -1;

    EXPECT_OK(evx_driver_get_path(&path));
    EXPECT_OK(evx_driver_get_path(&path2));
    EXPECT_OK(evx_driver_get_version(&version));
    EXPECT_OK(evx_driver_is_emulation(&emu));
    if (!EXPECT(path != NULL))
        return;
    EXPECT(path[0] != '\0');
    EXPECT(path == path2); /* static for the life of the process */
    EXPECTF(version > 0, "driver version %d", version);
    EXPECTF(emu == 0 || emu == 1, "is_emulation gave %d", emu);
    conf_note("path %s, version %d, emulation %d", path, version, emu);
    if (env == NULL || env[0] == '\0') {
        EXPECTF(strcmp(path, "libcuda.so.1") == 0,
                "EVX_DRIVER unset: expected libcuda.so.1, got \"%s\"", path);
        EXPECT(emu == 0);
    } else if (strcmp(env, "host") == 0) {
        EXPECTF(strstr(path, "libevx-host") != NULL,
                "EVX_DRIVER=host: path \"%s\" is not the emulation", path);
        EXPECT(emu == 1);
    } else {
        EXPECTF(strcmp(path, env) == 0, "EVX_DRIVER=%s: path \"%s\"", env,
                path);
    }
}

static void t_device_count(void)
{
    int n = -1, n2 = -1;
    EXPECT_OK(evx_device_count(&n));
    EXPECT_OK(evx_device_count(&n2));
    EXPECTF(n >= 1, "%d devices", n);
    EXPECT(n == n2);
}

static void t_priority_range(void)
{
    int d, n = conf_device_count();
    for (d = 0; d < n; d++) {
        int least = 1000, greatest = 1000, l2 = 1000, g2 = 1000;
        EXPECT_OK(evx_device_stream_priority_range(d, &least, &greatest));
        EXPECTF(least >= greatest, "device %d: least %d < greatest %d", d,
                least, greatest);
        EXPECTF(greatest <= 0 && 0 <= least,
                "device %d: the default priority 0 is outside [%d, %d]", d,
                greatest, least);
        EXPECT_OK(evx_device_stream_priority_range(d, &l2, NULL));
        EXPECT_OK(evx_device_stream_priority_range(d, NULL, &g2));
        EXPECT(l2 == least);
        EXPECT(g2 == greatest);
        conf_note("device %d: priorities least %d, greatest %d", d, least,
                  greatest);
    }
}

static void t_trim(void)
{
    int d, i, n = conf_device_count();
    for (d = 0; d < n; d++) {
        evx_event_t ev[8];
        evx_stream_t s = make_stream(d);
        if (s == NULL)
            return;
        for (i = 0; i < 8; i++) {
            ev[i] = make_event(d, 0);
            if (ev[i] != NULL)
                EXPECT_OK(evx_event_record(ev[i], s));
        }
        EXPECT_OK(evx_stream_synchronize(s));
        for (i = 0; i < 8; i++)
            drop_event(&ev[i]);
        EXPECT_OK(evx_device_trim(d));
        EXPECT_OK(evx_device_trim(d)); /* nothing left: still fine */
        /* Events still work after a trim. */
        ev[0] = make_event(d, 0);
        if (ev[0] != NULL) {
            EXPECT_OK(evx_event_query(ev[0]));
            EXPECT_OK(evx_event_record(ev[0], s));
            EXPECT_OK(evx_event_synchronize(ev[0]));
            drop_event(&ev[0]);
        }
        drop_stream(&s);
    }
}

/* ---- a driver that cannot be opened, in a child process ---------------- */

static int run_child(const char *mode, const char *driver)
{
    char var[1024];
    const char *vars[2];
    snprintf(var, sizeof var, "EVX_DRIVER=%s", driver);
    vars[0] = var;
    vars[1] = NULL;
    return run_child_env(mode, vars);
}

static void t_missing_driver(void)
{
    int rc = run_child("bad-driver", "/nonexistent/evx-conformance/libnope.so");
    EXPECTF(rc == 0, "the child (EVX_DRIVER=/nonexistent/...) exited %d", rc);
}

static void t_not_a_driver(void)
{
    int rc = run_child("not-a-driver", "libm.so.6");
    EXPECTF(rc == 0, "the child (EVX_DRIVER=libm.so.6) exited %d", rc);
}

/* Runs in the child: every call that needs a driver returns the loading
 * status, the message names the path, nothing crashes, nothing aborts. */
static int child_bad_driver(const char *driver)
{
    int fails = 0, n = -5, v = -5, emu = -5;
    const char *path = NULL;
    evx_event_t e = JUNK(evx_event_t);
    evx_stream_t s = JUNK(evx_stream_t);
    evx_timer_t t = JUNK(evx_timer_t);
    evx_status_t first = evx_driver_open();
    const char *m = evx_last_error_message();

#define CHILD_CHECK(cond) \
    do { \
        if (!(cond)) { \
            printf("    child: %s:%d: %s failed (message: %s)\n", __FILE__, \
                   __LINE__, #cond, evx_last_error_message()); \
            fails++; \
        } \
    } while (0)

    printf("    child: evx_driver_open() -> %s: %s\n", evx_status_name(first),
           m);
    CHILD_CHECK(first == EVX_ERROR_NOT_INITIALIZED);
    CHILD_CHECK(m != NULL && strstr(m, driver) != NULL);
    CHILD_CHECK(evx_last_error() == first);
    CHILD_CHECK(evx_driver_open() == first);
    CHILD_CHECK(evx_device_count(&n) == first);
    CHILD_CHECK(evx_driver_get_version(&v) == first);
    CHILD_CHECK(evx_driver_get_path(&path) == first);
    CHILD_CHECK(evx_driver_is_emulation(&emu) == first);
    CHILD_CHECK(evx_device_stream_priority_range(0, &n, &v) == first);
    CHILD_CHECK(evx_device_create_event(0, 0, &e) == first);
    CHILD_CHECK(e == NULL);
    CHILD_CHECK(evx_device_create_stream(0, 0, 0, &s) == first);
    CHILD_CHECK(s == NULL);
    CHILD_CHECK(evx_device_create_timer(0, &t) == first);
    m = evx_last_error_message();
    CHILD_CHECK(m != NULL && m[0] != '\0');
    /* What needs no driver still works. */
    CHILD_CHECK(evx_version() == EVX_VERSION_NUMBER);
    CHILD_CHECK(strcmp(evx_status_name(EVX_ERROR_INVALID_HANDLE),
                       "EVX_ERROR_INVALID_HANDLE") == 0);
    /* Handles are refused as handles. */
    CHILD_CHECK(evx_event_destroy(NULL) != EVX_SUCCESS);
    CHILD_CHECK(evx_stream_query(FORGE(evx_stream_t, 0x1234)) != EVX_SUCCESS);
#undef CHILD_CHECK
    return fails == 0 ? 0 : 1;
}

int conf_child_main(const char *mode)
{
    const char *driver = getenv("EVX_DRIVER");
    if (driver == NULL)
        driver = "";
    if (strcmp(mode, "bad-driver") == 0 || strcmp(mode, "not-a-driver") == 0)
        return child_bad_driver(driver);
    if (strncmp(mode, "fault-", 6) == 0)
        return conf_fault_child(mode);
    if (strcmp(mode, "ipc-peer") == 0)
        return conf_ipc_child();
    if (strcmp(mode, "fence-peer") == 0)
        return conf_fence_child();
    if (strcmp(mode, "fence-reexport") == 0)
        return conf_fence_reexport_child();
    if (strcmp(mode, "fence-importer") == 0)
        return conf_fence_importer_child();
    if (strcmp(mode, "fence-fd-peer") == 0)
        return conf_fence_fd_child();
    if (strcmp(mode, "fence-memfd") == 0)
        return conf_fence_memfd_child();
    if (strcmp(mode, "fence-no-memops") == 0)
        return conf_fence_no_memops_child();
    if (strcmp(mode, "hostfn-v2") == 0)
        return conf_hostfn_child();
    fprintf(stderr, "unknown child mode %s\n", mode);
    return 2;
}

const conf_case conf_driver_cases[] = {
    {"driver.open", t_open},
    {"driver.info", t_info},
    {"driver.device_count", t_device_count},
    {"driver.priority_range", t_priority_range},
    {"driver.trim", t_trim},
    {"driver.missing_library", t_missing_driver},
    {"driver.library_without_driver_api", t_not_a_driver},
    {NULL, NULL},
};
