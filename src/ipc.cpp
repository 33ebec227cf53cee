// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Interprocess events: export (cuIpcGetEventHandle) and open
// (cuIpcOpenEventHandle). See include/evx/ipc.h.
//
// The driver events behind them are never reused: an INTERPROCESS event
// comes from cuEventCreate and goes back to cuEventDestroy (cache.cpp), and
// an opened event carries the INTERPROCESS flag too, so that its free takes
// the same path and it never enters the cache. Once a driver event may be
// recorded by another process, evx cannot answer for it from what it saw in
// this process: both paths mark the event recorded, so that query and
// synchronize always ask the driver.
#include <cinttypes>
#include <cstring>

#include "cache.hpp"
#include "driver.hpp"
#include "error.hpp"
#include "event_state.hpp"
#include "event_wrap.hpp"
#include "evx/event.h"
#include "evx/ipc.h"
#include "handle.hpp"
#include "scope.hpp"

static_assert(sizeof(evx_ipc_event_handle_t) == sizeof(CUipcEventHandle),
              "evx_ipc_event_handle_t must hold a CUipcEventHandle");
static_assert(EVX_IPC_HANDLE_SIZE == CU_IPC_HANDLE_SIZE, "CU_IPC_HANDLE_SIZE changed");

using namespace evx;

namespace {

evx_status_t no_entry(const char *fn, const char *call) {
    return fail(EVX_ERROR_NOT_SUPPORTED, "%s: the driver (%s) has no %s", fn, g_driver.path,
                call);
}

}  // namespace

extern "C" {

EVX_API evx_status_t evx_event_get_ipc_handle(evx_event_t event, evx_ipc_event_handle_t *out) {
    static const char fn[] = "evx_event_get_ipc_handle";
    if (!out) return fail(EVX_ERROR_INVALID_VALUE, "%s: out (the out-pointer) is NULL", fn);
    return with_live(fn, event, kEvent, "event", [event, out](Slot &s) -> evx_status_t {
        Event &e = s.event;
        if (e.borrowed)
            return borrowed_refused(fn, event,
                                    "evx exports only events it made; export it where it was "
                                    "made (cuIpcGetEventHandle)");
        if (!(e.flags & EVX_EVENT_INTERPROCESS))
            return fail(EVX_ERROR_INVALID_HANDLE,
                        "%s: event 0x%" PRIx64 " was created without EVX_EVENT_INTERPROCESS "
                        "(flags 0x%x): only an event made with EVX_EVENT_INTERPROCESS | "
                        "EVX_EVENT_DISABLE_TIMING can be exported",
                        fn, handle_value(event), e.flags);
        if (!cu().cuIpcGetEventHandle) return no_entry(fn, "cuIpcGetEventHandle");
        CUipcEventHandle h;
        CUresult res;
        {
            ContextGuard guard;
            const evx_status_t st = guard.enter(fn, e.device);
            if (st) return st;
            res = cu().cuIpcGetEventHandle(&h, e.cu.load(std::memory_order_acquire));
            if (res == CUDA_SUCCESS) {
                const evx_status_t popped = guard.leave(fn, "nothing was exported");
                if (popped) return popped;
            }
        }
        if (res != CUDA_SUCCESS)
            return driver_failed(res, fn, "cuIpcGetEventHandle", "event 0x%" PRIx64 " of device %d",
                                 handle_value(event), e.device);
        // Peers may record it from now on: never answer for it without
        // the driver.
        e.recorded.store(kRecorded, std::memory_order_release);
        event_refresh_hot(&e);
        std::memcpy(out->reserved, h.reserved, sizeof out->reserved);
        return EVX_SUCCESS;
    });
}

EVX_API evx_status_t evx_device_open_ipc_event(int device, const evx_ipc_event_handle_t *handle,
                                               evx_event_t *out) {
    static const char fn[] = "evx_device_open_ipc_event";
    if (!out) return fail(EVX_ERROR_INVALID_VALUE, "%s: out (the out-pointer) is NULL", fn);
    *out = nullptr;
    if (!handle) return fail(EVX_ERROR_INVALID_VALUE, "%s: handle is NULL", fn);
    ThreadRecord *r = nullptr;
    evx_status_t st = enter_device(fn, device, &r);
    if (st) return st;
    if (!cu().cuIpcOpenEventHandle) return no_entry(fn, "cuIpcOpenEventHandle");
    uint32_t index;
    st = slot_alloc(r, fn, &index);
    if (st) return st;
    CUipcEventHandle h;
    std::memcpy(h.reserved, handle->reserved, sizeof h.reserved);
    CUevent ev = nullptr;
    CUresult res;
    {
        ContextGuard guard;
        st = guard.enter(fn, device);
        res = st ? CUDA_SUCCESS : cu().cuIpcOpenEventHandle(&ev, h);
        if (!st && res == CUDA_SUCCESS) {
            st = guard.leave(fn, "the driver event it opened is destroyed again");
            if (st) cu().cuEventDestroy(ev);
        }
    }
    if (st || res != CUDA_SUCCESS) {
        slot_free(r, index);
        if (st) return st;
        if (res == CUDA_ERROR_INVALID_CONTEXT)
            return driver_failed(res, fn, "cuIpcOpenEventHandle",
                                 "device %d; the driver opens an IPC event handle only in a "
                                 "process other than the one that exported it",
                                 device);
        return driver_failed(res, fn, "cuIpcOpenEventHandle", "device %d", device);
    }
    // DISABLE_TIMING: the driver's opened event has no timing.
    // INTERPROCESS: its free destroys it, never caches it (cache.cpp).
    evx_event_t e = publish_event(index, device, EVX_EVENT_DISABLE_TIMING | EVX_EVENT_INTERPROCESS,
                                  ev, nullptr, false);
    // The exporting process may have recorded it: always ask the driver.
    slot_ref(index).event.recorded.store(kRecorded, std::memory_order_release);
    event_refresh_hot(&slot_ref(index).event);
    *out = e;
    return EVX_SUCCESS;
}

}  // extern "C"
