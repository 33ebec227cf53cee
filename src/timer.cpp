// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Timers (a start and a stop mark). Their driver events come from the reuse
// cache and go back to it. A timer's events are fixed at creation and its
// state is one atomic word, so its calls take no lock (its marks are
// ordered by the calls that make them, which the caller orders: timing.h).
#include <pthread.h>

#include <cinttypes>
#include <mutex>
#include <new>
#include <vector>

#include "cache.hpp"
#include "capture.hpp"
#include "driver.hpp"
#include "error.hpp"
#include "evx/event.h"
#include "evx/timing.h"
#include "handle.hpp"
#include "hostfn.hpp"
#include "mark.hpp"
#include "reclaim.hpp"
#include "scope.hpp"
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

    NoLock hold() { return {}; }  // its marks need no lock (mark_on_stream())
    static constexpr const char kRole[] = "timer";
};

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
// graph (docs/graphs.md). The general mark: default streams, captures, an
// event a capture replaced, failures of the capture question (`state`:
// mark_state()'s answer).
evx_status_t timer_mark_general(const char *fn, Timer &t, std::atomic<CUevent> Timer::*which,
                                uint8_t bit, const Stream &s, evx_stream_t stream,
                                evx_timer_t timer, ThreadRecord *r, int state)
    __attribute__((noinline));
evx_status_t timer_mark_general(const char *fn, Timer &t, std::atomic<CUevent> Timer::*which,
                                uint8_t bit, const Stream &s, evx_stream_t stream,
                                evx_timer_t timer, ThreadRecord *r, int state) {
    bool capturing = false;
    const evx_status_t st = mark_capture_state(fn, state, &s, stream, &capturing);
    if (st) return st;
    if (capturing || (t.in_graph.load(std::memory_order_acquire) & bit))
        return timer_graph_mark(fn, t, which, bit, capturing, s, stream, timer, r);
    return record_mark(fn, (t.*which).load(std::memory_order_acquire), &s, handle_value(timer),
                       "timer");
}

// A timer's mark: a plain record of its event on a plain stream
// (kMarkPlain) when the event is not a graph's, else the general mark.
inline evx_status_t timer_mark(const char *fn, Timer &t, std::atomic<CUevent> Timer::*which,
                               uint8_t bit, const Stream &s, evx_stream_t stream, evx_timer_t timer,
                               ThreadRecord *r) {
    const int state = mark_state(&s);
    if (__builtin_expect(state == kMarkPlain && !(t.in_graph.load(std::memory_order_acquire) & bit),
                         1))
        return record_plain_mark(fn, (t.*which).load(std::memory_order_acquire), &s,
                                 handle_value(timer), "timer");
    return timer_mark_general(fn, t, which, bit, s, stream, timer, r, state);
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
// once, reclaim.hpp), so the thread keeps a batch's worth and a few more:
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

const FreeHookEntry kTimerFree(kTimer, timer_free, to_thread_batch);

}  // namespace

void timers_trim(ThreadRecord *r, int device) {
    for (Timer *t = take_kept(device); t; t = take_kept(device)) drop_timer(r, t);
}

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

}  // extern "C"
