// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// The state of an evx event in its slot (event_state.hpp): its flags, its
// publication, and the claim of its driver state.
#include "driver.hpp"
#include "error.hpp"
#include "event_state.hpp"
#include "evx/event.h"
#include "handle.hpp"

namespace evx {

namespace {

constexpr unsigned kKnownEventFlags =
    EVX_EVENT_BLOCKING_SYNC | EVX_EVENT_DISABLE_TIMING | EVX_EVENT_INTERPROCESS;

}  // namespace

evx_status_t check_event_flags(const char *fn, unsigned flags) {
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

evx_event_t publish_event(uint32_t index, int device, unsigned flags, CUevent cu,
                          Pool *pool, bool former) {
    Event &e = slot_ref(index).event;
    e.cu.store(cu, std::memory_order_relaxed);
    e.ctx.store(known_primary(device), std::memory_order_relaxed);
    e.away.store(nullptr, std::memory_order_relaxed);
    e.device = device;
    e.flags = flags;
    e.recorded.store(false, std::memory_order_relaxed);
    e.records.store(0, std::memory_order_relaxed);
    e.done.store(0, std::memory_order_relaxed);
    e.former.store(former ? kFormer : kOwn, std::memory_order_relaxed);
    e.pool = pool;
    e.hf_id.store(0, std::memory_order_relaxed);
    e.hf_ticket.store(0, std::memory_order_relaxed);
    return publish_as<evx_event_t>(index, kEvent, &e);
}

}  // namespace evx
