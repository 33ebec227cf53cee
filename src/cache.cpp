// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Reuse of driver events. A thread takes from and gives to its own stack
// per (device, flags) without a lock; a full stack moves its older half to
// the shared depot, an empty one refills from it before it calls
// cuEventCreate. An event is kept whether or not its former record's work
// has completed: the driver lets a record overwrite the state a former one
// captured, and evx answers for an event not yet recorded in its new life
// itself (see event.cpp and docs/design.md), so no driver query is needed
// before reuse.
#include "cache.hpp"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <new>
#include <vector>

#include "driver.hpp"
#include "evx/event.h"
#include "reclaim.hpp"

namespace evx {

namespace {

// Events per key. Creates take from the depot before they call the driver,
// so it holds no more driver events than the program had alive at once
// (beside the threads' stacks); the bound only caps that for a program
// whose peak was huge. A smaller one made a burst of creates after a burst
// of destroys (evx-bench's bulk rows: 20,000 of each) call cuEventCreate
// and cuEventDestroy for every event beyond it, evx's own work on top.
constexpr size_t kDepotMax = 65536;
constexpr uint32_t kRefill = kBucketSize / 2;

struct Depot {
    std::mutex mu;
    std::vector<CachedEvent> ev;
    std::atomic<size_t> n{0};  // ev.size(), read without the lock
};

std::once_flag g_depot_once;
Depot *g_depots = nullptr;  // device_count * 4, never freed


Depot *depot(int device, unsigned flags) {
    std::call_once(g_depot_once, [] {
        g_depots = new (std::nothrow) Depot[static_cast<size_t>(g_driver.device_count) * 4];
    });
    return g_depots ? &g_depots[bucket_key(device, flags)] : nullptr;
}

// Returns the first failure of cuEventDestroy (the event it refused stays
// the driver's; the others are destroyed all the same), else a failing pop
// of the guard (pop_failed).
Freed destroy_all(int device, const CachedEvent *ev, size_t n) {
    if (n == 0) return {};
    ContextGuard guard;
    guard.enter(nullptr, device);  // on failure destroy all the same
    CUresult first = CUDA_SUCCESS;
    for (size_t i = 0; i < n; ++i) {
        const CUresult r = cu().cuEventDestroy(ev[i].ev);
        if (first == CUDA_SUCCESS) first = r;
    }
    const evx_status_t popped = guard.leave(nullptr, nullptr);
    if (first == CUDA_SUCCESS && popped) return {static_cast<CUresult>(popped), true};
    return {first, false};
}

CacheBucket *bucket_slow(ThreadRecord *r, uint32_t key) {
    if (!r->buckets) {
        const uint32_t n = static_cast<uint32_t>(g_driver.device_count) * 4u;
        r->buckets = static_cast<CacheBucket **>(std::calloc(n, sizeof(CacheBucket *)));
        if (!r->buckets) return nullptr;
        r->nbuckets = n;
    }
    if (key >= r->nbuckets) return nullptr;
    CacheBucket *b = static_cast<CacheBucket *>(std::calloc(1, sizeof(CacheBucket)));
    r->buckets[key] = b;
    return b;
}

inline CacheBucket *bucket(ThreadRecord *r, int device, unsigned flags) {
    const uint32_t key = bucket_key(device, flags);
    if (__builtin_expect(key < r->nbuckets, 1)) {
        CacheBucket *b = r->buckets[key];
        if (__builtin_expect(b != nullptr, 1)) return b;
    }
    return bucket_slow(r, key);
}

// Moves events to the depot; what does not fit is destroyed.
void to_depot(int device, unsigned flags, const CachedEvent *ev, uint32_t n) {
    Depot *d = depot(device, flags);
    uint32_t moved = 0;
    if (d) {
        std::lock_guard<std::mutex> lock(d->mu);
        try {
            while (moved < n && d->ev.size() < kDepotMax) d->ev.push_back(ev[moved++]);
        } catch (const std::bad_alloc &) {
        }
        d->n.store(d->ev.size(), std::memory_order_relaxed);
    }
    destroy_all(device, ev + moved, n - moved);
}

bool refill(CacheBucket *b, int device, unsigned flags) {
    Depot *d = depot(device, flags);
    if (!d || d->n.load(std::memory_order_relaxed) == 0) return false;
    std::lock_guard<std::mutex> lock(d->mu);
    while (b->n < kRefill && !d->ev.empty()) {
        b->ev[b->n++] = d->ev.back();
        d->ev.pop_back();
    }
    d->n.store(d->ev.size(), std::memory_order_relaxed);
    return b->n > 0;
}

// Empties one of the thread's own stacks into `out` under its hold (for a
// driver call outside it); how many.
uint32_t take_all(ThreadRecord *r, CacheBucket *b, CachedEvent *out) {
    const OwnHold holding(r);
    const uint32_t n = b->n;
    for (uint32_t i = 0; i < n; ++i) out[i] = b->ev[i];
    b->n = 0;
    return n;
}

}  // namespace

evx_status_t create_driver_event(const char *fn, int device, unsigned flags, CUevent *out) {
    ContextGuard guard;
    evx_status_t st = guard.enter(fn, device);
    if (st) return st;
    const CUresult res = cu().cuEventCreate(out, flags);
    if (res != CUDA_SUCCESS)
        return driver_failed(res, fn, "cuEventCreate", "device %d, flags 0x%x", device, flags);
    st = guard.leave(fn, "the driver event it made is destroyed again");
    if (st) {
        cu().cuEventDestroy(*out);  // needs no current context: an event names its own
        *out = nullptr;
    }
    return st;
}

Freed destroy_driver_event(int device, CUevent ev) {
    const CachedEvent one{ev, false};
    return destroy_all(device, &one, 1);
}

// A thread's own stacks are used under its hold (own_enter(), thread.hpp):
// a trim on another thread destroys what they keep (cache_trim()). Driver
// calls are made outside the hold.

evx_status_t cache_take_slow(ThreadRecord *r, const char *fn, int device, unsigned flags,
                             CUevent *out, bool *former) {
    *former = false;
    if (flags & EVX_EVENT_INTERPROCESS) return create_driver_event(fn, device, flags, out);
    own_enter(r);
    CacheBucket *b = bucket(r, device, flags);
    if (__builtin_expect(b != nullptr, 1) &&
        (__builtin_expect(b->n > 0, 1) || refill(b, device, flags))) {
        const CachedEvent c = b->ev[--b->n];
        own_leave(r);
        *out = c.ev;
        *former = c.former;
        return 0;
    }
    own_leave(r);
    return create_driver_event(fn, device, flags, out);
}

void cache_give_slow(ThreadRecord *r, int device, unsigned flags, CUevent ev, bool former) {
    const CachedEvent c{ev, former};
    if (flags & EVX_EVENT_INTERPROCESS) {
        destroy_all(device, &c, 1);  // its IPC handle may have left the process
        return;
    }
    own_enter(r);
    CacheBucket *b = bucket(r, device, flags);
    if (__builtin_expect(b != nullptr && b->n < kBucketSize, 1)) {
        b->ev[b->n++] = c;
        own_leave(r);
        return;
    }
    // No stack, or a full one: it (or the stack's older half) goes to the
    // depot.
    CachedEvent spill[kBucketSize / 2 + 1];
    uint32_t n = 0;
    if (b == nullptr) {
        spill[n++] = c;
    } else {
        for (; n < kBucketSize / 2; ++n) spill[n] = b->ev[n];
        for (uint32_t i = 0; i < kBucketSize / 2; ++i) b->ev[i] = b->ev[i + kBucketSize / 2];
        b->n = kBucketSize / 2;
        b->ev[b->n++] = c;
    }
    own_leave(r);
    to_depot(device, flags, spill, n);
}

void cache_flush_thread(ThreadRecord *r) {
    for (uint32_t key = 0; key < r->nbuckets; ++key) {
        if (!r->buckets[key]) continue;
        CachedEvent ev[kBucketSize];
        const uint32_t n = take_all(r, r->buckets[key], ev);
        to_depot(static_cast<int>(key / 4), key % 4, ev, n);
    }
}

// Registered as the thread-exit stage after the handles' (thread.hpp).
const ExitHookEntry kCacheExit(kExitCaches, cache_flush_thread);

namespace {

// Destroys what a thread's stacks keep for a device; the first failure
// of destroy_all() (or CUDA_SUCCESS).
evx_status_t trim_stacks(ThreadRecord *r, int device) {
    evx_status_t first = CUDA_SUCCESS;
    for (unsigned flags = 0; flags < 4; ++flags) {
        const uint32_t key = bucket_key(device, flags);
        if (key < r->nbuckets && r->buckets[key]) {
            CacheBucket *b = r->buckets[key];
            // A failing pop of its own guard is not a refused event.
            const CUresult st = destroy_all(device, b->ev, b->n).work();
            b->n = 0;
            if (first == CUDA_SUCCESS) first = st;
        }
    }
    return first;
}

struct TrimOthers {
    int device;
    evx_status_t first;
};

// For steal_others(): another thread's collected destroys are freed into
// this thread's cache (or handed to their last holders), and what its
// stacks keep for the device is destroyed.
void trim_other(ThreadRecord *self, ThreadRecord *other, void *arg) {
    TrimOthers *t = static_cast<TrimOthers *>(arg);
    retire_take_over(self, other);
    const evx_status_t st = trim_stacks(other, t->device);
    if (t->first == CUDA_SUCCESS) t->first = st;
}

}  // namespace

evx_status_t cache_trim_others(ThreadRecord *r, int device) {
    // While this thread holds nothing of its own: what they collected lands
    // in this thread's stacks (or timers), destroyed by cache_trim().
    TrimOthers others{device, CUDA_SUCCESS};
    (void)steal_others(r, trim_other, &others);
    return others.first;
}

evx_status_t cache_trim(ThreadRecord *r, const char *fn, int device, evx_status_t others) {
    ContextGuard guard;
    evx_status_t st = guard.enter(fn, device);
    if (st) return st;
    evx_status_t first = others;
    for (unsigned flags = 0; flags < 4; ++flags) {
        // Pending work is allowed: the driver frees such an event once the
        // work completes.
        const uint32_t key = bucket_key(device, flags);
        evx_status_t r1 = CUDA_SUCCESS, r2 = CUDA_SUCCESS;
        if (key < r->nbuckets && r->buckets[key]) {
            CachedEvent ev[kBucketSize];
            const uint32_t n = take_all(r, r->buckets[key], ev);
            r1 = destroy_all(device, ev, n).work();
        }
        Depot *d = depot(device, flags);
        if (d) {
            std::lock_guard<std::mutex> lock(d->mu);
            r2 = destroy_all(device, d->ev.data(), d->ev.size()).work();
            d->ev.clear();
            d->ev.shrink_to_fit();
            d->n.store(0, std::memory_order_relaxed);
        }
        if (first == CUDA_SUCCESS) first = r1 != CUDA_SUCCESS ? r1 : r2;
    }
    // Every kept event is gone from the cache; one the driver refused to
    // destroy stays the driver's. (The guard above is current throughout:
    // destroy_all() pushes nothing of its own.)
    const evx_status_t popped = guard.leave(fn, "every kept driver event is destroyed");
    if (first != CUDA_SUCCESS)
        return driver_failed(static_cast<CUresult>(first), fn, "cuEventDestroy",
                             "device %d: a kept driver event was refused; the others are "
                             "destroyed and none is kept",
                             device);
    return popped;
}

}  // namespace evx
