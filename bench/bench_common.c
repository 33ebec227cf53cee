/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
#define _GNU_SOURCE /* RTLD_NOLOAD */

#include "bench_common.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef CUresult (*get_proc_fn)(const char *symbol, void **pfn,
                                int cuda_version, cuuint64_t flags,
                                CUdriverProcAddressQueryResult *status);

/* Looks `name` up through cuGetProcAddress_v2 as a CUDA 13.0 caller would,
 * and stores the function pointer in *dst (a function pointer object of
 * size `size`). */
static int lookup(get_proc_fn get_proc, const char *name, void *dst,
                  size_t size, int required)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult r = get_proc(name, &p, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &st);
    if (r != CUDA_SUCCESS || st != CU_GET_PROC_ADDRESS_SUCCESS || p == NULL) {
        if (required)
            fprintf(stderr,
                    "bench: the driver has no %s for CUDA 13.0 "
                    "(cuGetProcAddress_v2 returned %d, status %d)\n",
                    name, (int)r, (int)st);
        memset(dst, 0, size);
        return required ? -1 : 0;
    }
    /* memcpy: ISO C has no cast from void * to a function pointer. */
    memcpy(dst, &p, size);
    return 0;
}

#define LOOKUP(get_proc, raw, member, required)                               \
    lookup((get_proc), "cu" #member, &(raw)->member, sizeof((raw)->member),  \
           (required))

int bench_raw_open(bench_raw *raw)
{
    memset(raw, 0, sizeof *raw);
    evx_status_t s = evx_driver_open();
    if (s != EVX_SUCCESS) {
        fprintf(stderr, "bench: evx_driver_open: %s: %s\n",
                evx_status_name(s), evx_last_error_message());
        return -1;
    }
    if ((s = evx_driver_get_path(&raw->path)) != EVX_SUCCESS ||
        (s = evx_driver_get_version(&raw->version)) != EVX_SUCCESS ||
        (s = evx_driver_is_emulation(&raw->emulation)) != EVX_SUCCESS) {
        fprintf(stderr, "bench: reading the driver's description: %s: %s\n",
                evx_status_name(s), evx_last_error_message());
        return -1;
    }
    int count = 0;
    if ((s = evx_device_count(&count)) != EVX_SUCCESS || count < 1) {
        fprintf(stderr, "bench: evx_device_count: %s, %d devices\n",
                evx_status_name(s), count);
        return -1;
    }

    /* RTLD_NOLOAD: only the library evx already has open will do, so the
     * raw calls and the evx calls run on one driver instance. */
    raw->lib = dlopen(raw->path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (raw->lib == NULL) {
        const char *why = dlerror();
        fprintf(stderr,
                "bench: the driver evx opened (%s) is not loaded in this "
                "process under that name%s%s\n",
                raw->path, why ? ": " : "", why ? why : "");
        return -1;
    }
    void *gp = dlsym(raw->lib, "cuGetProcAddress_v2");
    if (gp == NULL) {
        fprintf(stderr, "bench: %s exports no cuGetProcAddress_v2\n",
                raw->path);
        bench_raw_close(raw);
        return -1;
    }
    get_proc_fn get_proc;
    memcpy(&get_proc, &gp, sizeof get_proc);

    int bad = 0;
    bad |= LOOKUP(get_proc, raw, Init, 1);
    bad |= LOOKUP(get_proc, raw, DeviceGet, 1);
    bad |= LOOKUP(get_proc, raw, DevicePrimaryCtxRetain, 1);
    bad |= LOOKUP(get_proc, raw, DevicePrimaryCtxRelease, 1);
    bad |= LOOKUP(get_proc, raw, CtxSetCurrent, 1);
    bad |= LOOKUP(get_proc, raw, StreamCreateWithPriority, 1);
    bad |= LOOKUP(get_proc, raw, StreamDestroy, 1);
    bad |= LOOKUP(get_proc, raw, StreamSynchronize, 1);
    bad |= LOOKUP(get_proc, raw, StreamWaitEvent, 1);
    bad |= LOOKUP(get_proc, raw, EventCreate, 1);
    bad |= LOOKUP(get_proc, raw, EventDestroy, 1);
    bad |= LOOKUP(get_proc, raw, EventRecord, 1);
    bad |= LOOKUP(get_proc, raw, EventQuery, 1);
    bad |= LOOKUP(get_proc, raw, EventSynchronize, 1);
    bad |= LOOKUP(get_proc, raw, EventElapsedTime, 1);
    bad |= LOOKUP(get_proc, raw, GetErrorName, 0);
    bad |= LOOKUP(get_proc, raw, LaunchHostFunc, 1);
    bad |= LOOKUP(get_proc, raw, ModuleLoadData, 0);
    bad |= LOOKUP(get_proc, raw, ModuleUnload, 0);
    bad |= LOOKUP(get_proc, raw, ModuleGetFunction, 0);
    bad |= LOOKUP(get_proc, raw, LaunchKernel, 0);
    bad |= LOOKUP(get_proc, raw, MemHostAlloc, 0);
    bad |= LOOKUP(get_proc, raw, MemHostGetDevicePointer, 0);
    bad |= LOOKUP(get_proc, raw, MemFreeHost, 0);
    bad |= LOOKUP(get_proc, raw, StreamWriteValue64, 0);
    bad |= LOOKUP(get_proc, raw, StreamWaitValue64, 0);
    bad |= LOOKUP(get_proc, raw, MemHostRegister, 0);
    bad |= LOOKUP(get_proc, raw, StreamIsCapturing, 0);
    bad |= LOOKUP(get_proc, raw, MemGetInfo, 0);
    if (bad) {
        bench_raw_close(raw);
        return -1;
    }

    CUresult r;
    if ((r = raw->Init(0)) != CUDA_SUCCESS ||
        (r = raw->DeviceGet(&raw->dev, 0)) != CUDA_SUCCESS) {
        fprintf(stderr, "bench: cuInit/cuDeviceGet: %s\n",
                bench_raw_status_name(raw, r));
        bench_raw_close(raw);
        return -1;
    }
    if ((r = raw->DevicePrimaryCtxRetain(&raw->ctx, raw->dev)) !=
        CUDA_SUCCESS) {
        fprintf(stderr, "bench: cuDevicePrimaryCtxRetain: %s\n",
                bench_raw_status_name(raw, r));
        raw->ctx = NULL;
        bench_raw_close(raw);
        return -1;
    }
    if ((r = raw->CtxSetCurrent(raw->ctx)) != CUDA_SUCCESS) {
        fprintf(stderr, "bench: cuCtxSetCurrent: %s\n",
                bench_raw_status_name(raw, r));
        bench_raw_close(raw);
        return -1;
    }
    return 0;
}

void bench_raw_close(bench_raw *raw)
{
    if (raw->ctx != NULL) {
        CUresult r = raw->CtxSetCurrent(NULL);
        if (r != CUDA_SUCCESS)
            fprintf(stderr, "bench: cuCtxSetCurrent(NULL): %s\n",
                    bench_raw_status_name(raw, r));
        r = raw->DevicePrimaryCtxRelease(raw->dev);
        if (r != CUDA_SUCCESS)
            fprintf(stderr, "bench: cuDevicePrimaryCtxRelease: %s\n",
                    bench_raw_status_name(raw, r));
        raw->ctx = NULL;
    }
    if (raw->lib != NULL) {
        dlclose(raw->lib);
        raw->lib = NULL;
    }
}

const char *bench_raw_status_name(const bench_raw *raw, CUresult r)
{
    static char buf[32];
    const char *name = NULL;
    if (raw != NULL && raw->GetErrorName != NULL &&
        raw->GetErrorName(r, &name) == CUDA_SUCCESS && name != NULL)
        return name;
    snprintf(buf, sizeof buf, "CUresult %d", (int)r);
    return buf;
}

void bench_print_driver(FILE *out, const bench_raw *raw)
{
    fprintf(out, "evx %s; driver %s, version %d, %s\n", evx_version_string(),
            raw->path, raw->version,
            raw->emulation ? "HOST EMULATION (CPU timings only, no GPU)"
                           : "GPU driver");
    fprintf(out, "DRIVER path=%s version=%d emulation=%d evx=%s\n", raw->path,
            raw->version, raw->emulation, evx_version_string());
}

double bench_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

long bench_parse_long(const char *opt, const char *text, long lo, long hi)
{
    char *end = NULL;
    errno = 0;
    long v = text ? strtol(text, &end, 10) : 0;
    if (text == NULL || *text == '\0' || *end != '\0' || errno != 0 ||
        v < lo || v > hi) {
        fprintf(stderr, "%s needs an integer from %ld to %ld, got '%s'\n",
                opt, lo, hi, text ? text : "(nothing)");
        return -1;
    }
    return v;
}

void bench_die_raw(const bench_raw *raw, CUresult r, const char *call,
                   const char *file, int line)
{
    fprintf(stderr, "%s:%d: %s -> %s\n", file, line, call,
            bench_raw_status_name(raw, r));
    exit(1);
}

void bench_die_evx(evx_status_t s, const char *call, const char *file,
                   int line)
{
    fprintf(stderr, "%s:%d: %s -> %s: %s\n", file, line, call,
            evx_status_name(s), evx_last_error_message());
    exit(1);
}
