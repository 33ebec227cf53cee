// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// The public driver and device calls.
#include "cache.hpp"
#include "driver.hpp"
#include "error.hpp"
#include "evx/device.h"
#include "fence.hpp"
#include "handle.hpp"
#include "reclaim.hpp"
#include "scope.hpp"
#include "timer.hpp"

using namespace evx;

extern "C" {

EVX_API evx_status_t evx_driver_open(void) { return ensure_driver("evx_driver_open"); }

EVX_API evx_status_t evx_driver_get_version(int *version) {
    static const char fn[] = "evx_driver_get_version";
    if (!version) return fail(EVX_ERROR_INVALID_VALUE, "%s: version (the out-pointer) is NULL", fn);
    evx_status_t st = ensure_driver(fn);
    if (st) return st;
    *version = g_driver.version;
    return EVX_SUCCESS;
}

EVX_API evx_status_t evx_driver_get_path(const char **path) {
    static const char fn[] = "evx_driver_get_path";
    if (!path) return fail(EVX_ERROR_INVALID_VALUE, "%s: path (the out-pointer) is NULL", fn);
    evx_status_t st = ensure_driver(fn);
    if (st) return st;
    *path = g_driver.path;
    return EVX_SUCCESS;
}

EVX_API evx_status_t evx_driver_is_emulation(int *is_emulation) {
    static const char fn[] = "evx_driver_is_emulation";
    if (!is_emulation)
        return fail(EVX_ERROR_INVALID_VALUE, "%s: is_emulation (the out-pointer) is NULL", fn);
    evx_status_t st = ensure_driver(fn);
    if (st) return st;
    *is_emulation = g_driver.is_emulation;
    return EVX_SUCCESS;
}

EVX_API evx_status_t evx_device_count(int *count) {
    static const char fn[] = "evx_device_count";
    if (!count) return fail(EVX_ERROR_INVALID_VALUE, "%s: count (the out-pointer) is NULL", fn);
    evx_status_t st = ensure_driver(fn);
    if (st) return st;
    *count = g_driver.device_count;
    return EVX_SUCCESS;
}

EVX_API evx_status_t evx_device_stream_priority_range(int device, int *least, int *greatest) {
    static const char fn[] = "evx_device_stream_priority_range";
    if (!least && !greatest)
        return fail(EVX_ERROR_INVALID_VALUE, "%s: least and greatest are both NULL", fn);
    evx_status_t st = ensure_driver(fn);
    if (st) return st;
    st = check_device(fn, device);
    if (st) return st;
    int l, g;
    st = priority_range(fn, device, &l, &g);
    if (st) return st;
    if (least) *least = l;
    if (greatest) *greatest = g;
    return EVX_SUCCESS;
}

EVX_API evx_status_t evx_device_trim(int device) {
    static const char fn[] = "evx_device_trim";
    ThreadRecord *r;
    const evx_status_t st = enter_device(fn, device, &r);
    if (st) return st;
    // What this thread collected or retired while others held it may be
    // free by now; then what other threads collected is freed here; then
    // the timers this thread keeps (those freed here among them) give
    // their events back to its cache, which is emptied last.
    retire_rescan(r);
    const evx_status_t others = cache_trim_others(r, device);
    timers_trim(r, device);
    // Fences' idle pinned pages: the one part of a trim that may wait for
    // the device's queued work (the driver's free does).
    const evx_status_t fences = fence_memory_trim(fn, device);
    const evx_status_t events = cache_trim(r, fn, device, others);
    return events ? events : fences;
}

}  // extern "C"
