// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// The record of a timer's or a timeline's mark off its hot path (mark.hpp).
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

}  // namespace evx
