// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// The state of an evx event in its slot, shared by the modules that make and
// move events (event.cpp, pool.cpp, ipc.cpp, contexts.cpp): its flags, its
// publication, and the claim of its driver state (Event::former). Below
// the modules, so that none of them calls another for these.
#ifndef EVX_SRC_EVENT_STATE_HPP
#define EVX_SRC_EVENT_STATE_HPP

#include <cuda.h>
#include <sched.h>

#include <atomic>
#include <cstdint>

#include "event_object.hpp"
#include "evx/common.h"

namespace evx {

// INVALID_VALUE with a message for flags no event may have: unknown bits,
// or EVX_EVENT_INTERPROCESS without EVX_EVENT_DISABLE_TIMING.
evx_status_t check_event_flags(const char *fn, unsigned flags);

// Makes the free slot `index` a live event handle for a driver event;
// former: the driver event was recorded in a former life (see cache.hpp).
evx_event_t publish_event(uint32_t index, int device, unsigned flags, CUevent cu,
                          Pool *pool, bool former);

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
