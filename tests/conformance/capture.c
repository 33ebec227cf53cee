/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/* The capture status of a stream (evx/capture.h). The host emulation does
 * not model stream capture (docs/conformance.md): there every stream
 * answers NONE, and the case that begins a capture is skipped, saying why;
 * on a GPU it runs. */
#include <stdint.h>

#include "harness.h"
#include "util.h"

static void t_not_capturing(void)
{
    evx_stream_t own = NULL, borrowed = NULL, legacy = NULL, per_thread = NULL;
    evx_capture_status_t c;
    void *native = NULL;

    REQUIRE((own = make_stream(0)) != NULL);
    REQUIRE_OK(evx_stream_get_native(own, &native));
    REQUIRE_OK(evx_stream_wrap_external(0, native, &borrowed));
    REQUIRE_OK(evx_stream_wrap_external(0, EVX_STREAM_LEGACY, &legacy));
    REQUIRE_OK(evx_stream_wrap_external(0, EVX_STREAM_PER_THREAD, &per_thread));
    c = (evx_capture_status_t)77;
    EXPECT_OK(evx_stream_get_capture_status(own, &c));
    EXPECTF(c == EVX_CAPTURE_STATUS_NONE, "owned stream: %d", (int)c);
    c = (evx_capture_status_t)77;
    EXPECT_OK(evx_stream_get_capture_status(borrowed, &c));
    EXPECTF(c == EVX_CAPTURE_STATUS_NONE, "borrowed stream: %d", (int)c);
    c = (evx_capture_status_t)77;
    EXPECT_OK(evx_stream_get_capture_status(legacy, &c));
    EXPECTF(c == EVX_CAPTURE_STATUS_NONE, "legacy default stream: %d", (int)c);
    c = (evx_capture_status_t)77;
    EXPECT_OK(evx_stream_get_capture_status(per_thread, &c));
    EXPECTF(c == EVX_CAPTURE_STATUS_NONE, "per-thread default stream: %d", (int)c);
    /* the answer is the same with work queued */
    EXPECT_OK(evx_stream_launch_host_func(own, host_sleep_ms, (void *)(intptr_t)20));
    EXPECT_OK(evx_stream_get_capture_status(borrowed, &c));
    EXPECT(c == EVX_CAPTURE_STATUS_NONE);
    EXPECT_OK(evx_stream_synchronize(own));
out:
    drop_stream(&per_thread);
    drop_stream(&legacy);
    drop_stream(&borrowed);
    drop_stream(&own);
}

static void t_bad_input(void)
{
    evx_stream_t s = NULL;
    evx_event_t e = NULL;
    evx_capture_status_t c = EVX_CAPTURE_STATUS_NONE;

    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((e = make_event(0, 0)) != NULL);
    EXPECT_FAIL(evx_stream_get_capture_status(s, NULL), EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_stream_get_capture_status(NULL, &c), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_stream_get_capture_status(AS_STREAM(e), &c), EVX_ERROR_INVALID_HANDLE);
    EXPECT_FAIL(evx_stream_get_capture_status(FORGE(evx_stream_t, 0x1234), &c),
                EVX_ERROR_INVALID_HANDLE);
out:
    drop_event(&e);
    drop_stream(&s);
}

/* GPU only: a capture begun with the raw driver on a stream evx borrows is
 * seen as ACTIVE, and as NONE once ended. */
static void t_active(void)
{
    const conf_cu *cu = conf_cu_get();
    evx_stream_t own = NULL, borrowed = NULL;
    evx_capture_status_t c;
    void *native = NULL;
    CUgraph graph = NULL;
    int capturing = 0;

    if (cu == NULL)
        return;
    if (cu->stream_begin_capture == NULL || cu->stream_end_capture == NULL ||
        cu->graph_destroy == NULL) {
        conf_skip("the driver has no cuStreamBeginCapture/cuStreamEndCapture/"
                  "cuGraphDestroy: the host emulation does not model stream "
                  "capture (GPU-only case, docs/conformance.md)");
        return;
    }
    REQUIRE((own = make_stream(0)) != NULL);
    REQUIRE_OK(evx_stream_get_native(own, &native));
    REQUIRE_OK(evx_stream_wrap_external(0, native, &borrowed));
    REQUIRE(cu->stream_begin_capture((CUstream)native,
                                     CU_STREAM_CAPTURE_MODE_RELAXED) == CUDA_SUCCESS);
    capturing = 1;
    c = (evx_capture_status_t)77;
    EXPECT_OK(evx_stream_get_capture_status(own, &c));
    EXPECTF(c == EVX_CAPTURE_STATUS_ACTIVE, "owned stream while capturing: %d", (int)c);
    c = (evx_capture_status_t)77;
    EXPECT_OK(evx_stream_get_capture_status(borrowed, &c));
    EXPECTF(c == EVX_CAPTURE_STATUS_ACTIVE, "borrowed stream while capturing: %d",
            (int)c);
    EXPECT(cu->stream_end_capture((CUstream)native, &graph) == CUDA_SUCCESS);
    capturing = 0;
    c = (evx_capture_status_t)77;
    EXPECT_OK(evx_stream_get_capture_status(own, &c));
    EXPECTF(c == EVX_CAPTURE_STATUS_NONE, "after the capture ended: %d", (int)c);
out:
    if (capturing)
        cu->stream_end_capture((CUstream)native, &graph);
    if (graph != NULL)
        cu->graph_destroy(graph);
    drop_stream(&borrowed);
    drop_stream(&own);
}

const conf_case conf_capture_cases[] = {
    {"capture.not_capturing", t_not_capturing},
    {"capture.bad_input", t_bad_input},
    {"capture.active_gpu_only", t_active},
    {NULL, NULL},
};
