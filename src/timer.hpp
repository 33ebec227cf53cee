// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// What timer.cpp offers the modules: the trim of the timers a thread keeps.
#ifndef EVX_SRC_TIMER_HPP
#define EVX_SRC_TIMER_HPP

#include "evx/common.h"
#include "thread.hpp"

namespace evx {

// For evx_device_trim(): the timers the calling thread keeps
// for reuse give their driver events of `device` back to its cache.
void timers_trim(ThreadRecord *r, int device);

}  // namespace evx

#endif  // EVX_SRC_TIMER_HPP
