// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// The public event calls. The hot ones (record, query, synchronize, elapsed
// time) validate their handles under hazard slots, call the driver through
// its entry-point table, and allocate, lock and format nothing on success.
#include <sched.h>

#include <cinttypes>

#include "cache.hpp"
#include "capture.hpp"
#include "contexts.hpp"
#include "driver.hpp"
#include "error.hpp"
#include "event.hpp"
#include "event_state.hpp"
#include "event_wrap.hpp"
#include "evx/event.h"
#include "evx/status.h"
#include "evx/stream.h"
#include "handle.hpp"
#include "hostfn.hpp"
#include "pool.hpp"
#include "reclaim.hpp"
#include "scope.hpp"
#include "stream_object.hpp"

static_assert(sizeof(void *) == 8, "evx handles need 64-bit pointers");

namespace evx {

namespace {

// The message for an event and a stream of two devices.
evx_status_t other_device(const char *fn, const void *event, int event_device,
                          const void *stream, int stream_device)
    __attribute__((cold, noinline));
evx_status_t other_device(const char *fn, const void *event, int event_device,
                          const void *stream, int stream_device) {
    return fail(EVX_ERROR_INVALID_HANDLE,
                "%s: event 0x%" PRIx64 " belongs to device %d but stream 0x%" PRIx64
                " to device %d",
                fn, handle_value(event), event_device, handle_value(stream),
                stream_device);
}

// An event from the cache may carry its driver event's record from a former
// life (cache.hpp): the driver still answers with that record's completion
// and timestamp. evx answers for it itself until it is recorded again (query
// and synchronize: complete; elapsed time: never recorded), and the first
// record overwrites the driver's state, which the driver allows ("will
// overwrite the previously captured state"). Only calls that give the driver
// event to other code before that record must not see the former state:
// they renew it (event_own_state()).
//
// claim_former() makes such a first use exclusive: it returns true with the
// event claimed (kClaimed) if it was kFormer, false once it is kOwn, waiting
// meanwhile for another thread's claim (one driver record or create) to end.
// The claimant stores kOwn (or kFormer again, on failure) with release order,
// so that a caller who then reads kOwn sees the driver event it left.
bool claim_former(Event *e) {
    uint8_t prev;
    return claim_event(e, false, &prev);
}

// Counts a successful record on s, and notes the failures of host
// functions launched there that the event's synchronize covers (hostfn.hpp).
// A pooled event's record, or the first of a plain one. Whether it changed
// `recorded`.
bool mark_recorded_rare(Event *e) {
    // Counted for pooled events only (their release reads it): a locked
    // add that a plain event's record does not need.
    if (e->pool != nullptr) e->records.fetch_add(1, std::memory_order_relaxed);
    if (e->recorded.load(std::memory_order_relaxed)) return false;
    e->recorded.store(e->pool ? kRecordedPooled : kRecorded, std::memory_order_release);
    return true;
}

// A successful record on the rare path: counted and noted as above, and
// Event::hot made to follow what changed (claimed: the record ended a
// claim of the event's driver state, which changed `former`).
void mark_recorded(Event *e, const Stream *s, bool claimed) {
    bool changed = claimed;
    if (e->recorded.load(std::memory_order_relaxed) != kRecorded) changed |= mark_recorded_rare(e);
    changed |= (s->hf_id.load(std::memory_order_acquire) |
                e->hf_id.load(std::memory_order_relaxed)) != 0;
    host_note_record(e, s);
    if (changed) event_refresh_hot(e);
}

// The driver record of an event on a stream of its context (a claim first
// if its driver state is a former life's; *claimed tells).
CUresult record_here(Event *e, const Stream *s, bool with_flags, unsigned flags, bool *claimed) {
    *claimed = __builtin_expect(e->former.load(std::memory_order_acquire) != kOwn, 0) &&
               claim_former(e);
    const CUevent ev = e->cu.load(std::memory_order_acquire);
    const CUresult res = with_flags ? cu().cuEventRecordWithFlags(ev, s->cu, flags)
                                    : cu().cuEventRecord(ev, s->cu);
    if (*claimed) {
        e->former.store(res == CUDA_SUCCESS ? kOwn : kFormer, std::memory_order_release);
        if (res != CUDA_SUCCESS) event_refresh_hot(e);  // else mark_recorded()
    }
    return res;
}

// The handles of a call's slots, for its messages (held_handle()).
inline evx_event_t event_handle(const Slot *se) { return held_handle_as<evx_event_t>(se); }
inline evx_stream_t stream_handle(const Slot *ss) { return held_handle_as<evx_stream_t>(ss); }

evx_status_t record_failed(const char *fn, Slot *se, const Slot *ss, bool with_flags,
                           unsigned flags, CUresult res) __attribute__((cold, noinline));

// A record on a borrowed default stream: under the guard that makes its
// device's primary context current. A failing pop after a successful record
// is reported; the record stands (it is counted).
evx_status_t record_default_stream(const char *fn, Slot *se, const Slot *ss, bool with_flags,
                                   unsigned flags) __attribute__((noinline));
evx_status_t record_default_stream(const char *fn, Slot *se, const Slot *ss, bool with_flags,
                                   unsigned flags) {
    Event *e = &se->event;
    const Stream *s = stream_in(ss);
    ContextGuard guard;
    evx_status_t st = guard.enter(fn, s->device);
    if (st) return st;
    bool claimed;
    const CUresult res = record_here(e, s, with_flags, flags, &claimed);
    st = guard.leave(fn, "the event was recorded");
    if (res != CUDA_SUCCESS) return record_failed(fn, se, ss, with_flags, flags, res);
    mark_recorded(e, s, claimed);
    return st;
}

// A record on a stream of the event's context, not a default stream, that
// its hot test sent to the rare path: the first of the event's life, one
// whose driver state may be a former life's, of a pooled event, or one
// with host functions to note.
evx_status_t record_noting(const char *fn, Slot *se, const Slot *ss, bool with_flags,
                           unsigned flags) __attribute__((noinline));
evx_status_t record_noting(const char *fn, Slot *se, const Slot *ss, bool with_flags,
                           unsigned flags) {
    bool claimed;
    const CUresult res = record_here(&se->event, stream_in(ss), with_flags, flags, &claimed);
    if (res != CUDA_SUCCESS) return record_failed(fn, se, ss, with_flags, flags, res);
    mark_recorded(&se->event, stream_in(ss), claimed);
    return EVX_SUCCESS;
}

// The move of a record to a stream of another context (contexts.cpp).
evx_status_t record_moved(const char *fn, Slot *se, const Slot *ss, bool with_flags,
                          unsigned flags) __attribute__((noinline));
evx_status_t record_moved(const char *fn, Slot *se, const Slot *ss, bool with_flags,
                          unsigned flags) {
    Event *e = &se->event;
    const Stream *s = stream_in(ss);
    bool pop_failed = false;
    const evx_status_t st = record_other_context(fn, e, s, event_handle(se), stream_handle(ss),
                                                 with_flags, flags, &pop_failed);
    if (!st || pop_failed) mark_recorded(e, s, false);
    return st;
}

// The records that fail the hot test (Event::hot, Stream::record_ctx): on
// a stream of another device, of another context than the event's driver
// event, a default stream, or one that needs more than the driver's record.
evx_status_t record_rare(const char *fn, Slot *se, const Slot *ss, bool with_flags,
                         unsigned flags) __attribute__((noinline));
evx_status_t record_rare(const char *fn, Slot *se, const Slot *ss, bool with_flags,
                         unsigned flags) {
    const Event *e = &se->event;
    const Stream *s = stream_in(ss);
    if (e->device != s->device)
        return other_device(fn, event_handle(se), e->device, stream_handle(ss), s->device);
    // See contexts.cpp.
    if (e->ctx.load(std::memory_order_acquire) != s->ctx)
        return record_moved(fn, se, ss, with_flags, flags);
    if (s->default_stream) return record_default_stream(fn, se, ss, with_flags, flags);
    return record_noting(fn, se, ss, with_flags, flags);
}

// A failing record of the fast path, of the slots the call on r holds
// (held_slot(): the event first).
evx_status_t record_failed_held(const ThreadRecord *r, const char *fn, bool with_flags,
                                unsigned flags, CUresult res) __attribute__((cold, noinline));
evx_status_t record_failed_held(const ThreadRecord *r, const char *fn, bool with_flags,
                                unsigned flags, CUresult res) {
    return record_failed(fn, held_slot(r, 0), held_slot(r, 1), with_flags, flags, res);
}

template <bool kWithFlags>
evx_status_t record_attach(const char *fn, evx_event_t event, evx_stream_t stream,
                           unsigned flags) noexcept __attribute__((noinline));

// Which record a hot call's body takes: kHot (the public call) the thread's
// record only where its hazards are light (light_record(): one test for
// both rare cases), else (the body run again by the attach path, once the
// thread has a record) t_record.
template <bool kHot>
inline ThreadRecord *hot_record() {
    return kHot ? light_record() : t_record;
}

// noexcept: nothing in a hot call throws, and so the compiler needs no
// unwinding path for its HandleScope, which keeps the code what the
// hand-written bracket was (see scope.hpp). One body per kWithFlags: the
// plain record carries no flags. A thread's first call attaches it on a
// path of its own (record_attach()), and every rare case is a call that
// needs the slots only: so no argument outlives a call, and the common
// record keeps only the thread's record across its driver call. kHot: see
// hot_record().
template <bool kWithFlags, bool kHot = true>
__attribute__((always_inline)) inline evx_status_t record(const char *fn, evx_event_t event,
                                                          evx_stream_t stream,
                                                          unsigned flags) noexcept {
    ThreadRecord *r = hot_record<kHot>();
    if (__builtin_expect(r == nullptr, 0)) return record_attach<kWithFlags>(fn, event, stream, flags);
    HandleScope scope(r);
    Slot *se = nullptr, *ss = nullptr;
    const evx_status_t st = scope.lookup2(fn, event, kEvent, "event", &se, stream, kStream,
                                          "stream", &ss);
    if (st) return scope.finish(st);
    if (!se || !ss) __builtin_unreachable();  // lookup2 sets both on success
    // One test for the common case (Event::hot, Stream::record_ctx): the
    // same context (a context belongs to one device, so the same device),
    // no default stream, and nothing to do but the driver's record.
    const Stream *s = stream_in(ss);
    if (__builtin_expect(!word_is(se->event.hot, s->record_ctx.load(std::memory_order_relaxed)),
                         0))
        return scope.finish(record_rare(fn, se, ss, kWithFlags, flags));
    const CUevent ev = se->event.cu.load(std::memory_order_acquire);
    const CUresult res = kWithFlags ? cu().cuEventRecordWithFlags(ev, s->cu, flags)
                                    : cu().cuEventRecord(ev, s->cu);
    return scope.finish(__builtin_expect(res == CUDA_SUCCESS, 1)
                            ? driver_success(res)
                            : record_failed_held(r, fn, kWithFlags, flags, res));
}

template <bool kWithFlags>
evx_status_t record_attach(const char *fn, evx_event_t event, evx_stream_t stream,
                           unsigned flags) noexcept {
    if (!self()) return no_thread_record();
    return record<kWithFlags, false>(fn, event, stream, flags);
}

evx_status_t record_failed(const char *fn, Slot *se, const Slot *ss, bool with_flags,
                           unsigned flags, CUresult res) {
    // Another thread moved the event to another context between the check
    // and the record: record it as a move.
    if (se->event.ctx.load(std::memory_order_acquire) != stream_in(ss)->ctx)
        return record_moved(fn, se, ss, with_flags, flags);
    return driver_failed(res, fn, with_flags ? "cuEventRecordWithFlags" : "cuEventRecord",
                         "event 0x%" PRIx64 ", stream 0x%" PRIx64 ", flags 0x%x",
                         held_handle(se), held_handle(ss), flags);
}

}  // namespace

evx_status_t event_renew_state(const char *fn, Event *e) {
    if (!claim_former(e)) return 0;
    CUevent fresh;
    evx_status_t st = create_driver_event(fn, e->device, e->flags, &fresh);
    const bool renewed = st == 0;
    if (renewed) {
        const CUevent old = e->cu.load(std::memory_order_relaxed);
        e->cu.store(fresh, std::memory_order_release);
        if (e->pool) pool_count_created(e->pool);
        // Pending work is allowed. A refused destroy is reported; the event
        // has its new driver event all the same, and the old one stays the
        // driver's.
        const Freed res = destroy_driver_event(e->device, old);
        if (res.res)
            st = driver_failed(res.res, fn, res.pop_failed ? "cuCtxPopCurrent" : "cuEventDestroy",
                               "the former driver event of an event of device %d, replaced by "
                               "a new one%s",
                               e->device,
                               res.pop_failed ? ", was destroyed; the device's primary context, "
                                                 "which evx made current for it, stays current "
                                                 "on this thread"
                                               : "");
    }
    e->former.store(renewed ? kOwn : kFormer, std::memory_order_release);
    event_refresh_hot(e);
    return st;
}

namespace {

// event_free() of a borrowed, pooled or moved event.
Freed event_free_rare(ThreadRecord *r, Event *e) __attribute__((noinline));
Freed event_free_rare(ThreadRecord *r, Event *e) {
    if (e->borrowed) return {};  // its maker's driver event: nothing to give back
    const bool recorded = e->recorded.load(std::memory_order_acquire);
    const bool former = recorded || e->former.load(std::memory_order_relaxed) != kOwn;
    // An event that was recorded in other contexts: their driver events are
    // destroyed, the primary context's one kept (its work may be pending).
    const bool moved = e->away.load(std::memory_order_acquire) != nullptr;
    if (moved) event_come_home(e);
    const CUevent ev = e->cu.load(std::memory_order_relaxed);
    if (e->pool) {
        const bool maybe_pending =
            moved || (recorded && e->done.load(std::memory_order_relaxed) !=
                                      e->records.load(std::memory_order_relaxed));
        pool_take_back(e->pool, ev, maybe_pending, former);
    } else {
        cache_give(r, e->device, e->flags, ev, former);
    }
    return {};
}

// event_free() of a plain event that its thread's stack did not take.
Freed event_give_slow(ThreadRecord *r, const Event *e, bool former) __attribute__((noinline));
Freed event_give_slow(ThreadRecord *r, const Event *e, bool former) {
    cache_give_slow(r, e->device, e->flags, e->cu.load(std::memory_order_relaxed), former);
    return {};
}

// The free of almost every event (a batch scan's, once per destroy): its
// driver event to the thread's cache, with no frame of its own. A FreeHook
// (never a failing pop), so that a scan finds it in the first table it
// looks in (free_object() in reclaim.cpp).
Freed event_free(ThreadRecord *r, void *obj) {
    Event *e = static_cast<Event *>(obj);
    if (__builtin_expect(!e->plain || e->away.load(std::memory_order_acquire) != nullptr, 0))
        return event_free_rare(r, e);
    const bool former = e->recorded.load(std::memory_order_acquire) ||
                        e->former.load(std::memory_order_relaxed) != kOwn;
    if (__builtin_expect(cache_give_kept(r, e->device, e->flags,
                                         e->cu.load(std::memory_order_relaxed), former),
                         1))
        return {};
    return event_give_slow(r, e, former);
}

inline bool batchable(const Event *e) {
    return !(e->flags & EVX_EVENT_INTERPROCESS) &&
           e->away.load(std::memory_order_acquire) == nullptr;
}

// Plain events go to the thread's batch (retire()), pooled ones to their
// pool's (pool_batch(): it scans them when an acquire or the stats need
// them). Not interprocess events: their destroy closes the driver event
// now (ipc.h), unless a racing call holds it. Nor events recorded in other
// contexts: their driver events there are destroyed now, so that the
// caller may destroy those contexts next (contexts.cpp).
bool event_batch(ThreadRecord *r, void *obj, uint32_t index) {
    const Event *e = static_cast<const Event *>(obj);
    if (!batchable(e)) return false;
    return e->pool ? pool_batch(r, e->pool, index) : retire_batched(r, index);
}

const FreeHookEntry kEventFree(kEvent, event_free, event_batch);

}  // namespace

}  // namespace evx

using namespace evx;

namespace {

// Query and synchronize: a never-recorded event is complete, whatever its
// driver event did in a former life; otherwise `call` asks the driver, and a
// completion it reports is remembered (a pool reuses an event seen complete
// without asking the driver). NOT_READY passes through silently.
inline evx_status_t observed(const char *fn, const char *call_name, evx_event_t event, Event *e,
                             CUresult res) {
    if (res == CUDA_SUCCESS) return host_failure_of_event(fn, e);
    if (__builtin_expect(res == CUDA_ERROR_NOT_READY, 1)) return res;
    return driver_failed(res, fn, call_name, "event 0x%" PRIx64, handle_value(event));
}

// observe() of a recorded pooled event: a completion it sees is counted.
template <class Call>
[[gnu::noinline]] evx_status_t observe_pooled(const char *fn, const char *call_name,
                                              evx_event_t event, Event *e, Call call) {
    const uint32_t seen = e->records.load(std::memory_order_relaxed);
    const CUresult res = call(e->cu.load(std::memory_order_acquire));
    if (res == CUDA_SUCCESS) e->done.store(seen, std::memory_order_relaxed);  // under the hazard
    return observed(fn, call_name, event, e, res);
}

template <class Call>
evx_status_t observe_attach(const char *fn, const char *call_name, evx_event_t event,
                            Call call) noexcept __attribute__((noinline));

// kHot: see hot_record(); a thread without a record, or without light
// hazards, through observe_attach().
template <class Call, bool kHot = true>
inline evx_status_t observe(const char *fn, const char *call_name, evx_event_t event,
                            Call call) noexcept {
    ThreadRecord *r = hot_record<kHot>();
    if (__builtin_expect(r == nullptr, 0)) return observe_attach(fn, call_name, event, call);
    HandleScope scope(r);
    Slot *s = nullptr;
    const evx_status_t st = scope.lookup(fn, event, kEvent, "event", &s);
    if (st) return st;
    Event *e = &s->event;
    const uint8_t recorded = e->recorded.load(std::memory_order_acquire);
    if (__builtin_expect(recorded != kRecorded, 0)) {
        if (!recorded) return EVX_SUCCESS;
        return observe_pooled(fn, call_name, event, e, call);
    }
    return observed(fn, call_name, event, e, call(e->cu.load(std::memory_order_acquire)));
}

template <class Call>
evx_status_t observe_attach(const char *fn, const char *call_name, evx_event_t event,
                            Call call) noexcept {
    if (!self()) return no_thread_record();
    return observe<Call, false>(fn, call_name, event, call);
}

constexpr char kElapsedFn[] = "evx_event_elapsed_time";

// Why two events cannot be timed: another device, no timing, never recorded.
// start_recorded: the state the call saw. The handles come from the slots
// the call holds (held_handle()), as in every failure of a hot call.
evx_status_t elapsed_refused(const Slot *s0, const Slot *s1, bool start_recorded)
    __attribute__((cold, noinline));
evx_status_t elapsed_refused(const Slot *s0, const Slot *s1, bool start_recorded) {
    const char *fn = kElapsedFn;
    const Event *a = &s0->event, *b = &s1->event;
    const uint64_t av = held_handle(s0), bv = held_handle(s1);
    if (a->device != b->device)
        return fail(EVX_ERROR_INVALID_HANDLE,
                    "%s: start event 0x%" PRIx64 " belongs to device %d but end event 0x%" PRIx64
                    " to device %d",
                    fn, av, a->device, bv, b->device);
    if (a->flags & EVX_EVENT_DISABLE_TIMING)
        return fail(EVX_ERROR_INVALID_HANDLE,
                    "%s: start event 0x%" PRIx64 " was created with EVX_EVENT_DISABLE_TIMING",
                    fn, av);
    if (b->flags & EVX_EVENT_DISABLE_TIMING)
        return fail(EVX_ERROR_INVALID_HANDLE,
                    "%s: end event 0x%" PRIx64 " was created with EVX_EVENT_DISABLE_TIMING", fn,
                    bv);
    if (!start_recorded)
        return fail(EVX_ERROR_INVALID_HANDLE,
                    "%s: start event 0x%" PRIx64 " was never recorded", fn, av);
    return fail(EVX_ERROR_INVALID_HANDLE, "%s: end event 0x%" PRIx64 " was never recorded", fn,
                bv);
}

// A failing cuEventElapsedTime, of the events the call on r holds
// (held_slot()). The common case does not test the events' flags: the
// driver refuses an event made with CU_EVENT_DISABLE_TIMING
// (CUDA_ERROR_INVALID_HANDLE, its documented answer), and this path, and
// NOT_READY's, tell that refusal first, in evx's words.
evx_status_t elapsed_failed(const ThreadRecord *r, CUresult res) __attribute__((cold, noinline));
evx_status_t elapsed_failed(const ThreadRecord *r, CUresult res) {
    const char *fn = kElapsedFn;
    const Slot *s0 = held_slot(r, 0), *s1 = held_slot(r, 1);
    const evx_event_t start = event_handle(s0), end = event_handle(s1);
    const Event *a = &s0->event, *b = &s1->event;
    if ((a->flags | b->flags) & EVX_EVENT_DISABLE_TIMING) return elapsed_refused(s0, s1, true);
    if (res == CUDA_ERROR_NOT_READY) return res;
    const CUcontext ac = a->ctx.load(std::memory_order_acquire);
    const CUcontext bc = b->ctx.load(std::memory_order_acquire);
    if (__builtin_expect(a->borrowed || b->borrowed, 0) && ac == bc)
        return borrowed_elapsed_failed(fn, res, start, a, end, b);
    if (ac != bc) {
        char actx[128], bctx[128];
        context_name(actx, sizeof actx, ac, nullptr, a->device);
        context_name(bctx, sizeof bctx, bc, nullptr, b->device);
        return driver_failed(res, fn, "cuEventElapsedTime",
                             "start event 0x%" PRIx64 " was last recorded in %s, end event "
                             "0x%" PRIx64 " in %s: the driver times events of one context only",
                             handle_value(start), actx, handle_value(end), bctx);
    }
    return driver_failed(res, fn, "cuEventElapsedTime",
                         "start event 0x%" PRIx64 ", end event 0x%" PRIx64,
                         handle_value(start), handle_value(end));
}

// elapsed_time() of two events that may be timed but failed its hot test:
// pooled (a completion it sees is counted), recorded in two contexts of a
// device, or with host functions to report, or both recorded meanwhile.
evx_status_t elapsed_pooled(const ThreadRecord *r, float *ms, Event *a, Event *b) {
    float out = 0.0f;
    const uint32_t seen_a = a->records.load(std::memory_order_relaxed);
    const uint32_t seen_b = b->records.load(std::memory_order_relaxed);
    const CUresult res = cu().cuEventElapsedTime(&out, a->cu.load(std::memory_order_acquire),
                                                 b->cu.load(std::memory_order_acquire));
    if (res == CUDA_SUCCESS) {  // both complete; marked under the hazards
        if (a->pool) a->done.store(seen_a, std::memory_order_relaxed);
        if (b->pool) b->done.store(seen_b, std::memory_order_relaxed);
        *ms = out;
        return EVX_SUCCESS;
    }
    return elapsed_failed(r, res);
}

// The elapsed times that are refused, or of pooled events.
evx_status_t elapsed_rare(const ThreadRecord *r, float *ms, Slot *s0, Slot *s1)
    __attribute__((noinline));
evx_status_t elapsed_rare(const ThreadRecord *r, float *ms, Slot *s0, Slot *s1) {
    Event *a = &s0->event, *b = &s1->event;
    const uint8_t ar = a->recorded.load(std::memory_order_acquire);
    const uint8_t br = b->recorded.load(std::memory_order_acquire);
    if (a->device != b->device || !ar || !br || ((a->flags | b->flags) & EVX_EVENT_DISABLE_TIMING))
        return elapsed_refused(s0, s1, ar != 0);
    return elapsed_pooled(r, ms, a, b);
}

// The end of the common elapsed time: the result to the out-pointer the
// call kept in r (elapsed_time()), or the failure.
inline evx_status_t elapsed_result(ThreadRecord *r, CUresult res) {
    if (__builtin_expect(res == CUDA_SUCCESS, 1)) {
        *reinterpret_cast<float *>(r->keep) = r->keep_ms;
        return driver_success(res);
    }
    return elapsed_failed(r, res);
}

evx_status_t elapsed_attach(float *ms, evx_event_t start, evx_event_t end) noexcept
    __attribute__((noinline));

// The body of evx_event_elapsed_time(); noexcept: nothing in it throws, and
// so the compiler needs no unwinding path for the scope (see scope.hpp).
// kHot: the public call, which takes the thread's record from t_light (a
// thread not attached yet, or without light hazards, goes through
// elapsed_attach(), which runs the body with t_record). The rare cases
// need the slots only, and the result and ms wait in the thread's record
// (ThreadRecord::keep_ms, keep) across the driver call, so that only the
// record outlives it, and the call needs no frame.
template <bool kHot>
__attribute__((always_inline)) inline evx_status_t elapsed_time(float *ms, evx_event_t start,
                                                                evx_event_t end) noexcept {
    const char *fn = kElapsedFn;
    if (!ms) return fail(EVX_ERROR_INVALID_VALUE, "%s: ms (the out-pointer) is NULL", fn);
    ThreadRecord *r = kHot ? light_record() : t_record;
    if (__builtin_expect(r == nullptr, 0)) return elapsed_attach(ms, start, end);
    HandleScope scope(r);
    Slot *s0 = nullptr, *s1 = nullptr;
    const evx_status_t st = scope.lookup2(fn, start, kEvent, "start event", &s0, end, kEvent,
                                          "end event", &s1);
    if (st) return scope.finish(st);
    if (!s0 || !s1) __builtin_unreachable(); // lookup2 sets both on success
    const Event *a = &s0->event, *b = &s1->event;
    // The common case in two tests (Event::hot): both recorded in this
    // life, not pooled, in the same context (so of one device). Timing
    // disabled on either is the driver's refusal (elapsed_failed()).
    // The rest (other contexts of one device among them) asks elapsed_rare().
    const uintptr_t ha = a->hot.load(std::memory_order_acquire);
    if (__builtin_expect(!word_is(b->hot, ha), 0) || __builtin_expect(ha & kHotRecordRare, 0))
        return scope.finish(elapsed_rare(r, ms, s0, s1));
    r->keep = reinterpret_cast<uintptr_t>(ms);
    const CUresult res = cu().cuEventElapsedTime(&r->keep_ms,
                                                 a->cu.load(std::memory_order_acquire),
                                                 b->cu.load(std::memory_order_acquire));
    return scope.finish(elapsed_result(r, res));
}

evx_status_t destroy_attach(evx_event_t event) __attribute__((noinline));

// The body of evx_event_destroy().
__attribute__((always_inline)) inline evx_status_t destroy_event(evx_event_t event) {
    static const char fn[] = "evx_event_destroy";
    ThreadRecord *r = t_record;
    if (__builtin_expect(r == nullptr, 0)) return destroy_attach(event);
    Slot *s = nullptr;
    const evx_status_t st = unpublish(event, kEvent, fn, "event", &s);
    if (st) return st;
    // The common case, with no call: a plain own event to the thread's
    // batch (event_batch()). The rest, and a batch that is due for its scan
    // or held by a thief, through retire_event() (event_wrap.cpp), which
    // ends a borrow too.
    const Event *e = &s->event;
    if (__builtin_expect(e->plain && e->away.load(std::memory_order_acquire) == nullptr, 1) &&
        __builtin_expect(retire_batched_kept(r, handle_index(handle_value(event))), 1))
        return EVX_SUCCESS;
    return retire_event(r, event, *e);
}

evx_status_t destroy_attach(evx_event_t event) {
    if (!attach_thread()) return no_thread_record();
    return destroy_event(event);
}

constexpr char kCreateFn[] = "evx_device_create_event";

// The flags of the events a thread's stacks keep (not interprocess).
constexpr unsigned kCachedEventFlags = EVX_EVENT_BLOCKING_SYNC | EVX_EVENT_DISABLE_TIMING;

// A create with its arguments checked, on a thread with a record: a slot
// and a driver event (kept, or from the driver), as the common case of
// evx_device_create_event() found none at hand.
evx_status_t create_in(ThreadRecord *r, int device, unsigned flags, evx_event_t *event)
    __attribute__((noinline));
evx_status_t create_in(ThreadRecord *r, int device, unsigned flags, evx_event_t *event) {
    const char *fn = kCreateFn;
    *event = nullptr;
    uint32_t index;
    evx_status_t st = slot_alloc(r, fn, &index);
    if (st) return st;
    CUevent ev;
    bool former;
    st = cache_take_slow(r, fn, device, flags, &ev, &former);
    if (st) {
        slot_free(r, index);
        return st;
    }
    *event = publish_event(index, device, flags, ev, nullptr, former);
    return EVX_SUCCESS;
}

// evx_device_create_event() but its common case.
evx_status_t create_event(int device, unsigned flags, evx_event_t *event)
    __attribute__((noinline));
evx_status_t create_event(int device, unsigned flags, evx_event_t *event) {
    const char *fn = kCreateFn;
    if (!event) return fail(EVX_ERROR_INVALID_VALUE, "%s: event (the out-pointer) is NULL", fn);
    *event = nullptr;
    evx_status_t st = check_event_flags(fn, flags);
    if (st) return st;
    ThreadRecord *r;
    st = enter_device(fn, device, &r);
    return st ? st : create_in(r, device, flags, event);
}

evx_status_t elapsed_attach(float *ms, evx_event_t start, evx_event_t end) noexcept {
    if (!self()) return no_thread_record();
    return elapsed_time<false>(ms, start, end);
}

}  // namespace

extern "C" {

EVX_API evx_status_t evx_device_create_event(int device, unsigned flags,
                                             evx_event_t *event) {
    // The common create, with no call and so no frame: plain flags, a
    // loaded driver, a device in range, a thread with a record, a slot of
    // its ring and a kept driver event of its stack. Anything else takes
    // create_event(), which checks and words all of it.
    ThreadRecord *r = t_record;
    CachedEvent c;
    if (__builtin_expect(event != nullptr && (flags & ~kCachedEventFlags) == 0 && r != nullptr,
                         1) &&
        __builtin_expect(g_driver_ready.load(std::memory_order_acquire), 1) &&
        __builtin_expect(static_cast<unsigned>(device) <
                             static_cast<unsigned>(g_driver.device_count),
        1)) {
        if (__builtin_expect(slot_ring_ready(r), 1) &&
            __builtin_expect(cache_take_kept(r, device, flags, &c), 1)) {
            *event = publish_event(slot_from_ring(r), device, flags, c.ev, nullptr, c.former);
            return EVX_SUCCESS;
        }
        return create_in(r, device, flags, event);
    }
    return create_event(device, flags, event);
}

EVX_API evx_status_t evx_event_destroy(evx_event_t event) { return destroy_event(event); }

EVX_API evx_status_t evx_event_record(evx_event_t event, evx_stream_t stream) {
    return record<false>("evx_event_record", event, stream, 0);
}

EVX_API evx_status_t evx_event_record_with_flags(evx_event_t event, evx_stream_t stream,
                                                 unsigned flags) {
    static const char fn[] = "evx_event_record_with_flags";
    const evx_status_t st = check_known_flags(fn, "record", flags, EVX_EVENT_RECORD_EXTERNAL,
                                              "EVX_EVENT_RECORD_EXTERNAL 0x1");
    return st ? st : record<true>(fn, event, stream, flags);
}

EVX_API evx_status_t evx_event_query(evx_event_t event) {
    return observe("evx_event_query", "cuEventQuery", event,
                   [](CUevent ev) { return cu().cuEventQuery(ev); });
}

EVX_API evx_status_t evx_event_synchronize(evx_event_t event) {
    // cuEventSynchronize never answers NOT_READY: it waits.
    return observe("evx_event_synchronize", "cuEventSynchronize", event,
                   [](CUevent ev) { return cu().cuEventSynchronize(ev); });
}

EVX_API evx_status_t evx_event_elapsed_time(float *ms, evx_event_t start, evx_event_t end) {
    return elapsed_time<true>(ms, start, end);
}

EVX_API evx_status_t evx_event_get_flags(evx_event_t event, unsigned *flags) {
    static const char fn[] = "evx_event_get_flags";
    if (!flags) return fail(EVX_ERROR_INVALID_VALUE, "%s: flags (the out-pointer) is NULL", fn);
    return with_live(fn, event, kEvent, "event", [event, flags](Slot &s) -> evx_status_t {
        if (s.event.borrowed)
            return borrowed_refused(fn, event,
                                    "the driver has no call that tells a CUevent's flags");
        *flags = s.event.flags;
        return EVX_SUCCESS;
    });
}

EVX_API evx_status_t evx_event_get_device(evx_event_t event, int *device) {
    static const char fn[] = "evx_event_get_device";
    if (!device) return fail(EVX_ERROR_INVALID_VALUE, "%s: device (the out-pointer) is NULL", fn);
    return with_live(fn, event, kEvent, "event", [device](Slot &s) {
        *device = s.event.device;
        return EVX_SUCCESS;
    });
}

EVX_API evx_status_t evx_event_get_native(evx_event_t event, void **cu_event) {
    static const char fn[] = "evx_event_get_native";
    if (!cu_event)
        return fail(EVX_ERROR_INVALID_VALUE, "%s: cu_event (the out-pointer) is NULL", fn);
    return with_live(fn, event, kEvent, "event", [cu_event](Slot &s) {
        const evx_status_t st = event_own_state(fn, &s.event);
        if (!st) *cu_event = s.event.cu.load(std::memory_order_acquire);
        return st;
    });
}

}  // extern "C"
