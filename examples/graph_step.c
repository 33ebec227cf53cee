/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/*
 * A training step captured into a CUDA graph and timed from inside it
 * (docs/graphs.md).
 *
 * The step (forward, backward, optimizer) is captured once on a stream evx
 * made; four evx timeline marks taken during the capture become nodes of
 * the graph, so each launch of the graph records them, and after each
 * launch the timeline's intervals are that launch's phases. The phases
 * here are host functions that sleep (the host emulation runs no kernels);
 * with kernels the marks are taken the same way.
 *
 * Build: cc graph_step.c $(pkg-config --cflags --libs evx) -ldl
 * Run:   ./graph_step            (EVX_DRIVER=host for the host emulation)
 */
#define _POSIX_C_SOURCE 200809L

#include <cuda.h> /* types only: the driver is reached through evx's */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <evx/evx.h>

#define STEPS 5

/* The graph calls, looked up in the driver evx opened. */
typedef struct graph_api {
    CUresult (*primary_retain)(CUcontext *, CUdevice);
    CUresult (*primary_release)(CUdevice);
    CUresult (*ctx_push)(CUcontext);
    CUresult (*ctx_pop)(CUcontext *);
    CUresult (*begin_capture)(CUstream, CUstreamCaptureMode);
    CUresult (*end_capture)(CUstream, CUgraph *);
    CUresult (*instantiate)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*launch)(CUgraphExec, CUstream);
    CUresult (*exec_destroy)(CUgraphExec);
    CUresult (*graph_destroy)(CUgraph);
} graph_api;

typedef CUresult (*get_proc_fn)(const char *, void **, int, cuuint64_t,
                                CUdriverProcAddressQueryResult *);

static int load(graph_api *api)
{
    static const char *const names[] = {
        "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease", "cuCtxPushCurrent",
        "cuCtxPopCurrent", "cuStreamBeginCapture", "cuStreamEndCapture",
        "cuGraphInstantiateWithFlags", "cuGraphLaunch", "cuGraphExecDestroy",
        "cuGraphDestroy"};
    void *fns[sizeof names / sizeof names[0]];
    const char *path = NULL;
    void *lib, *sym;
    get_proc_fn get_proc;
    size_t i;

    if (evx_driver_get_path(&path) != EVX_SUCCESS || path == NULL)
        return 0;
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL); /* stays open, as evx's */
    if (lib == NULL || (sym = dlsym(lib, "cuGetProcAddress_v2")) == NULL)
        return 0;
    memcpy(&get_proc, &sym, sizeof sym);
    for (i = 0; i < sizeof names / sizeof names[0]; i++) {
        CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SUCCESS;
        fns[i] = NULL;
        if (get_proc(names[i], &fns[i], 13000, CU_GET_PROC_ADDRESS_DEFAULT, &found) !=
                CUDA_SUCCESS ||
            found != CU_GET_PROC_ADDRESS_SUCCESS || fns[i] == NULL) {
            fprintf(stderr, "graph_step: the driver has no %s\n", names[i]);
            return 0;
        }
    }
    memcpy(&api->primary_retain, &fns[0], sizeof fns[0]);
    memcpy(&api->primary_release, &fns[1], sizeof fns[1]);
    memcpy(&api->ctx_push, &fns[2], sizeof fns[2]);
    memcpy(&api->ctx_pop, &fns[3], sizeof fns[3]);
    memcpy(&api->begin_capture, &fns[4], sizeof fns[4]);
    memcpy(&api->end_capture, &fns[5], sizeof fns[5]);
    memcpy(&api->instantiate, &fns[6], sizeof fns[6]);
    memcpy(&api->launch, &fns[7], sizeof fns[7]);
    memcpy(&api->exec_destroy, &fns[8], sizeof fns[8]);
    memcpy(&api->graph_destroy, &fns[9], sizeof fns[9]);
    return 1;
}

/* A phase of the step: sleeps user_data milliseconds. */
static void phase(void *user_data)
{
    struct timespec ts;
    long ms = (long)(intptr_t)user_data;
    ts.tv_sec = 0;
    ts.tv_nsec = ms * 1000000L;
    nanosleep(&ts, NULL);
}

#define EVX(call) \
    do { \
        evx_status_t s_ = (call); \
        if (s_ != EVX_SUCCESS) { \
            fprintf(stderr, "graph_step: %s: %s\n", #call, evx_last_error_message()); \
            goto out; \
        } \
    } while (0)

#define CU(call) \
    do { \
        CUresult r_ = (call); \
        if (r_ != CUDA_SUCCESS) { \
            fprintf(stderr, "graph_step: %s: %s\n", #call, \
                    evx_status_name((evx_status_t)r_)); \
            goto out; \
        } \
    } while (0)

int main(void)
{
    static const char *const names[3] = {"forward", "backward", "optimizer"};
    graph_api cu;
    evx_stream_t s = NULL;
    evx_timeline_t tl = NULL;
    void *native = NULL;
    CUcontext ctx = NULL;
    CUgraph graph = NULL;
    CUgraphExec exec = NULL;
    float ms[3];
    uint32_t n = 0;
    int rc = 1, step, retained = 0, pushed = 0, capturing = 0;

    if (!load(&cu)) {
        fprintf(stderr, "graph_step: the driver API could not be loaded\n");
        return 1;
    }
    EVX(evx_device_create_stream(0, EVX_STREAM_NON_BLOCKING, 0, &s));
    EVX(evx_stream_get_native(s, &native));
    EVX(evx_device_create_timeline(0, 4, &tl));

    /* Capture the step once; the marks become nodes of the graph. */
    CU(cu.begin_capture((CUstream)native, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    capturing = 1;
    EVX(evx_timeline_mark(tl, s, NULL));
    EVX(evx_stream_launch_host_func(s, phase, (void *)(intptr_t)3)); /* forward */
    EVX(evx_timeline_mark(tl, s, NULL));
    EVX(evx_stream_launch_host_func(s, phase, (void *)(intptr_t)6)); /* backward */
    EVX(evx_timeline_mark(tl, s, NULL));
    EVX(evx_stream_launch_host_func(s, phase, (void *)(intptr_t)1)); /* optimizer */
    EVX(evx_timeline_mark(tl, s, NULL));
    capturing = 0;
    CU(cu.end_capture((CUstream)native, &graph));

    /* Nothing has run yet: evx says so rather than read stale times. */
    if (evx_timeline_intervals(tl, ms, 3, &n) == EVX_ERROR_ILLEGAL_STATE)
        printf("before the first launch: %s\n", evx_last_error_message());

    /* cuGraphInstantiate works on the current context. */
    CU(cu.primary_retain(&ctx, 0));
    retained = 1;
    CU(cu.ctx_push(ctx));
    pushed = 1;
    CU(cu.instantiate(&exec, graph, 0));
    for (step = 0; step < STEPS; step++) {
        CU(cu.launch(exec, (CUstream)native));
        EVX(evx_timeline_synchronize(tl));
        EVX(evx_timeline_intervals(tl, ms, 3, &n));
        printf("step %d: %s %.2f ms, %s %.2f ms, %s %.2f ms\n", step, names[0],
               (double)ms[0], names[1], (double)ms[1], names[2], (double)ms[2]);
    }
    rc = 0;
out:
    if (capturing && cu.end_capture((CUstream)native, &graph) != CUDA_SUCCESS)
        rc = 1;
    if (s != NULL && evx_stream_synchronize(s) != EVX_SUCCESS)
        rc = 1;
    if (exec != NULL && cu.exec_destroy(exec) != CUDA_SUCCESS)
        rc = 1;
    if (graph != NULL && cu.graph_destroy(graph) != CUDA_SUCCESS)
        rc = 1;
    if (pushed && cu.ctx_pop(&ctx) != CUDA_SUCCESS)
        rc = 1;
    if (retained && cu.primary_release(0) != CUDA_SUCCESS)
        rc = 1;
    /* the timeline outlives every launch of the graph that records its marks */
    if (tl != NULL && evx_timeline_destroy(tl) != EVX_SUCCESS)
        rc = 1;
    if (s != NULL && evx_stream_destroy(s) != EVX_SUCCESS)
        rc = 1;
    return rc;
}
