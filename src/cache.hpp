// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Reuse of driver events per (device, flags): per-thread stacks and a shared
// depot. See docs/design.md, "Driver events are reused".
#ifndef EVX_SRC_CACHE_HPP
#define EVX_SRC_CACHE_HPP

#include <cuda.h>

#include "driver.hpp"
#include "evx/common.h"
#include "evx/event.h"
#include "thread.hpp"

namespace evx {

// Driver events a thread keeps per (device, flags), a stack.
constexpr uint32_t kBucketSize = 64;

// A kept driver event. former: it was recorded in a former life, and that
// record's work may still be pending (see cache_take()).
struct CachedEvent {
    CUevent ev;
    bool former;
};

// One thread's kept events of one (device, flags): ThreadRecord::buckets.
struct CacheBucket {
    uint32_t n;  // ev[0, n): a stack, the most recently given on top
    CachedEvent ev[kBucketSize];
};

// A driver event of (device, flags): a kept one, or a new one from
// cuEventCreate. *former is set for a kept event that was recorded in a
// former life: its driver state (completion, timestamp) is that record's,
// and its work may still be pending, until it is recorded again. Its user
// must record it before the driver reads its state, or renew it (see
// event.cpp). EVX_EVENT_INTERPROCESS events are always new.
evx_status_t cache_take_slow(ThreadRecord *r, const char *fn, int device, unsigned flags,
                             CUevent *out, bool *former) __attribute__((noinline));

// The stack of (device, flags) in a thread's record: key of ThreadRecord::buckets.
inline uint32_t bucket_key(int device, unsigned flags) {
    return static_cast<uint32_t>(device) * 4u + (flags & 3u);
}

// The common case of cache_take(), with no call: the thread's stack of
// (device, flags) has one (taken under the owner's hold, thread.hpp), and
// no thief wants in. False: nothing taken. Not for
// EVX_EVENT_INTERPROCESS, which no stack keeps.
inline bool cache_take_kept(ThreadRecord *r, int device, unsigned flags, CachedEvent *out) {
    const uint32_t key = bucket_key(device, flags);
    if (__builtin_expect(!own_try_enter(r), 0)) return false;
    CacheBucket *b = __builtin_expect(key < r->nbuckets, 1) ? r->buckets[key] : nullptr;
    const bool kept = __builtin_expect(b != nullptr && b->n > 0, 1);
    if (kept) *out = b->ev[--b->n];
    own_leave(r);
    return kept;
}

inline evx_status_t cache_take(ThreadRecord *r, const char *fn, int device, unsigned flags,
                               CUevent *out, bool *former) {
    CachedEvent c;
    if (__builtin_expect(!(flags & EVX_EVENT_INTERPROCESS), 1) &&
        __builtin_expect(cache_take_kept(r, device, flags, &c), 1)) {
        *out = c.ev;
        *former = c.former;
        return 0;
    }
    return cache_take_slow(r, fn, device, flags, out, former);
}

// Keeps a driver event for reuse, or destroys it (interprocess events, a
// full depot). former: it was ever recorded.
void cache_give_slow(ThreadRecord *r, int device, unsigned flags, CUevent ev, bool former)
    __attribute__((noinline));

// The common case of cache_give(), with no call: room on the thread's
// stack and no thief. False: nothing given. Not for EVX_EVENT_INTERPROCESS.
inline bool cache_give_kept(ThreadRecord *r, int device, unsigned flags, CUevent ev,
                            bool former) {
    const uint32_t key = bucket_key(device, flags);
    if (__builtin_expect(!own_try_enter(r), 0)) return false;
    CacheBucket *b = __builtin_expect(key < r->nbuckets, 1) ? r->buckets[key] : nullptr;
    const bool room = __builtin_expect(b != nullptr && b->n < kBucketSize, 1);
    if (room) b->ev[b->n++] = CachedEvent{ev, former};
    own_leave(r);
    return room;
}

inline void cache_give(ThreadRecord *r, int device, unsigned flags, CUevent ev, bool former) {
    if (__builtin_expect(!(flags & EVX_EVENT_INTERPROCESS), 1) &&
        __builtin_expect(cache_give_kept(r, device, flags, ev, former), 1))
        return;
    cache_give_slow(r, device, flags, ev, former);
}

// cuEventCreate under the device's context guard.
evx_status_t create_driver_event(const char *fn, int device, unsigned flags,
                                 CUevent *out);
// cuEventDestroy under the device's context guard. The driver accepts an
// event with pending work (it frees it once the work completes). Returns
// the driver's status, or the guard's failing pop (Freed, driver.hpp),
// with no message; callers with no one to tell drop it.
Freed destroy_driver_event(int device, CUevent ev);

// At thread exit (registered as an exit hook): moves the thread's kept
// events to the depot.
void cache_flush_thread(ThreadRecord *r);

// evx_device_trim(), first: every other thread's collected destroys are
// freed into the calling thread's cache (those no call holds; the others
// are handed to their last holders), and what their stacks keep for the
// device is destroyed. Without heavy_barrier() nothing of theirs is
// reached. Returns the first cuEventDestroy failure, or CUDA_SUCCESS.
evx_status_t cache_trim_others(ThreadRecord *r, int device);

// evx_device_trim(), last: destroys the events kept for a device by the
// calling thread and by the depot; the first failure, this one's or
// `others` (cache_trim_others()'s), is returned (with its message) after
// all were tried.
evx_status_t cache_trim(ThreadRecord *r, const char *fn, int device, evx_status_t others);

}  // namespace evx

#endif  // EVX_SRC_CACHE_HPP
