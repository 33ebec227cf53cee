// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Reuse of driver events. A thread takes from and gives to its own bucket
// per (device, flags) without a lock. A bucket holds a stack of events known
// to be complete and a FIFO ring of events recorded in their former life:
// those are queried before reuse, oldest first, so a recorded event gets
// time to complete before anyone asks; while the oldest stays pending the
// bucket asks less and less often, so a thread that outruns its streams does
// not pay a query per create. A full stack moves half to the shared depot, a
// full ring moves its oldest; an empty bucket refills from the depot before
// it calls cuEventCreate.
#include "cache.hpp"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <new>
#include <vector>

#include "driver.hpp"
#include "evx/event.h"

namespace evx {

namespace {

constexpr size_t kDepotMax = 4096;         // idle events per key
constexpr size_t kDepotPendingMax = 256;   // maybe-pending events per key
constexpr uint32_t kRefill = kBucketSize / 2;
constexpr uint32_t kMaxBackoff = 64;

struct Depot {
    std::mutex mu;
    std::vector<CUevent> idle;    // complete
    std::deque<CUevent> pending;  // recorded, maybe not complete; oldest first
    // Sizes of the lists, read without the lock to skip an empty depot.
    std::atomic<size_t> idle_n{0};
    std::atomic<size_t> pending_n{0};

    void counted() {
        idle_n.store(idle.size(), std::memory_order_relaxed);
        pending_n.store(pending.size(), std::memory_order_relaxed);
    }
};

std::once_flag g_depot_once;
Depot *g_depots = nullptr;  // device_count * 4, never freed

inline uint32_t key_of(int device, unsigned flags) {
    return static_cast<uint32_t>(device) * 4u + (flags & 3u);
}

Depot *depot(int device, unsigned flags) {
    std::call_once(g_depot_once, [] {
        g_depots = new (std::nothrow) Depot[static_cast<size_t>(g_driver.device_count) * 4];
    });
    return g_depots ? &g_depots[key_of(device, flags)] : nullptr;
}

void destroy_all(int device, const CUevent *ev, size_t n) {
    if (n == 0) return;
    ContextGuard guard;
    guard.enter(nullptr, device);  // on failure destroy all the same
    for (size_t i = 0; i < n; ++i) cu().cuEventDestroy(ev[i]);
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
    const uint32_t key = key_of(device, flags);
    if (__builtin_expect(key < r->nbuckets, 1)) {
        CacheBucket *b = r->buckets[key];
        if (__builtin_expect(b != nullptr, 1)) return b;
    }
    return bucket_slow(r, key);
}

// Moves events to one of the depot's lists; what does not fit is destroyed
// (cuEventDestroy of an event with pending work is allowed: the driver
// frees it once the work completes).
void to_depot(int device, unsigned flags, const CUevent *ev, uint32_t n, bool pending) {
    Depot *d = depot(device, flags);
    uint32_t moved = 0;
    if (d) {
        std::lock_guard<std::mutex> lock(d->mu);
        try {
            if (pending) {
                while (moved < n && d->pending.size() < kDepotPendingMax)
                    d->pending.push_back(ev[moved++]);
            } else {
                while (moved < n && d->idle.size() < kDepotMax) d->idle.push_back(ev[moved++]);
            }
        } catch (const std::bad_alloc &) {
        }
        d->counted();
    }
    destroy_all(device, ev + moved, n - moved);
}

// After the oldest pending event answered NOT_READY: ask again only after
// more and more takes.
inline void back_off(CacheBucket *b) {
    b->backoff = b->backoff ? (b->backoff < kMaxBackoff ? b->backoff * 2 : kMaxBackoff) : 1;
    b->skip = b->backoff;
}

// A cheap clock for the sampled costs: only ratios of its readings matter.
inline uint64_t ticks() {
#if defined(__x86_64__)
    return __builtin_ia32_rdtsc();
#else
    return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
}

inline void average_in(uint32_t *avg, uint64_t sample) {
    const uint32_t s = sample > 0xFFFFFFFu ? 0xFFFFFFFu : static_cast<uint32_t>(sample);
    *avg = *avg ? *avg - (*avg >> 3) + (s >> 3) : s;
}

// One take from an empty stack in kSampleEvery is timed.
constexpr uint32_t kSampleEvery = 4;
// Once in kExploreEvery takes from an empty stack, the way not preferred is
// taken, to keep its cost current.
constexpr uint32_t kExploreEvery = 64;

inline CUevent pend_pop(CacheBucket *b) {
    const CUevent ev = b->pend[b->pend_head];
    b->pend_head = (b->pend_head + 1) % kPendingRing;
    --b->pend_n;
    return ev;
}

// Refills an empty stack from the depot: idle events first, then pending
// ones whose work has completed since, oldest first (asked only when the
// bucket is not backing off).
bool refill(CacheBucket *b, int device, unsigned flags, bool ask) {
    Depot *d = depot(device, flags);
    if (!d || (d->idle_n.load(std::memory_order_relaxed) == 0 &&
               (!ask || d->pending_n.load(std::memory_order_relaxed) == 0)))
        return false;
    std::lock_guard<std::mutex> lock(d->mu);
    while (b->n < kRefill && !d->idle.empty()) {
        b->ready[b->n++] = d->idle.back();
        d->idle.pop_back();
    }
    while (ask && b->n < kRefill && !d->pending.empty()) {
        const CUevent ev = d->pending.front();
        const CUresult q = cu().cuEventQuery(ev);
        if (q == CUDA_ERROR_NOT_READY) {
            back_off(b);
            break;
        }
        d->pending.pop_front();
        if (q == CUDA_SUCCESS)
            b->ready[b->n++] = ev;
        else
            cu().cuEventDestroy(ev);  // broken: never reused
    }
    d->counted();
    return b->n > 0;
}

}  // namespace

evx_status_t create_driver_event(const char *fn, int device, unsigned flags, CUevent *out) {
    ContextGuard guard;
    evx_status_t st = guard.enter(fn, device);
    if (st) return st;
    const CUresult res = cu().cuEventCreate(out, flags);
    if (res != CUDA_SUCCESS)
        return driver_failed(res, fn, "cuEventCreate", "device %d, flags 0x%x", device, flags);
    return 0;
}

void destroy_driver_event(int device, CUevent ev) { destroy_all(device, &ev, 1); }

evx_status_t cache_take(ThreadRecord *r, const char *fn, int device, unsigned flags,
                        CUevent *out) {
    if (flags & EVX_EVENT_INTERPROCESS) return create_driver_event(fn, device, flags, out);
    CacheBucket *b = bucket(r, device, flags);
    if (__builtin_expect(b == nullptr, 0)) return create_driver_event(fn, device, flags, out);
    if (__builtin_expect(b->n > 0, 1)) {
        *out = b->ready[--b->n];
        return 0;
    }
    // The oldest maybe-pending event has had the most time to complete, but
    // asking costs: cuEventQuery of a completed event that nobody has asked
    // about yet took about 1.1 us on an H200, against about 0.4 us for a
    // cuEventCreate plus a cuEventDestroy when one thread uses the driver,
    // and many microseconds for those when threads contend for its lock.
    // So each thread times both (sampled) and takes the cheaper way; once in
    // kExploreEvery takes it tries the other, so that both figures stay
    // current (a way not taken is never timed otherwise).
    const uint32_t tick = ++b->tick;
    const bool explore = tick % kExploreEvery == 0;
    const bool sample = explore || tick % kSampleEvery == 0;
    const bool prefer_asking = b->query_cost <= b->create_cost;
    bool ask = b->skip == 0 && prefer_asking != explore;
    if (b->skip) --b->skip;
    while (ask && b->pend_n > 0) {
        const CUevent ev = b->pend[b->pend_head];
        const uint64_t t0 = sample ? ticks() : 0;
        const CUresult q = cu().cuEventQuery(ev);
        if (sample) average_in(&b->query_cost, ticks() - t0);
        if (q == CUDA_ERROR_NOT_READY) {
            back_off(b);
            ask = false;
            break;
        }
        pend_pop(b);
        if (q == CUDA_SUCCESS) {
            b->backoff = 0;
            *out = ev;
            return 0;
        }
        destroy_driver_event(device, ev);  // broken: never reused
    }
    if (refill(b, device, flags, ask)) {
        *out = b->ready[--b->n];
        return 0;
    }
    if (!sample) return create_driver_event(fn, device, flags, out);
    const uint64_t t0 = ticks();
    const evx_status_t st = create_driver_event(fn, device, flags, out);
    average_in(&b->create_cost, ticks() - t0);
    return st;
}

void cache_give(ThreadRecord *r, int device, unsigned flags, CUevent ev, bool maybe_pending) {
    if (flags & EVX_EVENT_INTERPROCESS) {
        destroy_driver_event(device, ev);
        return;
    }
    CacheBucket *b = bucket(r, device, flags);
    if (__builtin_expect(b == nullptr, 0)) {
        to_depot(device, flags, &ev, 1, maybe_pending);
        return;
    }
    if (!maybe_pending) {
        if (__builtin_expect(b->n == kBucketSize, 0)) {
            // The older half goes to the depot.
            to_depot(device, flags, b->ready, kBucketSize / 2, false);
            for (uint32_t i = 0; i < kBucketSize / 2; ++i)
                b->ready[i] = b->ready[i + kBucketSize / 2];
            b->n = kBucketSize / 2;
        }
        b->ready[b->n++] = ev;
        return;
    }
    // A thread that finds creating cheaper than asking (one thread on an idle
    // driver: cuEventQuery of a completed, never-asked event costs more than
    // cuEventCreate plus cuEventDestroy) would only destroy the event later,
    // when the ring overflows; holding up to kPendingRing live events meanwhile
    // slows the driver's other calls (on an H200, one thread: 1.41 us per
    // create/record/query/destroy with each event destroyed at once, 1.99 to
    // 2.25 us with 16 to 1024 kept alive). So it destroys it now, as the raw
    // driver would, except once in kExploreEvery gives: those few keep the
    // ring stocked, so that the asking way is still timed now and then.
    if (b->create_cost != 0 && b->create_cost < b->query_cost &&
        ++b->gives % kExploreEvery != 0) {
        cu().cuEventDestroy(ev);  // pending work is allowed; no context needed
        return;
    }
    if (__builtin_expect(b->pend_n == kPendingRing, 0)) {
        // The oldest makes room. cuEventDestroy needs no current context and
        // may be given an event with pending work (the driver frees it when
        // the work completes).
        cu().cuEventDestroy(pend_pop(b));
    }
    b->pend[(b->pend_head + b->pend_n) % kPendingRing] = ev;
    ++b->pend_n;
}

namespace {

void flush_bucket(CacheBucket *b, int device, unsigned flags) {
    if (b->n > 0) to_depot(device, flags, b->ready, b->n, false);
    b->n = 0;
    CUevent pend[kPendingRing];
    uint32_t n = 0;
    while (b->pend_n > 0) pend[n++] = pend_pop(b);
    to_depot(device, flags, pend, n, true);
    b->skip = b->backoff = 0;
}

}  // namespace

void cache_flush_thread(ThreadRecord *r) {
    for (uint32_t key = 0; key < r->nbuckets; ++key)
        if (r->buckets[key]) flush_bucket(r->buckets[key], static_cast<int>(key / 4), key % 4);
}

evx_status_t cache_trim(ThreadRecord *r, const char *fn, int device) {
    ContextGuard guard;
    evx_status_t st = guard.enter(fn, device);
    if (st) return st;
    for (unsigned flags = 0; flags < 4; ++flags) {
        const uint32_t key = key_of(device, flags);
        if (key < r->nbuckets && r->buckets[key]) flush_bucket(r->buckets[key], device, flags);
        Depot *d = depot(device, flags);
        if (!d) continue;
        std::lock_guard<std::mutex> lock(d->mu);
        for (CUevent ev : d->idle) cu().cuEventDestroy(ev);
        d->idle.clear();
        // Events whose work is still pending stay; the rest are destroyed.
        size_t keep = 0;
        for (CUevent ev : d->pending) {
            if (cu().cuEventQuery(ev) == CUDA_ERROR_NOT_READY)
                d->pending[keep++] = ev;
            else
                cu().cuEventDestroy(ev);
        }
        d->pending.resize(keep);
        d->counted();
    }
    return 0;
}

}  // namespace evx
