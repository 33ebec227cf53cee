// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Borrowed events: evx_event_wrap_external() and its variant with a release
// callback. See include/evx/event.h and include/evx/lifetime.h.
//
// A borrowed event lives in its slot as evx's own events do, and every
// event call takes it, with four differences, each a branch where an own
// event's path would act on the driver event as evx's:
//   - its free gives nothing back: no cache, no pool, no cuEventDestroy
//     (event.cpp, event_free());
//   - it is never moved to another context (contexts.cpp): the driver
//     records an event only on streams of the context it was made in, and
//     the driver has no call that tells that context, so the borrow carries
//     it (the device's primary context, or the current one for
//     EVX_DEVICE_CURRENT);
//   - it counts as recorded from the start: its maker may have recorded it,
//     so query, synchronize, elapsed time and notifier watches always ask
//     the driver, as for an interprocess event;
//   - its flags are unknown (the driver cannot tell them): evx leaves
//     timing and blocking sync to the driver's answers, and says so in the
//     messages.
// A borrow with a release callback ends as a borrowed stream's does
// (lifetime.cpp): the destroy waits until no racing call holds the slot,
// frees it, then calls the callback on the destroying thread. A failing
// wrap never calls it: the caller still owns the event.
#include <cinttypes>

#include "driver.hpp"
#include "error.hpp"
#include "event_state.hpp"
#include "event_wrap.hpp"
#include "evx/device.h"
#include "evx/event.h"
#include "evx/lifetime.h"
#include "handle.hpp"
#include "lifetime.hpp"
#include "reclaim.hpp"
#include "scope.hpp"

namespace evx {

namespace {

// EVX_DEVICE_CURRENT: the calling thread's current context, which becomes
// the event's, and its device's ordinal.
evx_status_t current_event_context(const char *fn, int *device, CUcontext *ctx) {
    const evx_status_t st = current_context(fn, ctx, device);
    if (st || *ctx) return st;
    return fail(EVX_ERROR_INVALID_VALUE,
                "%s: EVX_DEVICE_CURRENT was given, but no context is current on the calling "
                "thread: make the event's context current, or pass the device ordinal (whose "
                "primary context is then the event's)",
                fn);
}

// The device and context of a borrow: `device` checked, EVX_DEVICE_CURRENT
// resolved. The device's primary context is retained either way (evx's
// streams of the device and the messages name it).
evx_status_t borrow_context(const char *fn, int *device, CUcontext *ctx) {
    evx_status_t st = ensure_driver(fn);
    if (st) return st;
    *ctx = nullptr;
    if (*device == EVX_DEVICE_FROM_STREAM)
        return fail(EVX_ERROR_INVALID_DEVICE,
                    "%s: device EVX_DEVICE_FROM_STREAM (%d) is for streams: the driver has no "
                    "call that tells an event's device; pass the device ordinal or "
                    "EVX_DEVICE_CURRENT",
                    fn, EVX_DEVICE_FROM_STREAM);
    st = *device == EVX_DEVICE_CURRENT ? current_event_context(fn, device, ctx)
                                       : check_device(fn, *device);
    CUcontext primary = nullptr;
    if (!st) st = primary_context(fn, *device, &primary);
    if (!st && !*ctx) *ctx = primary;
    return st;
}

evx_status_t wrap_event(const char *fn, const char *out_name, int device, void *native,
                        void (*release)(void *), void *user, evx_event_t *out) {
    if (!out)
        return fail(EVX_ERROR_INVALID_VALUE, "%s: %s (the out-pointer) is NULL", fn, out_name);
    *out = nullptr;
    if (!native)
        return fail(EVX_ERROR_INVALID_VALUE,
                    "%s: native_event is NULL: pass the CUevent (cudaEvent_t) to borrow", fn);
    CUcontext ctx = nullptr;
    evx_status_t st = borrow_context(fn, &device, &ctx);
    ThreadRecord *r = nullptr;
    if (!st) st = enter_thread(&r);
    uint32_t index = 0;
    if (!st) st = slot_alloc(r, fn, &index);
    if (st) return st;
    Event &e = slot_ref(index).event;
    fill_event(e, device, 0, static_cast<CUevent>(native), nullptr, false);
    e.ctx.store(ctx, std::memory_order_relaxed);
    // Its maker may have recorded it: kRecorded, so that every query,
    // synchronize, elapsed time and watch asks the driver.
    e.recorded.store(kRecorded, std::memory_order_relaxed);
    e.hot.store(hot_of(e), std::memory_order_relaxed);  // published with the handle
    e.borrowed = true;
    e.plain = false;
    e.release = release;
    e.release_user = user;
    *out = publish_as<evx_event_t>(index, kEvent, &e);
    return EVX_SUCCESS;
}

}  // namespace

evx_status_t retire_event(ThreadRecord *r, evx_event_t event, const Event &e) {
    // Ours now: racing calls only read it under their hazards.
    if (__builtin_expect(e.release == nullptr, 1)) return retire(r, event);
    return end_borrow(r, event, e.release, e.release_user);
}

evx_status_t borrowed_elapsed_failed(const char *fn, CUresult res, const void *start,
                                     const Event *a, const void *end, const Event *b) {
    return driver_failed(res, fn, "cuEventElapsedTime",
                         "start event 0x%" PRIx64 "%s, end event 0x%" PRIx64
                         "%s: a borrowed event may have been created without timing "
                         "(CU_EVENT_DISABLE_TIMING) or not recorded yet, which evx cannot know",
                         handle_value(start), a->borrowed ? " (borrowed)" : "",
                         handle_value(end), b->borrowed ? " (borrowed)" : "");
}

evx_status_t borrowed_refused(const char *fn, const void *event, const char *why) {
    return fail(EVX_ERROR_NOT_SUPPORTED,
                "%s: event 0x%" PRIx64 " is borrowed (evx_event_wrap_external): %s", fn,
                handle_value(event), why);
}

}  // namespace evx

using namespace evx;

extern "C" {

EVX_API evx_status_t evx_event_wrap_external(int device, void *native_event,
                                             evx_event_t *event) {
    return wrap_event("evx_event_wrap_external", "event", device, native_event, nullptr,
                      nullptr, event);
}

EVX_API evx_status_t evx_event_wrap_external_with_release(int device, void *native_event,
                                                          evx_release_fn_t release,
                                                          void *user_data, evx_event_t *out) {
    static const char fn[] = "evx_event_wrap_external_with_release";
    if (!release) {
        if (out) *out = nullptr;
        return fail(EVX_ERROR_INVALID_VALUE,
                    "%s: release is NULL (use evx_event_wrap_external for a borrow without a "
                    "release callback)",
                    fn);
    }
    return wrap_event(fn, "out", device, native_event, release, user_data, out);
}

EVX_API evx_status_t evx_event_is_owned(evx_event_t event, int *owned) {
    static const char fn[] = "evx_event_is_owned";
    if (!owned) return fail(EVX_ERROR_INVALID_VALUE, "%s: owned (the out-pointer) is NULL", fn);
    return with_live(fn, event, kEvent, "event", [owned](Slot &s) {
        *owned = s.event.borrowed ? 0 : 1;
        return EVX_SUCCESS;
    });
}

}  // extern "C"
