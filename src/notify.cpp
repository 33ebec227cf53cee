// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Completion notifiers (include/evx/notify.h). A watch is a
// cuStreamWaitEvent on an internal stream ("lane") of the event's device and
// a host function that delivers it: queues its token (and makes the eventfd
// readable) or runs its callback. Lanes are per device, made on first need
// up to the notifier's cap; a watch goes to a lane with nothing pending, so
// a late event holds back no other watch until the cap is reached.
//
// The driver makes cuLaunchHostFunc wait for GPU work once a context has a
// fixed number of items pending that will notify the host: host functions
// queued behind cross-stream waits on GPU work still running (which a
// watch's host function is) and records of blocking_sync events behind such
// work count alike (`evx-notify-latency --diag` shows it; docs/async.md
// gives the figures; the host emulation runs no kernels and does not model
// it). Others in the process use the same budget. So no watch call launches
// a host function: it makes its cuStreamWaitEvent at once (capturing the
// event's state; waits alone are never held back) and queues the watch on
// its lane.
// A pump thread of the notifier, made on the first watch that needs a host
// function and asleep on a condition variable otherwise, launches one host
// function per lane for the watches queued there, keeping at most
// max_inflight of a device's in flight; that host function runs after
// their waits, in lane order. A batch whose lane is idle already (short
// work ends before the pump wakes) the pump delivers itself, with no host
// function (callbacks only while none of the device's is in flight). So a
// watch call never waits for GPU work; if the process has used up the
// driver's budget, the pump waits instead, and delivery with it.
//
// Everything below a notifier is guarded by its mutex, which is never held
// across a driver call, except its queue of delivered tokens, which has a
// lock of its own (ring_mu, taken after the mutex where both are held): a
// watch of an event that is complete already queues its token under that
// lock alone. `pending` counts watch calls in progress and watches
// queued on lanes; destroy waits until it is 0, so no host function refers
// to the notifier when it is freed. Token storage is reserved by the watch
// call (where running out of memory can be reported), so a host function
// never allocates and never drops a token.
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <condition_variable>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>

#include "driver.hpp"
#include "error.hpp"
#include "evx/fence.h"
#include "evx/notify.h"
#include "evx/status.h"
#include "fence.hpp"
#include "futex_lock.hpp"
#include "handle.hpp"
#include "hostfn.hpp"
#include "reclaim.hpp"
#include "scope.hpp"
#include "sized.hpp"

namespace evx {

namespace {

struct Notifier;
struct Lane;

// Most watch host functions of one device in flight: one per internal
// stream the notifier may make for it, from 8 to 32. Well below the
// driver's budget of a context, leaving room for the process's other host
// functions and blocking_sync records; a host function delivers a whole
// lane's batch. Fewer is cheaper for the program: while host functions are
// in flight the driver slows the program's own launches and records
// (docs/async.md, "Fewer host functions in flight", has the figures).
constexpr uint32_t kInflightMin = 8, kInflightMax = 32;

// A delivered token, with the host functions that can fail its watch covers
// (the watched event's last record's stream handle number and ticket, as
// hostfn.hpp; 0: none) and the event's device, whose failures in graph
// launches it reports (-1: none), for evx_notifier_read_checked().
struct Queued {
    uint64_t token;
    uint64_t hf_id;
    uint64_t hf_ticket;
    int device;
};

struct Watch {
    Notifier *n;
    Lane *lane;
    Queued q;            // a token watch's token
    evx_notify_fn_t fn;  // nullptr: a token watch
    void *user_data;
    Watch *next = nullptr;  // the rest of a host function's batch, or of a lane's queue
    evx_notify_status_fn_t sfn = nullptr;  // a callback given the status (fn is nullptr)
};

bool is_callback(const Watch *w) { return w->fn != nullptr || w->sfn != nullptr; }

struct Lane {
    CUstream cu = nullptr;
    int device = 0;
    uint32_t pending = 0;  // watches queued on it and not yet delivered
    Watch *queued = nullptr, *queued_tail = nullptr;  // waits made, for the pump to launch
};

struct DeviceLanes {
    Lane *lane[EVX_NOTIFIER_MAX_STREAMS] = {};
    uint32_t count = 0;     // lanes made
    uint32_t creating = 0;  // lanes being made (outside the mutex)
    uint32_t inflight = 0;  // host functions launched and not yet run
    uint32_t lanes_queued = 0;  // lanes with queued watches
};

struct Notifier {
    std::mutex mu;
    std::condition_variable idle;       // pending reached 0
    std::condition_variable lane_made;  // a lane was made (or failed to be)
    int fd = -1;
    uint32_t max_lanes = EVX_NOTIFIER_DEFAULT_STREAMS;
    uint32_t max_inflight = kInflightMin;  // per device: max_lanes, 8 to 32
    uint64_t pending = 0;
    // Under ring_mu: queued tokens, a ring of `cap` entries (a power of two),
    // `count` from `head`; room for `reserved` more is kept for the token
    // watches still pending. `closed` is set under both locks.
    FutexLock ring_mu;
    bool closed = false;
    Queued *ring = nullptr;
    size_t cap = 0, head = 0, count = 0, reserved = 0;
    DeviceLanes *devices = nullptr;  // one per device
    int ndevices = 0;
    // The pump (made on the first watch that waits): launches host functions.
    pthread_t pump;
    bool pump_started = false;
    bool pump_stop = false;
    std::condition_variable pump_cv;  // a watch queued, a host function ran, or stop
};

// The notifier whose callback this thread runs, for destroy's refusal.
thread_local Notifier *t_delivering = nullptr;

// evx_notifier_options_t as first published; see sized.hpp.
constexpr SizedType kOptionsType{
    "evx_notifier_options_t", "options",
    offsetof(evx_notifier_options_t, max_streams_per_device) + sizeof(uint32_t), false};
static_assert(kOptionsType.first_size == 12, "notify.h publishes 12 bytes of options");

// A larger ring, for `need` tokens; the caller holds n->ring_mu.
__attribute__((noinline)) bool grow_ring(Notifier *n, size_t need) {
    size_t cap = n->cap ? n->cap * 2 : 64;
    while (cap < need) cap *= 2;
    Queued *ring = static_cast<Queued *>(std::malloc(sizeof(Queued) * cap));
    if (!ring) return false;
    for (size_t i = 0; i < n->count; ++i) ring[i] = n->ring[(n->head + i) & (n->cap - 1)];
    std::free(n->ring);
    n->ring = ring;
    n->cap = cap;
    n->head = 0;
    return true;
}

// Makes room for one more token; the caller holds n->ring_mu.
inline bool reserve_token(Notifier *n) {
    const size_t need = n->count + n->reserved + 1;
    if (__builtin_expect(need > n->cap, 0) && !grow_ring(n, need)) return false;
    ++n->reserved;
    return true;
}

// Queues a token reserved earlier; the caller holds n->ring_mu. The
// eventfd's counter is nonzero exactly while tokens are queued.
inline void push_token(Notifier *n, const Queued &token) {
    --n->reserved;
    n->ring[(n->head + n->count) & (n->cap - 1)] = token;
    if (__builtin_expect(n->count++ == 0, 0)) {
        const uint64_t one = 1;
        if (write(n->fd, &one, sizeof one) < 0) {
            // Only an overflow of the counter fails, and it is 0 or 1 here.
        }
    }
}

// Ends a watch call or a queued watch; the caller holds n->mu.
void end_pending(Notifier *n) {
    if (--n->pending == 0) n->idle.notify_all();
}

// The host function of every watch: delivers a batch (one watch, or a
// lane's queued watches), in order.
void deliver(void *data) {
    Watch *first = static_cast<Watch *>(data);
    Notifier *n = first->n;
    for (Watch *w = first; w; w = w->next) {
        if (w->fn) {
            t_delivering = n;
            w->fn(w->user_data);
            t_delivering = nullptr;
        } else if (w->sfn) {
            // Taken on this thread, so that the callback reads its message
            // and host function with evx_last_error_message/_host_func.
            const evx_status_t st = host_failure_check("evx_notifier_watch_callback_status",
                                                       w->q.hf_id, w->q.hf_ticket, w->q.device);
            t_delivering = n;
            w->sfn(st, w->user_data);
            t_delivering = nullptr;
        }
    }
    {
        std::lock_guard<std::mutex> lk(n->mu);
        DeviceLanes &d = n->devices[first->lane->device];
        --d.inflight;
        if (d.lanes_queued) n->pump_cv.notify_one();
        {
            std::lock_guard<FutexLock> rl(n->ring_mu);
            for (Watch *w = first; w; w = w->next)
                if (!is_callback(w)) push_token(n, w->q);
        }
        for (Watch *w = first; w; w = w->next) {
            --w->lane->pending;
            end_pending(n);  // n may be freed once the mutex is released
        }
    }
    while (first) {
        Watch *next = first->next;
        delete first;
        first = next;
    }
}

// The pump: launches the host function of each lane's queued watches
// while their device is below max_inflight, until told to stop (by
// destroy, once nothing is pending).
void *pump_main(void *arg) {
    Notifier *n = static_cast<Notifier *>(arg);
    // The pump's calls are evx's own and never captured: in relaxed capture
    // mode, so that its cuStreamQuery is allowed while another thread holds
    // a global-mode capture (which that call would otherwise invalidate;
    // see internal_event_query()).
    if (cu().cuThreadExchangeStreamCaptureMode) {
        CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
        cu().cuThreadExchangeStreamCaptureMode(&mode);
    }
    std::unique_lock<std::mutex> lk(n->mu);
    for (;;) {
        Lane *lane = nullptr;
        for (int dev = 0; dev < n->ndevices && !lane; ++dev) {
            DeviceLanes &d = n->devices[dev];
            if (!d.lanes_queued || d.inflight >= n->max_inflight) continue;
            for (uint32_t i = 0; i < d.count && !lane; ++i)
                if (d.lane[i]->queued) lane = d.lane[i];
        }
        if (!lane) {
            if (n->pump_stop) return nullptr;
            n->pump_cv.wait(lk);
            continue;
        }
        Watch *batch = lane->queued;
        lane->queued = lane->queued_tail = nullptr;
        DeviceLanes &d = n->devices[lane->device];
        --d.lanes_queued;
        bool callbacks = false;
        for (Watch *w = batch; w && !callbacks; w = w->next) callbacks = is_callback(w);
        // Callbacks only while none of the device's runs on the driver's
        // thread (none in flight): a device's callbacks run one at a time.
        const bool may_deliver_here = !callbacks || d.inflight == 0;
        ++d.inflight;
        lk.unlock();
        // A batch whose lane is idle (its waits are done, and so is every
        // host function launched on the lane before: the order holds) is
        // delivered here, with no host function: the driver's thread would
        // have to be woken for it, which costs as much again (short work
        // completes before the pump gets to its watch).
        if (may_deliver_here && cu().cuStreamQuery(lane->cu) == CUDA_SUCCESS) {
            deliver(batch);
        } else {
            const CUresult res = cu().cuLaunchHostFunc(lane->cu, deliver, batch);
            // Refused (the context is broken): delivered at once, so that no
            // waiter hangs; the event's own query then reports the failure.
            if (res != CUDA_SUCCESS) deliver(batch);
        }
        lk.lock();
    }
}

// A lane of the device for one more watch, counted in its pending, if one
// can be had without making a lane: one with nothing pending, else (every
// lane allowed made or being made) the one with the fewest pending watches.
// Null when a lane is to be made or waited for. The caller holds n->mu.
Lane *pick_lane(Notifier *n, DeviceLanes &d) {
    Lane *best = nullptr;
    for (uint32_t i = 0; i < d.count; ++i)
        if (!best || d.lane[i]->pending < best->pending) best = d.lane[i];
    if (!best || (best->pending && d.count + d.creating < n->max_lanes)) return nullptr;
    ++best->pending;
    return best;
}

// pick_lane, making a lane (outside the mutex) when pick_lane has none, or
// waiting for one being made when every lane allowed is.
// A new lane of the device: its internal stream made.
evx_status_t make_lane(const char *fn, int device, std::unique_ptr<Lane> *out) {
    std::unique_ptr<Lane> lane(new (std::nothrow) Lane);
    if (!lane) return fail(EVX_ERROR_OUT_OF_MEMORY, "%s: out of memory", fn);
    lane->device = device;
    ContextGuard guard;
    evx_status_t st = guard.enter(fn, device);
    if (st) return st;
    const CUresult res = cu().cuStreamCreateWithPriority(&lane->cu, CU_STREAM_NON_BLOCKING, 0);
    if (res != CUDA_SUCCESS)
        return driver_failed(res, fn, "cuStreamCreateWithPriority",
                             "an internal stream of the notifier, device %d", device);
    st = guard.leave(fn, "the internal stream it made is destroyed again");
    if (st) {
        cu().cuStreamDestroy(lane->cu);
        return st;
    }
    *out = std::move(lane);
    return 0;
}

evx_status_t take_lane(const char *fn, Notifier *n, int device, Lane **out) {
    DeviceLanes &d = n->devices[device];
    std::unique_lock<std::mutex> lk(n->mu);
    for (;;) {
        if ((*out = pick_lane(n, d)) != nullptr) return 0;
        if (d.count + d.creating < n->max_lanes) break;
        n->lane_made.wait(lk);  // every lane allowed is being made
    }
    ++d.creating;
    lk.unlock();
    std::unique_ptr<Lane> lane;
    const evx_status_t st = make_lane(fn, device, &lane);
    lk.lock();
    --d.creating;
    if (!st) {
        lane->pending = 1;
        *out = lane.get();
        d.lane[d.count++] = lane.release();
    }
    n->lane_made.notify_all();
    return st;
}

// Queues a watch whose wait is made on its lane, for the pump to launch;
// the caller holds n->mu. False when the pump cannot be started (the watch
// is then launched by the call itself, which may then wait for GPU work).
bool queue_for_pump(Notifier *n, DeviceLanes &d, Lane *lane, Watch *w) {
    if (!n->pump_started) {
        if (pthread_create(&n->pump, nullptr, pump_main, n) != 0) return false;
        n->pump_started = true;
    }
    if (!lane->queued) {
        lane->queued = w;
        ++d.lanes_queued;
    } else {
        lane->queued_tail->next = w;
    }
    lane->queued_tail = w;
    // Wake the pump only if it can launch now. At the cap it could not:
    // deliver() wakes it when a host function ends, and waking it per
    // watch would cost a futex wake and a pump turn each.
    if (d.inflight < n->max_inflight) n->pump_cv.notify_one();
    return true;
}

// What a fence watch waits for (evx_notifier_watch_fence): a stream wait on
// the fence's word in place of the event's cuStreamWaitEvent.
struct ValueWait {
    int device;
    bool reached;  // the counter is there already
    CUdeviceptr addr;
    uint64_t value;
    Fence *fence;          // told which internal stream waits (reclamation)
    const void *notifier;  // the notifier's handle
};

// Makes the lane's internal stream wait for the event's record (or the
// fence's value).
evx_status_t wait_on_lane(const char *fn, Lane *lane, int device, const void *eh, Event *e,
                          const ValueWait *vw) {
    if (vw) {
        const CUresult res =
            cu().cuStreamWaitValue64(lane->cu, vw->addr, vw->value, CU_STREAM_WAIT_VALUE_GEQ);
        if (res != CUDA_SUCCESS)
            return driver_failed(res, fn, "cuStreamWaitValue64",
                                 "an internal stream of device %d, fence 0x%" PRIx64
                                 ", value %" PRIu64,
                                 device, handle_value(eh), vw->value);
        fence_track_lane(vw->fence, vw->notifier, lane->cu);
        return 0;
    }
    const CUresult res =
        cu().cuStreamWaitEvent(lane->cu, e->cu.load(std::memory_order_acquire), 0);
    if (res != CUDA_SUCCESS)
        return driver_failed(res, fn, "cuStreamWaitEvent",
                             "an internal stream of device %d, event 0x%" PRIx64, e->device,
                             handle_value(eh));
    return 0;
}

// Hands the watch to the pump, or launches its host function here if the
// pump cannot be made. On failure w is still the caller's.
evx_status_t launch_watch(const char *fn, Notifier *n, int device, Lane *lane, Watch *w) {
    w->lane = lane;
    bool launch;
    {
        // The pump launches every host function: cuLaunchHostFunc can
        // wait for GPU work (see the top of the file), and the caller
        // must not. At once here only if the pump cannot be made.
        std::lock_guard<std::mutex> lk(n->mu);
        DeviceLanes &d = n->devices[device];
        launch = !queue_for_pump(n, d, lane, w);
        if (launch) ++d.inflight;
    }
    if (!launch) return 0;
    const CUresult res = cu().cuLaunchHostFunc(lane->cu, deliver, w);
    if (res == CUDA_SUCCESS) return 0;
    std::lock_guard<std::mutex> lk(n->mu);
    DeviceLanes &d = n->devices[device];
    --d.inflight;
    if (d.lanes_queued) n->pump_cv.notify_one();
    return driver_failed(res, fn, "cuLaunchHostFunc", "an internal stream of device %d", device);
}

// What a watch of an event finds before it locks: complete already (never
// recorded in this life, or the driver says so), else the driver's answer
// (NOT_READY, or a failure that the watch reports).
struct Seen {
    bool complete;
    CUresult q;  // NOT_READY where no query was made
};

inline Seen observe(Event *e) {
    if (!e->recorded.load(std::memory_order_acquire)) return {true, CUDA_ERROR_NOT_READY};
    const CUresult q = internal_event_query(e->cu.load(std::memory_order_acquire));
    return {q == CUDA_SUCCESS, q};
}

// The token of a watch of e, with the failures of host functions the
// event's last record covers: the token's reader may ask for them
// (evx_notifier_read_checked).
inline Queued token_of(Event *e, uint64_t token) {
    Queued tq{token, e->hf_id.load(std::memory_order_acquire), 0, e->device};
    if (tq.hf_id) tq.hf_ticket = e->hf_ticket.load(std::memory_order_relaxed);
    return tq;
}

evx_status_t closed_failed(const char *fn, const void *nh) __attribute__((cold, noinline));
evx_status_t closed_failed(const char *fn, const void *nh) {
    return fail(EVX_ERROR_INVALID_HANDLE, "%s: notifier 0x%" PRIx64 " is being destroyed", fn,
                handle_value(nh));
}

evx_status_t no_token_room(const char *fn) __attribute__((cold, noinline));
evx_status_t no_token_room(const char *fn) {
    return fail(EVX_ERROR_OUT_OF_MEMORY, "%s: out of memory for the token queue", fn);
}

// A token watch of an event complete already: its token is queued by the
// call itself, under ring_mu alone (watch() does the same under the
// mutex too).
inline evx_status_t watch_complete(const char *fn, const void *nh, Notifier *n, Event *e,
                                   uint64_t token) {
    const Queued tq = token_of(e, token);
    std::lock_guard<FutexLock> rl(n->ring_mu);
    if (__builtin_expect(n->closed, 0)) return closed_failed(fn, nh);
    if (__builtin_expect(!reserve_token(n), 0)) return no_token_room(fn);
    push_token(n, tq);
    return 0;
}

// The watch of the public calls, the notifier and event (or fence) held by
// hazards; `seen`: whether the event was observed already (observe()), and
// what that found, for an event found not complete. It takes the
// notifier's mutex twice when a lane is free: to count the watch (and take
// its lane), and to queue it for the pump.
evx_status_t watch(const char *fn, const void *nh, Notifier *n, const void *eh, Event *e,
                   uint64_t token, evx_notify_fn_t cb, void *user_data,
                   const ValueWait *vw = nullptr, evx_notify_status_fn_t scb = nullptr,
                   bool seen = false, CUresult seen_q = CUDA_ERROR_NOT_READY) {
    const bool callback = cb != nullptr || scb != nullptr;
    const int device = vw ? vw->device : e->device;
    // Complete already (a fence's value reached): nothing to wait for.
    const Seen at = vw     ? Seen{vw->reached, CUDA_ERROR_NOT_READY}
                    : seen ? Seen{false, seen_q}
                           : observe(e);
    const bool complete = at.complete;
    // A token, or a callback given the status, tells the failures.
    const Queued tq = e && !cb ? token_of(e, token) : Queued{token, 0, 0, -1};
    Lane *lane = nullptr;
    {
        std::lock_guard<std::mutex> lk(n->mu);
        if (n->closed) return closed_failed(fn, nh);
        if (!complete && at.q != CUDA_ERROR_NOT_READY)
            return driver_failed(at.q, fn, "cuEventQuery", "event 0x%" PRIx64, handle_value(eh));
        if (!callback) {
            std::lock_guard<FutexLock> rl(n->ring_mu);
            if (!reserve_token(n)) return no_token_room(fn);
            if (complete) {  // a token is delivered by the call itself
                push_token(n, tq);
                return 0;
            }
        }
        ++n->pending;
        lane = pick_lane(n, n->devices[device]);
    }
    evx_status_t st = 0;
    std::unique_ptr<Watch> w(new (std::nothrow) Watch{n, nullptr, tq, cb, user_data});
    if (!w) st = fail(EVX_ERROR_OUT_OF_MEMORY, "%s: out of memory", fn);
    else w->sfn = scb;
    if (!st && !lane) st = take_lane(fn, n, device, &lane);
    if (!st && !complete) st = wait_on_lane(fn, lane, device, eh, e, vw);
    if (!st) st = launch_watch(fn, n, device, lane, w.get());
    if (!st) {
        w.release();  // the pump's or the driver's now: deliver() frees it
        return 0;
    }
    w.reset();
    std::lock_guard<std::mutex> lk(n->mu);
    if (lane) --lane->pending;
    if (!callback) {
        std::lock_guard<FutexLock> rl(n->ring_mu);
        --n->reserved;
    }
    end_pending(n);
    return st;
}

// The watch of a token watch that found its event not complete (or the
// query failing): the general watch, told what was found.
evx_status_t watch_token_pending(const char *fn, const void *nh, Notifier *n, const void *eh,
                                 Event *e, uint64_t token, CUresult q)
    __attribute__((noinline));
evx_status_t watch_token_pending(const char *fn, const void *nh, Notifier *n, const void *eh,
                                 Event *e, uint64_t token, CUresult q) {
    return watch(fn, nh, n, eh, e, token, nullptr, nullptr, nullptr, nullptr, true, q);
}

// evx_notifier_watch(): the watch of an event complete already is the
// first branch (watch_complete()). noexcept, as the hot calls (scope.hpp).
evx_status_t watch_token(evx_notifier_t notifier, evx_event_t event, uint64_t token) noexcept {
    static const char fn[] = "evx_notifier_watch";
    HandleScope scope;
    Slot *sn = nullptr, *se = nullptr;
    const evx_status_t st =
        scope.lookup2(fn, notifier, kNotifier, "notifier", &sn, event, kEvent, "event", &se);
    if (st) return st;
    Notifier *n = static_cast<Notifier *>(sn->obj);
    const Seen seen = observe(&se->event);
    if (__builtin_expect(seen.complete, 1))
        return watch_complete(fn, notifier, n, &se->event, token);
    return watch_token_pending(fn, notifier, n, event, &se->event, token, seen.q);
}

template <class Use>
evx_status_t with_notifier(const char *fn, evx_notifier_t notifier, Use use) {
    return with_live(fn, notifier, kNotifier, "notifier",
                     [&use](Slot &s) { return use(static_cast<Notifier *>(s.obj)); });
}

evx_status_t notifier_free(ThreadRecord *, void *obj) {
    Notifier *n = static_cast<Notifier *>(obj);
    CUresult first = CUDA_SUCCESS;
    for (int d = 0; d < n->ndevices; ++d) {
        for (uint32_t i = 0; i < n->devices[d].count; ++i) {
            Lane *lane = n->devices[d].lane[i];
            ContextGuard guard;
            guard.enter(nullptr, d);  // destroy all the same on failure
            const CUresult res = cu().cuStreamDestroy(lane->cu);
            if (first == CUDA_SUCCESS) first = res;
            delete lane;
        }
    }
    delete[] n->devices;
    close(n->fd);
    std::free(n->ring);
    delete n;
    return first;
}

const FreeHookEntry kNotifierFree(kNotifier, notifier_free);

}  // namespace

}  // namespace evx

using namespace evx;

extern "C" {

EVX_API evx_status_t evx_notifier_create(const evx_notifier_options_t *options,
                                         evx_notifier_t *notifier) {
    static const char fn[] = "evx_notifier_create";
    if (!notifier)
        return fail(EVX_ERROR_INVALID_VALUE, "%s: notifier (the out-pointer) is NULL", fn);
    *notifier = nullptr;
    // Fields past the caller's struct_size keep these defaults (zero).
    evx_notifier_options_t o{};
    if (options) {
        const evx_status_t sized = sized_in(fn, kOptionsType, options, &o);
        if (sized) return sized;
    }
    if (o.flags != EVX_NOTIFIER_DEFAULT)
        return fail(EVX_ERROR_INVALID_VALUE,
                    "%s: options->flags 0x%x has unknown bits (known: none; pass "
                    "EVX_NOTIFIER_DEFAULT 0x0)",
                    fn, o.flags);
    if (o.max_streams_per_device > EVX_NOTIFIER_MAX_STREAMS)
        return fail(EVX_ERROR_INVALID_VALUE,
                    "%s: options->max_streams_per_device %u exceeds "
                    "EVX_NOTIFIER_MAX_STREAMS (%d)",
                    fn, o.max_streams_per_device, EVX_NOTIFIER_MAX_STREAMS);
    const uint32_t max_lanes =
        o.max_streams_per_device ? o.max_streams_per_device : EVX_NOTIFIER_DEFAULT_STREAMS;
    evx_status_t st = ensure_driver(fn);
    ThreadRecord *r = nullptr;
    if (!st) st = enter_thread(&r);
    if (st) return st;
    const int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd < 0)
        return fail(EVX_ERROR_OUT_OF_MEMORY, "%s: eventfd failed: %s", fn, std::strerror(errno));
    // The handle's (and the notifier's devices) once published.
    std::unique_ptr<Notifier> n(new (std::nothrow) Notifier);
    std::unique_ptr<DeviceLanes[]> devices(new (std::nothrow) DeviceLanes[g_driver.device_count]);
    uint32_t index = 0;
    st = n && devices ? slot_alloc(r, fn, &index)
                      : fail(EVX_ERROR_OUT_OF_MEMORY, "%s: out of memory", fn);
    if (st) {
        close(fd);
        return st;
    }
    n->fd = fd;
    n->max_lanes = max_lanes;
    n->max_inflight = max_lanes < kInflightMin   ? kInflightMin
                      : max_lanes > kInflightMax ? kInflightMax
                                                 : max_lanes;
    n->devices = devices.release();
    n->ndevices = g_driver.device_count;
    *notifier = reinterpret_cast<evx_notifier_t>(
        static_cast<uintptr_t>(publish(index, kNotifier, n.release())));
    return EVX_SUCCESS;
}

EVX_API evx_status_t evx_notifier_destroy(evx_notifier_t notifier) {
    static const char fn[] = "evx_notifier_destroy";
    if (t_delivering)
        return fail(EVX_ERROR_NOT_PERMITTED,
                    "%s: called from a notifier callback, which would wait for itself "
                    "(notifier 0x%" PRIx64 " is left alive)",
                    fn, handle_value(notifier));
    ThreadRecord *r = nullptr;
    evx_status_t st = enter_thread(&r);
    if (st) return st;
    Slot *s = nullptr;
    st = unpublish(notifier, kNotifier, fn, "notifier", &s);
    if (st) return st;
    Notifier *n = static_cast<Notifier *>(s->obj);
    {
        // Calls that passed the handle check before it died either counted
        // themselves in pending or will see `closed`.
        std::unique_lock<std::mutex> lk(n->mu);
        {
            std::lock_guard<FutexLock> rl(n->ring_mu);
            n->closed = true;
        }
        n->idle.wait(lk, [n] { return n->pending == 0; });
        n->pump_stop = true;
        n->pump_cv.notify_one();
    }
    if (n->pump_started) pthread_join(n->pump, nullptr);
    st = retire(r, notifier);
    if (st)
        return driver_failed(static_cast<CUresult>(st), fn, "cuStreamDestroy",
                             "an internal stream of notifier 0x%" PRIx64
                             "; the handle is dead all the same",
                             handle_value(notifier));
    return EVX_SUCCESS;
}

EVX_API evx_status_t evx_notifier_get_fd(evx_notifier_t notifier, int *fd) {
    static const char fn[] = "evx_notifier_get_fd";
    if (!fd) return fail(EVX_ERROR_INVALID_VALUE, "%s: fd (the out-pointer) is NULL", fn);
    return with_notifier(fn, notifier, [fd](Notifier *n) {
        *fd = n->fd;
        return EVX_SUCCESS;
    });
}

EVX_API evx_status_t evx_notifier_watch(evx_notifier_t notifier, evx_event_t event,
                                        uint64_t token) {
    return watch_token(notifier, event, token);
}

EVX_API evx_status_t evx_notifier_watch_callback(evx_notifier_t notifier, evx_event_t event,
                                                 evx_notify_fn_t cb, void *user_data) {
    static const char fn[] = "evx_notifier_watch_callback";
    if (!cb) return fail(EVX_ERROR_INVALID_VALUE, "%s: fn (the callback) is NULL", fn);
    return with_live2(fn, notifier, kNotifier, "notifier", event, kEvent, "event",
                      [&](Slot &sn, Slot &se) {
                          return watch(fn, notifier, static_cast<Notifier *>(sn.obj), event,
                                       &se.event, 0, cb, user_data);
                      });
}

EVX_API evx_status_t evx_notifier_watch_callback_status(evx_notifier_t notifier,
                                                        evx_event_t event,
                                                        evx_notify_status_fn_t cb,
                                                        void *user_data) {
    static const char fn[] = "evx_notifier_watch_callback_status";
    if (!cb) return fail(EVX_ERROR_INVALID_VALUE, "%s: fn (the callback) is NULL", fn);
    return with_live2(fn, notifier, kNotifier, "notifier", event, kEvent, "event",
                      [&](Slot &sn, Slot &se) {
                          return watch(fn, notifier, static_cast<Notifier *>(sn.obj), event,
                                       &se.event, 0, nullptr, user_data, nullptr, cb);
                      });
}

// Both fence watches: a token (cb == nullptr) or a callback.
static evx_status_t watch_fence(const char *fn, evx_notifier_t notifier, evx_fence_t fence,
                                uint64_t value, uint64_t token, evx_notify_fn_t cb,
                                void *user_data) {
    if (value > EVX_FENCE_MAX_VALUE)
        return fail(EVX_ERROR_INVALID_VALUE,
                    "%s: value %" PRIu64 " is above EVX_FENCE_MAX_VALUE (2^63 - 1)", fn, value);
    return with_live2(fn, notifier, kNotifier, "notifier", fence, kFence, "fence",
                      [&](Slot &sn, Slot &sf) {
                          Fence *f = static_cast<Fence *>(sf.obj);
                          const bool reached = fence_value(f) >= value;
                          if (!reached) fence_mark_used(f);
                          const ValueWait vw{f->device, reached, f->dptr, value, f, notifier};
                          return watch(fn, notifier, static_cast<Notifier *>(sn.obj), fence,
                                       nullptr, token, cb, user_data, &vw);
                      });
}

EVX_API evx_status_t evx_notifier_watch_fence(evx_notifier_t notifier, evx_fence_t fence,
                                              uint64_t value, uint64_t token) {
    return watch_fence("evx_notifier_watch_fence", notifier, fence, value, token, nullptr,
                       nullptr);
}

EVX_API evx_status_t evx_notifier_watch_fence_callback(evx_notifier_t notifier,
                                                       evx_fence_t fence, uint64_t value,
                                                       evx_notify_fn_t cb, void *user_data) {
    static const char fn[] = "evx_notifier_watch_fence_callback";
    if (!cb) return fail(EVX_ERROR_INVALID_VALUE, "%s: fn (the callback) is NULL", fn);
    return watch_fence(fn, notifier, fence, value, 0, cb, user_data);
}

// Both reads: takes up to capacity tokens, oldest first; checked: stops
// after a token whose watch covers an unreported host-function failure,
// which it reports.
static evx_status_t read_tokens(const char *fn, evx_notifier_t notifier, uint64_t *tokens,
                                uint32_t capacity, uint32_t *count, bool checked) {
    if (!count) return fail(EVX_ERROR_INVALID_VALUE, "%s: count (the out-pointer) is NULL", fn);
    *count = 0;
    if (!tokens) return fail(EVX_ERROR_INVALID_VALUE, "%s: tokens (the buffer) is NULL", fn);
    if (capacity == 0) return fail(EVX_ERROR_INVALID_VALUE, "%s: capacity is 0", fn);
    return with_notifier(fn, notifier, [&](Notifier *n) {
        std::lock_guard<FutexLock> rl(n->ring_mu);
        const size_t most = n->count < capacity ? n->count : capacity;
        size_t k = 0;
        evx_status_t st = EVX_SUCCESS;
        while (k < most) {
            const Queued &q = n->ring[(n->head + k) & (n->cap - 1)];
            tokens[k++] = q.token;
            if (checked && (st = host_failure_check(fn, q.hf_id, q.hf_ticket, q.device)) != 0) break;
        }
        if (k > 0) {
            n->head = (n->head + k) & (n->cap - 1);
            n->count -= k;
            if (n->count == 0) {  // the descriptor stops being readable
                uint64_t v;
                if (read(n->fd, &v, sizeof v) < 0) {
                    // EAGAIN cannot happen: the counter is nonzero here.
                }
            }
        }
        *count = static_cast<uint32_t>(k);
        return st;
    });
}

EVX_API evx_status_t evx_notifier_read(evx_notifier_t notifier, uint64_t *tokens,
                                       uint32_t capacity, uint32_t *count) {
    return read_tokens("evx_notifier_read", notifier, tokens, capacity, count, false);
}

EVX_API evx_status_t evx_notifier_read_checked(evx_notifier_t notifier, uint64_t *tokens,
                                               uint32_t capacity, uint32_t *count) {
    return read_tokens("evx_notifier_read_checked", notifier, tokens, capacity, count, true);
}

EVX_API evx_status_t evx_notifier_get_counts(evx_notifier_t notifier, uint64_t *pending,
                                             uint64_t *queued) {
    static const char fn[] = "evx_notifier_get_counts";
    if (!pending && !queued)
        return fail(EVX_ERROR_INVALID_VALUE, "%s: pending and queued are both NULL", fn);
    return with_notifier(fn, notifier, [&](Notifier *n) {
        std::lock_guard<std::mutex> lk(n->mu);
        std::lock_guard<FutexLock> rl(n->ring_mu);
        if (pending) *pending = n->pending;
        if (queued) *queued = n->count;
        return EVX_SUCCESS;
    });
}

}  // extern "C"
