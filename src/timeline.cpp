// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Timelines (many marks read back in one call). Their driver events come
// from the reuse cache and go back to it. A timeline has its own lock: its
// marks grow its list of events.
#include <cinttypes>
#include <ctime>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "cache.hpp"
#include "capture.hpp"
#include "driver.hpp"
#include "error.hpp"
#include "evx/event.h"
#include "evx/timing.h"
#include "futex_lock.hpp"
#include "handle.hpp"
#include "hostfn.hpp"
#include "mark.hpp"
#include "nvtx.hpp"
#include "reclaim.hpp"
#include "scope.hpp"
#include "sized.hpp"
#include "stream_object.hpp"

namespace evx {

namespace {

// What a timeline keeps of each mark besides its driver event.
struct MarkInfo {
    uint64_t stream = 0;             // the handle's value
    uint32_t kind = EVX_MARK_POINT;  // evx_mark_kind
    char label[EVX_MARK_LABEL_SIZE] = {};
};

struct Timeline {
    FutexLock mu;  // short sections, one per mark: no wait needs a condition
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
    // The anchors among the marks since the last reset, in mark order.
    std::vector<evx_timeline_anchor_info_t> anchors;
    HostMark last_hf;             // the failures the last mark covers

    // Its marks are made under its lock (mark_on_stream()).
    std::lock_guard<FutexLock> hold() { return std::lock_guard<FutexLock>(mu); }
    static constexpr const char kRole[] = "timeline";
};

constexpr SizedType kMarkInfoType{"evx_timeline_mark_info_t", "info",
                                  offsetof(evx_timeline_mark_info_t, label) +
                                      EVX_MARK_LABEL_SIZE};
static_assert(kMarkInfoType.first_size == 88, "timing.h publishes 88 bytes of mark info");
constexpr SizedType kAnchorType{"evx_timeline_anchor_info_t", "anchor",
                                offsetof(evx_timeline_anchor_info_t, realtime_ns) + sizeof(uint64_t),
                                false};
static_assert(kAnchorType.first_size == 32, "timing.h publishes 32 bytes of anchor");

uint64_t clock_ns(clockid_t clock) {
    timespec ts{};
    clock_gettime(clock, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
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

// A timeline's mark i, made in a capture, recorded by a launch.
evx_status_t timeline_graph_check(const char *fn, const Timeline &t, uint32_t i,
                                  evx_timeline_t timeline) {
    char mark[32];
    std::snprintf(mark, sizeof mark, "mark %u", i);
    return graph_mark_check(fn, t.events[i], mark, "timeline", handle_value(timeline));
}

// A new event for mark t.count (under the timeline's lock): a graph
// mark's event is one never recorded (so that a read before any launch
// knows it), and a graph event is never recorded outside its graph. Like a
// timer's, a timeline's events are read only after it recorded them, so a
// cached event's former life does not matter.
evx_status_t timeline_new_event(const char *fn, Timeline &t, bool fresh, bool capturing,
                                ThreadRecord *r) {
    try {
        if (fresh) t.in_graph.reserve(t.events.size() + 1);
        if (fresh && t.info.size() == t.info.capacity()) t.info.reserve(2 * t.info.size() + 1);
        if (!fresh) t.retired.reserve(t.retired.size() + 1);
    } catch (const std::bad_alloc &) {
        return fail(EVX_ERROR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    CUevent ev;
    bool former = false;
    const evx_status_t st = capturing
                                ? create_driver_event(fn, t.device, EVX_EVENT_DEFAULT, &ev)
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
    return 0;
}

const FreeHookEntry kTimelineFree(kTimeline, timeline_free, to_thread_batch);

}  // namespace

}  // namespace evx

using namespace evx;

extern "C" {

EVX_API evx_status_t evx_device_create_timeline(int device, uint32_t capacity,
                                                evx_timeline_t *timeline) {
    static const char fn[] = "evx_device_create_timeline";
    if (!timeline)
        return fail(EVX_ERROR_INVALID_VALUE, "%s: timeline (the out-pointer) is NULL", fn);
    *timeline = nullptr;
    if (capacity < 2)
        return fail(EVX_ERROR_INVALID_VALUE, "%s: capacity %u is less than 2", fn, capacity);
    ThreadRecord *r;
    Timeline *made;
    evx_status_t st = enter_device_new(fn, device, &r, &made);
    if (st) return st;
    std::unique_ptr<Timeline> t(made);  // the handle's once published
    t->capacity = capacity;
    try {
        t->events.reserve(capacity < 64 ? capacity : 64);
        t->info.reserve(capacity < 64 ? capacity : 64);
    } catch (const std::bad_alloc &) {
        return fail(EVX_ERROR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    uint32_t index;
    st = slot_alloc(r, fn, &index);
    if (st) return st;
    *timeline = publish_as<evx_timeline_t>(index, kTimeline, t.release());
    return EVX_SUCCESS;
}

EVX_API evx_status_t evx_timeline_destroy(evx_timeline_t timeline) {
    return destroy_handle(timeline, kTimeline, "evx_timeline_destroy", "timeline");
}

}  // extern "C"

namespace {

// What a timeline keeps of a mark it recorded, under its lock.
inline void mark_recorded(Timeline &t, const Stream &s, evx_stream_t stream, const char *label,
                          uint32_t kind, uint32_t *index) {
    MarkInfo &m = t.info[t.count];
    m.stream = handle_value(stream);
    m.kind = kind;
    if (label[0] != '\0')
        std::memcpy(m.label, label, std::strlen(label) + 1);
    else
        m.label[0] = '\0';  // what follows the NUL is no part of a label
    host_note_mark(&t.last_hf, &s);
    nvtx_mark(label, kind);
    if (index) *index = t.count;
    ++t.count;
}

// A timeline's mark that is not a plain record of an event it has (see
// timeline_mark()): the first use of an event, a full timeline, a captured
// stream or an event a capture made, a default stream, a failing capture
// question (`state`: mark_state()'s answer, kMarkAsk where it was not
// asked). Under the timeline's lock.
evx_status_t timeline_mark_general(const char *fn, Timeline &t, const Stream &s,
                                   evx_timeline_t timeline, evx_stream_t stream,
                                   const char *label, uint32_t kind, uint32_t *index,
                                   ThreadRecord *r, int state) __attribute__((noinline));
evx_status_t timeline_mark_general(const char *fn, Timeline &t, const Stream &s,
                                   evx_timeline_t timeline, evx_stream_t stream,
                                   const char *label, uint32_t kind, uint32_t *index,
                                   ThreadRecord *r, int state) {
    if (t.count == t.capacity)
        return fail(EVX_ERROR_OUT_OF_MEMORY,
                    "%s: timeline 0x%" PRIx64 " holds its capacity of %u marks; "
                    "evx_timeline_reset() forgets them",
                    fn, handle_value(timeline), t.capacity);
    bool capturing = false;
    evx_status_t st = mark_capture_state(fn, state, &s, stream, &capturing);
    if (st) return st;
    // An anchor is waited for at once, which a graph node cannot be.
    if (capturing && kind == EVX_MARK_ANCHOR)
        return fail(EVX_ERROR_ILLEGAL_STATE,
                    "%s: stream 0x%" PRIx64 " is being captured; an anchor needs a "
                    "stream that runs its work now",
                    fn, handle_value(stream));
    const bool fresh = t.count == t.events.size();
    if (fresh || capturing || t.in_graph[t.count]) {
        st = timeline_new_event(fn, t, fresh, capturing, r);
        if (st) return st;
    }
    st = capturing ? record_graph_mark(fn, t.events[t.count], &s, stream, handle_value(timeline),
                                       "timeline")
                   : record_mark(fn, t.events[t.count], &s, handle_value(timeline), "timeline");
    if (st) return st;
    mark_recorded(t, s, stream, label, kind, index);
    return EVX_SUCCESS;
}

// evx_timeline_mark() and evx_timeline_mark_labeled(); label is not NULL.
// Inline, so that each public call has its own copy (an unlabeled mark's
// label is known to be empty). The hot case, a plain record (kMarkPlain)
// of an event the timeline has and no capture made, is the first branch.
inline evx_status_t timeline_mark(const char *fn, evx_timeline_t timeline, evx_stream_t stream,
                                  const char *label, uint32_t kind, uint32_t *index) {
    return mark_on_stream<Timeline>(fn, timeline, kTimeline, stream,
                                    [=](Timeline &t, const Stream &s,
                                        ThreadRecord *r) -> evx_status_t {
        const uint32_t i = t.count;
        int state = kMarkAsk;
        if (__builtin_expect(
                i < t.events.size() && !t.in_graph[i] && (state = mark_state(&s)) == kMarkPlain,
                1)) {
            const evx_status_t st =
                record_plain_mark(fn, t.events[i], &s, handle_value(timeline), "timeline");
            if (st) return st;
            mark_recorded(t, s, stream, label, kind, index);
            return EVX_SUCCESS;
        }
        return timeline_mark_general(fn, t, s, timeline, stream, label, kind, index, r, state);
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
    if (kind == EVX_MARK_ANCHOR)
        return fail(EVX_ERROR_INVALID_VALUE,
                    "%s: kind 3 is EVX_MARK_ANCHOR, which only evx_timeline_anchor() makes",
                    fn);
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
        std::lock_guard<FutexLock> lock(t->mu);
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
        std::lock_guard<FutexLock> lock(t->mu);
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
        std::lock_guard<FutexLock> lock(t->mu);
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
            std::lock_guard<FutexLock> lock(t->mu);
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
        std::lock_guard<FutexLock> lock(t->mu);
        t->count = 0;
        t->anchors.clear();
        t->last_hf.clear();
        return EVX_SUCCESS;
    });
}


EVX_API evx_status_t evx_timeline_anchor(evx_timeline_t timeline, evx_stream_t stream,
                                         evx_timeline_anchor_info_t *anchor) {
    static const char fn[] = "evx_timeline_anchor";
    uint32_t size = 0;
    evx_status_t st = anchor ? sized_check(fn, kAnchorType, anchor, &size) : EVX_SUCCESS;
    if (st) return st;
    evx_timeline_anchor_info_t a;
    std::memset(&a, 0, sizeof a);
    a.struct_size = size;
    a.realtime_ns = clock_ns(CLOCK_REALTIME);
    a.monotonic_before_ns = clock_ns(CLOCK_MONOTONIC);
    st = timeline_mark(fn, timeline, stream, "anchor", EVX_MARK_ANCHOR, &a.index);
    if (st) return st;
    st = evx_timeline_synchronize(timeline);
    if (st) return st;
    a.monotonic_after_ns = clock_ns(CLOCK_MONOTONIC);
    st = with_live(fn, timeline, kTimeline, "timeline", [&](Slot &slot) -> evx_status_t {
        Timeline *t = static_cast<Timeline *>(slot.obj);
        std::lock_guard<FutexLock> lock(t->mu);
        // A reset by another thread since the mark leaves nothing to anchor.
        if (a.index >= t->count || t->info[a.index].kind != EVX_MARK_ANCHOR)
            return fail(EVX_ERROR_ILLEGAL_STATE,
                        "%s: timeline 0x%" PRIx64 " was reset while mark %u was waited for",
                        fn, handle_value(timeline), a.index);
        try {
            t->anchors.push_back(a);
        } catch (const std::bad_alloc &) {
            return fail(EVX_ERROR_OUT_OF_MEMORY, "%s: out of memory", fn);
        }
        return EVX_SUCCESS;
    });
    if (st) return st;
    if (anchor) sized_out(anchor, size, a);
    return EVX_SUCCESS;
}

EVX_API evx_status_t evx_timeline_get_anchor(evx_timeline_t timeline, uint32_t index,
                                             evx_timeline_anchor_info_t *anchor) {
    static const char fn[] = "evx_timeline_get_anchor";
    if (!anchor) return fail(EVX_ERROR_INVALID_VALUE, "%s: anchor is NULL", fn);
    uint32_t size;
    evx_status_t st = sized_check(fn, kAnchorType, anchor, &size);
    if (st) return st;
    return with_live(fn, timeline, kTimeline, "timeline", [&](Slot &slot) -> evx_status_t {
        Timeline *t = static_cast<Timeline *>(slot.obj);
        std::lock_guard<FutexLock> lock(t->mu);
        for (const evx_timeline_anchor_info_t &a : t->anchors)
            if (a.index == index) {
                evx_timeline_anchor_info_t out = a;
                out.struct_size = size;
                sized_out(anchor, size, out);
                return EVX_SUCCESS;
            }
        return fail(EVX_ERROR_INVALID_VALUE,
                    "%s: mark %u of timeline 0x%" PRIx64 " is not an anchor "
                    "(evx_timeline_anchor() makes them)",
                    fn, index, handle_value(timeline));
    });
}

}  // extern "C"
