/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/*
 * evx in one page.
 *
 *  1. Events are made from the device, before any stream exists.
 *  2. "Other code" (here the raw driver, as PyTorch or CuPy would do it)
 *     makes a high-priority stream; evx borrows it.
 *  3. Work on the borrowed stream is timed with the events.
 *  4. A second stream, evx's own, waits for that work (a cross-stream wait)
 *     and does more work of its own.
 *  5. The timings are printed and everything is cleaned up.
 *
 * On a GPU the work is device memsets of 256 MiB; on the host emulation
 * (which has no memory API) it is host functions that sleep a few ms.
 * With EVX_DRIVER unset and no GPU driver, the demo runs itself again on
 * the host emulation.
 */
#define _POSIX_C_SOURCE 200809L

#include <cuda.h> /* types only: the driver is reached through evx's */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <evx/evx.h>

#define FILL_BYTES ((size_t)256 << 20)
#define FILLS_FIRST 4
#define FILLS_SECOND 2
#define HOST_WORK_MS 3

/* The raw driver API, looked up the way other CUDA code would. */
typedef struct driver_api {
    CUresult (*device_get)(CUdevice *, int);
    CUresult (*device_get_name)(char *, int, CUdevice);
    CUresult (*primary_retain)(CUcontext *, CUdevice);
    CUresult (*primary_release)(CUdevice);
    CUresult (*ctx_get_current)(CUcontext *);
    CUresult (*ctx_set_current)(CUcontext);
    CUresult (*stream_create_with_priority)(CUstream *, unsigned, int);
    CUresult (*stream_destroy)(CUstream);
    CUresult (*mem_alloc)(CUdeviceptr *, size_t);
    CUresult (*mem_free)(CUdeviceptr);
    CUresult (*memset_d32_async)(CUdeviceptr, unsigned, size_t, CUstream);
} driver_api;

typedef CUresult (*get_proc_fn)(const char *, void **, int, cuuint64_t,
                                CUdriverProcAddressQueryResult *);

static int report(const char *what, evx_status_t status)
{
    fprintf(stderr, "demo: %s failed: %s: %s\n", what,
            evx_status_name(status), evx_last_error_message());
    return 1;
}

static int report_cu(const char *what, CUresult r)
{
    fprintf(stderr, "demo: %s failed: CUresult %d (%s)\n", what, (int)r,
            evx_status_name((evx_status_t)r));
    return 1;
}

#define EVX(call) \
    do { \
        evx_status_t s_ = (call); \
        if (s_ != EVX_SUCCESS) { \
            rc = report(#call, s_); \
            goto cleanup; \
        } \
    } while (0)

#define CU(call) \
    do { \
        CUresult r_ = (call); \
        if (r_ != CUDA_SUCCESS) { \
            rc = report_cu(#call, r_); \
            goto cleanup; \
        } \
    } while (0)

static int lookup(get_proc_fn get_proc, const char *name, void *fn)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SUCCESS;
    if (get_proc(name, &p, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &found) !=
            CUDA_SUCCESS ||
        found != CU_GET_PROC_ADDRESS_SUCCESS || p == NULL) {
        fprintf(stderr, "demo: the driver has no %s\n", name);
        return 0;
    }
    memcpy(fn, &p, sizeof p);
    return 1;
}

static int load_driver_api(const char *path, int gpu, driver_api *api)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    void *sym;
    get_proc_fn get_proc;
    int ok = 1;

    memset(api, 0, sizeof *api);
    if (lib == NULL) {
        fprintf(stderr, "demo: dlopen(%s): %s\n", path, dlerror());
        return 0;
    }
    sym = dlsym(lib, "cuGetProcAddress_v2");
    if (sym == NULL) {
        fprintf(stderr, "demo: %s has no cuGetProcAddress_v2\n", path);
        return 0;
    }
    memcpy(&get_proc, &sym, sizeof sym);
    ok &= lookup(get_proc, "cuDeviceGet", &api->device_get);
    ok &= lookup(get_proc, "cuDevicePrimaryCtxRetain", &api->primary_retain);
    ok &= lookup(get_proc, "cuDevicePrimaryCtxRelease", &api->primary_release);
    ok &= lookup(get_proc, "cuCtxGetCurrent", &api->ctx_get_current);
    ok &= lookup(get_proc, "cuCtxSetCurrent", &api->ctx_set_current);
    ok &= lookup(get_proc, "cuStreamCreateWithPriority",
                 &api->stream_create_with_priority);
    ok &= lookup(get_proc, "cuStreamDestroy", &api->stream_destroy);
    if (gpu) {
        ok &= lookup(get_proc, "cuDeviceGetName", &api->device_get_name);
        ok &= lookup(get_proc, "cuMemAlloc", &api->mem_alloc);
        ok &= lookup(get_proc, "cuMemFree", &api->mem_free);
        ok &= lookup(get_proc, "cuMemsetD32Async", &api->memset_d32_async);
    }
    /* The library stays loaded: evx holds it open for the process. */
    return ok;
}

/* Host work for the emulation: a host function that sleeps. */
static void host_work(void *user_data)
{
    struct timespec ts;
    (void)user_data;
    ts.tv_sec = 0;
    ts.tv_nsec = HOST_WORK_MS * 1000000L;
    nanosleep(&ts, NULL);
}

/* Queues `count` units of work on `stream`: device memsets on a GPU, host
 * functions on the emulation. */
static evx_status_t queue_work(const driver_api *api, int gpu,
                               evx_stream_t stream, CUdeviceptr buffer,
                               int count)
{
    void *native = NULL;
    evx_status_t s = evx_stream_get_native(stream, &native);
    int i;
    for (i = 0; s == EVX_SUCCESS && i < count; i++) {
        if (gpu)
            s = (evx_status_t)api->memset_d32_async(
                buffer, 0x5eed0000u + (unsigned)i, FILL_BYTES / 4,
                (CUstream)native);
        else
            s = evx_stream_launch_host_func(stream, host_work, NULL);
    }
    return s;
}

/* Without a GPU driver, run again on the host emulation: evx picks its
 * driver once per process. */
static void fall_back_to_emulation(char **argv, evx_status_t why)
{
    const char *env = getenv("EVX_DRIVER");
    if (env != NULL && env[0] != '\0')
        return; /* a driver was chosen: report the failure instead */
    printf("no GPU driver (%s); running again on the host emulation\n",
           evx_status_name(why));
    fflush(stdout);
    if (setenv("EVX_DRIVER", "host", 1) != 0 ||
        setenv("EVX_DEMO_FELL_BACK", "1", 1) != 0)
        return;
    execv("/proc/self/exe", argv);
    perror("demo: execv(/proc/self/exe)");
}

int main(int argc, char **argv)
{
    driver_api api;
    const char *path = NULL;
    int emulation = 0, gpu, least = 0, greatest = 0, priority = 0, owned = -1;
    int rc = 0, have_primary = 0;
    CUdevice dev = 0;
    CUcontext primary = NULL, previous = NULL;
    CUstream theirs = NULL;
    CUdeviceptr buffer = 0;
    evx_stream_t borrowed = NULL, mine = NULL;
    evx_event_t start = NULL, handoff = NULL, end = NULL;
    float first_ms = 0, second_ms = 0, total_ms = 0;
    evx_status_t st;
    CUresult r;

    (void)argc;
    st = evx_driver_open();
    if (st != EVX_SUCCESS) {
        fall_back_to_emulation(argv, st);
        return report("evx_driver_open()", st);
    }
    EVX(evx_driver_get_path(&path));
    EVX(evx_driver_is_emulation(&emulation));
    gpu = !emulation;
    if (!load_driver_api(path, gpu, &api))
        return 1;
    CU(api.device_get(&dev, 0));
    if (gpu) {
        char name[256] = "";
        CU(api.device_get_name(name, (int)sizeof name, dev));
        printf("running on the GPU: %s\n", name);
    } else {
        printf("running on the host emulation (%s)\n",
               getenv("EVX_DEMO_FELL_BACK") ? "no GPU found"
                                            : "EVX_DRIVER=host");
    }
    printf("evx %s, driver %s\n", evx_version_string(), path);

    /* 1. Events belong to the device: made now, recorded later on any of
     *    its streams. */
    EVX(evx_device_create_event(0, EVX_EVENT_DEFAULT, &start));
    EVX(evx_device_create_event(0, EVX_EVENT_DEFAULT, &handoff));
    EVX(evx_device_create_event(0, EVX_EVENT_BLOCKING_SYNC, &end));

    /* 2. Other code makes a stream at the device's greatest priority, with
     *    its context current, as a framework would. */
    EVX(evx_device_stream_priority_range(0, &least, &greatest));
    CU(api.ctx_get_current(&previous));
    CU(api.primary_retain(&primary, dev));
    have_primary = 1;
    CU(api.ctx_set_current(primary));
    CU(api.stream_create_with_priority(&theirs, CU_STREAM_NON_BLOCKING,
                                       greatest));
    if (gpu)
        CU(api.mem_alloc(&buffer, FILL_BYTES));

    /* evx borrows it: the device is read from the stream itself. */
    EVX(evx_stream_wrap_external(EVX_DEVICE_FROM_STREAM, theirs, &borrowed));
    EVX(evx_stream_get_priority(borrowed, &priority));
    EVX(evx_stream_is_owned(borrowed, &owned));
    printf("borrowed stream: priority %d (device range %d..%d), %s\n",
           priority, greatest, least, owned ? "owned by evx" : "not owned");

    /* A second stream of evx's own, at the lowest priority. */
    EVX(evx_device_create_stream(0, EVX_STREAM_NON_BLOCKING, least, &mine));

    /* 3. Time work on the borrowed stream. */
    EVX(evx_event_record(start, borrowed));
    EVX(queue_work(&api, gpu, borrowed, buffer, FILLS_FIRST));
    EVX(evx_event_record(handoff, borrowed));

    /* 4. The second stream waits for it, then works on. */
    EVX(evx_stream_wait_event(mine, handoff, EVX_EVENT_WAIT_DEFAULT));
    EVX(queue_work(&api, gpu, mine, buffer, FILLS_SECOND));
    EVX(evx_event_record(end, mine));

    /* 5. Results. */
    EVX(evx_event_synchronize(end));
    EVX(evx_event_elapsed_time(&first_ms, start, handoff));
    EVX(evx_event_elapsed_time(&second_ms, handoff, end));
    EVX(evx_event_elapsed_time(&total_ms, start, end));
    if (gpu) {
        printf("borrowed stream: %d x %zu MiB memset in %.3f ms (%.1f GB/s)\n",
               FILLS_FIRST, FILL_BYTES >> 20, (double)first_ms,
               (double)FILLS_FIRST * (double)FILL_BYTES /
                   ((double)first_ms * 1e6));
        printf("own stream, after waiting: %d x %zu MiB memset in %.3f ms\n",
               FILLS_SECOND, FILL_BYTES >> 20, (double)second_ms);
    } else {
        printf("borrowed stream: %d x %d ms host work in %.3f ms\n",
               FILLS_FIRST, HOST_WORK_MS, (double)first_ms);
        printf("own stream, after waiting: %d x %d ms host work in %.3f ms\n",
               FILLS_SECOND, HOST_WORK_MS, (double)second_ms);
    }
    printf("start to end across both streams: %.3f ms\n", (double)total_ms);

cleanup:
    /* evx's handles first; the borrowed stream stays its maker's. */
    if (start != NULL && (st = evx_event_destroy(start)) != EVX_SUCCESS)
        rc = report("evx_event_destroy(start)", st);
    if (handoff != NULL && (st = evx_event_destroy(handoff)) != EVX_SUCCESS)
        rc = report("evx_event_destroy(handoff)", st);
    if (end != NULL && (st = evx_event_destroy(end)) != EVX_SUCCESS)
        rc = report("evx_event_destroy(end)", st);
    if (mine != NULL) {
        if ((st = evx_stream_synchronize(mine)) != EVX_SUCCESS)
            rc = report("evx_stream_synchronize(mine)", st);
        if ((st = evx_stream_destroy(mine)) != EVX_SUCCESS)
            rc = report("evx_stream_destroy(mine)", st);
    }
    if (borrowed != NULL) {
        if ((st = evx_stream_synchronize(borrowed)) != EVX_SUCCESS)
            rc = report("evx_stream_synchronize(borrowed)", st);
        if ((st = evx_stream_destroy(borrowed)) != EVX_SUCCESS)
            rc = report("evx_stream_destroy(borrowed)", st);
    }
    /* Then the other code cleans up what it made. */
    if (buffer != 0 && (r = api.mem_free(buffer)) != CUDA_SUCCESS)
        rc = report_cu("cuMemFree", r);
    if (theirs != NULL && (r = api.stream_destroy(theirs)) != CUDA_SUCCESS)
        rc = report_cu("cuStreamDestroy", r);
    if (have_primary) {
        if ((r = api.ctx_set_current(previous)) != CUDA_SUCCESS)
            rc = report_cu("cuCtxSetCurrent", r);
        if ((r = api.primary_release(dev)) != CUDA_SUCCESS)
            rc = report_cu("cuDevicePrimaryCtxRelease", r);
    }
    if (rc == 0)
        printf("done\n");
    return rc;
}
