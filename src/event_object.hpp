// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// The evx event object: what a handle's slot holds for an event (events
// live in their slots, so making one allocates nothing). Data only: the
// calls on it are event_state.hpp's (its publication, the claim of its
// driver state) and event.hpp's.
#ifndef EVX_SRC_EVENT_OBJECT_HPP
#define EVX_SRC_EVENT_OBJECT_HPP

#include <cuda.h>

#include <atomic>
#include <cstdint>

namespace evx {

struct Pool;

// A driver event of an evx event that is not its current one: made in
// another context (or the first one, of the primary context), kept until the
// evx event is freed. See contexts.cpp.
struct AwayEvent {
    CUcontext ctx;
    CUevent ev;
    AwayEvent *next;
};

// An evx event.
struct Event {
    // The driver event and the context it was made in: the device's primary
    // context, until a record on a stream of another context moves the event
    // there (contexts.cpp). Changed only by a claimant (see `former`); read
    // without a lock.
    std::atomic<CUevent> cu{nullptr};
    std::atomic<CUcontext> ctx{nullptr};
    // The one test of the common record, wait and elapsed time: ctx's
    // value, with kHotRecordRare set unless a record needs nothing but the
    // driver's call (recorded in this life and not pooled, no host function
    // failures to carry, `former` kOwn), and kHotWaitRare set unless
    // `former` is kOwn. Derived from those fields: every change of one is
    // followed by event_refresh_hot() (event_state.hpp), whose protocol
    // leaves it right once the changes end. A call that reads a stale value
    // races with that change; it takes the rare path, or the path it took
    // before these fields were folded (a record on the wrong context fails
    // in the driver and is redone as a move).
    std::atomic<uintptr_t> hot{0};
    int device = 0;
    unsigned flags = 0;
    // Recorded in this evx life: kRecorded, or kRecordedPooled for a pooled
    // event (so that one test tells the common case); 0: not yet.
    std::atomic<uint8_t> recorded{0};
    // An own event of no pool, not interprocess (set with pool, flags and
    // borrowed, for the life): its destroy and free take their common path
    // on this one test (and that of `away`).
    bool plain = true;
    // Pooled events only (pool != nullptr): successful records in this
    // life, and the count as it was before the last query, synchronize or
    // elapsed time that saw the event complete. done == records at release:
    // no pending work, so the pool hands the driver event out again with no
    // query (pool.cpp). Plain events keep both at 0.
    std::atomic<uint32_t> records{0};
    std::atomic<uint32_t> done{0};
    // kFormer: the driver event was recorded in a former life and not yet in
    // this one, so its driver state is the former record's. The first
    // record, or a call that hands the driver event to other code, claims
    // it (kClaimed) and leaves it kOwn. See event.cpp, claim_former(). A
    // record that moves the event to another context claims it from kOwn
    // too (contexts.cpp).
    std::atomic<uint8_t> former{0};
    Pool *pool = nullptr;               // the pool it came from, or nullptr
    // The stream handle of its last record if host functions that can fail
    // were launched there (Stream::hf_id, 0: none), and how many had been
    // launched by then: the failures its synchronize reports (hostfn.cpp).
    std::atomic<uint64_t> hf_id{0};
    std::atomic<uint64_t> hf_ticket{0};
    // A borrowed event (evx_event_wrap_external(), event_wrap.cpp): its
    // driver event is its maker's, never destroyed, kept, pooled or moved
    // to another context. release: called once the borrow has ended
    // (evx_event_wrap_external_with_release()), never by the free.
    bool borrowed = false;
    void (*release)(void *) = nullptr;
    void *release_user = nullptr;
    // The event's other driver events, one per context it was recorded in
    // before (the primary one among them while it is away); nullptr for an
    // event that never left the primary context, which is almost every one.
    std::atomic<AwayEvent *> away{nullptr};
};

enum : uint8_t { kOwn = 0, kFormer = 1, kClaimed = 2 };
enum : uint8_t { kRecorded = 1, kRecordedPooled = 2 };
// Event::hot's bits (contexts are aligned: their low bits are free). A
// stream's record_ctx and wait_ctx have neither (kHotWaitRare never comes
// without kHotRecordRare).
constexpr uintptr_t kHotRecordRare = 2;
constexpr uintptr_t kHotWaitRare = 1;

}  // namespace evx

#endif  // EVX_SRC_EVENT_OBJECT_HPP
