// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// What pool.cpp offers the event module: the hand-back of a pooled event's
// driver event and slot, and its count of driver events made.
#ifndef EVX_SRC_POOL_HPP
#define EVX_SRC_POOL_HPP

#include <cuda.h>

#include <cstdint>

#include "event_object.hpp"
#include "thread.hpp"

namespace evx {

// Takes back a driver event of a pool event that was destroyed or released.
// maybe_pending: recorded and not seen complete since; former: ever recorded.
void pool_take_back(Pool *pool, CUevent ev, bool maybe_pending, bool former);

// Counts a driver event made for a pool's event outside the pool (the
// renewal of event_own_state()) in the pool's created_total.
void pool_count_created(Pool *pool);

// Takes the retired slot of an event released to its pool into
// the pool's batch, scanned (retire_scan()) once per kRetireBatch of them
// and whenever an acquire finds no idle event, the stats are read, the pool
// is prewarmed or destroyed. The event counts in use until then. False
// (nothing taken) when out of memory or the pool's handle is being
// destroyed: retire() frees it now.
bool pool_batch(ThreadRecord *r, Pool *pool, uint32_t index);

}  // namespace evx

#endif  // EVX_SRC_POOL_HPP
