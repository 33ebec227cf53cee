// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Whether a stream is being captured into a graph (cuStreamIsCapturing).
// See include/evx/capture.h.
#include <cinttypes>

#include "driver.hpp"
#include "error.hpp"
#include "evx/capture.h"
#include "handle.hpp"
#include "objects.hpp"
#include "scope.hpp"

static_assert(EVX_CAPTURE_STATUS_NONE == static_cast<int>(CU_STREAM_CAPTURE_STATUS_NONE) &&
                  EVX_CAPTURE_STATUS_ACTIVE == static_cast<int>(CU_STREAM_CAPTURE_STATUS_ACTIVE) &&
                  EVX_CAPTURE_STATUS_INVALIDATED ==
                      static_cast<int>(CU_STREAM_CAPTURE_STATUS_INVALIDATED),
              "evx_capture_status_t must mirror CUstreamCaptureStatus");

using namespace evx;

extern "C" {

EVX_API evx_status_t evx_stream_get_capture_status(evx_stream_t stream,
                                                   evx_capture_status_t *out) {
    static const char fn[] = "evx_stream_get_capture_status";
    if (!out) return fail(EVX_ERROR_INVALID_VALUE, "%s: out (the out-pointer) is NULL", fn);
    return with_live(fn, stream, kStream, "stream", [stream, out](Slot &slot) -> evx_status_t {
        const Stream *s = static_cast<const Stream *>(slot.obj);
        if (!cu().cuStreamIsCapturing)
            return fail(EVX_ERROR_NOT_SUPPORTED, "%s: the driver (%s) has no cuStreamIsCapturing",
                        fn, g_driver.path);
        CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
        CUresult res;
        {
            ContextGuard guard;
            const evx_status_t st = stream_context(guard, fn, s);
            if (st) return st;
            res = cu().cuStreamIsCapturing(s->cu, &cs);
        }
        if (res != CUDA_SUCCESS)
            return driver_failed(res, fn, "cuStreamIsCapturing", "stream 0x%" PRIx64,
                                 handle_value(stream));
        *out = static_cast<evx_capture_status_t>(cs);
        return EVX_SUCCESS;
    });
}

}  // extern "C"
