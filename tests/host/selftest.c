/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 *
 * Self-test of the host emulation: opens libevx-host.so (path in
 * EVX_HOST_LIB), takes every entry point through cuGetProcAddress_v2 and
 * checks the results that the real driver gave on an H200
 * (tests/gpu/probe_semantics.out.txt). Exit status 0 only if every check
 * passes. Runs with 2 emulated devices; one stands in for "another context".
 */
#define _POSIX_C_SOURCE 200809L
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct {
    PFN_cuGetProcAddress_v12000 GetProcAddress;
    PFN_cuInit_v2000 Init;
    PFN_cuDriverGetVersion_v2020 DriverGetVersion;
    PFN_cuGetErrorName_v6000 GetErrorName;
    PFN_cuGetErrorString_v6000 GetErrorString;
    PFN_cuDeviceGetCount_v2000 DeviceGetCount;
    PFN_cuDeviceGet_v2000 DeviceGet;
    PFN_cuDeviceGetName_v2000 DeviceGetName;
    PFN_cuDeviceGetAttribute_v2000 DeviceGetAttribute;
    PFN_cuDevicePrimaryCtxRetain_v7000 PrimaryCtxRetain;
    PFN_cuDevicePrimaryCtxRelease_v11000 PrimaryCtxRelease;
    PFN_cuCtxGetCurrent_v4000 CtxGetCurrent;
    PFN_cuCtxSetCurrent_v4000 CtxSetCurrent;
    PFN_cuCtxPushCurrent_v4000 CtxPushCurrent;
    PFN_cuCtxPopCurrent_v4000 CtxPopCurrent;
    PFN_cuCtxGetDevice_v13000 CtxGetDevice;
    PFN_cuCtxGetStreamPriorityRange_v5050 CtxGetStreamPriorityRange;
    PFN_cuCtxSynchronize_v13000 CtxSynchronize;
    PFN_cuEventCreate_v2000 EventCreate;
    PFN_cuEventDestroy_v4000 EventDestroy;
    PFN_cuEventRecord_v2000 EventRecord;
    PFN_cuEventRecordWithFlags_v11010 EventRecordWithFlags;
    PFN_cuEventQuery_v2000 EventQuery;
    PFN_cuEventSynchronize_v2000 EventSynchronize;
    PFN_cuEventElapsedTime_v12080 EventElapsedTime;
    PFN_cuStreamCreate_v2000 StreamCreate;
    PFN_cuStreamCreateWithPriority_v5050 StreamCreateWithPriority;
    PFN_cuStreamDestroy_v4000 StreamDestroy;
    PFN_cuStreamWaitEvent_v3020 StreamWaitEvent;
    PFN_cuStreamQuery_v2000 StreamQuery;
    PFN_cuStreamQuery_v7000_ptsz StreamQueryPtsz;
    PFN_cuStreamSynchronize_v2000 StreamSynchronize;
    PFN_cuLaunchHostFunc_v10000 LaunchHostFunc;
    PFN_cuStreamGetPriority_v5050 StreamGetPriority;
    PFN_cuStreamGetFlags_v5050 StreamGetFlags;
    PFN_cuStreamGetDevice_v12080 StreamGetDevice;
    PFN_cuStreamGetCtx_v12050 StreamGetCtx;
    PFN_cuStreamGetId_v12000 StreamGetId;
    PFN_cuIpcGetEventHandle_v4010 IpcGetEventHandle;
    PFN_cuIpcOpenEventHandle_v4010 IpcOpenEventHandle;
    PFN_cuStreamIsCapturing_v10000 StreamIsCapturing;
    PFN_cuStreamBeginCapture_v10010 StreamBeginCapture;
    PFN_cuStreamEndCapture_v10000 StreamEndCapture;
    PFN_cuGraphDestroy_v10000 GraphDestroy;
    PFN_cuGraphInstantiateWithFlags_v11040 GraphInstantiateWithFlags;
    PFN_cuGraphLaunch_v10000 GraphLaunch;
    PFN_cuGraphExecDestroy_v10000 GraphExecDestroy;
    PFN_cuStreamWriteValue64_v11070 StreamWriteValue64;
    PFN_cuThreadExchangeStreamCaptureMode_v10010 ThreadExchangeStreamCaptureMode;
} d;

static void *lib;
static int passed, failed;

static const char *nm(CUresult r) {
    const char *s = NULL;
    if (d.GetErrorName(r, &s) != CUDA_SUCCESS || !s) return "(unknown CUresult)";
    return s;
}

#define EXPECT(call, want) expect_(__LINE__, #call, (call), (want))
static void expect_(int line, const char *what, CUresult got, CUresult want) {
    if (got == want) {
        passed++;
        return;
    }
    failed++;
    printf("FAIL line %d: %s -> %s, expected %s\n", line, what, nm(got), nm(want));
}
#define CHECK(cond) check_(__LINE__, #cond, (cond))
static void check_(int line, const char *what, int ok) {
    if (ok) {
        passed++;
        return;
    }
    failed++;
    printf("FAIL line %d: %s\n", line, what);
}

/* cuGetProcAddress_v2 into a function pointer (C forbids the direct cast). */
static CUresult getproc(const char *name, void *fnptr, int version, cuuint64_t flags,
                        CUdriverProcAddressQueryResult *st) {
    void *p = NULL;
    CUresult r = d.GetProcAddress(name, &p, version, flags, st);
    memcpy(fnptr, &p, sizeof p);
    return r;
}
#define LOAD(field, name)                                                              \
    do {                                                                               \
        CUdriverProcAddressQueryResult st_;                                            \
        if (getproc(name, &d.field, 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &st_) != \
                CUDA_SUCCESS || st_ != CU_GET_PROC_ADDRESS_SUCCESS || !d.field) {      \
            printf("FAIL: cuGetProcAddress_v2(%s, 13000) found nothing\n", name);      \
            return 1;                                                                  \
        }                                                                              \
    } while (0)

/* Which exported name a cuGetProcAddress result is. */
static int is_symbol(const char *name, int version, cuuint64_t flags, const char *want) {
    void *p = NULL;
    CUdriverProcAddressQueryResult st;
    if (d.GetProcAddress(name, &p, version, flags, &st) != CUDA_SUCCESS) return 0;
    return st == CU_GET_PROC_ADDRESS_SUCCESS && p && p == dlsym(lib, want);
}

static void sleep_us(long us) {
    struct timespec t;
    t.tv_sec = us / 1000000;
    t.tv_nsec = (us % 1000000) * 1000;
    while (nanosleep(&t, &t) != 0) {
    }
}

/* A host function that holds its stream until the test opens the gate. */
struct gate { int open, started; };
static void gate_fn(void *p) {
    struct gate *g = (struct gate *)p;
    __atomic_store_n(&g->started, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&g->open, __ATOMIC_ACQUIRE)) sleep_us(200);
}
static void gate_wait_started(struct gate *g) {
    while (!__atomic_load_n(&g->started, __ATOMIC_ACQUIRE)) sleep_us(200);
}
static void gate_open(struct gate *g) { __atomic_store_n(&g->open, 1, __ATOMIC_RELEASE); }
static void *opener(void *p) {
    sleep_us(150000);
    gate_open((struct gate *)p);
    return NULL;
}
static int counter;
static void count_fn(void *p) { (void)p; __atomic_add_fetch(&counter, 1, __ATOMIC_ACQ_REL); }
static int count_read(void) { return __atomic_load_n(&counter, __ATOMIC_ACQUIRE); }
static void nap(void) { sleep_us(20000); }
static void sleep20_fn(void *p) { (void)p; sleep_us(20000); }
static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static CUcontext ctx0, ctx1;

/* Per-thread stream of another thread. */
struct pt_arg { CUevent ev; CUresult rec, query; struct gate *leave_gated; };
static void *pt_thread(void *p) {
    struct pt_arg *a = (struct pt_arg *)p;
    d.CtxSetCurrent(ctx0);
    if (a->leave_gated) {  /* queue gated work on the per-thread stream and exit */
        a->rec = d.LaunchHostFunc(CU_STREAM_PER_THREAD, gate_fn, a->leave_gated);
        a->query = d.LaunchHostFunc(CU_STREAM_PER_THREAD, count_fn, NULL);
        return NULL;
    }
    a->rec = d.EventRecord(a->ev, CU_STREAM_PER_THREAD);
    d.EventSynchronize(a->ev);
    a->query = d.EventQuery(a->ev);
    return NULL;
}

/* Many threads at once: records, waits, queries, host functions, destroys. */
#define STRESS_THREADS 4
#define STRESS_ITERS 300
struct stress_arg { CUstream shared; int ok; };
static int stress_count;
static void stress_fn(void *p) { (void)p; __atomic_add_fetch(&stress_count, 1, __ATOMIC_RELAXED); }
static void *stress_thread(void *p) {
    struct stress_arg *a = (struct stress_arg *)p;
    CUstream own;
    int ok = 1;
    d.CtxSetCurrent(ctx0);
    ok &= d.StreamCreate(&own, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS;
    for (int i = 0; i < STRESS_ITERS; i++) {
        CUevent e, f;
        float ms;
        ok &= d.EventCreate(&e, 0) == CUDA_SUCCESS;
        ok &= d.EventCreate(&f, 0) == CUDA_SUCCESS;
        ok &= d.EventRecord(e, a->shared) == CUDA_SUCCESS;
        ok &= d.StreamWaitEvent(own, e, 0) == CUDA_SUCCESS;
        ok &= d.LaunchHostFunc(own, stress_fn, NULL) == CUDA_SUCCESS;
        ok &= d.EventRecord(f, (i & 1) ? own : CU_STREAM_PER_THREAD) == CUDA_SUCCESS;
        CUresult q = d.EventQuery(f);
        ok &= q == CUDA_SUCCESS || q == CUDA_ERROR_NOT_READY;
        if (i % 3 == 0) {
            ok &= d.EventSynchronize(f) == CUDA_SUCCESS;
            ok &= d.EventSynchronize(e) == CUDA_SUCCESS;
            ok &= d.EventElapsedTime(&ms, e, f) == CUDA_SUCCESS;
        }
        ok &= d.EventDestroy(e) == CUDA_SUCCESS;  /* often still pending */
        ok &= d.EventDestroy(f) == CUDA_SUCCESS;
    }
    ok &= d.StreamSynchronize(own) == CUDA_SUCCESS;
    ok &= d.StreamDestroy(own) == CUDA_SUCCESS;
    a->ok = ok;
    return NULL;
}

static void test_getproc(void) {
    void *p = (void *)1;
    CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)-1;
    CHECK(is_symbol("cuEventElapsedTime", 13000, 0, "cuEventElapsedTime_v2"));
    CHECK(is_symbol("cuEventElapsedTime", 12000, 0, "cuEventElapsedTime"));
    CHECK(is_symbol("cuEventElapsedTime", 12080, 0, "cuEventElapsedTime_v2"));
    CHECK(is_symbol("cuEventDestroy", 13000, 0, "cuEventDestroy_v2"));
    CHECK(is_symbol("cuStreamDestroy", 13000, 0, "cuStreamDestroy_v2"));
    CHECK(is_symbol("cuCtxPushCurrent", 4000, 0, "cuCtxPushCurrent_v2"));
    CHECK(is_symbol("cuCtxPopCurrent", 13000, 0, "cuCtxPopCurrent_v2"));
    CHECK(is_symbol("cuDevicePrimaryCtxRelease", 13000, 0, "cuDevicePrimaryCtxRelease_v2"));
    CHECK(is_symbol("cuCtxGetDevice", 13000, 0, "cuCtxGetDevice_v2"));
    CHECK(is_symbol("cuCtxGetDevice", 12000, 0, "cuCtxGetDevice"));
    CHECK(is_symbol("cuCtxSynchronize", 13000, 0, "cuCtxSynchronize_v2"));
    CHECK(is_symbol("cuCtxSynchronize", 12090, 0, "cuCtxSynchronize"));
    CHECK(is_symbol("cuStreamGetCtx", 13000, 0, "cuStreamGetCtx_v2"));
    CHECK(is_symbol("cuStreamGetCtx", 12000, 0, "cuStreamGetCtx"));
    CHECK(is_symbol("cuStreamGetCtx", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuStreamGetCtx_v2_ptsz"));
    CHECK(is_symbol("cuGetProcAddress", 13000, 0, "cuGetProcAddress_v2"));
    CHECK(is_symbol("cuStreamQuery", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuStreamQuery_ptsz"));
    CHECK(is_symbol("cuEventRecord", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuEventRecord_ptsz"));
    CHECK(is_symbol("cuStreamWaitEvent", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuStreamWaitEvent_ptsz"));
    CHECK(is_symbol("cuEventQuery", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuEventQuery"));
    CHECK(is_symbol("cuStreamQuery", 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, "cuStreamQuery"));
    CHECK(is_symbol("cuStreamQuery", 13000, 0, "cuStreamQuery"));
    /* unknown name: success, status SYMBOL_NOT_FOUND, pfn NULL */
    EXPECT(d.GetProcAddress("cuNoSuchThing", &p, 13000, 0, &st), CUDA_SUCCESS);
    CHECK(st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND && p == NULL);
    p = (void *)1;
    EXPECT(d.GetProcAddress("cuEventQuery_v2", &p, 13000, 0, &st), CUDA_SUCCESS);
    CHECK(st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND && p == NULL);
    EXPECT(d.GetProcAddress("", &p, 13000, 0, &st), CUDA_SUCCESS);
    CHECK(st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    EXPECT(d.GetProcAddress("cuNoSuchThing", &p, 13000, 0, NULL), CUDA_SUCCESS);
    /* too old a version */
    p = (void *)1;
    EXPECT(d.GetProcAddress("cuStreamGetDevice", &p, 12000, 0, &st), CUDA_SUCCESS);
    CHECK(st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT && p == NULL);
    EXPECT(d.GetProcAddress("cuEventRecordWithFlags", &p, 11000, 0, &st), CUDA_SUCCESS);
    CHECK(st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    EXPECT(d.GetProcAddress("cuLaunchHostFunc", &p, 9000, 0, &st), CUDA_SUCCESS);
    CHECK(st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    EXPECT(d.GetProcAddress("cuEventQuery", &p, 0, 0, &st), CUDA_SUCCESS);
    CHECK(st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    /* newer than the driver, bad flags */
    st = (CUdriverProcAddressQueryResult)-1;
    EXPECT(d.GetProcAddress("cuEventQuery", &p, 13010, 0, &st), CUDA_ERROR_INVALID_VALUE);
    EXPECT(d.GetProcAddress("cuNoSuchThing", &p, 14000, 0, &st), CUDA_ERROR_INVALID_VALUE);
    EXPECT(d.GetProcAddress("cuEventQuery", &p, 13000, 4, &st), CUDA_ERROR_INVALID_VALUE);
    CHECK(st == (CUdriverProcAddressQueryResult)-1);
    /* the emulation refuses what crashes the driver */
    EXPECT(d.GetProcAddress("cuEventQuery", NULL, 13000, 0, &st), CUDA_ERROR_INVALID_VALUE);
    EXPECT(d.GetProcAddress(NULL, &p, 13000, 0, &st), CUDA_ERROR_INVALID_VALUE);
    /* the 4-argument form */
    {
        CUresult (*v1)(const char *, void **, int, cuuint64_t) = NULL;
        void *sym = dlsym(lib, "cuGetProcAddress");
        memcpy(&v1, &sym, sizeof sym);
        CHECK(v1 != NULL);
        if (v1) {
            p = (void *)1;
            EXPECT(v1("cuNoSuchThing", &p, 13000, 0), CUDA_ERROR_NOT_FOUND);
            CHECK(p == (void *)1);
            EXPECT(v1("cuStreamGetDevice", &p, 12000, 0), CUDA_ERROR_NOT_FOUND);
            EXPECT(v1("cuEventElapsedTime", &p, 13000, 0), CUDA_SUCCESS);
            CHECK(p == dlsym(lib, "cuEventElapsedTime_v2"));
        }
    }
}

static void test_devices_and_contexts(void) {
    int n = 0, v = 0;
    CUdevice dev;
    char name[64];
    CUcontext c = NULL, c2 = NULL;
    EXPECT(d.DeviceGetCount(&n), CUDA_SUCCESS);
    CHECK(n == 2);
    EXPECT(d.DeviceGet(&dev, 1), CUDA_SUCCESS);
    CHECK(dev == 1);
    EXPECT(d.DeviceGet(&dev, 2), CUDA_ERROR_INVALID_DEVICE);
    EXPECT(d.DeviceGet(&dev, -1), CUDA_ERROR_INVALID_DEVICE);
    EXPECT(d.DeviceGet(NULL, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT(d.DeviceGetName(name, sizeof name, 0), CUDA_SUCCESS);
    CHECK(strcmp(name, "evx host emulation") == 0);
    EXPECT(d.DeviceGetName(name, sizeof name, 99), CUDA_ERROR_INVALID_DEVICE);
    EXPECT(d.DeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 1), CUDA_SUCCESS);
    CHECK(v == 1);
    EXPECT(d.DeviceGetAttribute(&v, (CUdevice_attribute)9999, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT(d.DeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 99), CUDA_ERROR_INVALID_DEVICE);

    EXPECT(d.CtxGetCurrent(&c), CUDA_SUCCESS);
    CHECK(c == NULL);
    EXPECT(d.CtxGetDevice(&dev, NULL), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.CtxSynchronize(NULL), CUDA_ERROR_INVALID_CONTEXT);
    c = (CUcontext)1;
    EXPECT(d.CtxPopCurrent(&c), CUDA_ERROR_INVALID_CONTEXT);
    CHECK(c == (CUcontext)1);
    EXPECT(d.PrimaryCtxRetain(&c, 99), CUDA_ERROR_INVALID_DEVICE);
    EXPECT(d.PrimaryCtxRelease(99), CUDA_ERROR_INVALID_DEVICE);
    EXPECT(d.PrimaryCtxRelease(0), CUDA_ERROR_INVALID_CONTEXT);  /* never retained */
    EXPECT(d.PrimaryCtxRetain(&ctx0, 0), CUDA_SUCCESS);
    EXPECT(d.PrimaryCtxRetain(&c2, 0), CUDA_SUCCESS);
    CHECK(c2 == ctx0);
    EXPECT(d.PrimaryCtxRelease(0), CUDA_SUCCESS);
    EXPECT(d.PrimaryCtxRetain(&ctx1, 1), CUDA_SUCCESS);
    CHECK(ctx1 != ctx0 && ctx1 != NULL);
    EXPECT(d.CtxPushCurrent(NULL), CUDA_ERROR_INVALID_VALUE);
    EXPECT(d.CtxPushCurrent((CUcontext)0x1234), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.CtxSetCurrent((CUcontext)0x1234), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.CtxPushCurrent(ctx0), CUDA_SUCCESS);
    EXPECT(d.CtxPushCurrent(ctx1), CUDA_SUCCESS);
    EXPECT(d.CtxSetCurrent(NULL), CUDA_SUCCESS);  /* pops the top */
    EXPECT(d.CtxGetCurrent(&c), CUDA_SUCCESS);
    CHECK(c == ctx0);
    EXPECT(d.CtxPopCurrent(&c), CUDA_SUCCESS);
    CHECK(c == ctx0);
    EXPECT(d.CtxGetCurrent(&c), CUDA_SUCCESS);
    CHECK(c == NULL);
    EXPECT(d.CtxPopCurrent(&c), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.CtxPushCurrent(ctx1), CUDA_SUCCESS);
    EXPECT(d.CtxPopCurrent(NULL), CUDA_SUCCESS);
    EXPECT(d.CtxSetCurrent(NULL), CUDA_SUCCESS);  /* empty stack: no-op */
    EXPECT(d.CtxSetCurrent(ctx1), CUDA_SUCCESS);
    EXPECT(d.CtxGetDevice(&dev, NULL), CUDA_SUCCESS);
    CHECK(dev == 1);
    EXPECT(d.CtxGetDevice(&dev, ctx0), CUDA_SUCCESS);
    CHECK(dev == 0);
    EXPECT(d.CtxSetCurrent(ctx0), CUDA_SUCCESS);  /* replaces the top */
    EXPECT(d.CtxGetDevice(&dev, NULL), CUDA_SUCCESS);
    CHECK(dev == 0);
    {
        int lo = 99, hi = 99;
        EXPECT(d.CtxGetStreamPriorityRange(&lo, &hi), CUDA_SUCCESS);
        CHECK(lo == 0 && hi == -5);
        EXPECT(d.CtxGetStreamPriorityRange(NULL, &hi), CUDA_SUCCESS);
        EXPECT(d.CtxGetStreamPriorityRange(NULL, NULL), CUDA_SUCCESS);
    }
}

static void test_flags_and_handles(void) {
    CUevent e = NULL, a, b;
    CUstream s = NULL, snb, sb;
    unsigned u = 77;
    int v = 77;
    CUdevice dv = 77;
    CUcontext c = NULL;
    CUstreamCaptureStatus cs = (CUstreamCaptureStatus)77;
    float ms;
    EXPECT(d.EventCreate(&e, 7), CUDA_SUCCESS);
    EXPECT(d.EventDestroy(e), CUDA_SUCCESS);
    EXPECT(d.EventCreate(&e, 3), CUDA_SUCCESS);
    EXPECT(d.EventDestroy(e), CUDA_SUCCESS);
    EXPECT(d.EventCreate(&e, 6), CUDA_SUCCESS);
    EXPECT(d.EventDestroy(e), CUDA_SUCCESS);
    EXPECT(d.EventDestroy(e), CUDA_ERROR_INVALID_HANDLE);  /* stale handle */
    EXPECT(d.EventCreate(&e, 5), CUDA_ERROR_INVALID_VALUE);
    EXPECT(d.EventCreate(&e, 0x8), CUDA_ERROR_INVALID_VALUE);
    EXPECT(d.EventCreate(&e, 0x10), CUDA_ERROR_INVALID_VALUE);
    EXPECT(d.EventCreate(NULL, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT(d.StreamCreate(&s, 2), CUDA_ERROR_INVALID_VALUE);
    EXPECT(d.StreamCreate(&s, 3), CUDA_ERROR_INVALID_VALUE);
    EXPECT(d.StreamCreate(&s, 4), CUDA_ERROR_INVALID_VALUE);
    EXPECT(d.StreamCreate(NULL, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT(d.StreamCreateWithPriority(&s, 2, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT(d.StreamCreate(&snb, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    EXPECT(d.StreamCreate(&sb, CU_STREAM_DEFAULT), CUDA_SUCCESS);
    EXPECT(d.StreamGetFlags(snb, &u), CUDA_SUCCESS);
    CHECK(u == 1);
    { /* the driver answers cuStreamGetId (GPU transcripts): one id a stream */
        unsigned long long i1 = 0, i2 = 0, i0 = 0;
        EXPECT(d.StreamGetId(snb, &i1), CUDA_SUCCESS);
        EXPECT(d.StreamGetId(sb, &i2), CUDA_SUCCESS);
        EXPECT(d.StreamGetId(NULL, &i0), CUDA_SUCCESS);
        CHECK(i1 && i2 && i0 && i1 != i2 && i0 != i1 && i0 != i2);
        EXPECT(d.StreamGetId(snb, &i2), CUDA_SUCCESS);
        CHECK(i1 == i2);
        EXPECT(d.StreamGetId(snb, NULL), CUDA_ERROR_INVALID_VALUE);
    }
    EXPECT(d.StreamGetFlags(sb, &u), CUDA_SUCCESS);
    CHECK(u == 0);
    u = 77;
    EXPECT(d.StreamGetFlags(CU_STREAM_LEGACY, &u), CUDA_SUCCESS);
    CHECK(u == 0);
    u = 77;
    EXPECT(d.StreamGetFlags(NULL, &u), CUDA_SUCCESS);
    CHECK(u == 0);
    u = 77;
    EXPECT(d.StreamGetFlags(CU_STREAM_PER_THREAD, &u), CUDA_SUCCESS);
    CHECK(u == 0);
    EXPECT(d.StreamGetPriority(CU_STREAM_LEGACY, &v), CUDA_SUCCESS);
    CHECK(v == 0);
    v = 77;
    EXPECT(d.StreamGetPriority(CU_STREAM_PER_THREAD, &v), CUDA_SUCCESS);
    CHECK(v == 0);
    EXPECT(d.StreamGetPriority(sb, NULL), CUDA_ERROR_INVALID_VALUE);
    EXPECT(d.StreamGetFlags(sb, NULL), CUDA_ERROR_INVALID_VALUE);
    EXPECT(d.StreamGetDevice(CU_STREAM_PER_THREAD, &dv), CUDA_SUCCESS);
    CHECK(dv == 0);
    EXPECT(d.StreamGetCtx(CU_STREAM_LEGACY, &c, NULL), CUDA_SUCCESS);
    CHECK(c == ctx0);
    {
        CUgreenCtx g = (CUgreenCtx)1;
        EXPECT(d.StreamGetCtx(snb, &c, &g), CUDA_SUCCESS);
        CHECK(c == ctx0 && g == NULL);
    }
    EXPECT(d.StreamIsCapturing(snb, &cs), CUDA_SUCCESS);
    CHECK(cs == CU_STREAM_CAPTURE_STATUS_NONE);
    EXPECT(d.StreamDestroy(CU_STREAM_LEGACY), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(d.StreamDestroy(CU_STREAM_PER_THREAD), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(d.StreamDestroy(NULL), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(d.StreamQuery((CUstream)0x12345), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(d.LaunchHostFunc(snb, NULL, NULL), CUDA_ERROR_INVALID_VALUE);

    /* priorities clamp silently */
    EXPECT(d.StreamCreateWithPriority(&s, 0, -100), CUDA_SUCCESS);
    EXPECT(d.StreamGetPriority(s, &v), CUDA_SUCCESS);
    CHECK(v == -5);
    EXPECT(d.StreamDestroy(s), CUDA_SUCCESS);
    EXPECT(d.StreamCreateWithPriority(&s, 0, 7), CUDA_SUCCESS);
    EXPECT(d.StreamGetPriority(s, &v), CUDA_SUCCESS);
    CHECK(v == 0);
    EXPECT(d.StreamDestroy(s), CUDA_SUCCESS);
    EXPECT(d.StreamCreateWithPriority(&s, 1, -3), CUDA_SUCCESS);
    EXPECT(d.StreamGetPriority(s, &v), CUDA_SUCCESS);
    CHECK(v == -3);
    EXPECT(d.StreamGetFlags(s, &u), CUDA_SUCCESS);
    CHECK(u == 1);
    EXPECT(d.StreamDestroy(s), CUDA_SUCCESS);
    EXPECT(d.StreamDestroy(s), CUDA_ERROR_INVALID_HANDLE);

    /* NULL handles */
    EXPECT(d.EventCreate(&a, 0), CUDA_SUCCESS);
    EXPECT(d.EventCreate(&b, 0), CUDA_SUCCESS);
    EXPECT(d.EventQuery(NULL), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(d.EventSynchronize(NULL), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(d.EventRecord(NULL, snb), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(d.EventElapsedTime(&ms, NULL, a), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(d.EventDestroy(NULL), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(d.StreamWaitEvent(snb, NULL, 0), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(d.EventRecord(a, snb), CUDA_SUCCESS);
    EXPECT(d.EventSynchronize(a), CUDA_SUCCESS);
    EXPECT(d.EventElapsedTime(NULL, a, a), CUDA_ERROR_INVALID_HANDLE);

    /* wait and record flags outside capture, and the order of the checks */
    EXPECT(d.StreamWaitEvent(sb, a, CU_EVENT_WAIT_EXTERNAL), CUDA_ERROR_ILLEGAL_STATE);
    EXPECT(d.StreamWaitEvent(sb, a, 0x2), CUDA_ERROR_INVALID_VALUE);
    EXPECT(d.StreamWaitEvent(sb, a, 3), CUDA_ERROR_INVALID_VALUE);
    EXPECT(d.StreamWaitEvent(sb, b, CU_EVENT_WAIT_EXTERNAL), CUDA_ERROR_ILLEGAL_STATE);
    EXPECT(d.StreamWaitEvent(sb, NULL, 0x10), CUDA_ERROR_INVALID_VALUE);
    EXPECT(d.StreamWaitEvent(sb, NULL, CU_EVENT_WAIT_EXTERNAL), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(d.EventRecordWithFlags(b, snb, 0), CUDA_SUCCESS);
    EXPECT(d.EventRecordWithFlags(b, snb, CU_EVENT_RECORD_EXTERNAL), CUDA_ERROR_ILLEGAL_STATE);
    EXPECT(d.EventRecordWithFlags(b, NULL, CU_EVENT_RECORD_EXTERNAL), CUDA_ERROR_ILLEGAL_STATE);
    EXPECT(d.EventRecordWithFlags(b, NULL, 0x2), CUDA_ERROR_INVALID_VALUE);
    EXPECT(d.EventRecordWithFlags(b, snb, 3), CUDA_ERROR_INVALID_VALUE);
    EXPECT(d.EventRecordWithFlags(b, snb, 0x40), CUDA_ERROR_INVALID_VALUE);
    EXPECT(d.EventRecordWithFlags(NULL, snb, 0x40), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(d.EventRecordWithFlags(NULL, snb, CU_EVENT_RECORD_EXTERNAL), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(d.EventCreate(NULL, 0x10), CUDA_ERROR_INVALID_VALUE);
    EXPECT(d.StreamCreate(NULL, 0x4), CUDA_ERROR_INVALID_VALUE);
    EXPECT(d.EventRecord(a, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
    EXPECT(d.EventRecord(a, CU_STREAM_LEGACY), CUDA_SUCCESS);
    {
        CUipcEventHandle h;
        CUevent ie;
        CUevent opened = NULL;
        EXPECT(d.EventCreate(&ie, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
        EXPECT(d.IpcGetEventHandle(&h, ie), CUDA_SUCCESS);
        EXPECT(d.IpcGetEventHandle(&h, a), CUDA_ERROR_INVALID_HANDLE);  /* a timing event */
        /* the driver opens a handle only in another process */
        EXPECT(d.IpcOpenEventHandle(&opened, h), CUDA_ERROR_INVALID_CONTEXT);
        EXPECT(d.EventDestroy(ie), CUDA_SUCCESS);
    }
    EXPECT(d.CtxSynchronize(NULL), CUDA_SUCCESS);
    EXPECT(d.EventDestroy(a), CUDA_SUCCESS);
    EXPECT(d.EventDestroy(b), CUDA_SUCCESS);
    EXPECT(d.StreamDestroy(snb), CUDA_SUCCESS);
    EXPECT(d.StreamDestroy(sb), CUDA_SUCCESS);
}

/* The driver orders the records of an INTERPROCESS event: a record waits
 * for the one before it (a GPU transcript hung in cuStreamSynchronize of the
 * legacy stream after such a record on a blocking stream). */
static void test_ipc_record_order(void) {
    CUstream gated, sb;
    CUevent ie;
    struct gate g = {0, 0};
    EXPECT(d.StreamCreate(&gated, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    EXPECT(d.StreamCreate(&sb, 0), CUDA_SUCCESS);
    EXPECT(d.EventCreate(&ie, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
    EXPECT(d.LaunchHostFunc(gated, gate_fn, &g), CUDA_SUCCESS);
    EXPECT(d.EventRecord(ie, gated), CUDA_SUCCESS);
    EXPECT(d.EventRecord(ie, sb), CUDA_SUCCESS);
    gate_wait_started(&g);
    EXPECT(d.StreamQuery(sb), CUDA_ERROR_NOT_READY);
    EXPECT(d.EventQuery(ie), CUDA_ERROR_NOT_READY);
    gate_open(&g);
    EXPECT(d.StreamSynchronize(CU_STREAM_LEGACY), CUDA_SUCCESS);
    EXPECT(d.StreamQuery(sb), CUDA_SUCCESS);
    EXPECT(d.EventQuery(ie), CUDA_SUCCESS);
    EXPECT(d.StreamSynchronize(gated), CUDA_SUCCESS);
    EXPECT(d.EventDestroy(ie), CUDA_SUCCESS);
    EXPECT(d.StreamDestroy(sb), CUDA_SUCCESS);
    EXPECT(d.StreamDestroy(gated), CUDA_SUCCESS);
}

static void test_elapsed(void) {
    CUevent never, rec, rec2, dis_rec, dis_never, pend, bsync;
    CUstream sg, s;
    struct gate g = {0, 0};
    float ms = -1;
    EXPECT(d.StreamCreate(&sg, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    EXPECT(d.StreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    EXPECT(d.EventCreate(&never, 0), CUDA_SUCCESS);
    EXPECT(d.EventCreate(&rec, 0), CUDA_SUCCESS);
    EXPECT(d.EventCreate(&rec2, 0), CUDA_SUCCESS);
    EXPECT(d.EventCreate(&dis_rec, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
    EXPECT(d.EventCreate(&dis_never, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
    EXPECT(d.EventCreate(&pend, 0), CUDA_SUCCESS);
    EXPECT(d.EventCreate(&bsync, CU_EVENT_BLOCKING_SYNC), CUDA_SUCCESS);
    EXPECT(d.EventRecord(rec, s), CUDA_SUCCESS);
    EXPECT(d.EventRecord(dis_rec, s), CUDA_SUCCESS);
    EXPECT(d.EventRecord(bsync, s), CUDA_SUCCESS);
    EXPECT(d.LaunchHostFunc(s, sleep20_fn, NULL), CUDA_SUCCESS);
    EXPECT(d.EventRecord(rec2, s), CUDA_SUCCESS);
    EXPECT(d.StreamSynchronize(s), CUDA_SUCCESS);
    EXPECT(d.LaunchHostFunc(sg, gate_fn, &g), CUDA_SUCCESS);
    EXPECT(d.EventRecord(pend, sg), CUDA_SUCCESS);
    EXPECT(d.EventQuery(pend), CUDA_ERROR_NOT_READY);
    EXPECT(d.EventQuery(never), CUDA_SUCCESS);
    EXPECT(d.EventQuery(dis_never), CUDA_SUCCESS);
    EXPECT(d.EventSynchronize(never), CUDA_SUCCESS);
    EXPECT(d.EventElapsedTime(&ms, never, rec), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(d.EventElapsedTime(&ms, rec, never), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(d.EventElapsedTime(&ms, never, never), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(d.EventElapsedTime(&ms, dis_rec, never), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(d.EventElapsedTime(&ms, dis_rec, rec), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(d.EventElapsedTime(&ms, rec, dis_rec), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(d.EventElapsedTime(&ms, dis_rec, dis_rec), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(d.EventElapsedTime(&ms, dis_never, rec), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(d.EventElapsedTime(&ms, never, pend), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(d.EventElapsedTime(&ms, pend, never), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(d.EventElapsedTime(&ms, pend, dis_rec), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(d.EventElapsedTime(&ms, dis_rec, pend), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(d.EventElapsedTime(&ms, pend, dis_never), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(d.EventElapsedTime(&ms, NULL, pend), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(d.EventElapsedTime(&ms, pend, NULL), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(d.EventElapsedTime(&ms, pend, pend), CUDA_ERROR_NOT_READY);
    EXPECT(d.EventElapsedTime(&ms, pend, rec), CUDA_ERROR_NOT_READY);
    EXPECT(d.EventElapsedTime(&ms, rec, pend), CUDA_ERROR_NOT_READY);
    ms = -1;
    EXPECT(d.EventElapsedTime(&ms, bsync, rec2), CUDA_SUCCESS);
    CHECK(ms >= 19.0f && ms < 2000.0f);  /* a 20 ms host function lies between */
    ms = -1;
    EXPECT(d.EventElapsedTime(&ms, rec, rec), CUDA_SUCCESS);
    CHECK(ms == 0.0f);
    ms = 0;
    EXPECT(d.EventElapsedTime(&ms, rec2, rec), CUDA_SUCCESS);
    CHECK(ms <= -19.0f);
    gate_open(&g);
    EXPECT(d.EventSynchronize(pend), CUDA_SUCCESS);
    EXPECT(d.EventQuery(pend), CUDA_SUCCESS);
    EXPECT(d.EventElapsedTime(&ms, rec, pend), CUDA_SUCCESS);
    CHECK(ms > 0.0f);
    EXPECT(d.EventDestroy(never), CUDA_SUCCESS);
    EXPECT(d.EventDestroy(rec), CUDA_SUCCESS);
    EXPECT(d.EventDestroy(rec2), CUDA_SUCCESS);
    EXPECT(d.EventDestroy(dis_rec), CUDA_SUCCESS);
    EXPECT(d.EventDestroy(dis_never), CUDA_SUCCESS);
    EXPECT(d.EventDestroy(pend), CUDA_SUCCESS);
    EXPECT(d.EventDestroy(bsync), CUDA_SUCCESS);
    EXPECT(d.StreamDestroy(sg), CUDA_SUCCESS);
    EXPECT(d.StreamDestroy(s), CUDA_SUCCESS);
}

static void test_rerecord_and_waits(void) {
    struct gate g = {0, 0}, g2 = {0};
    CUstream sg, sfree, sw, sw2, s1, s2;
    CUevent e, e2, ed;
    float ms = -1;
    int before;
    EXPECT(d.StreamCreate(&sg, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    EXPECT(d.StreamCreate(&sfree, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    EXPECT(d.StreamCreate(&sw, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    EXPECT(d.StreamCreate(&sw2, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    EXPECT(d.EventCreate(&e, 0), CUDA_SUCCESS);
    EXPECT(d.EventCreate(&e2, 0), CUDA_SUCCESS);
    EXPECT(d.LaunchHostFunc(sg, gate_fn, &g), CUDA_SUCCESS);
    EXPECT(d.EventRecord(e, sg), CUDA_SUCCESS);
    EXPECT(d.EventQuery(e), CUDA_ERROR_NOT_READY);
    EXPECT(d.StreamWaitEvent(sw, e, 0), CUDA_SUCCESS);  /* waits for this record */
    EXPECT(d.EventRecord(e, sfree), CUDA_SUCCESS);      /* re-record while pending */
    EXPECT(d.StreamSynchronize(sfree), CUDA_SUCCESS);
    EXPECT(d.EventQuery(e), CUDA_SUCCESS);              /* the later record counts */
    EXPECT(d.EventRecord(e2, sw), CUDA_SUCCESS);
    nap();
    EXPECT(d.StreamQuery(sw), CUDA_ERROR_NOT_READY);    /* still behind the first */
    EXPECT(d.EventQuery(e2), CUDA_ERROR_NOT_READY);
    EXPECT(d.EventElapsedTime(&ms, e, e), CUDA_SUCCESS);
    CHECK(ms == 0.0f);
    EXPECT(d.EventRecord(e, sg), CUDA_SUCCESS);
    EXPECT(d.EventQuery(e), CUDA_ERROR_NOT_READY);
    EXPECT(d.EventCreate(&ed, 0), CUDA_SUCCESS);
    EXPECT(d.EventRecord(ed, sg), CUDA_SUCCESS);
    EXPECT(d.StreamWaitEvent(sw2, ed, 0), CUDA_SUCCESS);
    EXPECT(d.EventDestroy(ed), CUDA_SUCCESS);           /* pending and waited on */
    nap();
    EXPECT(d.StreamQuery(sw2), CUDA_ERROR_NOT_READY);
    gate_open(&g);
    EXPECT(d.EventSynchronize(e), CUDA_SUCCESS);
    EXPECT(d.StreamSynchronize(sw), CUDA_SUCCESS);
    EXPECT(d.StreamSynchronize(sw2), CUDA_SUCCESS);
    EXPECT(d.StreamQuery(sw), CUDA_SUCCESS);
    EXPECT(d.EventQuery(e2), CUDA_SUCCESS);

    /* a wait on an event behind a host function */
    EXPECT(d.StreamCreate(&s1, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    EXPECT(d.StreamCreate(&s2, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    EXPECT(d.LaunchHostFunc(s1, gate_fn, &g2), CUDA_SUCCESS);
    EXPECT(d.EventRecord(e, s1), CUDA_SUCCESS);
    EXPECT(d.StreamWaitEvent(s2, e, 0), CUDA_SUCCESS);
    nap();
    EXPECT(d.StreamQuery(s2), CUDA_ERROR_NOT_READY);
    EXPECT(d.EventRecord(e2, s2), CUDA_SUCCESS);
    nap();
    EXPECT(d.EventQuery(e2), CUDA_ERROR_NOT_READY);
    before = count_read();
    EXPECT(d.LaunchHostFunc(s2, count_fn, NULL), CUDA_SUCCESS);
    nap();
    CHECK(count_read() == before);
    gate_open(&g2);
    EXPECT(d.StreamSynchronize(s2), CUDA_SUCCESS);
    CHECK(count_read() == before + 1);
    EXPECT(d.StreamQuery(s1), CUDA_SUCCESS);

    /* destroy a stream with pending work: the work still runs */
    {
        struct gate g3 = {0};
        CUstream sd;
        EXPECT(d.StreamCreate(&sd, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
        before = count_read();
        EXPECT(d.LaunchHostFunc(sd, gate_fn, &g3), CUDA_SUCCESS);
        EXPECT(d.LaunchHostFunc(sd, count_fn, NULL), CUDA_SUCCESS);
        EXPECT(d.EventRecord(e, sd), CUDA_SUCCESS);
        EXPECT(d.StreamDestroy(sd), CUDA_SUCCESS);
        EXPECT(d.StreamQuery(sd), CUDA_ERROR_INVALID_HANDLE);
        nap();
        EXPECT(d.EventQuery(e), CUDA_ERROR_NOT_READY);
        gate_open(&g3);
        EXPECT(d.EventSynchronize(e), CUDA_SUCCESS);
        CHECK(count_read() == before + 1);
    }
    EXPECT(d.EventDestroy(e), CUDA_SUCCESS);
    EXPECT(d.EventDestroy(e2), CUDA_SUCCESS);
    EXPECT(d.StreamDestroy(sg), CUDA_SUCCESS);
    EXPECT(d.StreamDestroy(sfree), CUDA_SUCCESS);
    EXPECT(d.StreamDestroy(sw), CUDA_SUCCESS);
    EXPECT(d.StreamDestroy(sw2), CUDA_SUCCESS);
    EXPECT(d.StreamDestroy(s1), CUDA_SUCCESS);
    EXPECT(d.StreamDestroy(s2), CUDA_SUCCESS);
}

static void test_legacy(void) {
    CUstream sbl, snbl, sb2;
    CUevent e, e2, e3, e4;
    struct gate g1 = {0, 0}, g2 = {0, 0}, g3 = {0}, g4 = {0}, g5 = {0};
    pthread_t th, op;
    struct pt_arg pa;
    double t0;
    int before;
    EXPECT(d.StreamCreate(&sbl, 0), CUDA_SUCCESS);
    EXPECT(d.StreamCreate(&snbl, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    EXPECT(d.StreamCreate(&sb2, 0), CUDA_SUCCESS);
    EXPECT(d.EventCreate(&e, 0), CUDA_SUCCESS);
    EXPECT(d.EventCreate(&e2, 0), CUDA_SUCCESS);
    EXPECT(d.EventCreate(&e3, 0), CUDA_SUCCESS);
    EXPECT(d.EventCreate(&e4, 0), CUDA_SUCCESS);

    /* a blocking stream is busy */
    EXPECT(d.LaunchHostFunc(sbl, gate_fn, &g1), CUDA_SUCCESS);
    EXPECT(d.StreamQuery(CU_STREAM_LEGACY), CUDA_ERROR_NOT_READY);  /* no legacy work of its own */
    EXPECT(d.StreamQuery(NULL), CUDA_ERROR_NOT_READY);
    EXPECT(d.StreamQuery(CU_STREAM_PER_THREAD), CUDA_SUCCESS);
    EXPECT(d.StreamQueryPtsz(NULL), CUDA_SUCCESS);  /* NULL is the per-thread stream there */
    EXPECT(d.EventRecord(e, CU_STREAM_LEGACY), CUDA_SUCCESS);
    nap();
    EXPECT(d.EventQuery(e), CUDA_ERROR_NOT_READY);
    EXPECT(d.EventRecord(e2, snbl), CUDA_SUCCESS);
    EXPECT(d.StreamSynchronize(snbl), CUDA_SUCCESS);  /* non-blocking: not held */
    EXPECT(d.EventQuery(e2), CUDA_SUCCESS);
    EXPECT(d.EventRecord(e3, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
    nap();
    EXPECT(d.EventQuery(e3), CUDA_ERROR_NOT_READY);  /* behind the legacy record */
    EXPECT(d.EventRecord(e4, sb2), CUDA_SUCCESS);
    nap();
    EXPECT(d.EventQuery(e4), CUDA_ERROR_NOT_READY);
    EXPECT(d.StreamQuery(sb2), CUDA_ERROR_NOT_READY);
    gate_open(&g1);
    EXPECT(d.CtxSynchronize(NULL), CUDA_SUCCESS);
    EXPECT(d.EventQuery(e), CUDA_SUCCESS);
    EXPECT(d.EventQuery(e4), CUDA_SUCCESS);

    /* the legacy stream is busy */
    EXPECT(d.LaunchHostFunc(CU_STREAM_LEGACY, gate_fn, &g2), CUDA_SUCCESS);
    EXPECT(d.StreamQuery(sbl), CUDA_SUCCESS);  /* no work of its own */
    EXPECT(d.EventRecord(e, sbl), CUDA_SUCCESS);
    nap();
    EXPECT(d.EventQuery(e), CUDA_ERROR_NOT_READY);
    EXPECT(d.StreamQuery(sbl), CUDA_ERROR_NOT_READY);
    EXPECT(d.EventRecord(e2, snbl), CUDA_SUCCESS);
    EXPECT(d.StreamSynchronize(snbl), CUDA_SUCCESS);
    EXPECT(d.EventQuery(e2), CUDA_SUCCESS);
    EXPECT(d.EventRecord(e3, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
    nap();
    EXPECT(d.EventQuery(e3), CUDA_ERROR_NOT_READY);
    EXPECT(d.StreamWaitEvent(snbl, e, 0), CUDA_SUCCESS);
    EXPECT(d.EventRecord(e2, snbl), CUDA_SUCCESS);
    nap();
    EXPECT(d.EventQuery(e2), CUDA_ERROR_NOT_READY);
    gate_open(&g2);
    EXPECT(d.StreamSynchronize(CU_STREAM_LEGACY), CUDA_SUCCESS);
    EXPECT(d.StreamSynchronize(sbl), CUDA_SUCCESS);
    EXPECT(d.CtxSynchronize(NULL), CUDA_SUCCESS);

    /* a non-blocking stream is busy: the legacy stream does not wait */
    EXPECT(d.LaunchHostFunc(snbl, gate_fn, &g3), CUDA_SUCCESS);
    EXPECT(d.EventRecord(e, CU_STREAM_LEGACY), CUDA_SUCCESS);
    EXPECT(d.StreamSynchronize(CU_STREAM_LEGACY), CUDA_SUCCESS);
    EXPECT(d.EventQuery(e), CUDA_SUCCESS);
    EXPECT(d.StreamQuery(CU_STREAM_LEGACY), CUDA_SUCCESS);
    EXPECT(d.StreamQuery(snbl), CUDA_ERROR_NOT_READY);
    gate_open(&g3);
    EXPECT(d.CtxSynchronize(NULL), CUDA_SUCCESS);

    /* the per-thread stream is busy */
    EXPECT(d.LaunchHostFunc(CU_STREAM_PER_THREAD, gate_fn, &g4), CUDA_SUCCESS);
    nap();
    EXPECT(d.StreamQuery(CU_STREAM_LEGACY), CUDA_ERROR_NOT_READY);
    memset(&pa, 0, sizeof pa);
    pa.ev = e3;
    pthread_create(&th, NULL, pt_thread, &pa);
    pthread_join(th, NULL);
    CHECK(pa.rec == CUDA_SUCCESS && pa.query == CUDA_SUCCESS);  /* its own stream */
    EXPECT(d.EventRecord(e2, sbl), CUDA_SUCCESS);
    EXPECT(d.StreamSynchronize(sbl), CUDA_SUCCESS);
    EXPECT(d.EventQuery(e2), CUDA_SUCCESS);
    EXPECT(d.EventRecord(e, CU_STREAM_LEGACY), CUDA_SUCCESS);
    nap();
    EXPECT(d.EventQuery(e), CUDA_ERROR_NOT_READY);
    gate_open(&g4);
    EXPECT(d.StreamSynchronize(CU_STREAM_PER_THREAD), CUDA_SUCCESS);
    EXPECT(d.CtxSynchronize(NULL), CUDA_SUCCESS);

    /* synchronizing the legacy stream waits for the blocking streams */
    EXPECT(d.LaunchHostFunc(sbl, gate_fn, &g5), CUDA_SUCCESS);
    pthread_create(&op, NULL, opener, &g5);
    t0 = now_ms();
    EXPECT(d.StreamSynchronize(CU_STREAM_LEGACY), CUDA_SUCCESS);
    CHECK(now_ms() - t0 >= 100.0);
    pthread_join(op, NULL);
    EXPECT(d.StreamQuery(sbl), CUDA_SUCCESS);

    /* a thread leaves gated work on its per-thread stream and exits */
    {
        struct gate g6 = {0};
        memset(&pa, 0, sizeof pa);
        pa.leave_gated = &g6;
        before = count_read();
        pthread_create(&th, NULL, pt_thread, &pa);
        pthread_join(th, NULL);
        CHECK(pa.rec == CUDA_SUCCESS && pa.query == CUDA_SUCCESS);
        CHECK(count_read() == before);
        gate_open(&g6);
        EXPECT(d.CtxSynchronize(NULL), CUDA_SUCCESS);
        CHECK(count_read() == before + 1);
    }
    EXPECT(d.EventDestroy(e), CUDA_SUCCESS);
    EXPECT(d.EventDestroy(e2), CUDA_SUCCESS);
    EXPECT(d.EventDestroy(e3), CUDA_SUCCESS);
    EXPECT(d.EventDestroy(e4), CUDA_SUCCESS);
    EXPECT(d.StreamDestroy(sbl), CUDA_SUCCESS);
    EXPECT(d.StreamDestroy(snbl), CUDA_SUCCESS);
    EXPECT(d.StreamDestroy(sb2), CUDA_SUCCESS);
}

/* Device 1 stands in for the probe's second context. */
static void test_two_devices(void) {
    CUstream s0, s0b, s1;
    CUevent e0, e0b, e1, pend;
    struct gate g = {0, 0};
    float ms;
    int before;
    EXPECT(d.StreamCreate(&s0, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    EXPECT(d.StreamCreate(&s0b, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    EXPECT(d.EventCreate(&e0, 0), CUDA_SUCCESS);
    EXPECT(d.EventCreate(&e0b, 0), CUDA_SUCCESS);
    EXPECT(d.EventCreate(&pend, 0), CUDA_SUCCESS);
    EXPECT(d.CtxPushCurrent(ctx1), CUDA_SUCCESS);
    EXPECT(d.StreamCreate(&s1, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    EXPECT(d.EventCreate(&e1, 0), CUDA_SUCCESS);
    /* device 0's objects, used with device 1 current */
    EXPECT(d.EventRecord(e0, s0), CUDA_SUCCESS);
    EXPECT(d.EventRecord(e0b, s0), CUDA_SUCCESS);
    EXPECT(d.EventSynchronize(e0b), CUDA_SUCCESS);
    EXPECT(d.EventQuery(e0), CUDA_SUCCESS);
    EXPECT(d.EventElapsedTime(&ms, e0, e0b), CUDA_SUCCESS);
    EXPECT(d.StreamQuery(s0), CUDA_SUCCESS);
    EXPECT(d.StreamWaitEvent(s0, e0, 0), CUDA_SUCCESS);
    EXPECT(d.StreamWaitEvent(NULL, e0, 0), CUDA_SUCCESS);
    EXPECT(d.EventRecord(e0, NULL), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(d.EventRecord(e0, CU_STREAM_PER_THREAD), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(d.EventRecord(e1, s0), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(d.EventRecord(e0, s1), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(d.EventRecord(e1, s1), CUDA_SUCCESS);
    EXPECT(d.StreamSynchronize(s1), CUDA_SUCCESS);
    EXPECT(d.EventElapsedTime(&ms, e0b, e1), CUDA_ERROR_INVALID_HANDLE);
    {
        CUcontext c = NULL;
        EXPECT(d.StreamGetCtx(s0, &c, NULL), CUDA_SUCCESS);
        CHECK(c == ctx0);
        EXPECT(d.StreamGetCtx(CU_STREAM_LEGACY, &c, NULL), CUDA_SUCCESS);
        CHECK(c == ctx1);
    }
    /* host functions: one at a time per device, devices independent */
    EXPECT(d.LaunchHostFunc(s0, gate_fn, &g), CUDA_SUCCESS);
    EXPECT(d.EventRecord(pend, s0), CUDA_SUCCESS);
    gate_wait_started(&g);
    before = count_read();
    EXPECT(d.LaunchHostFunc(s0b, count_fn, NULL), CUDA_SUCCESS);
    EXPECT(d.EventRecord(e0b, s0b), CUDA_SUCCESS);
    EXPECT(d.LaunchHostFunc(s1, count_fn, NULL), CUDA_SUCCESS);
    EXPECT(d.StreamSynchronize(s1), CUDA_SUCCESS);  /* device 1 is not held */
    CHECK(count_read() == before + 1);
    nap();
    EXPECT(d.EventQuery(e0b), CUDA_ERROR_NOT_READY);  /* behind the held host function */
    CHECK(count_read() == before + 1);
    EXPECT(d.EventElapsedTime(&ms, pend, e1), CUDA_ERROR_INVALID_HANDLE);  /* before NOT_READY */
    EXPECT(d.EventElapsedTime(&ms, e1, pend), CUDA_ERROR_INVALID_HANDLE);
    /* a wait across devices */
    EXPECT(d.StreamWaitEvent(s1, pend, 0), CUDA_SUCCESS);
    EXPECT(d.EventRecord(e1, s1), CUDA_SUCCESS);
    nap();
    EXPECT(d.EventQuery(e1), CUDA_ERROR_NOT_READY);
    gate_open(&g);
    EXPECT(d.EventSynchronize(e1), CUDA_SUCCESS);
    EXPECT(d.CtxSynchronize(ctx0), CUDA_SUCCESS);
    CHECK(count_read() == before + 2);
    EXPECT(d.EventDestroy(e0), CUDA_SUCCESS);  /* device 0's, destroyed with 1 current */
    EXPECT(d.StreamDestroy(s0), CUDA_SUCCESS);
    EXPECT(d.EventDestroy(e1), CUDA_SUCCESS);
    EXPECT(d.StreamDestroy(s1), CUDA_SUCCESS);
    EXPECT(d.CtxPopCurrent(NULL), CUDA_SUCCESS);
    EXPECT(d.EventDestroy(e0b), CUDA_SUCCESS);
    EXPECT(d.EventDestroy(pend), CUDA_SUCCESS);
    EXPECT(d.StreamDestroy(s0b), CUDA_SUCCESS);
}

static void test_no_context(void) {
    CUevent en, rec1, rec2, edel, ex;
    CUstream sn, sdel, sx;
    struct gate g = {0, 0};
    float ms = -1;
    int v, before;
    unsigned u;
    CUdevice dv;
    CUcontext c = (CUcontext)1;
    CUstreamCaptureStatus cs;
    EXPECT(d.EventCreate(&en, 0), CUDA_SUCCESS);
    EXPECT(d.EventCreate(&rec1, 0), CUDA_SUCCESS);
    EXPECT(d.EventCreate(&rec2, 0), CUDA_SUCCESS);
    EXPECT(d.EventCreate(&edel, 0), CUDA_SUCCESS);
    EXPECT(d.StreamCreate(&sn, 0), CUDA_SUCCESS);
    EXPECT(d.StreamCreate(&sdel, 0), CUDA_SUCCESS);
    EXPECT(d.EventRecord(rec1, sn), CUDA_SUCCESS);
    EXPECT(d.EventRecord(rec2, sn), CUDA_SUCCESS);
    EXPECT(d.StreamSynchronize(sn), CUDA_SUCCESS);
    EXPECT(d.CtxSetCurrent(NULL), CUDA_SUCCESS);
    EXPECT(d.CtxGetCurrent(&c), CUDA_SUCCESS);
    CHECK(c == NULL);
    EXPECT(d.EventQuery(rec1), CUDA_SUCCESS);
    EXPECT(d.EventQuery(en), CUDA_SUCCESS);
    EXPECT(d.EventSynchronize(rec1), CUDA_SUCCESS);
    EXPECT(d.EventSynchronize(en), CUDA_SUCCESS);
    EXPECT(d.EventElapsedTime(&ms, rec1, rec2), CUDA_SUCCESS);
    CHECK(ms >= 0.0f);
    EXPECT(d.EventElapsedTime(&ms, en, rec2), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(d.StreamWaitEvent(sn, rec1, 0), CUDA_SUCCESS);
    EXPECT(d.StreamWaitEvent(CU_STREAM_LEGACY, rec1, 0), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.StreamWaitEvent(NULL, rec1, 0), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.StreamWaitEvent(CU_STREAM_LEGACY, rec1, 0x10), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.StreamWaitEvent(CU_STREAM_LEGACY, NULL, 0), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.StreamWaitEvent(sn, rec1, CU_EVENT_WAIT_EXTERNAL), CUDA_ERROR_ILLEGAL_STATE);
    EXPECT(d.StreamQuery(sn), CUDA_SUCCESS);
    EXPECT(d.StreamQuery(CU_STREAM_LEGACY), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.StreamQuery(NULL), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.StreamQuery(CU_STREAM_PER_THREAD), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.StreamSynchronize(sn), CUDA_SUCCESS);
    EXPECT(d.StreamSynchronize(CU_STREAM_LEGACY), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.StreamSynchronize(NULL), CUDA_ERROR_INVALID_CONTEXT);
    before = count_read();
    EXPECT(d.LaunchHostFunc(sn, count_fn, NULL), CUDA_SUCCESS);
    EXPECT(d.LaunchHostFunc(NULL, count_fn, NULL), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.LaunchHostFunc(CU_STREAM_LEGACY, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    EXPECT(d.EventRecord(rec2, sn), CUDA_SUCCESS);
    EXPECT(d.EventRecord(rec2, NULL), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.EventRecord(rec2, CU_STREAM_LEGACY), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.EventRecord(rec2, CU_STREAM_PER_THREAD), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.EventRecord(NULL, CU_STREAM_LEGACY), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.EventRecordWithFlags(rec2, NULL, 0), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.EventRecordWithFlags(rec2, NULL, CU_EVENT_RECORD_EXTERNAL), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.EventRecordWithFlags(rec2, NULL, 0x40), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.EventRecordWithFlags(rec2, sn, CU_EVENT_RECORD_EXTERNAL), CUDA_ERROR_ILLEGAL_STATE);
    EXPECT(d.StreamGetPriority(CU_STREAM_LEGACY, &v), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.StreamGetPriority(CU_STREAM_PER_THREAD, &v), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.StreamGetPriority(CU_STREAM_LEGACY, NULL), CUDA_ERROR_INVALID_VALUE);
    EXPECT(d.StreamGetPriority(sn, &v), CUDA_SUCCESS);
    EXPECT(d.StreamGetFlags(CU_STREAM_LEGACY, &u), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.StreamGetFlags(sn, &u), CUDA_SUCCESS);
    EXPECT(d.StreamGetDevice(CU_STREAM_LEGACY, &dv), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.StreamGetDevice(CU_STREAM_PER_THREAD, &dv), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.StreamGetDevice(sn, &dv), CUDA_SUCCESS);
    EXPECT(d.StreamGetCtx(sn, &c, NULL), CUDA_SUCCESS);
    CHECK(c == ctx0);
    EXPECT(d.StreamGetCtx(CU_STREAM_LEGACY, &c, NULL), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.StreamIsCapturing(sn, &cs), CUDA_SUCCESS);
    EXPECT(d.StreamIsCapturing(CU_STREAM_LEGACY, &cs), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.CtxGetStreamPriorityRange(&v, &v), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.CtxGetStreamPriorityRange(NULL, NULL), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.StreamCreate(&sx, 0), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.StreamCreateWithPriority(&sx, 0, 0), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.StreamCreate(&sx, 0x4), CUDA_ERROR_INVALID_VALUE);  /* flags before context */
    EXPECT(d.StreamCreate(NULL, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT(d.EventCreate(&ex, 0), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.EventCreate(&ex, 0x10), CUDA_ERROR_INVALID_CONTEXT);  /* context before flags */
    EXPECT(d.EventCreate(NULL, 0), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.CtxSynchronize(NULL), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.CtxGetDevice(&dv, NULL), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.LaunchHostFunc(sn, gate_fn, &g), CUDA_SUCCESS);
    EXPECT(d.EventRecord(rec1, sn), CUDA_SUCCESS);
    EXPECT(d.EventQuery(rec1), CUDA_ERROR_NOT_READY);
    gate_open(&g);
    EXPECT(d.EventSynchronize(rec1), CUDA_SUCCESS);
    EXPECT(d.StreamSynchronize(sn), CUDA_SUCCESS);
    CHECK(count_read() == before + 1);
    EXPECT(d.EventDestroy(edel), CUDA_SUCCESS);
    EXPECT(d.StreamDestroy(sdel), CUDA_SUCCESS);
    EXPECT(d.CtxSetCurrent(ctx0), CUDA_SUCCESS);
    EXPECT(d.EventDestroy(en), CUDA_SUCCESS);
    EXPECT(d.EventDestroy(rec1), CUDA_SUCCESS);
    EXPECT(d.EventDestroy(rec2), CUDA_SUCCESS);
    EXPECT(d.StreamDestroy(sn), CUDA_SUCCESS);
}

/* The capture legality of the stream getters and of a query of another
 * stream, in each capture mode (the driver's answers, read on an H100):
 * priority, context and capture status of a capturing stream are allowed;
 * its device and flags are STREAM_CAPTURE_UNSUPPORTED and invalidate the
 * capture in every mode; a query of another stream by the capturing thread
 * invalidates a global or thread-local capture, not a relaxed one. */
static CUstreamCaptureStatus cap_of(CUstream s) {
    CUstreamCaptureStatus cs = (CUstreamCaptureStatus)77;
    if (d.StreamIsCapturing(s, &cs) != CUDA_SUCCESS) return (CUstreamCaptureStatus)-1;
    return cs;
}

static void end_capture(CUstream s, CUresult want) {
    CUgraph g = NULL;
    EXPECT(d.StreamEndCapture(s, &g), want);
    CHECK((want == CUDA_SUCCESS) == (g != NULL));
    if (g) EXPECT(d.GraphDestroy(g), CUDA_SUCCESS);
}

/* A wait on the legacy stream while a blocking stream captures is
 * IMPLICIT even for an event with nothing left to wait for (never
 * recorded, or its record done): the answer never hangs on timing. */
static void test_legacy_wait_in_capture(void) {
    CUstream b;
    CUevent never, done;
    EXPECT(d.StreamCreate(&b, CU_STREAM_DEFAULT), CUDA_SUCCESS);
    EXPECT(d.EventCreate(&never, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
    EXPECT(d.EventCreate(&done, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
    EXPECT(d.EventRecord(done, NULL), CUDA_SUCCESS);
    EXPECT(d.EventSynchronize(done), CUDA_SUCCESS);
    EXPECT(d.StreamBeginCapture(b, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    EXPECT(d.StreamWaitEvent(NULL, never, 0), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    end_capture(b, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    EXPECT(d.StreamBeginCapture(b, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    EXPECT(d.StreamWaitEvent(NULL, done, 0), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    end_capture(b, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    EXPECT(d.StreamBeginCapture(b, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    end_capture(NULL, CUDA_ERROR_STREAM_CAPTURE_IMPLICIT); /* ends nothing; invalidates (GPU transcripts) */
    end_capture(b, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    EXPECT(d.EventDestroy(never), CUDA_SUCCESS);
    EXPECT(d.EventDestroy(done), CUDA_SUCCESS);
    EXPECT(d.StreamDestroy(b), CUDA_SUCCESS);
}

/* A capture takes a memory operation whatever its address, as the driver
 * does (GPU transcripts); the launch refuses one outside pinned memory
 * rather than write where the emulation owns nothing. */
static void test_memop_address_in_capture(void) {
    CUstream s;
    CUgraph g = NULL;
    CUgraphExec x = NULL;
    EXPECT(d.StreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    EXPECT(d.StreamWriteValue64(s, 8, 7, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT(d.StreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    EXPECT(d.StreamWriteValue64(s, 8, 7, 0), CUDA_SUCCESS);
    EXPECT(d.StreamEndCapture(s, &g), CUDA_SUCCESS);
    CHECK(g != NULL);
    EXPECT(d.GraphInstantiateWithFlags(&x, g, 0), CUDA_SUCCESS);
    EXPECT(d.GraphLaunch(x, s), CUDA_ERROR_INVALID_VALUE);
    EXPECT(d.StreamSynchronize(s), CUDA_SUCCESS);
    EXPECT(d.GraphExecDestroy(x), CUDA_SUCCESS);
    EXPECT(d.GraphDestroy(g), CUDA_SUCCESS);
    EXPECT(d.StreamDestroy(s), CUDA_SUCCESS);
}

static void test_capture_legality(void) {
    static const CUstreamCaptureMode modes[3] = {CU_STREAM_CAPTURE_MODE_GLOBAL,
                                                 CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                                                 CU_STREAM_CAPTURE_MODE_RELAXED};
    CUcontext ctx, got;
    CUstream s, other;
    CUdevice dev = -1;
    unsigned flags = 77;
    unsigned long long id = 0;
    int i, prio = 77;
    EXPECT(d.PrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
    EXPECT(d.CtxPushCurrent(ctx), CUDA_SUCCESS);
    EXPECT(d.StreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    EXPECT(d.StreamCreate(&other, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    for (i = 0; i < 3; i++) {
        const CUresult query_want =
            modes[i] == CU_STREAM_CAPTURE_MODE_RELAXED ? CUDA_SUCCESS : CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        EXPECT(d.StreamBeginCapture(s, modes[i]), CUDA_SUCCESS);
        EXPECT(d.StreamGetPriority(s, &prio), CUDA_SUCCESS);
        EXPECT(d.StreamGetCtx(s, &got, NULL), CUDA_SUCCESS);
        CHECK(got == ctx);
        EXPECT(d.StreamGetFlags(other, &flags), CUDA_SUCCESS); /* not captured */
        EXPECT(d.StreamGetDevice(other, &dev), CUDA_SUCCESS);
        CHECK(cap_of(s) == CU_STREAM_CAPTURE_STATUS_ACTIVE);
        EXPECT(d.StreamGetDevice(s, &dev), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
        CHECK(cap_of(s) == CU_STREAM_CAPTURE_STATUS_INVALIDATED);
        EXPECT(d.StreamGetFlags(s, &flags), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
        end_capture(s, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
        EXPECT(d.StreamBeginCapture(s, modes[i]), CUDA_SUCCESS);
        EXPECT(d.StreamGetFlags(s, &flags), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
        CHECK(cap_of(s) == CU_STREAM_CAPTURE_STATUS_INVALIDATED);
        end_capture(s, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
        EXPECT(d.StreamBeginCapture(s, modes[i]), CUDA_SUCCESS); /* and its id (GPU transcripts) */
        EXPECT(d.StreamGetId(other, &id), CUDA_SUCCESS);
        EXPECT(d.StreamGetId(s, &id), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
        CHECK(cap_of(s) == CU_STREAM_CAPTURE_STATUS_INVALIDATED);
        end_capture(s, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
        EXPECT(d.StreamBeginCapture(s, modes[i]), CUDA_SUCCESS);
        EXPECT(d.StreamQuery(other), query_want);
        CHECK(cap_of(s) == (query_want == CUDA_SUCCESS ? CU_STREAM_CAPTURE_STATUS_ACTIVE
                                                       : CU_STREAM_CAPTURE_STATUS_INVALIDATED));
        end_capture(s, query_want == CUDA_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
        /* once ended, the getters answer again */
        EXPECT(d.StreamGetFlags(s, &flags), CUDA_SUCCESS);
        CHECK(flags == CU_STREAM_NON_BLOCKING);
        EXPECT(d.StreamGetDevice(s, &dev), CUDA_SUCCESS);
        CHECK(dev == 0);
    }
    EXPECT(d.StreamDestroy(other), CUDA_SUCCESS);
    EXPECT(d.StreamDestroy(s), CUDA_SUCCESS);
    test_legacy_wait_in_capture();
    test_memop_address_in_capture();
    EXPECT(d.CtxPopCurrent(&got), CUDA_SUCCESS);
    EXPECT(d.PrimaryCtxRelease(0), CUDA_SUCCESS);
}

static void test_stress(void) {
    pthread_t th[STRESS_THREADS];
    struct stress_arg a[STRESS_THREADS];
    CUstream shared;
    int all_ok = 1;
    EXPECT(d.StreamCreate(&shared, 0), CUDA_SUCCESS);
    __atomic_store_n(&stress_count, 0, __ATOMIC_RELAXED);
    for (int i = 0; i < STRESS_THREADS; i++) {
        a[i].shared = shared;
        a[i].ok = 0;
        pthread_create(&th[i], NULL, stress_thread, &a[i]);
    }
    for (int i = 0; i < STRESS_THREADS; i++) {
        pthread_join(th[i], NULL);
        all_ok &= a[i].ok;
    }
    CHECK(all_ok);
    EXPECT(d.CtxSynchronize(NULL), CUDA_SUCCESS);
    CHECK(__atomic_load_n(&stress_count, __ATOMIC_RELAXED) == STRESS_THREADS * STRESS_ITERS);
    EXPECT(d.StreamDestroy(shared), CUDA_SUCCESS);
}

/* The last release of a primary context resets it (run last). */
static void test_release(void) {
    CUevent e;
    CUstream s;
    CUcontext c = NULL;
    int lo, hi;
    EXPECT(d.EventCreate(&e, 0), CUDA_SUCCESS);
    EXPECT(d.StreamCreate(&s, 0), CUDA_SUCCESS);
    EXPECT(d.LaunchHostFunc(s, sleep20_fn, NULL), CUDA_SUCCESS);
    EXPECT(d.EventRecord(e, s), CUDA_SUCCESS);
    EXPECT(d.PrimaryCtxRelease(0), CUDA_SUCCESS);  /* to 0: waits, then drops objects */
    EXPECT(d.PrimaryCtxRelease(0), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.EventQuery(e), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(d.StreamQuery(s), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(d.CtxGetCurrent(&c), CUDA_SUCCESS);
    CHECK(c == ctx0);  /* still current, but inactive */
    EXPECT(d.EventCreate(&e, 0), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.CtxGetStreamPriorityRange(&lo, &hi), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(d.PrimaryCtxRetain(&c, 0), CUDA_SUCCESS);
    CHECK(c == ctx0);
    EXPECT(d.EventCreate(&e, 0), CUDA_SUCCESS);
    EXPECT(d.EventRecord(e, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
    EXPECT(d.EventSynchronize(e), CUDA_SUCCESS);
    EXPECT(d.EventDestroy(e), CUDA_SUCCESS);
    EXPECT(d.PrimaryCtxRelease(0), CUDA_SUCCESS);
    EXPECT(d.PrimaryCtxRelease(1), CUDA_SUCCESS);
}

int main(void) {
    const char *path = getenv("EVX_HOST_LIB");
    const char *s = NULL;
    int v = 0;
    CUcontext c;
    void *sym;
    if (!path || !*path) {
        printf("FAIL: set EVX_HOST_LIB to the path of libevx-host.so\n");
        return 1;
    }
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        printf("FAIL: dlopen(%s): %s\n", path, dlerror());
        return 1;
    }
    sym = dlsym(lib, "cuGetProcAddress_v2");
    if (!sym) {
        printf("FAIL: %s does not export cuGetProcAddress_v2\n", path);
        return 1;
    }
    memcpy(&d.GetProcAddress, &sym, sizeof sym);
    {
        const char *(*ver)(void) = NULL;
        sym = dlsym(lib, "evx_host_emulation_version");
        memcpy(&ver, &sym, sizeof sym);
        CHECK(ver && strcmp(ver(), "evx host emulation 1") == 0);
    }
    LOAD(Init, "cuInit");
    LOAD(DriverGetVersion, "cuDriverGetVersion");
    LOAD(GetErrorName, "cuGetErrorName");
    LOAD(GetErrorString, "cuGetErrorString");
    LOAD(DeviceGetCount, "cuDeviceGetCount");
    LOAD(DeviceGet, "cuDeviceGet");
    LOAD(DeviceGetName, "cuDeviceGetName");
    LOAD(DeviceGetAttribute, "cuDeviceGetAttribute");
    LOAD(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    LOAD(PrimaryCtxRelease, "cuDevicePrimaryCtxRelease");
    LOAD(CtxGetCurrent, "cuCtxGetCurrent");
    LOAD(CtxSetCurrent, "cuCtxSetCurrent");
    LOAD(CtxPushCurrent, "cuCtxPushCurrent");
    LOAD(CtxPopCurrent, "cuCtxPopCurrent");
    LOAD(CtxGetDevice, "cuCtxGetDevice");
    LOAD(CtxGetStreamPriorityRange, "cuCtxGetStreamPriorityRange");
    LOAD(CtxSynchronize, "cuCtxSynchronize");
    LOAD(EventCreate, "cuEventCreate");
    LOAD(EventDestroy, "cuEventDestroy");
    LOAD(EventRecord, "cuEventRecord");
    LOAD(EventRecordWithFlags, "cuEventRecordWithFlags");
    LOAD(EventQuery, "cuEventQuery");
    LOAD(EventSynchronize, "cuEventSynchronize");
    LOAD(EventElapsedTime, "cuEventElapsedTime");
    LOAD(StreamCreate, "cuStreamCreate");
    LOAD(StreamCreateWithPriority, "cuStreamCreateWithPriority");
    LOAD(StreamDestroy, "cuStreamDestroy");
    LOAD(StreamWaitEvent, "cuStreamWaitEvent");
    LOAD(StreamQuery, "cuStreamQuery");
    LOAD(StreamSynchronize, "cuStreamSynchronize");
    LOAD(LaunchHostFunc, "cuLaunchHostFunc");
    LOAD(StreamGetPriority, "cuStreamGetPriority");
    LOAD(StreamGetFlags, "cuStreamGetFlags");
    LOAD(StreamGetDevice, "cuStreamGetDevice");
    LOAD(StreamGetCtx, "cuStreamGetCtx");
    LOAD(StreamGetId, "cuStreamGetId");
    LOAD(IpcGetEventHandle, "cuIpcGetEventHandle");
    LOAD(IpcOpenEventHandle, "cuIpcOpenEventHandle");
    LOAD(StreamIsCapturing, "cuStreamIsCapturing");
    LOAD(StreamBeginCapture, "cuStreamBeginCapture");
    LOAD(StreamEndCapture, "cuStreamEndCapture");
    LOAD(GraphDestroy, "cuGraphDestroy");
    LOAD(GraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
    LOAD(GraphLaunch, "cuGraphLaunch");
    LOAD(GraphExecDestroy, "cuGraphExecDestroy");
    LOAD(StreamWriteValue64, "cuStreamWriteValue64");
    LOAD(ThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode");
    {
        CUdriverProcAddressQueryResult st;
        if (getproc("cuStreamQuery", &d.StreamQueryPtsz, 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                    &st) != CUDA_SUCCESS || !d.StreamQueryPtsz) {
            printf("FAIL: no per-thread cuStreamQuery\n");
            return 1;
        }
    }

    /* before cuInit */
    EXPECT(d.DriverGetVersion(&v), CUDA_SUCCESS);
    CHECK(v == 13000);
    EXPECT(d.DeviceGetCount(&v), CUDA_ERROR_NOT_INITIALIZED);
    EXPECT(d.CtxGetCurrent(&c), CUDA_ERROR_NOT_INITIALIZED);
    EXPECT(d.CtxSetCurrent(NULL), CUDA_ERROR_NOT_INITIALIZED);
    {
        CUevent e;
        EXPECT(d.EventCreate(&e, 0), CUDA_ERROR_NOT_INITIALIZED);
    }
    EXPECT(d.GetErrorName(CUDA_ERROR_NOT_READY, &s), CUDA_SUCCESS);
    CHECK(s && strcmp(s, "CUDA_ERROR_NOT_READY") == 0);
    EXPECT(d.GetErrorString(CUDA_ERROR_INVALID_HANDLE, &s), CUDA_SUCCESS);
    CHECK(s && *s);
    EXPECT(d.GetErrorString(CUDA_ERROR_LAUNCH_FAILED, &s), CUDA_SUCCESS);
    CHECK(s && strcmp(s, "launch failed") == 0);
    s = "x";
    EXPECT(d.GetErrorName((CUresult)9999, &s), CUDA_ERROR_INVALID_VALUE);
    CHECK(s == NULL);
    EXPECT(d.GetErrorName(CUDA_SUCCESS, NULL), CUDA_ERROR_INVALID_VALUE);
    EXPECT(d.Init(1), CUDA_ERROR_INVALID_VALUE);
    setenv("EVX_HOST_DEVICES", "0", 1);
    EXPECT(d.Init(0), CUDA_ERROR_INVALID_VALUE);
    setenv("EVX_HOST_DEVICES", "17", 1);
    EXPECT(d.Init(0), CUDA_ERROR_INVALID_VALUE);
    setenv("EVX_HOST_DEVICES", "2x", 1);
    EXPECT(d.Init(0), CUDA_ERROR_INVALID_VALUE);
    EXPECT(d.DeviceGetCount(&v), CUDA_ERROR_NOT_INITIALIZED);
    setenv("EVX_HOST_DEVICES", "2", 1);
    EXPECT(d.Init(0), CUDA_SUCCESS);
    EXPECT(d.Init(0), CUDA_SUCCESS);

    test_getproc();
    test_devices_and_contexts();
    test_flags_and_handles();
    test_elapsed();
    test_ipc_record_order();
    test_rerecord_and_waits();
    test_legacy();
    test_two_devices();
    test_no_context();
    test_capture_legality();
    test_stress();
    test_release();

    printf("host emulation self-test: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
