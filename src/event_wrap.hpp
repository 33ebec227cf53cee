// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Borrowed events (evx_event_wrap_external()): what the other event
// modules need of them. See event_wrap.cpp.
#ifndef EVX_SRC_EVENT_WRAP_HPP
#define EVX_SRC_EVENT_WRAP_HPP

#include <cuda.h>

#include "evx/common.h"
#include "evx/event.h"
#include "event_object.hpp"

namespace evx {

struct ThreadRecord;  // reclaim.hpp

// evx_event_destroy() of an event it unpublished that is not batched
// there: a borrow with a release callback waits for racing calls, then
// calls it; others are retired.
evx_status_t retire_event(ThreadRecord *r, evx_event_t event, const Event &e);

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
