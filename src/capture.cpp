// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Whether a stream is being captured into a graph (cuStreamIsCapturing),
// and the message of a call the driver refused during a capture (the words
// for its status are error.cpp's capture_hint()). See include/evx/capture.h
// and docs/engines.md.
#include <cinttypes>

#include "capture.hpp"
#include "driver.hpp"
#include "error.hpp"
#include "evx/capture.h"
#include "handle.hpp"
#include "scope.hpp"
#include "stream_object.hpp"

static_assert(EVX_CAPTURE_STATUS_NONE == static_cast<int>(CU_STREAM_CAPTURE_STATUS_NONE) &&
                  EVX_CAPTURE_STATUS_ACTIVE == static_cast<int>(CU_STREAM_CAPTURE_STATUS_ACTIVE) &&
                  EVX_CAPTURE_STATUS_INVALIDATED ==
                      static_cast<int>(CU_STREAM_CAPTURE_STATUS_INVALIDATED),
              "evx_capture_status_t must mirror CUstreamCaptureStatus");

namespace evx {

evx_status_t capture_failed(const char *fn, const char *call, CUresult res, const void *h,
                            const Stream *s) {
    const char *state = "unknown (the driver has no cuStreamIsCapturing)";
    if (cu().cuStreamIsCapturing) {
        CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
        ContextGuard guard;
        CUresult q = static_cast<CUresult>(stream_context(guard, nullptr, s));
        if (q == CUDA_SUCCESS) q = cu().cuStreamIsCapturing(s->cu, &cs);
        if (q != CUDA_SUCCESS)
            state = "unknown (cuStreamIsCapturing failed too)";
        else if (cs == CU_STREAM_CAPTURE_STATUS_ACTIVE)
            state = "capturing";
        else if (cs == CU_STREAM_CAPTURE_STATUS_INVALIDATED)
            state = "capturing, its capture invalidated";
        else
            state = "not capturing itself (another stream's capture forbids the call)";
    }
    return driver_failed(res, fn, call, "stream 0x%" PRIx64 ", which cuStreamIsCapturing says is %s",
                         handle_value(h), state);
}

evx_status_t mark_capturing(const char *fn, const Stream *s, const void *h, bool *capturing) {
    *capturing = false;
    if (!cu().cuStreamIsCapturing) return 0;
    CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
    ContextGuard guard;
    evx_status_t st = stream_context(guard, fn, s);
    if (st) return st;
    const CUresult res = cu().cuStreamIsCapturing(s->cu, &cs);
    st = guard.leave(fn, "the stream's capture status was read, nothing was recorded");
    if (st) return st;
    // IMPLICIT (the legacy stream while a blocking stream captures): the
    // record that follows fails with it, saying why.
    if (res != CUDA_SUCCESS && res != CUDA_ERROR_STREAM_CAPTURE_IMPLICIT)
        return driver_failed(res, fn, "cuStreamIsCapturing", "stream 0x%" PRIx64, handle_value(h));
    *capturing = res == CUDA_SUCCESS && cs != CU_STREAM_CAPTURE_STATUS_NONE;
    return 0;
}

evx_status_t record_graph_mark(const char *fn, CUevent ev, const Stream *s, const void *h,
                               uint64_t owner, const char *owner_kind) {
    ContextGuard guard;
    evx_status_t st = stream_context(guard, fn, s);
    if (st) return st;
    const CUresult res = cu().cuEventRecordWithFlags(ev, s->cu, CU_EVENT_RECORD_EXTERNAL);
    if (res == CUDA_SUCCESS) return guard.leave(fn, "the mark was recorded, but the call fails");
    if (is_capture_status(res))
        return capture_failed(fn, "cuEventRecordWithFlags", res, h, s);
    return driver_failed(res, fn, "cuEventRecordWithFlags",
                         "%s 0x%" PRIx64 ", a mark on a captured stream", owner_kind, owner);
}

evx_status_t graph_mark_check(const char *fn, CUevent ev, const char *mark,
                              const char *owner_kind, uint64_t owner) {
    // The driver answers INVALID_HANDLE for an event never recorded; the
    // graph mark's event was made for it, so only a launch records it.
    float ms = 0.0f;
    const CUresult res = cu().cuEventElapsedTime(&ms, ev, ev);
    if (res != CUDA_ERROR_INVALID_HANDLE) return 0;
    return fail(EVX_ERROR_ILLEGAL_STATE,
                "%s: %s of %s 0x%" PRIx64
                " was made while its stream was being captured into a graph, and no launch "
                "of that graph has recorded it yet: its time exists only once the "
                "instantiated graph is launched",
                fn, mark, owner_kind, owner);
}

}  // namespace evx

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
            if (res == CUDA_SUCCESS) {
                const evx_status_t popped = guard.leave(fn, "nothing was read");
                if (popped) return popped;
            }
        }
        if (res != CUDA_SUCCESS)
            return driver_failed(res, fn, "cuStreamIsCapturing", "stream 0x%" PRIx64,
                                 handle_value(stream));
        *out = static_cast<evx_capture_status_t>(cs);
        return EVX_SUCCESS;
    });
}

}  // extern "C"
