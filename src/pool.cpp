// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Bounded event pools. A pool owns its driver events: idle ones, pending ones
// (released while their recorded work ran) and the ones handed out as evx
// events. The pool object lives while its handle or any event from it does.
#include <sched.h>

#include <cinttypes>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#include "cache.hpp"
#include "driver.hpp"
#include "error.hpp"
#include "event_state.hpp"
#include "evx/event.h"
#include "evx/pool.h"
#include "handle.hpp"
#include "pool.hpp"
#include "reclaim.hpp"
#include "scope.hpp"
#include "sized.hpp"

namespace evx {

struct Pool {
    std::mutex mu;
    std::atomic<uint32_t> refs{1};  // the handle, and one per event handed out
    int device = 0;
    unsigned flags = 0;
    uint32_t capacity = 0;
    bool closed = false;  // the handle was destroyed
    // Released events not yet scanned (pool_batch()): their slots, counted
    // in use until the scan frees them; a fixed batch, so that a release
    // allocates nothing. `draining`: the handle's destroy has scanned them
    // last; later releases are freed at once.
    uint32_t released[kRetireBatch];
    uint32_t nreleased = 0;
    bool draining = false;
    std::vector<CachedEvent> idle;  // former: recorded in an earlier use
    std::vector<CUevent> pending;   // recorded, maybe not complete
    uint32_t in_use = 0;
    uint64_t created_total = 0;
    uint64_t acquired_total = 0;
    uint64_t exhausted_total = 0;

    uint32_t held() const {
        return static_cast<uint32_t>(idle.size() + pending.size()) + in_use;
    }
};

namespace {

// The structs of pool.h as first published; see sized.hpp.
constexpr SizedType kOptionsType{"evx_event_pool_options_t", "options",
                                 offsetof(evx_event_pool_options_t, prewarm) + sizeof(uint32_t)};
constexpr SizedType kStatsType{"evx_event_pool_stats_t", "stats",
                               offsetof(evx_event_pool_stats_t, exhausted_total) +
                                   sizeof(uint64_t)};
static_assert(kOptionsType.first_size == 16, "pool.h publishes 16 bytes of options");
static_assert(kStatsType.first_size == 48, "pool.h publishes 48 bytes of stats");

void unref(Pool *p) {
    if (p->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete p;
}

// Moves pending events whose work has completed to the idle list. Locked.
void reap(Pool *p) {
    size_t keep = 0;
    for (CUevent ev : p->pending) {
        const CUresult q = internal_event_query(ev);
        if (q == CUDA_ERROR_NOT_READY) {
            p->pending[keep++] = ev;
        } else if (q == CUDA_SUCCESS) {
            try {
                p->idle.push_back(CachedEvent{ev, true});
            } catch (const std::bad_alloc &) {
                p->pending[keep++] = ev;
            }
        } else {
            destroy_driver_event(p->device, ev);  // broken: never handed out
        }
    }
    p->pending.resize(keep);
}

// Makes driver events until `want` are idle or the pool is full. Locked.
evx_status_t fill(Pool *p, const char *fn, uint32_t want) {
    while (p->idle.size() < want && p->held() < p->capacity) {
        CUevent ev;
        evx_status_t st = create_driver_event(fn, p->device, p->flags, &ev);
        if (st) return st;
        try {
            p->idle.push_back(CachedEvent{ev, false});
        } catch (const std::bad_alloc &) {
            destroy_driver_event(p->device, ev);
            return fail(EVX_ERROR_OUT_OF_MEMORY, "%s: out of memory", fn);
        }
        ++p->created_total;
    }
    return 0;
}

inline CUevent driver_event(CUevent ev) { return ev; }
inline CUevent driver_event(const CachedEvent &c) { return c.ev; }

// Returns the first refusal of the driver (that event stays the driver's),
// or a failing pop (destroy_driver_event()).
template <class Entry>
Freed destroy_list(Pool *p, std::vector<Entry> &list) {
    Freed first;
    for (const Entry &e : list) {
        const Freed r = destroy_driver_event(p->device, driver_event(e));
        if (first.res == CUDA_SUCCESS) first = r;
    }
    list.clear();
    return first;
}

// The status: CUDA_SUCCESS, or the first cuEventDestroy the driver refused
// (evx_event_pool_destroy reports it).
Freed pool_free(ThreadRecord *, void *obj) {
    Pool *p = static_cast<Pool *>(obj);
    Freed first;
    {
        std::lock_guard<std::mutex> lock(p->mu);
        p->closed = true;
        first = destroy_list(p, p->idle);
        const Freed second = destroy_list(p, p->pending);
        if (first.res == CUDA_SUCCESS) first = second;
    }
    unref(p);
    return first;
}

const FreeHookEntry kPoolFree(kPool, pool_free);

// Frees the pool's released events that no call holds (retire_scan(): one
// barrier, one look for them all); those a call holds go back to the pool
// as their last holder ends.
void pool_scan(ThreadRecord *r, Pool *p) {
    uint32_t index[kRetireBatch];
    uint32_t n;
    {
        std::lock_guard<std::mutex> lock(p->mu);
        n = p->nreleased;
        if (n == 0) return;
        std::memcpy(index, p->released, n * sizeof index[0]);
        p->nreleased = 0;
        // The frees may drop every other reference (a destroyed handle).
        p->refs.fetch_add(1, std::memory_order_relaxed);
    }
    uint32_t kept = retire_scan(r, index, n);
    // Held, and no memory to hand them to their holders: wait for those.
    while (kept > 0) {
        sched_yield();
        kept = retire_scan(r, index, kept);
    }
    unref(p);
}

}  // namespace

bool pool_batch(ThreadRecord *r, Pool *p, uint32_t index) {
    bool due;
    {
        std::lock_guard<std::mutex> lock(p->mu);
        // Full (another release's scan has not taken them yet): retire()
        // frees this one now.
        if (p->draining || p->nreleased == kRetireBatch) return false;
        p->released[p->nreleased++] = index;
        due = p->nreleased == kRetireBatch;
    }
    if (due) pool_scan(r, p);
    return true;
}

void pool_count_created(Pool *p) {
    std::lock_guard<std::mutex> lock(p->mu);
    ++p->created_total;
}

void pool_take_back(Pool *p, CUevent ev, bool maybe_pending, bool former) {
    {
        std::lock_guard<std::mutex> lock(p->mu);
        --p->in_use;
        bool kept = false;
        if (!p->closed) {
            const CUresult q = maybe_pending ? internal_event_query(ev) : CUDA_SUCCESS;
            try {
                if (q == CUDA_SUCCESS) {
                    p->idle.push_back(CachedEvent{ev, former});
                    kept = true;
                } else if (q == CUDA_ERROR_NOT_READY) {
                    p->pending.push_back(ev);
                    kept = true;
                }
            } catch (const std::bad_alloc &) {
            }
        }
        // A closed pool, a broken event, or no memory: the driver frees it
        // (once its work completes, if any is pending).
        if (!kept) destroy_driver_event(p->device, ev);
    }
    unref(p);
}

}  // namespace evx

using namespace evx;

extern "C" {

EVX_API evx_status_t evx_device_create_event_pool(int device,
                                                  const evx_event_pool_options_t *options,
                                                  evx_event_pool_t *pool) {
    static const char fn[] = "evx_device_create_event_pool";
    if (!pool) return fail(EVX_ERROR_INVALID_VALUE, "%s: pool (the out-pointer) is NULL", fn);
    *pool = nullptr;
    if (!options) return fail(EVX_ERROR_INVALID_VALUE, "%s: options is NULL", fn);
    // Fields past the caller's struct_size keep these defaults.
    evx_event_pool_options_t o;
    std::memset(&o, 0, sizeof o);
    evx_status_t st = sized_in(fn, kOptionsType, options, &o);
    if (st) return st;
    const unsigned flags = o.event_flags;
    const uint32_t capacity = o.capacity, prewarm = o.prewarm;
    st = check_event_flags(fn, flags);
    if (st) return st;
    if (flags & EVX_EVENT_INTERPROCESS)
        return fail(EVX_ERROR_INVALID_VALUE,
                    "%s: pools refuse EVX_EVENT_INTERPROCESS (event_flags 0x%x)", fn, flags);
    if (capacity == 0) return fail(EVX_ERROR_INVALID_VALUE, "%s: capacity is 0", fn);
    if (prewarm > capacity)
        return fail(EVX_ERROR_INVALID_VALUE, "%s: prewarm %u exceeds the capacity %u", fn,
                    prewarm, capacity);
    ThreadRecord *r;
    Pool *p;
    st = enter_device_new(fn, device, &r, &p);
    if (st) return st;
    p->flags = flags;
    p->capacity = capacity;
    uint32_t index;
    st = slot_alloc(r, fn, &index);
    if (!st) {
        std::lock_guard<std::mutex> lock(p->mu);
        st = fill(p, fn, prewarm);
        if (st) slot_free(r, index);
    }
    if (st) {
        pool_free(r, p);  // nothing is kept
        return st;
    }
    *pool = publish_as<evx_event_pool_t>(index, kPool, p);
    return EVX_SUCCESS;
}

EVX_API evx_status_t evx_event_pool_destroy(evx_event_pool_t pool) {
    static const char fn[] = "evx_event_pool_destroy";
    ThreadRecord *r = self();
    if (!r) return no_thread_record();
    Slot *s = nullptr;
    evx_status_t st = unpublish(pool, kPool, fn, "event pool", &s);
    if (st) return st;
    // Ours now: the released events are scanned a last time, and later
    // releases free at once.
    Pool *p = static_cast<Pool *>(s->obj);
    {
        std::lock_guard<std::mutex> lock(p->mu);
        p->draining = true;
    }
    pool_scan(r, p);
    const Freed freed = retire_freed(r, pool);
    if (freed.res == CUDA_SUCCESS) return EVX_SUCCESS;
    if (freed.pop_failed)
        return driver_failed(freed.res, fn, "cuCtxPopCurrent",
                             "pool 0x%" PRIx64 " and its events are destroyed; the primary "
                             "context evx made current for a destroy stays current on this "
                             "thread",
                             handle_value(pool));
    // The pool was freed now and the driver refused one of its idle events.
    return driver_failed(freed.res, fn, "cuEventDestroy",
                         "an idle event of pool 0x%" PRIx64
                         "; the handle is dead all the same, the others are destroyed",
                         handle_value(pool));
}

EVX_API evx_status_t evx_event_pool_prewarm(evx_event_pool_t pool, uint32_t count) {
    static const char fn[] = "evx_event_pool_prewarm";
    return with_live(fn, pool, kPool, "event pool", [pool, count](Slot &s) {
        Pool *p = static_cast<Pool *>(s.obj);
        if (count > p->capacity)
            return fail(EVX_ERROR_INVALID_VALUE,
                        "%s: count %u exceeds the capacity %u of pool 0x%" PRIx64, fn, count,
                        p->capacity, handle_value(pool));
        pool_scan(self(), p);  // a live handle: the thread has its record
        std::lock_guard<std::mutex> lock(p->mu);
        reap(p);
        return fill(p, fn, count);
    });
}

EVX_API evx_status_t evx_event_pool_acquire(evx_event_pool_t pool, evx_event_t *event) {
    static const char fn[] = "evx_event_pool_acquire";
    if (!event) return fail(EVX_ERROR_INVALID_VALUE, "%s: event (the out-pointer) is NULL", fn);
    *event = nullptr;
    HandleScope scope;
    Slot *s = nullptr;
    evx_status_t st = scope.lookup(fn, pool, kPool, "event pool", &s);
    if (st) return st;
    Pool *p = static_cast<Pool *>(s->obj);
    ThreadRecord *r = scope.record();
    uint32_t index;
    st = slot_alloc(r, fn, &index);
    if (st) return st;
    CachedEvent ev{nullptr, false};
    {
        std::unique_lock<std::mutex> lock(p->mu);
        if (p->idle.empty() && !p->pending.empty()) reap(p);
        // Released events are scanned (one barrier, without the lock) only
        // when the pool could not hand out one otherwise: no idle event, and
        // no room for a new one.
        if (p->idle.empty() && p->held() >= p->capacity && p->nreleased > 0) {
            lock.unlock();
            pool_scan(r, p);
            lock.lock();
            if (p->idle.empty() && !p->pending.empty()) reap(p);
        }
        if (p->idle.empty() && p->held() < p->capacity) st = fill(p, fn, 1);
        if (!st && p->idle.empty()) {
            ++p->exhausted_total;
            st = fail(EVX_ERROR_OUT_OF_MEMORY,
                      "%s: pool 0x%" PRIx64 " is exhausted: capacity %u, %u in use, %u pending "
                      "(released with work still running), 0 idle",
                      fn, handle_value(pool), p->capacity, p->in_use,
                      static_cast<unsigned>(p->pending.size()));
        }
        if (!st) {
            ev = p->idle.back();
            p->idle.pop_back();
            ++p->in_use;
            ++p->acquired_total;
            p->refs.fetch_add(1, std::memory_order_relaxed);
        }
    }
    if (st) {
        slot_free(r, index);
        return st;
    }
    *event = publish_event(index, p->device, p->flags, ev.ev, p, ev.former);
    return EVX_SUCCESS;
}

EVX_API evx_status_t evx_event_pool_release(evx_event_pool_t pool, evx_event_t event) {
    static const char fn[] = "evx_event_pool_release";
    {
        // The hazards end with this block, before retire(): a hazard of this
        // thread's own would make it defer the event's return to the pool.
        HandleScope scope;
        Slot *sp = nullptr, *se = nullptr;
        const evx_status_t st =
            scope.lookup2(fn, pool, kPool, "event pool", &sp, event, kEvent, "event", &se);
        if (st) return st;
        const Pool *from = se->event.pool;
        if (from != sp->obj)
            return fail(EVX_ERROR_INVALID_VALUE,
                        "%s: event 0x%" PRIx64 " did not come from pool 0x%" PRIx64
                        " (%s); it stays live",
                        fn, handle_value(event), handle_value(pool),
                        from                 ? "it came from another pool"
                        : se->event.borrowed ? "it is borrowed (evx_event_wrap_external), and "
                                               "a pool never takes a borrowed event"
                                             : "it was made by evx_device_create_event");
    }
    return destroy_handle(event, kEvent, fn, "event");
}

EVX_API evx_status_t evx_event_pool_get_stats(evx_event_pool_t pool,
                                              evx_event_pool_stats_t *stats) {
    static const char fn[] = "evx_event_pool_get_stats";
    if (!stats) return fail(EVX_ERROR_INVALID_VALUE, "%s: stats is NULL", fn);
    uint32_t size;
    evx_status_t st = sized_check(fn, kStatsType, stats, &size);
    if (st) return st;
    evx_event_pool_stats_t out;
    std::memset(&out, 0, sizeof out);
    st = with_live(fn, pool, kPool, "event pool", [&](Slot &s) {
        Pool *p = static_cast<Pool *>(s.obj);
        pool_scan(self(), p);  // released events count as released
        std::lock_guard<std::mutex> lock(p->mu);
        reap(p);
        out.capacity = p->capacity;
        out.idle = static_cast<uint32_t>(p->idle.size());
        out.in_use = p->in_use;
        out.pending = static_cast<uint32_t>(p->pending.size());
        out.created_total = p->created_total;
        out.acquired_total = p->acquired_total;
        out.exhausted_total = p->exhausted_total;
        return EVX_SUCCESS;
    });
    if (st) return st;
    // Only what the caller's struct_size covers is written.
    sized_out(stats, size, out);
    return EVX_SUCCESS;
}

}  // extern "C"
