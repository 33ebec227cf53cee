// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// The public stream calls: owned streams (made by evx under the device's
// context guard) and borrowed ones (never destroyed by evx).
#include <cinttypes>
#include <new>

#include "capture.hpp"
#include "contexts.hpp"
#include "driver.hpp"
#include "error.hpp"
#include "event.hpp"
#include "evx/device.h"
#include "evx/event.h"
#include "evx/stream.h"
#include "handle.hpp"
#include "hostfn.hpp"
#include "lifetime.hpp"
#include "fence.hpp"
#include "scope.hpp"
#include "stream.hpp"
#include "stream_object.hpp"

namespace evx {

namespace {

Freed stream_free(ThreadRecord *, void *obj) {
    Stream *s = static_cast<Stream *>(obj);
    Freed res;
    if (s->fence_refs.load(std::memory_order_acquire) != 0) fence_stream_gone(s);
    if (s->owned) {
        ContextGuard guard;
        guard.enter(nullptr, s->device);  // destroy all the same on failure
        res.res = cu().cuStreamDestroy(s->cu);
        const evx_status_t popped = guard.leave(nullptr, nullptr);
        if (!res.res && popped)  // evx_stream_destroy words it
            res = {static_cast<CUresult>(popped), true};
    }
    delete s;
    return res;
}

// A borrowed stream's free destroys nothing of the driver's: batched
// (retire()). An owned one's destroys the driver stream, now. (A borrow
// with a release callback never reaches retire(): end_borrow().)
bool stream_batch(ThreadRecord *r, void *obj, uint32_t index) {
    const Stream *s = static_cast<const Stream *>(obj);
    // One that fences still need is freed now, while its driver stream
    // surely lives, so that its free can record their event.
    return !s->owned && s->release == nullptr &&
           s->fence_refs.load(std::memory_order_relaxed) == 0 && retire_batched(r, index);
}

const FreeHookEntry kStreamFree(kStream, stream_free, stream_batch);

inline bool is_default_stream(const void *native) {
    return native == nullptr || native == EVX_STREAM_LEGACY || native == EVX_STREAM_PER_THREAD;
}

// Whether a real (not default) native stream takes part in a capture
// (active or invalidated). The driver refuses cuStreamGetDevice and
// cuStreamGetFlags on such a stream with STREAM_CAPTURE_UNSUPPORTED and
// invalidates its capture, in every capture mode; cuStreamIsCapturing,
// cuStreamGetCtx, cuStreamGetPriority, cuCtxGetDevice and push/pop it
// allows. A driver without cuStreamIsCapturing has no capture to break.
evx_status_t native_capturing(const char *fn, CUstream cs, bool *capturing) {
    *capturing = false;
    if (!cu().cuStreamIsCapturing) return 0;
    CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
    const CUresult res = cu().cuStreamIsCapturing(cs, &cap);
    if (res != CUDA_SUCCESS)
        return driver_failed(res, fn, "cuStreamIsCapturing", "native stream %p",
                             static_cast<void *>(cs));
    *capturing = cap != CU_STREAM_CAPTURE_STATUS_NONE;
    return 0;
}

// The device of a stream's context: cuStreamGetCtx, then cuCtxGetDevice
// with that context pushed (for a green context's stream, its primary
// context or the context cuCtxFromGreenCtx gives: the same device).
evx_status_t context_device(const char *fn, CUstream cs, CUdevice *dev) {
    CUcontext ctx = nullptr;
    CUgreenCtx green = nullptr;
    CUresult res = cu().cuStreamGetCtx_v2 ? cu().cuStreamGetCtx_v2(cs, &ctx, &green)
                                           : cu().cuStreamGetCtx(cs, &ctx);
    if (res != CUDA_SUCCESS)
        return driver_failed(res, fn, "cuStreamGetCtx", "native stream %p",
                             static_cast<void *>(cs));
    ContextGuard guard;
    evx_status_t st = guard.enter_context(fn, ctx, -1);
    if (st) return st;
    res = cu().cuCtxGetDevice(dev);
    if (res != CUDA_SUCCESS)
        return driver_failed(res, fn, "cuCtxGetDevice", "the context of native stream %p",
                             static_cast<void *>(cs));
    return guard.leave(fn, "nothing was wrapped");
}

// The device ordinal of a real (not default) stream: cuStreamGetDevice,
// or its context's device where that call is missing (drivers before 12.8)
// or would break the stream's capture.
evx_status_t native_stream_device(const char *fn, CUstream cs, bool capturing, int *ordinal) {
    CUdevice dev = 0;
    if (cu().cuStreamGetDevice && !capturing) {
        const CUresult res = cu().cuStreamGetDevice(cs, &dev);
        if (res != CUDA_SUCCESS)
            return driver_failed(res, fn, "cuStreamGetDevice", "native stream %p",
                                 static_cast<void *>(cs));
    } else if ((cu().cuStreamGetCtx_v2 || cu().cuStreamGetCtx) && cu().cuCtxGetDevice) {
        const evx_status_t st = context_device(fn, cs, &dev);
        if (st) return st;
    } else {
        return fail(EVX_ERROR_NOT_SUPPORTED,
                    "%s: the driver has no cuStreamGetCtx with cuCtxGetDevice%s, so the "
                    "device of native stream %p cannot be read",
                    fn, capturing ? " (and cuStreamGetDevice would invalidate the capture "
                                    "the stream takes part in)"
                                  : " nor cuStreamGetDevice",
                    static_cast<void *>(cs));
    }
    *ordinal = device_ordinal(dev);
    if (*ordinal < 0)
        return fail(EVX_ERROR_INVALID_VALUE,
                    "%s: native stream %p belongs to driver device %d, which is not among the "
                    "%d devices the driver listed",
                    fn, static_cast<void *>(cs), static_cast<int>(dev), g_driver.device_count);
    return 0;
}

// EVX_DEVICE_CURRENT: the ordinal of the device of the calling thread's
// current context, as CUDA's runtime (and so CuPy and PyTorch) takes the
// device of a default stream. A default stream is of a primary context, as
// evx makes it current around calls on one, so for a default stream the
// current context must be its device's primary context; another one
// (cuCtxCreate's, a green context's) would mean another stream.
evx_status_t current_device(const char *fn, const void *native_stream, bool dflt, int *device) {
    CUcontext cur = nullptr;
    int ordinal = -1;
    const evx_status_t cst = current_context(fn, &cur, &ordinal);
    if (cst) return cst;
    if (!cur) {
        if (dflt)
            return fail(EVX_ERROR_INVALID_VALUE,
                        "%s: native stream %p is a default stream (NULL, EVX_STREAM_LEGACY or "
                        "EVX_STREAM_PER_THREAD), which names no device, and no context is "
                        "current on the calling thread to name it (EVX_DEVICE_CURRENT): pass the "
                        "device ordinal whose default stream is meant",
                        fn, native_stream);
        return fail(EVX_ERROR_INVALID_VALUE,
                    "%s: EVX_DEVICE_CURRENT was given, but no context is current on the calling "
                    "thread: pass the device ordinal or EVX_DEVICE_FROM_STREAM",
                    fn);
    }
    if (dflt) {
        CUcontext primary = nullptr;
        evx_status_t st = primary_context(fn, ordinal, &primary);
        if (st) return st;
        if (primary != cur)
            return fail(EVX_ERROR_INVALID_VALUE,
                        "%s: native stream %p is a default stream and EVX_DEVICE_CURRENT was "
                        "given, but the current context %p is not the primary context of its "
                        "device %d (evx's default streams are those of primary contexts): pass "
                        "the device ordinal to mean the primary context's default stream",
                        fn, native_stream, static_cast<void *>(cur), ordinal);
    }
    *device = ordinal;
    return 0;
}

// The flags and priority of a borrowed stream, read at wrap time. A default
// stream's flags are 0 (the driver's answer for each of them). A stream
// taking part in a capture keeps kFlagsUnknown: cuStreamGetFlags would
// invalidate its capture (native_capturing()); evx_stream_get_flags() reads
// them once the capture has ended. cuStreamGetPriority is allowed.
evx_status_t read_native_fields(const char *fn, Stream *s, bool capturing) {
    ContextGuard guard;
    evx_status_t st = stream_context(guard, fn, s);
    if (st) return st;
    unsigned flags = s->default_stream ? 0 : kFlagsUnknown;
    const char *call = "cuStreamGetFlags";
    CUresult res = CUDA_SUCCESS;
    if (!s->default_stream && !capturing) res = cu().cuStreamGetFlags(s->cu, &flags);
    if (res == CUDA_SUCCESS) {
        call = "cuStreamGetPriority";
        res = cu().cuStreamGetPriority(s->cu, &s->priority);
    }
    if (res != CUDA_SUCCESS)
        return driver_failed(res, fn, call, "native stream %p of device %d",
                             static_cast<void *>(s->cu), s->device);
    s->flags.store(flags, std::memory_order_relaxed);  // published with the handle
    return guard.leave(fn, "nothing was wrapped");
}

// The flags of a stream wrapped while it was captured (kFlagsUnknown), read
// now unless it is still captured: then STREAM_CAPTURE_UNSUPPORTED, and its
// capture is left as it was.
evx_status_t late_flags(const char *fn, evx_stream_t stream, const Stream &s, unsigned *flags) {
    bool capturing = false;
    evx_status_t st = native_capturing(fn, s.cu, &capturing);
    if (st) return st;
    if (capturing)
        return fail(EVX_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                    "%s: stream 0x%" PRIx64 " was wrapped while it was being captured into a "
                    "graph and is being captured still; the driver refuses cuStreamGetFlags on "
                    "a capturing stream and invalidates its capture, so evx reads the flags "
                    "once the capture has ended (the capture is left as it was)",
                    fn, handle_value(stream));
    const CUresult res = cu().cuStreamGetFlags(s.cu, flags);
    if (res != CUDA_SUCCESS)
        return driver_failed(res, fn, "cuStreamGetFlags", "stream 0x%" PRIx64,
                             handle_value(stream));
    s.flags.store(*flags, std::memory_order_relaxed);
    return 0;
}

// Publishes a stream object under a new handle; frees it on failure.
evx_status_t publish_stream(ThreadRecord *r, const char *fn, Stream *s, evx_stream_t *out) {
    s->wait_ctx = s->default_stream ? kNoContextTag : reinterpret_cast<uintptr_t>(s->ctx);
    s->record_ctx.store(s->wait_ctx, std::memory_order_relaxed);
    uint32_t index;
    evx_status_t st = slot_alloc(r, fn, &index);
    if (st) {
        stream_free(r, s);
        return st;
    }
    *out = publish_as<evx_stream_t>(index, kStream, s);
    return 0;
}

// Looks up a stream, runs `call` on its CUstream under the context guard a
// borrowed default stream needs, and passes NOT_READY through silently.
// waits: the call waits for (or finds complete) the work queued before it,
// so a success reports the failure of a host function among it.
template <bool waits = false, class Call>
evx_status_t on_stream(const char *fn, const char *call_name, evx_stream_t stream,
                       Call call) noexcept {
    HandleScope scope;
    Slot *slot = nullptr;
    evx_status_t st = scope.lookup(fn, stream, kStream, "stream", &slot);
    if (st) return st;
    const Stream *s = static_cast<const Stream *>(slot->obj);
    // The host functions launched before the call (hostfn.cpp).
    const uint64_t launched = waits ? s->hf_launched.load(std::memory_order_acquire) : 0;
    CUresult res;
    if (__builtin_expect(!s->default_stream, 1)) {
        res = call(s->cu);
    } else {
        ContextGuard guard;
        st = guard.enter(fn, s->device);
        if (st) return st;
        res = call(s->cu);
        // After a failed call its failure is reported (the destructor pops).
        if (res == CUDA_SUCCESS || res == CUDA_ERROR_NOT_READY) {
            st = guard.leave(fn, "the call on the stream was made");
            if (st) return st;
        }
    }
    if (waits && res == CUDA_SUCCESS)
        return host_failure_check(fn, s->hf_id.load(std::memory_order_acquire), launched, s->device);
    if (__builtin_expect(res == CUDA_SUCCESS || res == CUDA_ERROR_NOT_READY, 1)) return res;
    if (is_capture_status(res)) return capture_failed(fn, call_name, res, stream, s);
    return driver_failed(res, fn, call_name, "stream 0x%" PRIx64, handle_value(stream));
}

// Reads one field of a live stream.
template <class Read>
evx_status_t read_stream(const char *fn, evx_stream_t stream, Read read) {
    return with_live(fn, stream, kStream, "stream", [&read](Slot &slot) {
        read(*static_cast<const Stream *>(slot.obj));
        return EVX_SUCCESS;
    });
}

constexpr char kWaitFn[] = "evx_stream_wait_event";

// A wait's failures, apart: their messages need a large frame that the
// hot path does without, and they find the handles in the slots that the
// call holds (held_handle()), so that the hot path keeps only the slots
// across its driver call.
evx_status_t wait_other_device(const char *fn, const Slot *ss, const Slot *se)
    __attribute__((cold, noinline));
evx_status_t wait_other_device(const char *fn, const Slot *ss, const Slot *se) {
    return fail(EVX_ERROR_INVALID_HANDLE,
                "%s: stream 0x%" PRIx64 " belongs to device %d but event 0x%" PRIx64
                " to device %d",
                fn, held_handle(ss), stream_in(ss)->device, held_handle(se), se->event.device);
}

evx_status_t wait_failed(const char *fn, const Slot *ss, const Slot *se, unsigned flags,
                         CUresult res) __attribute__((cold, noinline));
evx_status_t wait_failed(const char *fn, const Slot *ss, const Slot *se, unsigned flags,
                         CUresult res) {
    const Stream *s = stream_in(ss);
    const Event *e = &se->event;
    char sctx[128], ectx[128];
    context_name(sctx, sizeof sctx, s->ctx, s->green, s->device);
    context_name(ectx, sizeof ectx, e->ctx.load(std::memory_order_acquire), nullptr, e->device);
    return driver_failed(res, fn, "cuStreamWaitEvent",
                         "stream 0x%" PRIx64 " of %s, event 0x%" PRIx64
                         " with its driver event of %s, flags 0x%x",
                         held_handle(ss), sctx, held_handle(se), ectx, flags);
}

evx_status_t wait_failed_held(const ThreadRecord *r, unsigned flags, CUresult res)
    __attribute__((cold, noinline));
evx_status_t wait_failed_held(const ThreadRecord *r, unsigned flags, CUresult res) {
    return wait_failed(kWaitFn, held_slot(r, 0), held_slot(r, 1), flags, res);
}

// The driver's wait, and its failure's message (the slots read back from
// the hazards, so that only the thread's record outlives the call).
inline evx_status_t wait_queued(const ThreadRecord *r, const Slot *ss, const Slot *se,
                                unsigned flags) {
    const CUstream sc = stream_in(ss)->cu;
    const CUresult res =
        cu().cuStreamWaitEvent(sc, se->event.cu.load(std::memory_order_acquire), flags);
    if (__builtin_expect(res == CUDA_SUCCESS, 1)) return driver_success(res);
    return wait_failed_held(r, flags, res);
}

// The rare waits: on a stream of another device, of an event whose driver
// state is a former life's, or on a borrowed default stream (under the
// guard that makes its device's primary context current).
evx_status_t wait_rare(const ThreadRecord *r, const char *fn, const Slot *ss, Slot *se,
                       unsigned flags) __attribute__((noinline));
evx_status_t wait_rare(const ThreadRecord *r, const char *fn, const Slot *ss, Slot *se,
                       unsigned flags) {
    const Stream *s = stream_in(ss);
    if (se->event.device != s->device) return wait_other_device(fn, ss, se);
    // A never-recorded event whose driver event still holds a former life's
    // record gets a new one first, so the driver waits for nothing, as it
    // does for a new event (and treats it as new under stream capture too).
    evx_status_t st = event_own_state(fn, &se->event);
    if (st) return st;
    if (!s->default_stream) return wait_queued(r, ss, se, flags);
    ContextGuard guard;
    st = guard.enter(fn, s->device);
    if (st) return st;
    st = wait_queued(r, ss, se, flags);
    if (st) return st;
    return guard.leave(fn, "the wait was queued");
}

template <unsigned kFlags>
evx_status_t wait_attach(evx_stream_t stream, evx_event_t event) noexcept
    __attribute__((noinline));

// The body of evx_stream_wait_event(), one per value of flags; noexcept as
// record() in event.cpp. A thread's first call attaches it on a path of
// its own (wait_attach()), and every rare case is a call that needs the
// slots only: so no argument outlives a call.
// kHot: the public call, which takes the thread's record only where its
// hazards are light (light_record(): one test for both rare cases); the
// attach path runs the body again with t_record.
template <unsigned kFlags, bool kHot = true>
__attribute__((always_inline)) inline evx_status_t wait_event(evx_stream_t stream,
                                                              evx_event_t event) noexcept {
    ThreadRecord *r = kHot ? light_record() : t_record;
    if (__builtin_expect(r == nullptr, 0)) return wait_attach<kFlags>(stream, event);
    HandleScope scope(r);
    Slot *ss = nullptr, *se = nullptr;
    const evx_status_t st =
        scope.lookup2(kWaitFn, stream, kStream, "stream", &ss, event, kEvent, "event", &se);
    if (st) return scope.finish(st);
    if (!ss || !se) __builtin_unreachable();  // lookup2 sets both on success
    // One test: an event of the stream's context whose driver state is its
    // own, and no default stream (Event::hot, Stream::wait_ctx). Anything
    // else, another context of the device included, takes the rare path.
    if (__builtin_expect((se->event.hot.load(std::memory_order_acquire) & ~kHotRecordRare) !=
                             stream_in(ss)->wait_ctx,
                         0))
        return scope.finish(wait_rare(r, kWaitFn, ss, se, kFlags));
    return scope.finish(wait_queued(r, ss, se, kFlags));
}

template <unsigned kFlags>
evx_status_t wait_attach(evx_stream_t stream, evx_event_t event) noexcept {
    if (!self()) return no_thread_record();
    return wait_event<kFlags, false>(stream, event);
}

// A wait with flags: its own function, so that the plain wait keeps no
// argument across the check of the flags.
evx_status_t wait_flagged(evx_stream_t stream, evx_event_t event, unsigned flags) noexcept
    __attribute__((noinline));
evx_status_t wait_flagged(evx_stream_t stream, evx_event_t event, unsigned flags) noexcept {
    const evx_status_t st = check_known_flags(kWaitFn, "wait", flags, EVX_EVENT_WAIT_EXTERNAL,
                                              "EVX_EVENT_WAIT_EXTERNAL 0x1");
    return st ? st : wait_event<EVX_EVENT_WAIT_EXTERNAL>(stream, event);
}

}  // namespace

}  // namespace evx

using namespace evx;

extern "C" {

EVX_API evx_status_t evx_device_create_stream(int device, unsigned flags, int priority,
                                              evx_stream_t *stream) {
    static const char fn[] = "evx_device_create_stream";
    if (!stream) return fail(EVX_ERROR_INVALID_VALUE, "%s: stream (the out-pointer) is NULL", fn);
    *stream = nullptr;
    evx_status_t st = check_known_flags(fn, "stream", flags, EVX_STREAM_NON_BLOCKING,
                                        "EVX_STREAM_NON_BLOCKING 0x1");
    if (st) return st;
    ThreadRecord *r;
    st = enter_device(fn, device, &r);
    if (st) return st;
    int least, greatest;
    st = priority_range(fn, device, &least, &greatest);
    if (st) return st;
    if (priority < greatest || priority > least)
        return fail(EVX_ERROR_INVALID_VALUE,
                    "%s: priority %d is outside device %d's range [%d (greatest), %d (least)]",
                    fn, priority, device, greatest, least);
    Stream *s = new (std::nothrow) Stream;
    if (!s) return fail(EVX_ERROR_OUT_OF_MEMORY, "%s: out of memory", fn);
    {
        ContextGuard guard;
        st = guard.enter(fn, device);
        if (st) {
            delete s;
            return st;
        }
        const CUresult res = cu().cuStreamCreateWithPriority(&s->cu, flags, priority);
        if (res != CUDA_SUCCESS) {
            delete s;
            return driver_failed(res, fn, "cuStreamCreateWithPriority",
                                 "device %d, flags 0x%x, priority %d", device, flags, priority);
        }
        st = guard.leave(fn, "the driver stream it made is destroyed again");
        if (st) {
            cu().cuStreamDestroy(s->cu);  // the primary context is still current
            delete s;
            return st;
        }
    }
    s->device = device;
    s->ctx = known_primary(device);  // retained by the guard above
    s->owned = true;
    s->flags = flags;
    s->priority = priority;
    return publish_stream(r, fn, s, stream);
}

}  // extern "C"

// evx_stream_wrap_external() and its variant with a release callback
// (lifetime.cpp). The callback is only stored here: end_borrow() calls it,
// so a failing wrap never does.
evx_status_t evx::wrap_stream(const char *fn, int device, void *native_stream,
                              void (*release)(void *), void *release_user,
                              evx_stream_t *stream) {
    if (!stream) return fail(EVX_ERROR_INVALID_VALUE, "%s: stream (the out-pointer) is NULL", fn);
    *stream = nullptr;
    const bool dflt = is_default_stream(native_stream);
    if (dflt && device == EVX_DEVICE_FROM_STREAM)
        return fail(EVX_ERROR_INVALID_VALUE,
                    "%s: native stream %p is a default stream (NULL, EVX_STREAM_LEGACY or "
                    "EVX_STREAM_PER_THREAD): pass the device ordinal whose default stream is "
                    "meant, not EVX_DEVICE_FROM_STREAM",
                    fn, native_stream);
    // enter_device(), but EVX_DEVICE_FROM_STREAM lets the stream name it,
    // and EVX_DEVICE_CURRENT the calling thread's current context.
    ThreadRecord *r;
    evx_status_t st = ensure_driver(fn);
    if (!st && device == EVX_DEVICE_CURRENT)
        st = current_device(fn, native_stream, dflt, &device);
    if (!st && device != EVX_DEVICE_FROM_STREAM) st = check_device(fn, device);
    if (!st) st = enter_thread(&r);
    if (st) return st;
    CUstream cs = static_cast<CUstream>(native_stream);
    bool capturing = false;
    if (!dflt) {
        int actual = -1;
        st = native_capturing(fn, cs, &capturing);
        if (!st) st = native_stream_device(fn, cs, capturing, &actual);
        if (st) return st;
        if (device == EVX_DEVICE_FROM_STREAM) {
            device = actual;
        } else if (device != actual) {
            return fail(EVX_ERROR_INVALID_VALUE,
                        "%s: native stream %p belongs to device %d, not to device %d as given",
                        fn, native_stream, actual, device);
        }
    }
    // The stream's context: a default stream names the device's primary
    // context's (evx makes that current around calls on it).
    CUcontext ctx = nullptr;
    CUgreenCtx green = nullptr;
    st = dflt ? primary_context(fn, device, &ctx)
              : native_stream_context(fn, cs, device, &ctx, &green);
    if (st) return st;
    Stream *s = new (std::nothrow) Stream;
    if (!s) return fail(EVX_ERROR_OUT_OF_MEMORY, "%s: out of memory", fn);
    s->cu = cs;
    s->ctx = ctx;
    s->green = green;
    s->device = device;
    s->owned = false;
    s->default_stream = dflt;
    s->release = release;
    s->release_user = release_user;
    st = read_native_fields(fn, s, capturing);
    if (st) {
        delete s;
        return st;
    }
    return publish_stream(r, fn, s, stream);
}

extern "C" {

EVX_API evx_status_t evx_stream_wrap_external(int device, void *native_stream,
                                              evx_stream_t *stream) {
    return wrap_stream("evx_stream_wrap_external", device, native_stream, nullptr, nullptr,
                       stream);
}

EVX_API evx_status_t evx_stream_destroy(evx_stream_t stream) {
    static const char fn[] = "evx_stream_destroy";
    ThreadRecord *r;
    evx_status_t st = enter_thread(&r);
    if (st) return st;
    Slot *s = nullptr;
    st = unpublish(stream, kStream, fn, "stream", &s);
    if (st) return st;
    // Ours now: racing calls only read it under their hazards.
    const Stream *obj = static_cast<const Stream *>(s->obj);
    if (obj->release) return end_borrow(r, stream, obj);
    const int device = obj->device;
    const Freed freed = retire_freed(r, stream);  // stream_free's status
    if (freed.pop_failed)
        return driver_failed(freed.res, fn, "cuCtxPopCurrent",
                             "stream 0x%" PRIx64 " is destroyed; device %d's primary context, "
                             "which evx made current for it, stays current on this thread",
                             handle_value(stream), device);
    if (freed.res)
        return driver_failed(freed.res, fn, "cuStreamDestroy",
                             "stream 0x%" PRIx64 "; the handle is dead all the same",
                             handle_value(stream));
    return EVX_SUCCESS;
}

EVX_API evx_status_t evx_stream_wait_event(evx_stream_t stream, evx_event_t event,
                                           unsigned flags) {
    if (__builtin_expect(flags == 0, 1)) return wait_event<0>(stream, event);
    return wait_flagged(stream, event, flags);
}

EVX_API evx_status_t evx_stream_query(evx_stream_t stream) {
    return on_stream<true>("evx_stream_query", "cuStreamQuery", stream,
                     [](CUstream cs) { return cu().cuStreamQuery(cs); });
}

EVX_API evx_status_t evx_stream_synchronize(evx_stream_t stream) {
    return on_stream<true>("evx_stream_synchronize", "cuStreamSynchronize", stream,
                     [](CUstream cs) { return cu().cuStreamSynchronize(cs); });
}

EVX_API evx_status_t evx_stream_launch_host_func(evx_stream_t stream, evx_host_fn_t fn,
                                                 void *user_data) {
    if (!fn)
        return fail(EVX_ERROR_INVALID_VALUE, "evx_stream_launch_host_func: fn is NULL");
    return on_stream("evx_stream_launch_host_func", "cuLaunchHostFunc", stream,
                     [fn, user_data](CUstream cs) {
                         return cu().cuLaunchHostFunc(cs, fn, user_data);
                     });
}

EVX_API evx_status_t evx_stream_get_priority(evx_stream_t stream, int *priority) {
    static const char fn[] = "evx_stream_get_priority";
    if (!priority)
        return fail(EVX_ERROR_INVALID_VALUE, "%s: priority (the out-pointer) is NULL", fn);
    return read_stream(fn, stream, [priority](const Stream &s) { *priority = s.priority; });
}

EVX_API evx_status_t evx_stream_get_flags(evx_stream_t stream, unsigned *flags) {
    static const char fn[] = "evx_stream_get_flags";
    if (!flags) return fail(EVX_ERROR_INVALID_VALUE, "%s: flags (the out-pointer) is NULL", fn);
    return with_live(fn, stream, kStream, "stream", [stream, flags](Slot &slot) -> evx_status_t {
        const Stream &s = *static_cast<const Stream *>(slot.obj);
        unsigned f = s.flags.load(std::memory_order_relaxed);
        if (__builtin_expect(f == kFlagsUnknown, 0)) {
            const evx_status_t st = late_flags(fn, stream, s, &f);
            if (st) return st;
        }
        *flags = f;
        return EVX_SUCCESS;
    });
}

EVX_API evx_status_t evx_stream_get_device(evx_stream_t stream, int *device) {
    static const char fn[] = "evx_stream_get_device";
    if (!device)
        return fail(EVX_ERROR_INVALID_VALUE, "%s: device (the out-pointer) is NULL", fn);
    return read_stream(fn, stream, [device](const Stream &s) { *device = s.device; });
}

EVX_API evx_status_t evx_stream_get_native(evx_stream_t stream, void **cu_stream) {
    static const char fn[] = "evx_stream_get_native";
    if (!cu_stream)
        return fail(EVX_ERROR_INVALID_VALUE, "%s: cu_stream (the out-pointer) is NULL", fn);
    return read_stream(fn, stream, [cu_stream](const Stream &s) { *cu_stream = s.cu; });
}

EVX_API evx_status_t evx_stream_is_owned(evx_stream_t stream, int *owned) {
    static const char fn[] = "evx_stream_is_owned";
    if (!owned) return fail(EVX_ERROR_INVALID_VALUE, "%s: owned (the out-pointer) is NULL", fn);
    return read_stream(fn, stream, [owned](const Stream &s) { *owned = s.owned ? 1 : 0; });
}

}  // extern "C"
