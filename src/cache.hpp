// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Reuse of driver events per (device, flags): per-thread caches, a shared
// depot, pending events. See docs/design.md, "Driver events are reused".
#ifndef EVX_SRC_CACHE_HPP
#define EVX_SRC_CACHE_HPP

#include <cuda.h>

#include "evx/common.h"
#include "thread.hpp"

namespace evx {

// A driver event of (device, flags) with no pending work: a kept one, or a
// new one from cuEventCreate. EVX_EVENT_INTERPROCESS events are always new.
evx_status_t cache_take(ThreadRecord *r, const char *fn, int device,
                        unsigned flags, CUevent *out);

// Keeps a driver event for reuse (or destroys it: interprocess events, a full
// depot). maybe_pending: it was recorded since it was last known complete.
void cache_give(ThreadRecord *r, int device, unsigned flags, CUevent ev,
                bool maybe_pending);

// cuEventCreate under the device's context guard.
evx_status_t create_driver_event(const char *fn, int device, unsigned flags,
                                 CUevent *out);
// cuEventDestroy under the device's context guard.
void destroy_driver_event(int device, CUevent ev);

// At thread exit: moves the thread's cached events to the depot.
void cache_flush_thread(ThreadRecord *r);

// evx_device_trim(): destroys the idle events kept for a device.
evx_status_t cache_trim(ThreadRecord *r, const char *fn, int device);

}  // namespace evx

#endif  // EVX_SRC_CACHE_HPP
