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

constexpr unsigned kFlagsUnknown = ~0u;  // Stream::flags not read yet

struct Stream {
    CUstream cu = nullptr;
    int device = 0;
    bool owned = false;           // evx_device_create_stream()
    bool default_stream = false;  // borrowed NULL, legacy or per-thread
    // Cached at creation or wrap time; kFlagsUnknown for a stream wrapped
    // while it was captured, read on first ask (evx_stream_get_flags()).
    mutable std::atomic<unsigned> flags{0};
    int priority = 0;
    // The stream's context, read at creation or wrap time: the device's
    // primary context for owned and default streams, cuStreamGetCtx's answer
    // for other borrowed ones (the primary context for a green context's
    // stream, whose green context is kept for messages).
    CUcontext ctx = nullptr;
    CUgreenCtx green = nullptr;
    // evx_stream_wrap_external_with_release(): called once the borrow has
    // ended (lifetime.cpp), never by stream_free().
    void (*release)(void *) = nullptr;
    void *release_user = nullptr;
    // Host functions that can fail (hostfn.cpp): the handle's number in the
    // failure list (0 until the first is launched) and how many were
    // launched. Changed through const pointers, as calls hold the stream.
    mutable std::atomic<uint64_t> hf_id{0};
    mutable std::atomic<uint64_t> hf_launched{0};
};

// Calls on a borrowed default stream need its device's primary context
// current to name the right stream; other streams carry their context.
inline evx_status_t stream_context(ContextGuard &guard, const char *fn,
                                   const Stream *s) {
    return s->default_stream ? guard.enter(fn, s->device) : 0;
}

// capture.cpp: the failure of a call on a stream with a status that says a
// capture is in progress (is_capture_status()): asks cuStreamIsCapturing
// (on this failure path only) to word the message.
evx_status_t capture_failed(const char *fn, const char *call, CUresult res, const void *h,
                            const Stream *s) __attribute__((cold, noinline));

// capture.cpp: timer and timeline marks on captured streams (timing.cpp).
// Whether the stream is being captured (an invalidated capture counts: the
// mark then fails as the driver says). False when the driver cannot tell.
evx_status_t mark_capturing(const char *fn, const Stream *s, const void *h, bool *capturing);
// Records a mark as an external event record node of the stream's capture:
// each launch of the graph records the event.
evx_status_t record_graph_mark(const char *fn, CUevent ev, const Stream *s, const void *h,
                               uint64_t owner, const char *owner_kind);
// Whether a launch has recorded a graph mark's event (made for that mark,
// never recorded before it); ILLEGAL_STATE with a message naming the mark
// ("mark 2", "the start mark") if not.
evx_status_t graph_mark_check(const char *fn, CUevent ev, const char *mark,
                              const char *owner_kind, uint64_t owner);

// --- contexts.cpp: events and streams of contexts other than the primary one

// The context of a borrowed stream that is not a default stream (see
// Stream::ctx); nullptr in *ctx when the driver cannot tell (then evx treats
// it as the primary context, as before it knew contexts).
evx_status_t native_stream_context(const char *fn, CUstream cs, int device, CUcontext *ctx,
                                   CUgreenCtx *green);

// A record of an event on a stream of another context than its driver
// event's: records a driver event of the stream's context (made on first
// use, as PyTorch makes its events on first record) and makes it the
// event's, under a claim. The caller holds both hazards. A failing pop of
// the guard after the record (its message set) returns its status |
// kPopFailed: the record stands.
evx_status_t record_other_context(const char *fn, Event *e, const Stream *s, const void *event,
                                  const void *stream, bool with_flags, unsigned flags)
    __attribute__((cold, noinline));

// At free: destroys the driver events an event made in other contexts and
// leaves its primary context's one in e->cu. Only for e->away != nullptr.
void event_come_home(Event *e);

// Writes "context 0x... (device 0's primary context)", "context 0x...
// (created by the caller) of device 0" or "green context 0x... of device 0".
void context_name(char *buf, size_t n, CUcontext ctx, CUgreenCtx green, int device);

// INVALID_HANDLE for a timer or timeline (whose driver events are the
// primary context's) marked on a stream of another context.
evx_status_t other_context_refused(const char *fn, const char *what, const void *h,
                                   const void *stream, const Stream *s)
    __attribute__((cold, noinline));

// evx_stream_wrap_external() and its variant with a release callback
// (release may be nullptr); fn names the public call.
evx_status_t wrap_stream(const char *fn, int device, void *native_stream,
                         void (*release)(void *), void *release_user, evx_stream_t *out);

// evx_stream_destroy() of a borrow with a release callback: waits until no
// racing call holds the stream, frees it, then calls the callback.
// The handle is already unpublished.
evx_status_t end_borrow(ThreadRecord *r, const void *h, const Stream *s);

// timing.cpp, for evx_device_trim(): the timers the calling thread keeps
// for reuse give their driver events of `device` back to its cache.
void timers_trim(ThreadRecord *r, int device);

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
// Inline: the hot calls that reach it (evx_stream_wait_event()) pay one
// load and a branch, not a call, for the event that is already its own.
evx_status_t event_renew_state(const char *fn, Event *e) __attribute__((noinline));
inline evx_status_t event_own_state(const char *fn, Event *e) {
    if (__builtin_expect(e->former.load(std::memory_order_acquire) == kOwn, 1)) return 0;
    return event_renew_state(fn, e);
}

// Claims an event (Event::former: kClaimed), waiting while another thread
// holds a claim; *prev is the state it had. Claims only a kFormer event
// unless from_own (then a kOwn one too); returns false, claiming nothing,
// for a kOwn event otherwise. The claimant stores the next state with release
// order (see event.cpp, claim_former()).
bool claim_event(Event *e, bool from_own, uint8_t *prev);

// Takes back a driver event of a pool event that was destroyed or released.
// maybe_pending: recorded and not seen complete since; former: ever recorded.
void pool_take_back(Pool *pool, CUevent ev, bool maybe_pending, bool former);

// Counts a driver event made for a pool's event outside the pool (the
// renewal of event_own_state()) in the pool's created_total.
void pool_count_created(Pool *pool);

// pool.cpp: takes the retired slot of an event released to its pool into
// the pool's batch, scanned (retire_scan()) once per kRetireBatch of them
// and whenever an acquire finds no idle event, the stats are read, the pool
// is prewarmed or destroyed. The event counts in use until then. False
// (nothing taken) when out of memory or the pool's handle is being
// destroyed: retire() frees it now.
bool pool_batch(ThreadRecord *r, Pool *pool, uint32_t index);

}  // namespace evx

#endif  // EVX_SRC_OBJECTS_HPP
