// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Safe reclamation (reclaim.hpp, whose top says how it works): hazard scans,
// retire lists and batches, and the reclaim of what was retired while a
// call held it.
#include "reclaim.hpp"

#include <sched.h>
#include <time.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "handle.hpp"
#include "thread.hpp"

namespace evx {

// Zero before any constructor runs.
FreeHook g_free_hooks[kKinds];
PlainFreeHook g_plain_free_hooks[kKinds];
BatchHook g_batch_hooks[kKinds];

namespace {

// Retired slots that a call held when they were retired (or when the scan
// of a batch of plain events looked): freed by whichever thread first finds
// no hazard on them, which is at the latest the last holder as its call
// ends. g_held_count is g_held.n, readable without the lock.
SharedFree g_held;
std::atomic<uint32_t> g_held_count{0};

// Runs before every read of the hazard slots that decides a free, after the
// generations of what it decides on were flipped (unpublish()): with light
// hazards (set_hazards()), every thread then has executed a full fence, so
// a call either published its hazard before it (and the loads that follow
// see it) or loads the generation after it (and sees it flipped). One
// barrier covers every slot flipped before it: a batch pays one. Where
// hazards are published with a seq_cst exchange, the seq_cst loads pair
// with it and no barrier is needed.
inline void scan_barrier() {
    // Light hazards imply the expedited membarrier, which cannot fail once
    // registered.
    if (light_hazards()) (void)heavy_barrier();
}

// Whether any thread's hazard slot holds slot `index` (holds()). After
// scan_barrier() (the seq_cst loads pair with the seq_cst exchanges of
// bad_handle_held() and of set_hazards() without light hazards): a user
// either sees the generation flipped by the destroyer, or the destroyer
// sees its hazard.
bool held(uint32_t index) {
    for (ThreadRecord *t = thread_list(); t; t = t->next)
        if (holds(t->hazards.load(std::memory_order_seq_cst), index)) return true;
    return false;
}

Freed free_object(ThreadRecord *r, Slot *s) {
    const uint32_t kind = s->kind & kKindMask;
    if (const FreeHook hook = g_free_hooks[kind]) return hook(r, s->obj);
    if (const PlainFreeHook plain = g_plain_free_hooks[kind])
        return {static_cast<CUresult>(plain(r, s->obj)), false};
    return {};
}

// A snapshot of every thread's hazard slots (seq_cst loads, after a
// scan_barrier(): see held()). `overflow` when there are more than it
// keeps; has() then scans again.
struct Marks {
    static constexpr uint32_t kMax = 256;
    uint32_t v[kMax];
    uint32_t n = 0;
    bool overflow = false;

    Marks() {
        for (ThreadRecord *t = thread_list(); t; t = t->next) {
            const uint64_t h = t->hazards.load(std::memory_order_seq_cst);
            if (h == 0) continue;
            if (n + 2 > kMax) {
                overflow = true;
                return;
            }
            const uint32_t lo = static_cast<uint32_t>(h), hi = static_cast<uint32_t>(h >> 32);
            if (lo) v[n++] = lo >> kKindBits;
            if (hi) v[n++] = hi >> kKindBits;
        }
    }
    bool has(uint32_t index) const {
        if (overflow) return held(index);
        for (uint32_t i = 0; i < n; ++i)
            if (v[i] == index) return true;
        return false;
    }
};

// Frees every entry of g_held that no hazard holds. The lock orders the
// passes of racing threads: each pass sees the hazards cleared by threads
// whose passes came before it, so of two holders that leave together the
// later pass frees what both held. No scan_barrier() of its own: an entry
// is pushed by a thread that ran one after the entry's generation flipped,
// and the pass that takes the lock after the push comes after it.
void reclaim_pass(ThreadRecord *r) {
    for (;;) {
        uint32_t take[64];
        uint32_t n = 0;
        bool more = false;
        {
            std::lock_guard<std::mutex> lock(g_held.mu);
            if (g_held.n == 0) return;
            const Marks marks;
            uint32_t kept = 0;
            for (uint32_t i = 0; i < g_held.n; ++i) {
                const uint32_t index = g_held.v[i];
                if (n < 64 && !marks.has(index)) {
                    take[n++] = index;
                } else {
                    more = more || n == 64;
                    g_held.v[kept++] = index;
                }
            }
            g_held.n = kept;
            g_held_count.store(kept, std::memory_order_seq_cst);
        }
        // Ours alone now: out of the list, no hazard on them.
        for (uint32_t i = 0; i < n; ++i) {
            free_object(r, &slot_ref(take[i]));
            slot_free(r, take[i]);
        }
        if (!more) return;
    }
}

// Hands retired slots that a hazard held at the last look to the shared
// list, flags the threads that hold them, and frees those whose holders
// left meanwhile. After the barrier every flagged holder either has its
// hazard cleared where the pass sees it or will see its flag as its call
// ends. Called after the caller's scan_barrier() and look. False when out
// of memory (nothing handed over).
bool defer_held(ThreadRecord *r, const uint32_t *index, uint32_t n) {
    {
        std::lock_guard<std::mutex> lock(g_held.mu);
        if (!shared_push(g_held, index, n)) return false;
        g_held_count.store(g_held.n, std::memory_order_seq_cst);
    }
    for (ThreadRecord *t = thread_list(); t; t = t->next) {
        const uint64_t h = t->hazards.load(std::memory_order_seq_cst);
        if (h == 0) continue;
        for (uint32_t i = 0; i < n; ++i) {
            if (holds(h, index[i])) {
                t->reclaim.store(1, std::memory_order_release);
                break;
            }
        }
    }
    // Without the barrier (the system has none) the flagged threads may
    // have missed the flag. Nothing is freed early; what they held waits
    // for the next reclaim (a later destroy or the end of a flagged call).
    (void)heavy_barrier();
    reclaim_pass(r);
    return true;
}

bool push_retired(ThreadRecord *r, uint32_t index) {
    if (r->retired_n == r->retired_cap) {
        const uint32_t cap = r->retired_cap ? r->retired_cap * 2 : 64;
        void *p = std::realloc(r->retired, sizeof(uint32_t) * cap);
        if (!p) return false;
        r->retired = static_cast<uint32_t *>(p);
        r->retired_cap = cap;
    }
    r->retired[r->retired_n++] = index;
    return true;
}

}  // namespace

Freed retire_freed(ThreadRecord *r, const void *h) {
    const uint32_t index = handle_index(handle_value(h));
    Slot *s = &slot_ref(index);
    const BatchHook batch = g_batch_hooks[s->kind & kKindMask];
    // Freed in batches: one scan of every thread's hazard slots (and, with
    // light hazards, one heavy_barrier()) per kRetireBatch destroys,
    // instead of one per destroy, keeps destroy cheap and leaves the other
    // threads' hazard lines in their own caches. What a batched free keeps
    // (a plain event's driver event, a timer's) is kept for reuse as a
    // cached event is, and as reachable: a trim on any thread takes the
    // batch over (retire_take_over()). A module may keep its own batch (a
    // pool's released events). The kinds whose free must act now (a driver
    // stream, an interprocess event, a fence's memory, a notifier, a pool's
    // idle events, an event of another context) are not batched.
    if (batch && batch(r, s->obj, index)) return {};
    scan_barrier();
    if (!held(index)) {
        const Freed status = free_object(r, s);
        slot_free(r, index);
        return status;
    }
    // No memory for the list: wait for the holder to let go.
    return defer_held(r, &index, 1) ? Freed{} : retire_waiting(r, h);
}

bool retire_batched_slow(ThreadRecord *r, uint32_t index) {
    own_enter(r);
    const bool pushed = push_retired(r, index);
    const bool due = r->retired_n >= r->retire_limit;
    own_leave(r);
    if (__builtin_expect(pushed && due, 0)) retire_rescan(r);
    return pushed;
}

Freed retire_waiting(ThreadRecord *r, const void *h) {
    const uint32_t index = handle_index(handle_value(h));
    // One barrier covers every look: a hazard published after it fails its
    // generation check, and only delays this wait.
    scan_barrier();
    // Holders leave when their call returns, which may be a long wait (a
    // synchronize): yield first, then sleep a little between looks.
    for (unsigned spins = 0; held(index); ++spins) {
        if (spins < 64) {
            sched_yield();
        } else {
            const timespec nap{0, 100 * 1000};  // 0.1 ms
            nanosleep(&nap, nullptr);
        }
    }
    const Freed status = free_object(r, &slot_ref(index));
    slot_free(r, index);
    return status;
}

namespace {

// One pass over the hazard slots for `n` retired handles, after one
// scan_barrier() (the generation exchanges of every one of them came
// before it: this thread made them, or a trim took them over after their
// owner's release of the list): those no thread holds are freed into `r`'s
// cache and slots; those held are handed to the shared list, freed as their
// last holder ends. Returns how many of them are left at the start of
// `index` (held, and no memory to hand them over).
uint32_t rescan(ThreadRecord *r, uint32_t *index, uint32_t n) {
    scan_barrier();
    const Marks marks;
    // No call holds anything (the common case: a batch is scanned between
    // calls): every one is freed, with no look at the marks.
    if (marks.n == 0 && !marks.overflow) {
        for (uint32_t i = 0; i < n; ++i) {
            free_object(r, &slot_ref(index[i]));
            slot_free(r, index[i]);
        }
        return 0;
    }
    uint32_t kept = 0;
    for (uint32_t i = 0; i < n; ++i) {
        if (marks.has(index[i])) {
            index[kept++] = index[i];
        } else {
            free_object(r, &slot_ref(index[i]));
            slot_free(r, index[i]);
        }
    }
    return kept > 0 && !defer_held(r, index, kept) ? kept : 0;
}

}  // namespace

uint32_t retire_scan(ThreadRecord *r, uint32_t *index, uint32_t n) {
    return n > 0 ? rescan(r, index, n) : 0;
}

void retire_rescan(ThreadRecord *r) {
    // The list is taken out under the hold, a part at a time, and scanned
    // outside it: the frees give to this thread's cache, which takes the
    // hold itself.
    constexpr uint32_t kPart = 64;
    for (;;) {
        uint32_t part[kPart];
        own_enter(r);
        const uint32_t n = r->retired_n < kPart ? r->retired_n : kPart;
        r->retired_n -= n;
        if (n > 0) std::memcpy(part, r->retired + r->retired_n, sizeof(uint32_t) * n);
        own_leave(r);
        const uint32_t kept = n > 0 ? rescan(r, part, n) : 0;
        if (n == 0 || kept > 0) {
            // Held, and no memory to hand them over: back on the list for
            // the next scan, in the room they left (a thief only shortens
            // the list).
            own_enter(r);
            for (uint32_t i = 0; i < kept; ++i) r->retired[r->retired_n++] = part[i];
            r->retire_limit = r->retired_n + kRetireBatch;
            own_leave(r);
            return;
        }
    }
}

void retire_take_over(ThreadRecord *r, ThreadRecord *other) {
    // r holds nothing of its own here (steal_others()); its cache takes
    // r's hold as the frees give to it.
    if (other->retired_n == 0) return;
    other->retired_n = rescan(r, other->retired, other->retired_n);
    other->retire_limit = other->retired_n + kRetireBatch;
}

void reclaim_held(ThreadRecord *r) {
    // The acquire pairs with the flag's release store: the entry the
    // destroyer handed over is in g_held for this pass.
    r->reclaim.exchange(0, std::memory_order_acquire);
    reclaim_pass(r);
}

evx_status_t bad_handle_held(ThreadRecord *r, const char *fn, const char *role, uint64_t v,
                             uint32_t want) {
    // A seq_cst exchange, then a seq_cst load of the count: either a pass
    // that kept an entry for this hazard comes before this load (and this
    // thread frees it), or the pass sees the hazard cleared.
    r->hazards.exchange(0, std::memory_order_seq_cst);
    if (g_held_count.load(std::memory_order_seq_cst) > 0) reclaim_pass(r);
    return bad_handle(fn, role, v, want);
}

namespace {

// At thread exit: frees what it can, hands what others hold to the shared
// list, and gives the thread's free slots to the shared list.
void handles_detach(ThreadRecord *r) {
    release_hazards(r);
    retire_rescan(r);
    // Whatever could not be handed over (no memory) stays on the record,
    // which the next thread to take it scans with its first batch.
    slots_detach(r);
}

const ExitHookEntry kHandlesExit(kExitHandles, handles_detach);

}  // namespace

}  // namespace evx
