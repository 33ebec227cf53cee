/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/*
 * Shared by the C benchmark programs: the raw driver entry points, looked up
 * in the very library evx opened, and small timing helpers.
 */
#ifndef EVX_BENCH_COMMON_H
#define EVX_BENCH_COMMON_H

#include <cuda.h>
#include <stddef.h>
#include <stdio.h>

#include "evx/evx.h"

/* The driver calls the benchmarks compare evx with. Member names drop the
 * "cu" prefix so that cuda.h's versioning macros (cuEventDestroy ->
 * cuEventDestroy_v2, ...) do not rename them. */
typedef struct bench_raw {
    void *lib; /* dlopen handle of evx's driver library */
    CUresult (*Init)(unsigned flags);
    CUresult (*DeviceGet)(CUdevice *dev, int ordinal);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice dev);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice dev);
    CUresult (*CtxSetCurrent)(CUcontext ctx);
    CUresult (*StreamCreateWithPriority)(CUstream *s, unsigned flags,
                                         int priority);
    CUresult (*StreamDestroy)(CUstream s);
    CUresult (*StreamSynchronize)(CUstream s);
    CUresult (*StreamWaitEvent)(CUstream s, CUevent e, unsigned flags);
    CUresult (*EventCreate)(CUevent *e, unsigned flags);
    CUresult (*EventDestroy)(CUevent e);
    CUresult (*EventRecord)(CUevent e, CUstream s);
    CUresult (*EventQuery)(CUevent e);
    CUresult (*EventSynchronize)(CUevent e);
    CUresult (*EventElapsedTime)(float *ms, CUevent start, CUevent end);
    CUresult (*GetErrorName)(CUresult r, const char **name); /* optional */
    CUresult (*LaunchHostFunc)(CUstream s, CUhostFn fn, void *data);
    /* Optional (absent from the host emulation): a kernel from PTX, and
     * mapped host memory, for evx-notify-latency's GPU-side hold. */
    CUresult (*ModuleLoadData)(CUmodule *m, const void *image);
    CUresult (*ModuleUnload)(CUmodule m);
    CUresult (*ModuleGetFunction)(CUfunction *f, CUmodule m, const char *name);
    CUresult (*LaunchKernel)(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                             unsigned bx, unsigned by, unsigned bz, unsigned shared,
                             CUstream s, void **params, void **extra);
    CUresult (*MemHostAlloc)(void **p, size_t size, unsigned flags);
    CUresult (*MemHostGetDevicePointer)(CUdeviceptr *d, void *p, unsigned flags);
    CUresult (*MemFreeHost)(void *p);
    /* Optional: the 64-bit stream memory operations (evx-fence-bench). */
    CUresult (*StreamWriteValue64)(CUstream s, CUdeviceptr addr, cuuint64_t value,
                                   unsigned flags);
    CUresult (*StreamWaitValue64)(CUstream s, CUdeviceptr addr, cuuint64_t value,
                                  unsigned flags);
    CUresult (*MemHostRegister)(void *p, size_t size, unsigned flags);
    /* Optional: what a timer asks at each mark (evx-floor-parts). */
    CUresult (*StreamIsCapturing)(CUstream s, CUstreamCaptureStatus *status);
    /* Optional (absent from the host emulation): device memory in use
     * (evx-depot-memory). */
    CUresult (*MemGetInfo)(size_t *free_bytes, size_t *total_bytes);
    CUdevice dev;     /* device 0 */
    CUcontext ctx;    /* its primary context, retained by bench_raw_open */
    const char *path; /* as evx_driver_get_path() gives it */
    int version;      /* evx_driver_get_version() */
    int emulation;    /* evx_driver_is_emulation() */
} bench_raw;

/* Opens evx's driver, then looks up the raw entry points in the same
 * loaded library (dlopen with RTLD_NOLOAD: a library evx did not load is
 * refused) through its cuGetProcAddress_v2, retains device 0's primary
 * context and makes it current on the calling thread. Returns 0, or prints
 * why to stderr and returns -1. */
int bench_raw_open(bench_raw *raw);

/* Releases the primary context and the dlopen reference. */
void bench_raw_close(bench_raw *raw);

/* The name of a driver status ("CUDA_ERROR_..."), or "CUresult <n>". */
const char *bench_raw_status_name(const bench_raw *raw, CUresult r);

/* Prints the driver lines that head both programs' output. */
void bench_print_driver(FILE *out, const bench_raw *raw);

/* CLOCK_MONOTONIC in nanoseconds. */
double bench_now_ns(void);

/* Median of n values (sorts v in place); n >= 1. */
double bench_median(double *v, int n);

/* Parses a positive integer option value in [lo, hi]; returns -1 on error
 * (and prints why). */
long bench_parse_long(const char *opt, const char *text, long lo, long hi);

#if defined(__GNUC__)
#define BENCH_NORETURN __attribute__((noreturn))
#else
#define BENCH_NORETURN
#endif

/* Print a failed call and exit(1): benchmark figures after a failed call
 * would mean nothing. */
BENCH_NORETURN void bench_die_raw(const bench_raw *raw, CUresult r,
                                  const char *call, const char *file,
                                  int line);
BENCH_NORETURN void bench_die_evx(evx_status_t s, const char *call,
                                  const char *file, int line);

/* A raw driver call or an evx call that must succeed. */
#define CHECK_RAW(raw, call)                                                  \
    do {                                                                      \
        CUresult r_ = (call);                                                 \
        if (r_ != CUDA_SUCCESS)                                               \
            bench_die_raw((raw), r_, #call, __FILE__, __LINE__);              \
    } while (0)
#define CHECK_EVX(call)                                                       \
    do {                                                                      \
        evx_status_t s_ = (call);                                             \
        if (s_ != EVX_SUCCESS) bench_die_evx(s_, #call, __FILE__, __LINE__);  \
    } while (0)

#endif /* EVX_BENCH_COMMON_H */
