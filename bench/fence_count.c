/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/*
 * evx-fence-count: one kind of call on a stream of device 0, many times,
 * for counting under callgrind how many instructions evx executes per call
 * next to the raw driver call it wraps. bench/callgrind_fence.sh runs it and
 * reads the counts; run alone, it only makes the calls (its smoke test).
 *
 *   evx-fence-count CALL COUNT
 *
 * CALL is one of
 *   signal      evx_fence_signal (a fence of this process, values 1, 2, ...)
 *   signal-ipc  evx_fence_signal on an EVX_FENCE_INTERPROCESS fence
 *   write       cuStreamWriteValue64 on a pinned word (the raw signal)
 *   wait        evx_stream_wait_fence (value 1, reached)
 *   waitvalue   cuStreamWaitValue64, GEQ 1, on a pinned word at 1
 *   record      evx_event_record (the event hot path, for comparison)
 *   waitevent   evx_stream_wait_event (likewise)
 *   query       evx_event_query of a completed event (likewise)
 *   all         each of the above COUNT times (the smoke run)
 * Instrumentation (when callgrind runs it with --instr-atstart=no) covers
 * only the calls, after 200 warm-up calls; the stream is synchronized every
 * 1,000 calls with instrumentation off, so that the queue stays short.
 */
#define _GNU_SOURCE

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "evx/evx.h"

#include "callgrind_marks.h"

static const char *const kCalls[] = {"signal", "signal-ipc", "write",     "wait",
                                     "waitvalue", "record",   "waitevent", "query"};
enum {
    K_SIGNAL,
    K_SIGNAL_IPC,
    K_WRITE,
    K_WAIT,
    K_WAITVALUE,
    K_RECORD,
    K_WAITEVENT,
    K_QUERY,
    K_COUNT
};

static bench_raw g_raw;

static void check_evx(evx_status_t st, const char *call)
{
    if (st == EVX_SUCCESS) return;
    fprintf(stderr, "evx-fence-count: %s -> %s: %s\n", call, evx_status_name(st),
            evx_last_error_message());
    exit(1);
}

static void check_raw(CUresult r, const char *call)
{
    if (r == CUDA_SUCCESS) return;
    fprintf(stderr, "evx-fence-count: %s -> %s\n", call, bench_raw_status_name(&g_raw, r));
    exit(1);
}

/* One call of kind k, the n-th (from 1). */
static void one(int k, evx_stream_t s, CUstream cs, evx_fence_t f, evx_event_t e, CUdeviceptr d,
                uint64_t n)
{
    switch (k) {
    case K_SIGNAL:
    case K_SIGNAL_IPC: check_evx(evx_fence_signal(f, s, n), "evx_fence_signal"); break;
    case K_WRITE: check_raw(g_raw.StreamWriteValue64(cs, d, n, 0), "cuStreamWriteValue64"); break;
    case K_WAIT: check_evx(evx_stream_wait_fence(s, f, 1), "evx_stream_wait_fence"); break;
    case K_WAITVALUE:
        check_raw(g_raw.StreamWaitValue64(cs, d, 1, CU_STREAM_WAIT_VALUE_GEQ),
                  "cuStreamWaitValue64");
        break;
    case K_RECORD: check_evx(evx_event_record(e, s), "evx_event_record"); break;
    case K_QUERY: check_evx(evx_event_query(e), "evx_event_query"); break;
    default: check_evx(evx_stream_wait_event(s, e, 0), "evx_stream_wait_event"); break;
    }
}

static void run(int k, long count)
{
    evx_stream_t s;
    CUstream cs;
    evx_fence_t f;
    evx_event_t e;
    void *p = NULL;
    CUdeviceptr d = 0;
    uint64_t n = 0;

    check_evx(evx_device_create_stream(0, EVX_STREAM_NON_BLOCKING, 0, &s),
              "evx_device_create_stream");
    check_evx(evx_stream_get_native(s, (void **)&cs), "evx_stream_get_native");
    check_evx(evx_device_create_fence(0, 1, k == K_SIGNAL_IPC ? EVX_FENCE_INTERPROCESS : 0, &f),
              "evx_device_create_fence");
    check_evx(evx_device_create_event(0, EVX_EVENT_DISABLE_TIMING, &e),
              "evx_device_create_event");
    check_raw(g_raw.MemHostAlloc(&p, 64, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP),
              "cuMemHostAlloc");
    *(volatile uint64_t *)p = 1;
    check_raw(g_raw.MemHostGetDevicePointer(&d, p, 0), "cuMemHostGetDevicePointer");
    check_evx(evx_event_record(e, s), "evx_event_record");
    check_evx(evx_stream_synchronize(s), "evx_stream_synchronize");  /* query: complete */

    for (int i = 0; i < 200; i++) one(k, s, cs, f, e, d, ++n + 1);
    check_evx(evx_stream_synchronize(s), "evx_stream_synchronize");
    for (long i = 0; i < count;) {
        long batch = count - i < 1000 ? count - i : 1000;
        CALLGRIND_START_INSTRUMENTATION;
        for (long j = 0; j < batch; j++) one(k, s, cs, f, e, d, ++n + 1);
        CALLGRIND_STOP_INSTRUMENTATION;
        check_evx(evx_stream_synchronize(s), "evx_stream_synchronize");
        i += batch;
    }
    check_evx(evx_event_destroy(e), "evx_event_destroy");
    check_evx(evx_fence_destroy(f), "evx_fence_destroy");
    check_evx(evx_stream_destroy(s), "evx_stream_destroy");
    check_raw(g_raw.MemFreeHost(p), "cuMemFreeHost");
}

int main(int argc, char **argv)
{
    int k = -1, all = argc == 3 && !strcmp(argv[1], "all");
    long count = argc == 3 ? atol(argv[2]) : 0;
    for (int i = 0; i < K_COUNT && argc == 3; i++)
        if (!strcmp(argv[1], kCalls[i])) k = i;
    if ((k < 0 && !all) || count < 1) {
        fprintf(stderr, "usage: evx-fence-count signal|signal-ipc|write|wait|waitvalue|record|"
                        "waitevent|query|all COUNT\n");
        return 2;
    }
    if (bench_raw_open(&g_raw) != 0) return 1;
    if (!g_raw.MemHostAlloc || !g_raw.MemHostGetDevicePointer || !g_raw.StreamWriteValue64 ||
        !g_raw.StreamWaitValue64) {
        fprintf(stderr, "evx-fence-count: the driver lacks cuMemHostAlloc or the 64-bit "
                        "stream memory operations\n");
        return 1;
    }
    for (int i = all ? 0 : k; i < (all ? K_COUNT : k + 1); i++) run(i, count);
    bench_raw_close(&g_raw);
    return 0;
}
