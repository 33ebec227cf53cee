// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// The objects behind stream and pool handles, as other modules see them.
// (Events are in handle.hpp: they live in their slots.)
#ifndef EVX_SRC_OBJECTS_HPP
#define EVX_SRC_OBJECTS_HPP

#include <cuda.h>

#include "driver.hpp"
#include "error.hpp"
#include "handle.hpp"
#include "evx/common.h"

namespace evx {

struct Stream {
    CUstream cu = nullptr;
    int device = 0;
    bool owned = false;           // evx_device_create_stream()
    bool default_stream = false;  // borrowed NULL, legacy or per-thread
    unsigned flags = 0;           // cached at creation or wrap time
    int priority = 0;
    // evx_stream_wrap_external_with_release(): called once the borrow has
    // ended (lifetime.cpp), never by stream_free().
    void (*release)(void *) = nullptr;
    void *release_user = nullptr;
};

// Calls on a borrowed default stream need its device's primary context
// current to name the right stream; other streams carry their context.
inline evx_status_t stream_context(ContextGuard &guard, const char *fn,
                                   const Stream *s) {
    return s->default_stream ? guard.enter(fn, s->device) : 0;
}

// evx_stream_wrap_external() and its variant with a release callback
// (release may be nullptr); fn names the public call.
evx_status_t wrap_stream(const char *fn, int device, void *native_stream,
                         void (*release)(void *), void *release_user, evx_stream_t *out);

// evx_stream_destroy() of a borrow with a release callback: waits until no
// racing call holds the stream, frees it, then calls the callback.
// The handle is already unpublished.
evx_status_t end_borrow(ThreadRecord *r, const void *h, const Stream *s);

// INVALID_VALUE with a message for flags no event may have: unknown bits,
// or EVX_EVENT_INTERPROCESS without EVX_EVENT_DISABLE_TIMING.
evx_status_t check_event_flags(const char *fn, unsigned flags);

// Makes the free slot `index` a live event handle for a driver event;
// former: the driver event was recorded in a former life (see cache.hpp).
evx_event_t publish_event(uint32_t index, int device, unsigned flags, CUevent cu,
                          Pool *pool, bool former);

// For a call that hands an event's driver event to the driver or to other
// code before the event is recorded in this life (evx_event_get_native(),
// evx_stream_wait_event()): an event whose driver state is still a former
// life's gets a new driver event first. The caller holds the event's hazard.
evx_status_t event_own_state(const char *fn, Event *e);

// Takes back a driver event of a pool event that was destroyed or released.
// maybe_pending: recorded and not seen complete since; former: ever recorded.
void pool_take_back(Pool *pool, CUevent ev, bool maybe_pending, bool former);

// Counts a driver event made for a pool's event outside the pool (the
// renewal of event_own_state()) in the pool's created_total.
void pool_count_created(Pool *pool);

}  // namespace evx

#endif  // EVX_SRC_OBJECTS_HPP
