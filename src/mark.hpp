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

// Records a driver event on a stream (under the guard a default stream
// needs).
inline evx_status_t record_mark(const char *fn, CUevent ev, const Stream *s, uint64_t owner,
                                const char *owner_kind) {
    if (__builtin_expect(s->default_stream, 0))
        return record_mark_default(fn, ev, s, owner, owner_kind);
    const CUresult res = cu().cuEventRecord(ev, s->cu);
    if (__builtin_expect(res == CUDA_SUCCESS, 1)) return 0;
    return mark_failed(fn, res, owner, owner_kind);
}

// The lock a mark holds, T::hold(): a timeline's mutex; none for a timer.
struct NoLock {};

// Looks up a timer or timeline and a stream of its device, and returns
// mark(object, stream, thread record) under both hazards (and a timeline's
// lock); INVALID_HANDLE naming both devices if they differ. noexcept: no
// unwinding path for the scope (scope.hpp).
template <class T, class Mark>
evx_status_t mark_on_stream(const char *fn, const void *h, uint32_t kind, evx_stream_t stream,
                            Mark mark) noexcept {
    HandleScope scope;
    Slot *so = nullptr, *ss = nullptr;
    const evx_status_t st =
        scope.lookup2(fn, h, kind, kind_name(kind), &so, stream, kStream, "stream", &ss);
    if (st) return st;
    T *obj = static_cast<T *>(so->obj);
    const Stream *s = static_cast<const Stream *>(ss->obj);
    if (__builtin_expect(obj->device != s->device, 0))
        return fail(EVX_ERROR_INVALID_HANDLE,
                    "%s: %s 0x%" PRIx64 " belongs to device %d but stream 0x%" PRIx64
                    " to device %d",
                    fn, kind_name(kind), handle_value(h), obj->device, handle_value(stream),
                    s->device);
    if (__builtin_expect(s->ctx != known_primary(s->device), 0)) {
        // A borrowed stream may be of the primary context before anything
        // of evx retained it (known_primary() is then null): retain it and
        // compare again. The marks' driver events are of that context.
        CUcontext primary = nullptr;
        if (!known_primary(s->device)) {
            const evx_status_t pst = primary_context(fn, s->device, &primary);
            if (pst) return pst;
        }
        if (s->ctx != known_primary(s->device))
            return other_context_refused(fn, kind_name(kind), h, stream, s);
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
