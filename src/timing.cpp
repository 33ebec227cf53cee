// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Timers (a start and a stop mark) and timelines (many marks read back in one
// call). Their driver events come from the reuse cache and go back to it.
// A timer's events are fixed at creation and its state is one atomic word,
// so its calls take no lock (its marks are ordered by the calls that make
// them, which the caller orders: timing.h). A timeline has its own mutex:
// its marks grow its list of events.
#include <pthread.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#include "cache.hpp"
#include "capture.hpp"
#include "contexts.hpp"
#include "driver.hpp"
#include "error.hpp"
#include "evx/event.h"
#include "evx/timing.h"
#include "handle.hpp"
#include "hostfn.hpp"
#include "nvtx.hpp"
#include "scope.hpp"
#include "sized.hpp"
#include "stream_object.hpp"
#include "timer.hpp"

namespace evx {

namespace {

// Timer::state: started (since the last start), and stopped after it.
enum : uint8_t { kNew = 0, kStarted = 1, kStopped = 3 };

// Timer::in_graph: the start or stop event was made for a mark on a
// captured stream (see Timeline::in_graph).
enum : uint8_t { kStartInGraph = 1, kStopInGraph = 2 };

struct Timer {
    int device = 0;
    // Both fixed from creation to free, unless a mark on a captured stream
    // replaces one by an event made for it (under graph_mu; the replaced
    // one waits in `retired` for the free: a read that loaded it may still
    // use it, and a graph may still record it).
    std::atomic<CUevent> start{nullptr};
    std::atomic<CUevent> stop{nullptr};
    std::atomic<uint8_t> state{kNew};
    std::atomic<uint8_t> in_graph{0};
    std::mutex graph_mu;
    std::vector<CUevent> retired;
    HostMark start_hf, stop_hf;  // the host-function failures each mark covers
};


// What a timeline keeps of each mark besides its driver event.
struct MarkInfo {
    uint64_t stream = 0;             // the handle's value
    uint32_t kind = EVX_MARK_POINT;  // evx_mark_kind
    char label[EVX_MARK_LABEL_SIZE] = {};
};

struct Timeline {
    std::mutex mu;
    int device = 0;
    uint32_t capacity = 0;
    std::vector<CUevent> events;  // kept across resets
    uint32_t count = 0;           // marks since creation or the last reset
    // Per event: made for a mark on a captured stream (a graph mark, which
    // each launch of the graph records). Such an event never goes back to
    // the cache, nor is it recorded again: a graph may still record it. The
    // events a mark replaced (a graph's, or one a read that waits without
    // the lock may still name) wait in `retired` for the timeline's free.
    std::vector<uint8_t> in_graph;
    std::vector<CUevent> retired;
    std::vector<MarkInfo> info;   // one per event: label, kind, stream
    HostMark last_hf;             // the failures the last mark covers
};

constexpr SizedType kMarkInfoType{"evx_timeline_mark_info_t", "info",
                                  offsetof(evx_timeline_mark_info_t, label) +
                                      EVX_MARK_LABEL_SIZE};
static_assert(kMarkInfoType.first_size == 88, "timing.h publishes 88 bytes of mark info");

// A timeline's marks are made under its mutex; a timer's need no lock.
struct NoLock {};
inline std::unique_lock<std::mutex> hold(Timeline &t) {
    return std::unique_lock<std::mutex>(t.mu);
}
inline NoLock hold(Timer &) { return {}; }

evx_status_t mark_failed(const char *fn, CUresult res, uint64_t owner, const char *owner_kind)
    __attribute__((cold, noinline));
evx_status_t mark_failed(const char *fn, CUresult res, uint64_t owner, const char *owner_kind) {
    return driver_failed(res, fn, "cuEventRecord", "%s 0x%" PRIx64, owner_kind, owner);
}

// A mark on a borrowed default stream, under the guard it needs. A failing
// pop fails the mark (its driver event is recorded again by the next one).
evx_status_t record_mark_default(const char *fn, CUevent ev, const Stream *s, uint64_t owner,
                                 const char *owner_kind) __attribute__((noinline));
evx_status_t record_mark_default(const char *fn, CUevent ev, const Stream *s, uint64_t owner,
                                 const char *owner_kind) {
    ContextGuard guard;
    evx_status_t st = guard.enter(fn, s->device);
    if (st) return st;
    const CUresult res = cu().cuEventRecord(ev, s->cu);
    if (res != CUDA_SUCCESS) return mark_failed(fn, res, owner, owner_kind);
    return guard.leave(fn, "the mark was recorded, but the call fails");
}

// Records a driver event on a stream (under the guard a default stream
// needs).
inline evx_status_t record_mark(const char *fn, CUevent ev, const Stream *s, uint64_t owner,
                                const char *owner_kind) {
    if (__builtin_expect(s->default_stream, 0))
        return record_mark_default(fn, ev, s, owner, owner_kind);
    const CUresult res = cu().cuEventRecord(ev, s->cu);
    if (__builtin_expect(res == CUDA_SUCCESS, 1)) return 0;
    return mark_failed(fn, res, owner, owner_kind);
}

// Looks up a timer or timeline and a stream of its device, and returns
// mark(object, stream, thread record) under both hazards (and a timeline's
// lock); INVALID_HANDLE naming both devices if they differ. noexcept: no
// unwinding path for the scope (scope.hpp).
template <class T, class Mark>
evx_status_t mark_on_stream(const char *fn, const void *h, uint32_t kind, evx_stream_t stream,
                            Mark mark) noexcept {
    HandleScope scope;
    Slot *so = nullptr, *ss = nullptr;
    const evx_status_t st =
        scope.lookup2(fn, h, kind, kind_name(kind), &so, stream, kStream, "stream", &ss);
    if (st) return st;
    T *obj = static_cast<T *>(so->obj);
    const Stream *s = static_cast<const Stream *>(ss->obj);
    if (__builtin_expect(obj->device != s->device, 0))
        return fail(EVX_ERROR_INVALID_HANDLE,
                    "%s: %s 0x%" PRIx64 " belongs to device %d but stream 0x%" PRIx64
                    " to device %d",
                    fn, kind_name(kind), handle_value(h), obj->device, handle_value(stream),
                    s->device);
    if (__builtin_expect(s->ctx != known_primary(s->device), 0)) {
        // A borrowed stream may be of the primary context before anything
        // of evx retained it (known_primary() is then null): retain it and
        // compare again. The marks' driver events are of that context.
        CUcontext primary = nullptr;
        if (!known_primary(s->device)) {
            const evx_status_t pst = primary_context(fn, s->device, &primary);
            if (pst) return pst;
        }
        if (s->ctx != known_primary(s->device))
            return other_context_refused(fn, kind_name(kind), h, stream, s);
    }
    [[maybe_unused]] const auto lock = hold(*obj);
    return mark(*obj, *s, scope.record());
}

// A mark of a timer on a stream being captured, or one whose event was a
// graph's: the event is replaced (under graph_mu) by one made for the mark
// (a graph's: recorded as an external record node), or by a cached one.
evx_status_t timer_graph_mark(const char *fn, Timer &t, std::atomic<CUevent> Timer::*which,
                              uint8_t bit, bool capturing, const Stream &s, evx_stream_t stream,
                              evx_timer_t timer, ThreadRecord *r) __attribute__((noinline));
evx_status_t timer_graph_mark(const char *fn, Timer &t, std::atomic<CUevent> Timer::*which,
                              uint8_t bit, bool capturing, const Stream &s, evx_stream_t stream,
                              evx_timer_t timer, ThreadRecord *r) {
    std::lock_guard<std::mutex> lock(t.graph_mu);
    try {
        t.retired.reserve(t.retired.size() + 1);
    } catch (const std::bad_alloc &) {
        return fail(EVX_ERROR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    CUevent ev;
    bool former = false;
    evx_status_t st = capturing ? create_driver_event(fn, t.device, EVX_EVENT_DEFAULT, &ev)
                                : cache_take(r, fn, t.device, EVX_EVENT_DEFAULT, &ev, &former);
    if (st) return st;
    t.retired.push_back((t.*which).exchange(ev, std::memory_order_acq_rel));
    const uint8_t bits = t.in_graph.load(std::memory_order_relaxed);
    t.in_graph.store(static_cast<uint8_t>(capturing ? bits | bit : bits & ~bit),
                     std::memory_order_release);
    return capturing ? record_graph_mark(fn, ev, &s, stream, handle_value(timer), "timer")
                     : record_mark(fn, ev, &s, handle_value(timer), "timer");
}

// Records a timer's start or stop mark; on a captured stream, a node of the
// graph (docs/graphs.md).
inline evx_status_t timer_mark(const char *fn, Timer &t, std::atomic<CUevent> Timer::*which,
                               uint8_t bit, const Stream &s, evx_stream_t stream, evx_timer_t timer,
                               ThreadRecord *r) {
    bool capturing = false;
    const evx_status_t st = mark_capturing(fn, &s, stream, &capturing);
    if (__builtin_expect(st != 0, 0)) return st;
    if (__builtin_expect(capturing || (t.in_graph.load(std::memory_order_acquire) & bit), 0))
        return timer_graph_mark(fn, t, which, bit, capturing, s, stream, timer, r);
    return record_mark(fn, (t.*which).load(std::memory_order_acquire), &s, handle_value(timer),
                       "timer");
}

// Both marks of a stopped timer that were made in a capture have been
// recorded by a launch.
evx_status_t timer_graph_check(const char *fn, const Timer *t, evx_timer_t timer) {
    const uint8_t bits = t->in_graph.load(std::memory_order_acquire);
    evx_status_t st = 0;
    if (bits & kStartInGraph)
        st = graph_mark_check(fn, t->start.load(std::memory_order_acquire), "the start mark",
                              "timer", handle_value(timer));
    if (!st && (bits & kStopInGraph))
        st = graph_mark_check(fn, t->stop.load(std::memory_order_acquire), "the stop mark",
                              "timer", handle_value(timer));
    return st;
}

evx_status_t timer_state_failed(const char *fn, uint8_t state, evx_timer_t timer)
    __attribute__((cold, noinline));
evx_status_t timer_state_failed(const char *fn, uint8_t state, evx_timer_t timer) {
    if (state == kNew)
        return fail(EVX_ERROR_ILLEGAL_STATE, "%s: timer 0x%" PRIx64 " was not started", fn,
                    handle_value(timer));
    return fail(EVX_ERROR_ILLEGAL_STATE, "%s: timer 0x%" PRIx64 " was started but not stopped",
                fn, handle_value(timer));
}

// ILLEGAL_STATE unless the timer was started and then stopped.
inline evx_status_t timer_state(const char *fn, const Timer *t, evx_timer_t timer) {
    const uint8_t state = t->state.load(std::memory_order_acquire);
    return __builtin_expect(state == kStopped, 1) ? 0 : timer_state_failed(fn, state, timer);
}

evx_status_t timer_ms_failed(const char *fn, evx_timer_t timer, CUresult res)
    __attribute__((cold, noinline));
evx_status_t timer_ms_failed(const char *fn, evx_timer_t timer, CUresult res) {
    return driver_failed(res, fn, "cuEventElapsedTime", "timer 0x%" PRIx64, handle_value(timer));
}

inline evx_status_t timer_ms(const char *fn, evx_timer_t timer, CUevent start, CUevent stop,
                             float *ms) {
    float out = 0.0f;
    const CUresult res = cu().cuEventElapsedTime(&out, start, stop);
    if (__builtin_expect(res == CUDA_SUCCESS, 1)) {
        *ms = out;
        return 0;
    }
    if (res == CUDA_ERROR_NOT_READY) return res;
    return timer_ms_failed(fn, timer, res);
}

// Timers a thread keeps after their free, events and all, for its next
// create of a timer of the same device: evx.timed makes and destroys one per
// block, and a kept timer spares an allocation and four cache moves. The
// thread's exit destroys their events; evx_device_trim() gives a device's
// back to the cache, which it then empties. A destroyed timer reaches its
// free with the thread's batch of retired handles (kRetireBatch of them at
// once, handle.hpp), so the thread keeps a batch's worth and a few more:
// fewer and a loop of evx.timed blocks would allocate most of its timers.
constexpr uint32_t kKeptTimers = kRetireBatch + 4;
struct KeptTimers {
    Timer *t[kKeptTimers];
    uint32_t n;
    bool at_exit;  // the exit key is set for this thread
};
__thread KeptTimers t_kept __attribute__((tls_model("initial-exec")));
pthread_key_t g_kept_key;
std::once_flag g_kept_once;
bool g_kept_key_ok = false;

void drop_timer(ThreadRecord *r, Timer *t) {
    // Given back as former (cache.hpp): recorded now, or in a life before;
    // a graph's events are destroyed (a graph may still record them).
    const uint8_t in_graph = t->in_graph.load(std::memory_order_acquire);
    if (CUevent ev = t->start.load(std::memory_order_acquire)) {
        if (in_graph & kStartInGraph)
            destroy_driver_event(t->device, ev);
        else
            cache_give(r, t->device, EVX_EVENT_DEFAULT, ev, true);
    }
    if (CUevent ev = t->stop.load(std::memory_order_acquire)) {
        if (in_graph & kStopInGraph)
            destroy_driver_event(t->device, ev);
        else
            cache_give(r, t->device, EVX_EVENT_DEFAULT, ev, true);
    }
    for (CUevent ev : t->retired) destroy_driver_event(t->device, ev);
    delete t;
}

// At thread exit (the record may be gone): their driver events go.
void kept_at_exit(void *) {
    t_kept.at_exit = false;  // a free during other keys' destructors sets it again
    while (t_kept.n > 0) {
        Timer *t = t_kept.t[--t_kept.n];
        destroy_driver_event(t->device, t->start.load(std::memory_order_relaxed));
        destroy_driver_event(t->device, t->stop.load(std::memory_order_relaxed));
        delete t;
    }
}

// A kept timer of the device, or nullptr.
inline Timer *take_kept(int device) {
    for (uint32_t i = t_kept.n; i > 0; --i) {
        Timer *t = t_kept.t[i - 1];
        if (t->device == device) {
            t_kept.t[i - 1] = t_kept.t[--t_kept.n];
            t->state.store(kNew, std::memory_order_relaxed);
            return t;
        }
    }
    return nullptr;
}

evx_status_t timer_free(ThreadRecord *r, void *obj) {
    Timer *t = static_cast<Timer *>(obj);
    // A timer that marked in a capture is not kept: its events are a graph's.
    if (t->start.load(std::memory_order_relaxed) && t->stop.load(std::memory_order_relaxed) &&
        t->in_graph.load(std::memory_order_relaxed) == 0 && t->retired.empty() &&
        t_kept.n < kKeptTimers) {
        if (__builtin_expect(!t_kept.at_exit, 0)) {
            std::call_once(g_kept_once, [] {
                g_kept_key_ok = pthread_key_create(&g_kept_key, kept_at_exit) == 0;
            });
            // The key's value only makes its destructor run at thread exit.
            t_kept.at_exit = g_kept_key_ok && pthread_setspecific(g_kept_key, &t_kept) == 0;
        }
        if (t_kept.at_exit) {
            t_kept.t[t_kept.n++] = t;
            return 0;
        }
    }
    drop_timer(r, t);
    return 0;
}

evx_status_t timeline_free(ThreadRecord *r, void *obj) {
    Timeline *t = static_cast<Timeline *>(obj);
    for (std::size_t i = 0; i < t->events.size(); ++i) {
        if (t->in_graph[i])
            destroy_driver_event(t->device, t->events[i]);
        else
            cache_give(r, t->device, EVX_EVENT_DEFAULT, t->events[i], true);
    }
    for (CUevent ev : t->retired) destroy_driver_event(t->device, ev);
    delete t;
    return 0;
}

// The body of evx_timer_synchronize(); noexcept as the hot calls (scope.hpp).
evx_status_t timer_synchronize(evx_timer_t timer, float *ms) noexcept {
    static const char fn[] = "evx_timer_synchronize";
    if (!ms) return fail(EVX_ERROR_INVALID_VALUE, "%s: ms (the out-pointer) is NULL", fn);
    HandleScope scope;
    Slot *slot = nullptr;
    evx_status_t st = scope.lookup(fn, timer, kTimer, "timer", &slot);
    if (st) return st;
    const Timer *t = static_cast<const Timer *>(slot->obj);
    const CUevent start = t->start.load(std::memory_order_acquire),
                  stop = t->stop.load(std::memory_order_acquire);
    st = timer_state(fn, t, timer);
    if (__builtin_expect(t->in_graph.load(std::memory_order_acquire) != 0, 0) && !st)
        st = timer_graph_check(fn, t, timer);
    if (__builtin_expect(!st, 1)) {
        // The hazard keeps the timer's events alive.
        // The stop mark first. The start may be on another stream and still
        // pending; cuEventElapsedTime then answers NOT_READY (probe section
        // 3: "elapsed(pending, recorded)"), and only then is the start waited
        // for. So the usual case, both marks on one stream, costs one wait.
        CUevent waited = stop;
        CUresult res = cu().cuEventSynchronize(stop);
        if (res == CUDA_SUCCESS) {
            st = timer_ms(fn, timer, start, stop, ms);
            if (st == EVX_ERROR_NOT_READY) {
                waited = start;
                res = cu().cuEventSynchronize(start);
                if (res == CUDA_SUCCESS) st = timer_ms(fn, timer, start, stop, ms);
            }
        }
        if (res != CUDA_SUCCESS)
            st = driver_failed(res, fn, "cuEventSynchronize", "timer 0x%" PRIx64 " (its %s mark)",
                               handle_value(timer), waited == stop ? "stop" : "start");
        // Both marks are complete: the failures they cover (*ms is written).
        if (!st) st = host_failure_of_mark(fn, t->stop_hf, t->device);
        if (!st) st = host_failure_of_mark(fn, t->start_hf, t->device);
    }
    return st;
}

// A timeline's mark i, made in a capture, recorded by a launch.
evx_status_t timeline_graph_check(const char *fn, const Timeline &t, uint32_t i,
                                  evx_timeline_t timeline) {
    char mark[32];
    std::snprintf(mark, sizeof mark, "mark %u", i);
    return graph_mark_check(fn, t.events[i], mark, "timeline", handle_value(timeline));
}

// Timers and timelines are batched (retire()): their frees give driver
// events to the cache (or keep the timer), which a trim reaches, and
// destroy only the events a graph recorded, which may as well wait.
bool to_thread_batch(ThreadRecord *r, void *, uint32_t index) {
    return retire_batched(r, index);
}

const FreeHookEntry kTimerFree(kTimer, timer_free, to_thread_batch);

}  // namespace

void timers_trim(ThreadRecord *r, int device) {
    for (Timer *t = take_kept(device); t; t = take_kept(device)) drop_timer(r, t);
}

namespace {

const FreeHookEntry kTimelineFree(kTimeline, timeline_free, to_thread_batch);

}  // namespace

}  // namespace evx

using namespace evx;

extern "C" {

EVX_API evx_status_t evx_device_create_timer(int device, evx_timer_t *timer) {
    static const char fn[] = "evx_device_create_timer";
    if (!timer) return fail(EVX_ERROR_INVALID_VALUE, "%s: timer (the out-pointer) is NULL", fn);
    *timer = nullptr;
    ThreadRecord *r;
    evx_status_t st = enter_device(fn, device, &r);
    if (st) return st;
    uint32_t index = 0;
    Timer *t = take_kept(device);
    if (t) {
        st = slot_alloc(r, fn, &index);
        if (st) {
            drop_timer(r, t);
            return st;
        }
        *timer = publish_as<evx_timer_t>(index, kTimer, t);
        return EVX_SUCCESS;
    }
    t = new (std::nothrow) Timer;
    if (!t) return fail(EVX_ERROR_OUT_OF_MEMORY, "%s: out of memory", fn);
    t->device = device;
    // A timer's events never leave it and are read only after it recorded
    // them, so a former life's record (cache.hpp) does not matter.
    bool former;
    CUevent start = nullptr, stop = nullptr;
    st = cache_take(r, fn, device, EVX_EVENT_DEFAULT, &start, &former);
    t->start.store(start, std::memory_order_relaxed);
    if (!st) st = cache_take(r, fn, device, EVX_EVENT_DEFAULT, &stop, &former);
    t->stop.store(stop, std::memory_order_relaxed);
    if (!st) st = slot_alloc(r, fn, &index);
    if (st) {
        drop_timer(r, t);
        return st;
    }
    *timer = publish_as<evx_timer_t>(index, kTimer, t);
    return EVX_SUCCESS;
}

EVX_API evx_status_t evx_timer_destroy(evx_timer_t timer) {
    return destroy_handle(timer, kTimer, "evx_timer_destroy", "timer");
}

EVX_API evx_status_t evx_timer_start(evx_timer_t timer, evx_stream_t stream) {
    static const char fn[] = "evx_timer_start";
    return mark_on_stream<Timer>(fn, timer, kTimer, stream,
                                 [timer, stream](Timer &t, const Stream &s, ThreadRecord *r) {
        const evx_status_t st =
            timer_mark(fn, t, &Timer::start, kStartInGraph, s, stream, timer, r);
        if (!st) {
            host_note_mark(&t.start_hf, &s);
            t.state.store(kStarted, std::memory_order_release);
        }
        return st;
    });
}

EVX_API evx_status_t evx_timer_stop(evx_timer_t timer, evx_stream_t stream) {
    static const char fn[] = "evx_timer_stop";
    return mark_on_stream<Timer>(fn, timer, kTimer, stream,
                                 [timer, stream](Timer &t, const Stream &s, ThreadRecord *r) {
        if (__builtin_expect(t.state.load(std::memory_order_acquire) == kNew, 0))
            return timer_state_failed(fn, kNew, timer);
        const evx_status_t st =
            timer_mark(fn, t, &Timer::stop, kStopInGraph, s, stream, timer, r);
        if (!st) {
            host_note_mark(&t.stop_hf, &s);
            t.state.store(kStopped, std::memory_order_release);
        }
        return st;
    });
}

EVX_API evx_status_t evx_timer_elapsed(evx_timer_t timer, float *ms) {
    static const char fn[] = "evx_timer_elapsed";
    if (!ms) return fail(EVX_ERROR_INVALID_VALUE, "%s: ms (the out-pointer) is NULL", fn);
    return with_live(fn, timer, kTimer, "timer", [&](Slot &slot) {
        const Timer *t = static_cast<const Timer *>(slot.obj);
        evx_status_t st = timer_state(fn, t, timer);
        if (__builtin_expect(t->in_graph.load(std::memory_order_acquire) != 0, 0) && !st)
            st = timer_graph_check(fn, t, timer);
        if (!st)
            st = timer_ms(fn, timer, t->start.load(std::memory_order_acquire),
                          t->stop.load(std::memory_order_acquire), ms);
        return st;
    });
}

EVX_API evx_status_t evx_timer_synchronize(evx_timer_t timer, float *ms) {
    return timer_synchronize(timer, ms);
}

EVX_API evx_status_t evx_device_create_timeline(int device, uint32_t capacity,
                                                evx_timeline_t *timeline) {
    static const char fn[] = "evx_device_create_timeline";
    if (!timeline)
        return fail(EVX_ERROR_INVALID_VALUE, "%s: timeline (the out-pointer) is NULL", fn);
    *timeline = nullptr;
    if (capacity < 2)
        return fail(EVX_ERROR_INVALID_VALUE, "%s: capacity %u is less than 2", fn, capacity);
    ThreadRecord *r;
    Timeline *t;
    evx_status_t st = enter_device_new(fn, device, &r, &t);
    if (st) return st;
    t->capacity = capacity;
    try {
        t->events.reserve(capacity < 64 ? capacity : 64);
        t->info.reserve(capacity < 64 ? capacity : 64);
    } catch (const std::bad_alloc &) {
        delete t;
        return fail(EVX_ERROR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    uint32_t index;
    st = slot_alloc(r, fn, &index);
    if (st) {
        delete t;
        return st;
    }
    *timeline = publish_as<evx_timeline_t>(index, kTimeline, t);
    return EVX_SUCCESS;
}

EVX_API evx_status_t evx_timeline_destroy(evx_timeline_t timeline) {
    return destroy_handle(timeline, kTimeline, "evx_timeline_destroy", "timeline");
}

}  // extern "C"

namespace {

// evx_timeline_mark() and evx_timeline_mark_labeled(); label is not NULL.
evx_status_t timeline_mark(const char *fn, evx_timeline_t timeline, evx_stream_t stream,
                           const char *label, uint32_t kind, uint32_t *index) {
    return mark_on_stream<Timeline>(fn, timeline, kTimeline, stream,
                                    [=](Timeline &t, const Stream &s,
                                        ThreadRecord *r) -> evx_status_t {
        if (t.count == t.capacity)
            return fail(EVX_ERROR_OUT_OF_MEMORY,
                        "%s: timeline 0x%" PRIx64 " holds its capacity of %u marks; "
                        "evx_timeline_reset() forgets them",
                        fn, handle_value(timeline), t.capacity);
        bool capturing = false;
        evx_status_t st = mark_capturing(fn, &s, stream, &capturing);
        if (st) return st;
        const bool fresh = t.count == t.events.size();
        if (fresh || capturing || t.in_graph[t.count]) {
            try {
                if (fresh) t.in_graph.reserve(t.events.size() + 1);
                if (fresh && t.info.size() == t.info.capacity())
                    t.info.reserve(2 * t.info.size() + 1);
                if (!fresh) t.retired.reserve(t.retired.size() + 1);
            } catch (const std::bad_alloc &) {
                return fail(EVX_ERROR_OUT_OF_MEMORY, "%s: out of memory", fn);
            }
            // A new event for this mark: a graph mark's event is one never
            // recorded (so that a read before any launch knows it), and a
            // graph event is never recorded outside its graph.
            // Like a timer's, a timeline's events are read only after it
            // recorded them, so a cached event's former life does not matter.
            CUevent ev;
            bool former = false;
            st = capturing ? create_driver_event(fn, t.device, EVX_EVENT_DEFAULT, &ev)
                           : cache_take(r, fn, t.device, EVX_EVENT_DEFAULT, &ev, &former);
            if (st) return st;
            if (fresh) {
                try {
                    t.events.push_back(ev);
                } catch (const std::bad_alloc &) {
                    if (capturing)
                        destroy_driver_event(t.device, ev);
                    else
                        cache_give(r, t.device, EVX_EVENT_DEFAULT, ev, former);
                    return fail(EVX_ERROR_OUT_OF_MEMORY, "%s: out of memory", fn);
                }
                t.in_graph.push_back(0);
                t.info.emplace_back();  // reserved above
            } else {
                t.retired.push_back(t.events[t.count]);
            }
            t.events[t.count] = ev;
            t.in_graph[t.count] = capturing;
        }
        st = capturing ? record_graph_mark(fn, t.events[t.count], &s, stream,
                                           handle_value(timeline), "timeline")
                       : record_mark(fn, t.events[t.count], &s, handle_value(timeline), "timeline");
        if (st) return st;
        MarkInfo &m = t.info[t.count];
        m.stream = handle_value(stream);
        m.kind = kind;
        std::memcpy(m.label, label, std::strlen(label) + 1);
        host_note_mark(&t.last_hf, &s);
        nvtx_mark(label, kind);
        if (index) *index = t.count;
        ++t.count;
        return EVX_SUCCESS;
    });
}

}  // namespace

extern "C" {

EVX_API evx_status_t evx_timeline_mark(evx_timeline_t timeline, evx_stream_t stream,
                                       uint32_t *index) {
    return timeline_mark("evx_timeline_mark", timeline, stream, "", EVX_MARK_POINT, index);
}

EVX_API evx_status_t evx_timeline_mark_labeled(evx_timeline_t timeline, evx_stream_t stream,
                                               const char *label, unsigned kind,
                                               uint32_t *index) {
    static const char fn[] = "evx_timeline_mark_labeled";
    if (!label) return fail(EVX_ERROR_INVALID_VALUE, "%s: label is NULL", fn);
    const size_t n = std::strlen(label);
    if (n >= EVX_MARK_LABEL_SIZE)
        return fail(EVX_ERROR_INVALID_VALUE, "%s: label \"%.32s...\" is %zu bytes long; at most %d",
                    fn, label, n, EVX_MARK_LABEL_SIZE - 1);
    if (kind > EVX_MARK_END)
        return fail(EVX_ERROR_INVALID_VALUE,
                    "%s: kind %u is not a mark kind (EVX_MARK_POINT 0, EVX_MARK_BEGIN 1, "
                    "EVX_MARK_END 2)",
                    fn, kind);
    return timeline_mark(fn, timeline, stream, label, kind, index);
}

EVX_API evx_status_t evx_timeline_get_mark(evx_timeline_t timeline, uint32_t index,
                                           evx_timeline_mark_info_t *info) {
    static const char fn[] = "evx_timeline_get_mark";
    if (!info) return fail(EVX_ERROR_INVALID_VALUE, "%s: info is NULL", fn);
    uint32_t size;
    evx_status_t st = sized_check(fn, kMarkInfoType, info, &size);
    if (st) return st;
    return with_live(fn, timeline, kTimeline, "timeline", [&](Slot &slot) -> evx_status_t {
        Timeline *t = static_cast<Timeline *>(slot.obj);
        std::lock_guard<std::mutex> lock(t->mu);
        if (index >= t->count)
            return fail(EVX_ERROR_INVALID_VALUE,
                        "%s: timeline 0x%" PRIx64 " has %u marks; there is no mark %u", fn,
                        handle_value(timeline), t->count, index);
        // A graph mark no launch recorded has no time yet.
        if (t->in_graph[0] || t->in_graph[index]) {
            evx_status_t gst = t->in_graph[0] ? timeline_graph_check(fn, *t, 0, timeline) : 0;
            if (!gst && t->in_graph[index]) gst = timeline_graph_check(fn, *t, index, timeline);
            if (gst) return gst;
        }
        evx_timeline_mark_info_t out;
        std::memset(&out, 0, sizeof out);
        out.struct_size = size;
        const CUresult res = cu().cuEventElapsedTime(&out.ms, t->events[0], t->events[index]);
        if (res == CUDA_ERROR_NOT_READY) return EVX_ERROR_NOT_READY;
        if (res != CUDA_SUCCESS)
            return driver_failed(res, fn, "cuEventElapsedTime",
                                 "marks 0 and %u of timeline 0x%" PRIx64, index,
                                 handle_value(timeline));
        const MarkInfo &m = t->info[index];
        out.kind = m.kind;
        out.index = index;
        out.stream = reinterpret_cast<evx_stream_t>(static_cast<uintptr_t>(m.stream));
        std::memcpy(out.label, m.label, sizeof out.label);
        sized_out(info, size, out);
        return EVX_SUCCESS;
    });
}

EVX_API evx_status_t evx_timeline_count(evx_timeline_t timeline, uint32_t *count) {
    static const char fn[] = "evx_timeline_count";
    if (!count) return fail(EVX_ERROR_INVALID_VALUE, "%s: count (the out-pointer) is NULL", fn);
    return with_live(fn, timeline, kTimeline, "timeline", [count](Slot &slot) {
        Timeline *t = static_cast<Timeline *>(slot.obj);
        std::lock_guard<std::mutex> lock(t->mu);
        *count = t->count;
        return EVX_SUCCESS;
    });
}

EVX_API evx_status_t evx_timeline_intervals(evx_timeline_t timeline, float *ms, uint32_t max,
                                            uint32_t *written) {
    static const char fn[] = "evx_timeline_intervals";
    if (!ms && max != 0)
        return fail(EVX_ERROR_INVALID_VALUE, "%s: ms is NULL but max is %u", fn, max);
    HandleScope scope;
    Slot *slot = nullptr;
    evx_status_t st = scope.lookup(fn, timeline, kTimeline, "timeline", &slot);
    if (st) return st;
    Timeline *t = static_cast<Timeline *>(slot->obj);
    uint32_t n = 0;
    {
        std::lock_guard<std::mutex> lock(t->mu);
        const uint32_t intervals = t->count >= 2 ? t->count - 1 : 0;
        if (!ms) {
            n = intervals;
        } else {
            // Every graph mark must have been recorded by a launch, and
            // every mark must be complete, before anything is written.
            for (uint32_t i = 0; i < t->count && !st; ++i)
                if (t->in_graph[i]) st = timeline_graph_check(fn, *t, i, timeline);
            for (uint32_t i = 0; i < t->count && !st; ++i) {
                const CUresult q = cu().cuEventQuery(t->events[i]);
                if (q == CUDA_ERROR_NOT_READY)
                    st = q;
                else if (q != CUDA_SUCCESS)
                    st = driver_failed(q, fn, "cuEventQuery", "mark %u of timeline 0x%" PRIx64,
                                       i, handle_value(timeline));
            }
            n = intervals < max ? intervals : max;
            for (uint32_t i = 0; i < n && !st; ++i) {
                const CUresult res =
                    cu().cuEventElapsedTime(&ms[i], t->events[i], t->events[i + 1]);
                if (res == CUDA_ERROR_NOT_READY)
                    st = res;
                else if (res != CUDA_SUCCESS)
                    st = driver_failed(res, fn, "cuEventElapsedTime",
                                       "marks %u and %u of timeline 0x%" PRIx64, i, i + 1,
                                       handle_value(timeline));
            }
        }
    }
    if (written) *written = st ? 0 : n;
    return st;
}

EVX_API evx_status_t evx_timeline_synchronize(evx_timeline_t timeline) {
    static const char fn[] = "evx_timeline_synchronize";
    return with_live(fn, timeline, kTimeline, "timeline", [timeline](Slot &slot) -> evx_status_t {
        Timeline *t = static_cast<Timeline *>(slot.obj);
        CUevent last = nullptr;
        HostMark hf;
        {
            std::lock_guard<std::mutex> lock(t->mu);
            hf.copy(t->last_hf);
            // A graph mark no launch recorded has nothing to wait for.
            for (uint32_t i = 0; i < t->count; ++i)
                if (t->in_graph[i])
                    if (const evx_status_t st = timeline_graph_check(fn, *t, i, timeline))
                        return st;
            if (t->count > 0) last = t->events[t->count - 1];
        }
        if (!last) return EVX_SUCCESS;
        // Without the lock; the hazard keeps the timeline's events alive.
        const CUresult res = cu().cuEventSynchronize(last);
        if (res == CUDA_SUCCESS) return host_failure_of_mark(fn, hf, t->device);
        return driver_failed(res, fn, "cuEventSynchronize",
                             "the last mark of timeline 0x%" PRIx64, handle_value(timeline));
    });
}

EVX_API evx_status_t evx_timeline_reset(evx_timeline_t timeline) {
    static const char fn[] = "evx_timeline_reset";
    return with_live(fn, timeline, kTimeline, "timeline", [](Slot &slot) {
        Timeline *t = static_cast<Timeline *>(slot.obj);
        std::lock_guard<std::mutex> lock(t->mu);
        t->count = 0;
        t->last_hf.clear();
        return EVX_SUCCESS;
    });
}

}  // extern "C"
