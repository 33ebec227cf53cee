// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Reclaiming a destroyed fence's memory (docs/fences.md, "Destroying a
// fence"). Every operation evx queues on a fence's counter is queued on a
// stream whose handle the fence tracks (fence_track()). When the fence is
// freed its memory goes to a list here; the next fence call marks each
// tracked stream that is still live with an event recorded after what it
// queued, and a later call frees the memory once every mark completed.
// Nothing here waits for the GPU: destroy never blocks.
//
// The marks are made at a later fence call rather than by the free itself,
// because a free may run inside another call's release of its hazards
// (reclaim.cpp), where a lookup of the stream handles must not start. By
// then the fence's handle is dead and no call holds it, so the tracked
// streams are final; an event recorded later still follows them in stream
// order. A notifier's watch waits on an internal stream of the notifier,
// tracked with the notifier's handle: marked while the notifier lives,
// and needing no mark once it is destroyed (its destroy waited for every
// watch). What cannot be marked (a stream destroyed before the mark, a
// per-thread default stream, more than Fence::kTrack streams) is kept for
// the life of the process and counted (evx_fence_reclaim()).
#include <sched.h>

#include <mutex>
#include <new>
#include <vector>

#include "driver.hpp"
#include "error.hpp"
#include "evx/fence.h"
#include "fence.hpp"
#include "scope.hpp"
#include "stream_object.hpp"

namespace evx {

namespace {

struct Deferred {
    int device;
    bool ipc;
    bool marked;  // events recorded on every tracked stream
    void *mem;    // the word (cuMemHostAlloc) or the registered page
    int n;
    const void *streams[Fence::kTrack];  // stream handles, or notifier handles
    CUstream lanes[Fence::kTrack];       // a notifier's internal stream, or null
    CUevent events[Fence::kTrack];
};

std::mutex g_mu;  // guards g_list; no handle lookup is made under it
std::vector<Deferred> &list() {
    static auto *l = new std::vector<Deferred>;  // never destroyed: used at exit
    return *l;
}
std::atomic<size_t> g_count{0};   // list().size()
std::atomic<uint64_t> g_kept{0};  // memory kept for the life of the process

// An event recorded on `cs` with its context current (entered: the
// status of making it current): *ev, or false.
bool record_mark(evx_status_t entered, CUstream cs, CUevent *ev) {
    if (entered || cu().cuEventCreate(ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) return false;
    if (cu().cuEventRecord(*ev, cs) == CUDA_SUCCESS) return true;
    cu().cuEventDestroy(*ev);
    return false;
}

// The mark of tracked entry i: an event in *ev; nullptr when nothing needs
// one (a notifier destroyed since: its destroy waited for its watches).
// False if a stream is gone or the driver refuses.
bool mark_one(const Deferred &d, int i, CUevent *ev) {
    static const char fn[] = "evx_fence_destroy";
    HandleScope scope;
    Slot *slot = nullptr;
    *ev = nullptr;
    if (d.lanes[i]) {
        if (scope.lookup(fn, d.streams[i], kNotifier, "notifier", &slot) != 0) return true;
        ContextGuard guard;  // lanes are streams of the primary context
        return record_mark(guard.enter(nullptr, d.device), d.lanes[i], ev);
    }
    if (scope.lookup(fn, d.streams[i], kStream, "stream", &slot) != 0) return false;
    const Stream *s = static_cast<const Stream *>(slot->obj);
    ContextGuard guard;
    const evx_status_t st = s->default_stream ? guard.enter(nullptr, s->device)
                                              : guard.enter_context(nullptr, s->ctx, s->device);
    return record_mark(st, s->cu, ev);
}

// Records an event on each tracked stream of d (no lock held); false if a
// stream is gone or the driver refuses (its events are then destroyed).
bool mark(Deferred &d) {
    bool ok = true;
    int i = 0;
    for (; i < d.n && ok; ++i) ok = mark_one(d, i, &d.events[i]);
    if (!ok)
        for (int j = 0; j < i - 1; ++j)
            if (d.events[j]) cu().cuEventDestroy(d.events[j]);
    return ok;
}

// Whether every mark of d completed; *gone when one never will be known.
bool completed(const Deferred &d, bool *gone) {
    for (int i = 0; i < d.n; ++i) {
        if (!d.events[i]) continue;
        const CUresult r = cu().cuEventQuery(d.events[i]);
        if (r == CUDA_ERROR_NOT_READY) return false;
        if (r != CUDA_SUCCESS) *gone = true;
    }
    return true;
}

void release(Deferred &d, bool free_mem) {
    for (int i = 0; i < d.n; ++i)
        if (d.events[i]) cu().cuEventDestroy(d.events[i]);
    if (!free_mem) return;
    if (d.ipc)
        fence_ipc_unmap(d.device, d.mem);
    else
        cu().cuMemFreeHost(d.mem);
}

// Frees what completed; under g_mu.
void poll_locked() {
    std::vector<Deferred> &l = list();
    for (size_t i = 0; i < l.size();) {
        bool gone = false;
        if (!l[i].marked || !completed(l[i], &gone)) {
            ++i;
            continue;
        }
        // A mark that failed (the context was reset): the GPU's state is
        // unknown, so the memory is kept.
        release(l[i], !gone);
        if (gone) g_kept.fetch_add(1, std::memory_order_relaxed);
        l[i] = l.back();
        l.pop_back();
    }
    g_count.store(l.size(), std::memory_order_relaxed);
}

}  // namespace

namespace {

void track(Fence *f, const void *h, CUstream lane) {
    while (f->track_mu.exchange(true, std::memory_order_acquire)) sched_yield();
    bool found = false;
    for (int i = 0; i < f->ntracked && !found; ++i)
        found = f->tracked[i] == h && f->lanes[i] == lane;
    if (!found) {
        if (f->ntracked < Fence::kTrack) {
            f->lanes[f->ntracked] = lane;
            f->tracked[f->ntracked++] = h;
        } else {
            f->untracked.store(true, std::memory_order_relaxed);
        }
    }
    if (!lane) f->last_stream.store(h, std::memory_order_relaxed);
    f->track_mu.store(false, std::memory_order_release);
}

}  // namespace

void fence_track_slow(Fence *f, const void *stream) { track(f, stream, nullptr); }

void fence_track_lane(Fence *f, const void *notifier, CUstream lane) { track(f, notifier, lane); }

void fence_untrack(Fence *f) { f->untracked.store(true, std::memory_order_relaxed); }

void fence_defer_free(Fence *f, void *mem, bool ipc) {
    if (f->untracked.load(std::memory_order_relaxed)) {
        g_kept.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    Deferred d{};
    d.device = f->device;
    d.ipc = ipc;
    d.mem = mem;
    d.n = f->ntracked;
    for (int i = 0; i < d.n; ++i) {
        d.streams[i] = f->tracked[i];
        d.lanes[i] = f->lanes[i];
    }
    std::lock_guard<std::mutex> lk(g_mu);
    try {
        list().push_back(d);
    } catch (const std::bad_alloc &) {
        g_kept.fetch_add(1, std::memory_order_relaxed);  // no memory to remember it
        return;
    }
    g_count.store(list().size(), std::memory_order_relaxed);
}

namespace {

// One step: marks what is not marked yet (outside the lock: the lookups
// may free fences, which come back here), then frees what completed.
// block: wait for the lock (evx_fence_reclaim) rather than leave the step
// to another thread.
void step(bool block) {
    std::unique_lock<std::mutex> lk(g_mu, std::defer_lock);
    if (block)
        lk.lock();
    else if (!lk.try_lock())
        return;
    std::vector<Deferred> todo;
    std::vector<Deferred> &l = list();
    for (size_t i = 0; i < l.size();) {
        if (l[i].marked) {
            ++i;
            continue;
        }
        try {
            todo.push_back(l[i]);
        } catch (const std::bad_alloc &) {
            break;  // marked at a later step
        }
        l[i] = l.back();
        l.pop_back();
    }
    lk.unlock();
    size_t kept = 0;
    for (Deferred &d : todo) {
        d.marked = mark(d);
        if (!d.marked) ++kept;
    }
    lk.lock();
    for (Deferred &d : todo) {
        if (!d.marked) continue;
        try {
            l.push_back(d);
        } catch (const std::bad_alloc &) {
            release(d, false);  // no memory to remember it: kept
            ++kept;
        }
    }
    if (kept) g_kept.fetch_add(kept, std::memory_order_relaxed);
    poll_locked();
}

}  // namespace

void fence_reclaim_step() {
    if (__builtin_expect(g_count.load(std::memory_order_relaxed) == 0, 1)) return;
    step(false);
}

}  // namespace evx

using namespace evx;

extern "C" {

EVX_API evx_status_t evx_fence_reclaim(uint64_t *pending, uint64_t *kept) {
    if (g_count.load(std::memory_order_relaxed) != 0) step(true);
    if (pending) *pending = g_count.load(std::memory_order_relaxed);
    if (kept) *kept = g_kept.load(std::memory_order_relaxed);
    return EVX_SUCCESS;
}

}  // extern "C"
