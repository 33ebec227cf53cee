// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// The record of a timer's or a timeline's mark off its hot path, and the
// checks of its stream that the hot path leaves (mark.hpp).
#include <cinttypes>

#include "driver.hpp"
#include "mark.hpp"

namespace evx {

evx_status_t mark_failed(const char *fn, CUresult res, uint64_t owner, const char *owner_kind) {
    return driver_failed(res, fn, "cuEventRecord", "%s 0x%" PRIx64, owner_kind, owner);
}

evx_status_t record_mark_default(const char *fn, CUevent ev, const Stream *s, uint64_t owner,
                                 const char *owner_kind) {
    ContextGuard guard;
    evx_status_t st = guard.enter(fn, s->device);
    if (st) return st;
    const CUresult res = cu().cuEventRecord(ev, s->cu);
    if (res != CUDA_SUCCESS) return mark_failed(fn, res, owner, owner_kind);
    return guard.leave(fn, "the mark was recorded, but the call fails");
}

evx_status_t mark_stream_check(const char *fn, uint32_t kind, const void *h, int device,
                               evx_stream_t stream, const Stream *s) {
    if (device != s->device)
        return fail(EVX_ERROR_INVALID_HANDLE,
                    "%s: %s 0x%" PRIx64 " belongs to device %d but stream 0x%" PRIx64
                    " to device %d",
                    fn, kind_name(kind), handle_value(h), device, handle_value(stream),
                    s->device);
    if (s->ctx == known_primary(s->device)) return 0;
    // A borrowed stream may be of the primary context before anything of
    // evx retained it (known_primary() is then null): retain it and compare
    // again. The marks' driver events are of that context.
    CUcontext primary = nullptr;
    if (!known_primary(s->device)) {
        const evx_status_t pst = primary_context(fn, s->device, &primary);
        if (pst) return pst;
    }
    if (s->ctx != known_primary(s->device))
        return other_context_refused(fn, kind_name(kind), h, stream, s);
    return 0;
}

}  // namespace evx
