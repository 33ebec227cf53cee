// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// The evx stream object, as the modules that take a stream see it (its calls
// are stream.cpp's), and the context guard its calls need.
#ifndef EVX_SRC_STREAM_OBJECT_HPP
#define EVX_SRC_STREAM_OBJECT_HPP

#include <cuda.h>

#include <atomic>
#include <cstdint>

#include "driver.hpp"
#include "evx/common.h"

namespace evx {

constexpr unsigned kFlagsUnknown = ~0u;  // Stream::flags not read yet
// Stream::record_ctx and wait_ctx of a stream that no event's hot test
// passes: all ones, no context with Event::hot's bits.
constexpr uintptr_t kNoContextTag = ~uintptr_t{0};

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
    // One test each for the common case of the hot calls, set with the
    // fields above (publish_stream()): for a stream that is not a default
    // stream, its context's value, which evx_event_record() compares with
    // the event's Event::hot (as it is when the record needs no work but
    // the driver's) and evx_stream_wait_event() with Event::hot less
    // kHotRecordRare (the event's driver state its own); for a default
    // stream kNoContextTag, which no Event::hot is, so that the test sends
    // it to the rare path, which looks at the fields above. record_ctx
    // becomes kNoContextTag too once host functions that can fail were
    // launched on the stream (hostfn.cpp): its records note them.
    mutable std::atomic<uintptr_t> record_ctx{0};
    uintptr_t wait_ctx = 0;
    // evx_stream_wrap_external_with_release(): called once the borrow has
    // ended (lifetime.cpp), never by stream_free().
    void (*release)(void *) = nullptr;
    void *release_user = nullptr;
    // Host functions that can fail (hostfn.cpp): the handle's number in the
    // failure list (0 until the first is launched) and how many were
    // launched. Changed through const pointers, as calls hold the stream.
    mutable std::atomic<uint64_t> hf_id{0};
    mutable std::atomic<uint64_t> hf_launched{0};
    // Fences destroyed or alive whose reclamation still needs this stream
    // (fence_reclaim.cpp): when it is freed with some, it records one event
    // for them (fence_stream_gone()).
    mutable std::atomic<uint32_t> fence_refs{0};
};


// Calls on a borrowed default stream need its device's primary context
// current to name the right stream; other streams carry their context.
inline evx_status_t stream_context(ContextGuard &guard, const char *fn,
                                   const Stream *s) {
    return s->default_stream ? guard.enter(fn, s->device) : 0;
}

}  // namespace evx

#endif  // EVX_SRC_STREAM_OBJECT_HPP
