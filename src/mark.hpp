// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// What timers and timelines share (timer.cpp, timeline.cpp): the record of
// a mark's driver event on a stream, and the lookup of the object and the
// stream a mark names.
#ifndef EVX_SRC_MARK_HPP
#define EVX_SRC_MARK_HPP

#include <cuda.h>

#include <cinttypes>
#include <cstdint>

#include "capture.hpp"
#include "contexts.hpp"
#include "driver.hpp"
#include "error.hpp"
#include "evx/common.h"
#include "handle.hpp"
#include "reclaim.hpp"
#include "scope.hpp"
#include "stream_object.hpp"
#include "thread.hpp"

namespace evx {

evx_status_t mark_failed(const char *fn, CUresult res, uint64_t owner, const char *owner_kind)
    __attribute__((cold, noinline));

// A mark on a borrowed default stream, under the guard it needs. A failing
// pop fails the mark (its driver event is recorded again by the next one).
evx_status_t record_mark_default(const char *fn, CUevent ev, const Stream *s, uint64_t owner,
                                 const char *owner_kind) __attribute__((noinline));

// What mark_state() found of a mark's stream: kMarkPlain, a plain record
// (no default stream, which needs a guard, and not being captured);
// kMarkAsk, a default stream or a driver without cuStreamIsCapturing
// (mark_capturing() asks, under the guard); kMarkCaptured, being captured
// (or its capture invalidated); else the failing status of the question.
enum : int { kMarkPlain = 0, kMarkAsk = -1, kMarkCaptured = -2 };

// One test and the driver's answer on the hot path; the rest is
// mark_capture_state()'s, on the general path.
inline int mark_state(const Stream *s) {
    const auto is_capturing = cu().cuStreamIsCapturing;
    if (__builtin_expect(s->default_stream || !is_capturing, 0)) return kMarkAsk;
    CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
    const CUresult res = is_capturing(s->cu, &cs);
    if (__builtin_expect((static_cast<unsigned>(res) | static_cast<unsigned>(cs)) == 0, 1))
        return kMarkPlain;
    return res != CUDA_SUCCESS ? static_cast<int>(res) : kMarkCaptured;
}

// Whether the stream of a mark is being captured, from mark_state()'s
// answer (asking where it did not), or the failure of the question.
inline evx_status_t mark_capture_state(const char *fn, int state, const Stream *s, const void *h,
                                       bool *capturing) {
    *capturing = state == kMarkCaptured;
    if (state == kMarkAsk) return mark_capturing(fn, s, h, capturing);
    if (state > 0) return mark_capture_failed(fn, static_cast<CUresult>(state), h);
    return 0;
}

// The record of a plain mark (kMarkPlain).
inline evx_status_t record_plain_mark(const char *fn, CUevent ev, const Stream *s,
                                      uint64_t owner, const char *owner_kind) {
    const CUresult res = cu().cuEventRecord(ev, s->cu);
    if (__builtin_expect(res == CUDA_SUCCESS, 1)) return 0;
    return mark_failed(fn, res, owner, owner_kind);
}

// Records a driver event on a stream (under the guard a default stream
// needs).
inline evx_status_t record_mark(const char *fn, CUevent ev, const Stream *s, uint64_t owner,
                                const char *owner_kind) {
    if (__builtin_expect(s->default_stream, 0))
        return record_mark_default(fn, ev, s, owner, owner_kind);
    return record_plain_mark(fn, ev, s, owner, owner_kind);
}

// The lock a mark holds, T::hold(): a timeline's; none for a timer.
struct NoLock {};

// The checks of a mark's stream against the object's device that the hot
// path does not settle (mark_on_stream()): INVALID_HANDLE naming both
// devices if they differ; a borrowed stream of the primary context before
// anything of evx retained it; a stream of another context.
evx_status_t mark_stream_check(const char *fn, uint32_t kind, const void *h, int device,
                               evx_stream_t stream, const Stream *s)
    __attribute__((cold, noinline));

// Looks up a timer or timeline and a stream of its device, and returns
// mark(object, stream, thread record) under both hazards (and a timeline's
// lock). The stream's context being the object's device's primary context
// (known, so retained) settles the device too; anything else goes to
// mark_stream_check(). noexcept: no unwinding path for the scope
// (scope.hpp).
template <class T, class Mark>
evx_status_t mark_on_stream(const char *fn, const void *h, uint32_t kind, evx_stream_t stream,
                            Mark mark) noexcept {
    HandleScope scope;
    Slot *so = nullptr, *ss = nullptr;
    const evx_status_t st =
        scope.lookup2(fn, h, kind, T::kRole, &so, stream, kStream, "stream", &ss);
    if (st) return st;
    T *obj = static_cast<T *>(so->obj);
    const Stream *s = static_cast<const Stream *>(ss->obj);
    const CUcontext primary = known_primary(obj->device);
    if (__builtin_expect(s->ctx != primary || primary == nullptr, 0)) {
        const evx_status_t cst = mark_stream_check(fn, kind, h, obj->device, stream, s);
        if (cst) return cst;
    }
    [[maybe_unused]] const auto lock = obj->hold();
    return mark(*obj, *s, scope.record());
}

// Timers and timelines are batched (retire()): their frees give driver
// events to the cache (or keep the timer), which a trim reaches, and
// destroy only the events a graph recorded, which may as well wait.
inline bool to_thread_batch(ThreadRecord *r, void *, uint32_t index) {
    return retire_batched(r, index);
}

}  // namespace evx

#endif  // EVX_SRC_MARK_HPP
