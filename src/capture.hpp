// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// What capture.cpp offers the modules: the message of a call refused during
// a capture, and the driver calls of timer and timeline marks on a captured
// stream (docs/graphs.md).
#ifndef EVX_SRC_CAPTURE_HPP
#define EVX_SRC_CAPTURE_HPP

#include <cuda.h>

#include <cstdint>

#include "evx/common.h"
#include "stream_object.hpp"

namespace evx {

// The failure of a call on a stream with a status that says a
// capture is in progress (is_capture_status()): asks cuStreamIsCapturing
// (on this failure path only) to word the message.
evx_status_t capture_failed(const char *fn, const char *call, CUresult res, const void *h,
                            const Stream *s) __attribute__((cold, noinline));

// Timer and timeline marks on captured streams (timer.cpp, timeline.cpp).
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

}  // namespace evx

#endif  // EVX_SRC_CAPTURE_HPP
