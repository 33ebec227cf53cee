// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// What event.cpp offers the modules above it: the renewal of an event's
// driver state before its driver event is handed out.
#ifndef EVX_SRC_EVENT_HPP
#define EVX_SRC_EVENT_HPP

#include <atomic>

#include "event_object.hpp"
#include "evx/common.h"

namespace evx {

// For a call that hands an event's driver event to the driver or to other
// code before the event is recorded in this life (evx_event_get_native(),
// evx_stream_wait_event()): an event whose driver state is still a former
// life's gets a new driver event first. The caller holds the event's hazard.
// Inline: the hot calls that reach it (evx_stream_wait_event()) pay one
// load and a branch, not a call, for the event that is already its own.
evx_status_t event_renew_state(const char *fn, Event *e) __attribute__((noinline));
inline evx_status_t event_own_state(const char *fn, Event *e) {
    if (__builtin_expect(e->former.load(std::memory_order_acquire) == kOwn, 1)) return 0;
    return event_renew_state(fn, e);
}

}  // namespace evx

#endif  // EVX_SRC_EVENT_HPP
