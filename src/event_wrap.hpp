// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Borrowed events (evx_event_wrap_external()): what the other event
// modules need of them. See event_wrap.cpp.
#ifndef EVX_SRC_EVENT_WRAP_HPP
#define EVX_SRC_EVENT_WRAP_HPP

#include <cuda.h>

#include "evx/common.h"
#include "handle.hpp"

namespace evx {

struct Stream;

// event.cpp: sets every field of a slot's event for a new life (not yet
// published); a plain event (not borrowed).
void fill_event(Event &e, int device, unsigned flags, CUevent cu, Pool *pool, bool former);

// evx_event_destroy(): ends the handle; a borrow with a release callback
// waits for racing calls, then calls it; others are retired.
evx_status_t destroy_event(const char *fn, evx_event_t event);

// A borrowed event recorded on a stream of another context than its own:
// refused (its driver event is its maker's, made in one context).
evx_status_t borrowed_other_context(const char *fn, const Event *e, const Stream *s,
                                    const void *event, const void *stream)
    __attribute__((cold, noinline));

// cuEventElapsedTime refused a pair with a borrowed event (of one context):
// the driver's status, the message saying what evx cannot know of it.
evx_status_t borrowed_elapsed_failed(const char *fn, CUresult res, const void *start,
                                     const Event *a, const void *end, const Event *b)
    __attribute__((cold, noinline));

// NOT_SUPPORTED for what evx cannot know or do of a borrowed event; `why`
// ends the message.
evx_status_t borrowed_refused(const char *fn, const void *event, const char *why)
    __attribute__((cold, noinline));

}  // namespace evx

#endif  // EVX_SRC_EVENT_WRAP_HPP
