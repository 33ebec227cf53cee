// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// The state of an evx event in its slot, shared by the modules that make and
// move events (event.cpp, pool.cpp, ipc.cpp, contexts.cpp): its flags, its
// publication, and the claim of its driver state (Event::former). Below
// the modules, so that none of them calls another for these. Inline, as
// they were in event.cpp: an event's create publishes it.
#ifndef EVX_SRC_EVENT_STATE_HPP
#define EVX_SRC_EVENT_STATE_HPP

#include <cuda.h>
#include <sched.h>

#include <atomic>
#include <cstdint>

#include "driver.hpp"
#include "error.hpp"
#include "event_object.hpp"
#include "evx/common.h"
#include "evx/event.h"
#include "handle.hpp"

namespace evx {

constexpr unsigned kKnownEventFlags =
    EVX_EVENT_BLOCKING_SYNC | EVX_EVENT_DISABLE_TIMING | EVX_EVENT_INTERPROCESS;

// INVALID_VALUE with a message for flags no event may have: unknown bits,
// or EVX_EVENT_INTERPROCESS without EVX_EVENT_DISABLE_TIMING.
inline evx_status_t check_event_flags(const char *fn, unsigned flags) {
    const evx_status_t st = check_known_flags(
        fn, "event", flags, kKnownEventFlags,
        "EVX_EVENT_BLOCKING_SYNC 0x1, EVX_EVENT_DISABLE_TIMING 0x2, EVX_EVENT_INTERPROCESS 0x4");
    if (st) return st;
    if ((flags & EVX_EVENT_INTERPROCESS) && !(flags & EVX_EVENT_DISABLE_TIMING))
        return fail(EVX_ERROR_INVALID_VALUE,
                    "%s: EVX_EVENT_INTERPROCESS needs EVX_EVENT_DISABLE_TIMING too "
                    "(flags 0x%x)",
                    fn, flags);
    return 0;
}

// What Event::hot should be for e's fields now.
inline uintptr_t hot_of(const Event &e) {
    const uintptr_t ctx = reinterpret_cast<uintptr_t>(e.ctx.load(std::memory_order_relaxed));
    if (e.former.load(std::memory_order_relaxed) != kOwn)
        return ctx | kHotRecordRare | kHotWaitRare;
    if (e.recorded.load(std::memory_order_relaxed) != kRecorded ||
        e.hf_id.load(std::memory_order_relaxed) != 0)
        return ctx | kHotRecordRare;
    return ctx;
}

// Makes Event::hot follow a change of the fields it is derived from: the
// caller changed one (by any order) and calls this after, on every path.
// Two threads may change them at once, and the value one computed may
// overwrite the other's: so each stores, then reads the fields again and
// stores again until they agree. Every store of hot after publication is
// an exchange (acquire and release): take the last one, S, and the last
// change of a field, F. The changer's first exchange after F is S itself
// or comes before S, and then S reads from its release sequence (the
// exchanges after it continue it), so F happens before the reads that
// check S: they see F, and S's check passes only with hot what the last
// fields give. Only the rare paths call it (a first record, a move, a
// claim, host functions); models/event_hot.pml checks it.
inline void event_refresh_hot(Event *e) {
    uintptr_t h = hot_of(*e);
    for (;;) {
        e->hot.exchange(h, std::memory_order_acq_rel);
        const uintptr_t now = hot_of(*e);
        if (now == h) return;
        h = now;
    }
}

// Sets every field of a slot's event for a new life, not yet published: a
// plain event, not borrowed (event_wrap.cpp makes a borrow of it).
inline void fill_event(Event &e, int device, unsigned flags, CUevent cu, Pool *pool,
                       bool former) {
    const CUcontext ctx = known_primary(device);
    e.cu.store(cu, std::memory_order_relaxed);
    e.ctx.store(ctx, std::memory_order_relaxed);
    e.away.store(nullptr, std::memory_order_relaxed);
    e.device = device;
    e.flags = flags;
    e.recorded.store(0, std::memory_order_relaxed);
    e.records.store(0, std::memory_order_relaxed);
    e.done.store(0, std::memory_order_relaxed);
    e.former.store(former ? kFormer : kOwn, std::memory_order_relaxed);
    e.pool = pool;
    e.hf_id.store(0, std::memory_order_relaxed);
    e.hf_ticket.store(0, std::memory_order_relaxed);
    e.borrowed = false;
    e.plain = pool == nullptr && !(flags & EVX_EVENT_INTERPROCESS);
    e.release = nullptr;
    e.release_user = nullptr;
    // hot_of(e), published with the handle: not recorded yet.
    e.hot.store(reinterpret_cast<uintptr_t>(ctx) | kHotRecordRare | (former ? kHotWaitRare : 0),
                std::memory_order_relaxed);
}

// Makes the free slot `index` a live event handle for a driver event;
// former: the driver event was recorded in a former life (see cache.hpp).
inline evx_event_t publish_event(uint32_t index, int device, unsigned flags, CUevent cu,
                                 Pool *pool, bool former) {
    Slot &s = slot_ref(index);
    fill_event(s.event, device, flags, cu, pool, former);
    return reinterpret_cast<evx_event_t>(
        static_cast<uintptr_t>(publish_at(s, index, kEvent, &s.event)));
}

// Claims an event (Event::former: kClaimed), waiting while another thread
// holds a claim; *prev is the state it had. Claims only a kFormer event
// unless from_own (then a kOwn one too); returns false, claiming nothing,
// for a kOwn event otherwise. The claimant stores the next state with release
// order (see event.cpp, claim_former()). Inline: the first record of an
// event from the cache claims it.
inline bool claim_event(Event *e, bool from_own, uint8_t *prev) {
    uint8_t s = e->former.load(std::memory_order_acquire);
    for (;;) {
        if (s == kOwn && !from_own) return false;
        if (s != kClaimed) {
            if (e->former.compare_exchange_weak(s, kClaimed, std::memory_order_acquire,
                                                std::memory_order_acquire)) {
                *prev = s;
                return true;
            }
            continue;
        }
        sched_yield();
        s = e->former.load(std::memory_order_acquire);
    }
}

}  // namespace evx

#endif  // EVX_SRC_EVENT_STATE_HPP
