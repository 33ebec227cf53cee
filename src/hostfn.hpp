// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Host functions that can fail (evx_stream_launch_host_func_status()): evx
// runs the caller's function inside its own, records a failure against the
// stream handle it was launched on (against the device, for a function
// captured into a graph and failing in a launch of it), and the waiting
// calls that cover it report it once (see evx/stream.h for exactly which).
#ifndef EVX_SRC_HOSTFN_HPP
#define EVX_SRC_HOSTFN_HPP

#include <atomic>
#include <cstdint>

#include "evx/common.h"
#include "handle.hpp"
#include "stream_object.hpp"

namespace evx {

// Failures recorded and not yet reported, in the whole process, and those
// of them in graph launches: the fast path of a waiting call reads one of
// the two (g_graph_failures when it has no stream handle's failures to
// look for, which is almost every call).
extern std::atomic<uint32_t> g_host_failures;
extern std::atomic<uint32_t> g_graph_failures;

// Reports (and forgets) the earliest unreported failure of the host
// functions launched on stream handle number `id` (0: none) with a ticket
// up to `upto`, else the earliest recorded failure in a graph launch on
// `device` (-1: none): sets the message, naming fn, and returns the
// function's status; 0 if there is none.
evx_status_t host_failure_take(const char *fn, uint64_t id, uint64_t upto, int device)
    __attribute__((cold, noinline));

// After the wait of a waiting call on `device`: one load and a branch
// while no failure it could report is unreported.
inline evx_status_t host_failure_check(const char *fn, uint64_t id, uint64_t upto, int device) {
    const std::atomic<uint32_t> &count = id == 0 ? g_graph_failures : g_host_failures;
    if (__builtin_expect(count.load(std::memory_order_acquire) == 0, 1)) return 0;
    return host_failure_take(fn, id, upto, device);
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

// The failures a timer's or timeline's mark covers. Atomic: a timer's
// marks take no lock (its state word orders them, timer.cpp).
struct HostMark {
    std::atomic<uint64_t> id{0};
    std::atomic<uint64_t> ticket{0};
    void copy(const HostMark &o) {
        id.store(o.id.load(std::memory_order_relaxed), std::memory_order_relaxed);
        ticket.store(o.ticket.load(std::memory_order_relaxed), std::memory_order_relaxed);
    }
    void clear() {
        id.store(0, std::memory_order_relaxed);
        ticket.store(0, std::memory_order_relaxed);
    }
};

// After a mark on s: costs one load and a branch unless host functions that
// can fail were launched on s (or the mark's last use covered some).
inline void host_note_mark(HostMark *m, const Stream *s) {
    const uint64_t id = s->hf_id.load(std::memory_order_acquire);
    if (__builtin_expect((id | m->id.load(std::memory_order_relaxed)) == 0, 1)) return;
    m->ticket.store(id ? s->hf_launched.load(std::memory_order_acquire) : 0,
                    std::memory_order_relaxed);
    m->id.store(id, std::memory_order_relaxed);
}

inline evx_status_t host_failure_of_mark(const char *fn, const HostMark &m, int device) {
    return host_failure_check(fn, m.id.load(std::memory_order_relaxed),
                              m.ticket.load(std::memory_order_relaxed), device);
}

// The waiting calls on events: the failures an event's last record covers,
// and those in graph launches on its device.
inline evx_status_t host_failure_of_event(const char *fn, Event *e) {
    const uint64_t id = e->hf_id.load(std::memory_order_acquire);
    return host_failure_check(fn, id, id ? e->hf_ticket.load(std::memory_order_relaxed) : 0,
                              e->device);
}

}  // namespace evx

#endif  // EVX_SRC_HOSTFN_HPP
