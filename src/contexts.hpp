// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// What contexts.cpp offers the modules: events and streams of contexts other
// than the primary one.
#ifndef EVX_SRC_CONTEXTS_HPP
#define EVX_SRC_CONTEXTS_HPP

#include <cuda.h>

#include <cstddef>

#include "event_object.hpp"
#include "evx/common.h"
#include "stream_object.hpp"

namespace evx {

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

}  // namespace evx

#endif  // EVX_SRC_CONTEXTS_HPP
