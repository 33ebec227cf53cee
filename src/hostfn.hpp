// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Host functions that can fail (evx_stream_launch_host_func_status()): evx
// runs the caller's function inside its own, records a failure against the
// stream handle it was launched on, and the waiting calls that cover it
// report it once (see evx/stream.h for exactly which).
#ifndef EVX_SRC_HOSTFN_HPP
#define EVX_SRC_HOSTFN_HPP

#include <atomic>
#include <cstdint>

#include "evx/common.h"
#include "handle.hpp"
#include "objects.hpp"

namespace evx {

// Failures recorded and not yet reported, in the whole process: the fast
// path of every waiting call reads only this (and the handle's hf_id).
extern std::atomic<uint32_t> g_host_failures;

// Reports (and forgets) the earliest unreported failure of the host
// functions launched on stream handle number `id` with a ticket up to
// `upto`: sets the message, naming fn, and returns the function's status;
// 0 if there is none.
evx_status_t host_failure_take(const char *fn, uint64_t id, uint64_t upto)
    __attribute__((cold, noinline));

inline evx_status_t host_failure_check(const char *fn, uint64_t id, uint64_t upto) {
    if (__builtin_expect(id == 0, 1) ||
        g_host_failures.load(std::memory_order_acquire) == 0)
        return 0;
    return host_failure_take(fn, id, upto);
}

// After a successful record of `e` on `s`: the failures its synchronize
// covers. Costs one load and a branch unless host functions that can fail
// were launched on the stream (or the event's last record covered some).
inline void host_note_record(Event *e, const Stream *s) {
    const uint64_t id = s->hf_id.load(std::memory_order_acquire);
    if (__builtin_expect((id | e->hf_id.load(std::memory_order_relaxed)) == 0, 1)) return;
    e->hf_ticket.store(s->hf_launched.load(std::memory_order_acquire), std::memory_order_relaxed);
    e->hf_id.store(id, std::memory_order_release);
}

// The waiting calls on events: the failures an event's last record covers.
inline evx_status_t host_failure_of_event(const char *fn, Event *e) {
    const uint64_t id = e->hf_id.load(std::memory_order_acquire);
    if (__builtin_expect(id == 0, 1)) return 0;
    return host_failure_check(fn, id, e->hf_ticket.load(std::memory_order_relaxed));
}

}  // namespace evx

#endif  // EVX_SRC_HOSTFN_HPP
