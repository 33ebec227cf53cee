// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Safe reclamation: how a call uses the object of a handle that another
// thread may destroy meanwhile, and when that object is freed. All of it
// lives here (reclaim.hpp, reclaim.cpp); the handle table (handle.hpp) only
// holds slots and generations. docs/design.md, "Safe use against a racing
// destroy" and "Reclaiming what a call held", tells it at length; the SPIN
// model under models/ checks it.
//
// Who stores and loads what, in what order:
//
// 1. A user (a public call; lookup(), lookup2()) stores the handle's low
//    half (index and kind bits, holds()) in a half of its thread's hazard
//    word, one 32-bit store per handle (ThreadRecord::hazards,
//    set_hazards()), then loads the slot's key
//    (acquire, slot_is()) and uses the object only if that is the handle.
//    When the call ends it clears the word (a release store,
//    release_hazards()), then loads its own reclaim flag
//    (ThreadRecord::reclaim).
// 2. A destroyer flips the key to its dead value (unpublish(): a seq_cst
//    compare-exchange, so of racing destroys exactly one wins and owns the
//    object), then, before it decides a free, runs scan_barrier() and loads
//    every thread's hazard word (seq_cst, held()).
// 3. Why 1 and 2 are safe: with light hazards (light_hazards(): the
//    expedited membarrier(2) is registered) the user's store and load have
//    only a compiler barrier between them, and the hardware may make the
//    load first. scan_barrier() is heavy_barrier() (thread.cpp), a full
//    fence on every thread, run after the flip: either the user's store
//    came before it, and the destroyer's loads see the hazard, or the
//    user's generation load comes after it and sees the flip, and the user
//    fails without touching the object. Without light hazards (no
//    membarrier, or ThreadSanitizer, which does not model it) the user
//    publishes with a seq_cst exchange that pairs with the seq_cst flip
//    and loads, and no barrier is needed.
// 4. What a scan finds held is not freed by the scan: defer_held() pushes
//    it to the shared list g_held, sets the reclaim flag of each thread
//    whose hazard holds it, runs heavy_barrier() and passes over g_held
//    (reclaim_pass()). Each holder then either has cleared its hazard where
//    a pass sees it, or sees its flag after clearing its hazard (1) and
//    passes itself (reclaim_held()). Passes run under g_held.mu, so the
//    last of several holders to leave frees what they held.
// 5. Batches: retire() may leave a free to the thread's batch (or a
//    pool's, pool.cpp); one barrier covers every generation flipped before
//    it, so a scan of kRetireBatch slots (retire_scan()) pays one.
// 6. A freed slot goes back to its thread's ring and comes out again only
//    after kQuarantine others (thread.hpp, slot_alloc()), with a new
//    generation, so a stale handle fails the check of 1 rather than naming
//    a new object.
//
// The same store, barrier, load pattern guards the plain claims of a
// fence's values (fence.cpp, not_the_claimer() and claim_value(); "Fences"
// in docs/design.md): a claiming thread announces its window in its own
// record (ThreadRecord::claim) and loads `claimer` with a compiler barrier
// only; the thread that takes the claims away stores `claimer`, runs
// heavy_barrier() and loads the old claimer's announcement. It stays in
// fence.cpp for now. heavy_barrier() and light_hazards() are thread.cpp's:
// the thread registry (steal_others()) needs the barrier too, below this.
#ifndef EVX_SRC_RECLAIM_HPP
#define EVX_SRC_RECLAIM_HPP

#include <atomic>
#include <cstdint>

#include "driver.hpp"
#include "evx/common.h"
#include "handle.hpp"
#include "thread.hpp"

namespace evx {

// Frees what was retired while held and no call holds any more: the end of
// a call whose thread a destroy flagged (ThreadRecord::reclaim).
void reclaim_held(ThreadRecord *r) __attribute__((cold, noinline));

// release_hazards() but the reclaim: clears the hazards and tells whether
// the thread must call reclaim_held() (rarely).
inline bool clear_hazards(ThreadRecord *r) {
    r->hazards.store(0, std::memory_order_release);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    return __builtin_expect(r->reclaim.load(std::memory_order_relaxed) != 0, 0);
}

// Ends a call's hold on its handles: one release store, then one load of the
// thread's own flag and a branch not taken unless a destroy found this call
// holding what it retired. The compiler barrier keeps the load after the
// store; the hardware may still move it before the store, which the
// destroyer covers with a barrier on every thread of the process
// (heavy_barrier() in thread.cpp): either it then sees this store, or this
// load sees its flag. See docs/design.md, "Reclaiming what a call held".
inline void release_hazards(ThreadRecord *r) {
    if (clear_hazards(r)) reclaim_held(r);
}

// A hazard slot holds the low half of the handle its call looks up: its
// index and kind bits (nonzero: a kind is), 0 = none. A destroyer takes any
// hazard with a slot's index bits as holding that slot, whatever its kind
// bits (a lookup with other kind bits fails, and only delays the free).
inline bool holds(uint64_t hazards, uint32_t index) {
    const uint32_t lo = static_cast<uint32_t>(hazards), hi = static_cast<uint32_t>(hazards >> 32);
    return (lo != 0 && (lo >> kKindBits) == index) || (hi != 0 && (hi >> kKindBits) == index);
}

// Half `which` of r's hazard word (0: the low half, the first handle's),
// as a 32-bit word of its own, whatever the byte order.
inline uint32_t *hazard_half(ThreadRecord *r, unsigned which) {
    typedef uint32_t __attribute__((may_alias)) Half;
    static_assert(sizeof(r->hazards) == 2 * sizeof(Half), "two halves make the word");
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return reinterpret_cast<Half *>(&r->hazards) + which;
#else
    return reinterpret_cast<Half *>(&r->hazards) + (1 - which);
#endif
}

// Publishes the hazard slots: h0, and h1 where kTwo (the handles). With one
// handle the high half is left as it is where light_hazards(): 0 at a
// call's start (every call's end clears the word), or a handle this call
// looked up before, which then only waits for the call's end to be freed.
// Where light_hazards():
// a release store of each half (32 bits: the handle's low half is the
// hazard as it is) and a compiler barrier, no fence. The hardware may move
// the generation loads that follow before the stores; every reader of
// hazards that decides a free runs heavy_barrier() after the generation
// flipped (unpublish()) and before its loads, so either it sees a store,
// or the load after it sees the flipped generation. Both loads follow both
// stores, so a barrier that falls between the two stores is after both
// loads' start: a scan may see one half and not the other, and each half
// still protects its own handle (models/hazard.pml, the halves). (Release:
// a reclaimer that reads the next call's hazard is ordered after this
// call's use of the last one.) Else, and under ThreadSanitizer, which does
// not model membarrier(2), a seq_cst exchange of the word, paired with
// unpublish()'s seq_cst exchange and the seq_cst hazard loads, and the
// halves are never stored on their own. See docs/design.md, "Safe use
// against a racing destroy".
template <bool kTwo>
inline void set_hazards(ThreadRecord *r, uint64_t h0, uint64_t h1) {
#if !EVX_TSAN
    if (__builtin_expect(r->light, 1)) {
        __atomic_store_n(hazard_half(r, 0), static_cast<uint32_t>(h0), __ATOMIC_RELEASE);
        if (kTwo)
            __atomic_store_n(hazard_half(r, 1), static_cast<uint32_t>(h1), __ATOMIC_RELEASE);
        std::atomic_signal_fence(std::memory_order_seq_cst);
        return;
    }
#endif
    r->hazards.exchange((h1 << 32) | static_cast<uint32_t>(h0), std::memory_order_seq_cst);
}

// A lookup that failed after publishing its hazards: clears them at once and
// frees what was retired while held if this hazard was the last one left
// (a hazard published after a destroy is one its destroyer may not have
// flagged), then the message and status of bad_handle().
evx_status_t bad_handle_held(ThreadRecord *r, const char *fn, const char *role, uint64_t v,
                             uint32_t want) __attribute__((cold, noinline));

// Validates a handle and protects its object with a hazard slot. No shared
// write; no fence where light_hazards() (else one). On failure the hazards
// are cleared; callers use HandleScope (scope.hpp), which releases them
// whichever way the call ends.
inline evx_status_t lookup(ThreadRecord *r, const void *h, uint32_t want,
                           const char *fn, const char *role, Slot **out) {
    const uint64_t v = handle_value(h);
    Slot *s = slot_of(v);
    set_hazards<false>(r, v, 0);
    if (__builtin_expect(!slot_is(s, v, want), 0)) return bad_handle_held(r, fn, role, v, want);
    *out = s;
    return 0;
}

// Two handles under both hazard slots: a store per half (or one fence for
// both).
inline evx_status_t lookup2(ThreadRecord *r, const char *fn, const void *h0,
                            uint32_t want0, const char *role0, Slot **out0,
                            const void *h1, uint32_t want1, const char *role1,
                            Slot **out1) {
    const uint64_t v0 = handle_value(h0), v1 = handle_value(h1);
    Slot *s0 = slot_of_one_of_two(v0);
    Slot *s1 = slot_of_one_of_two(v1);
    set_hazards<true>(r, v0, v1);
    if (__builtin_expect(!slot_is(s0, v0, want0), 0))
        return bad_handle_held(r, fn, role0, v0, want0);
    if (__builtin_expect(!slot_is(s1, v1, want1), 0))
        return bad_handle_held(r, fn, role1, v1, want1);
    *out0 = s0;
    *out1 = s1;
    return 0;
}

// Ends a live handle: of racing calls exactly one wins. The winner owns the
// slot's object until it calls retire(); the others get INVALID_HANDLE.
inline evx_status_t unpublish(const void *h, uint32_t want, const char *fn,
                              const char *role, Slot **out) {
    uint64_t v = handle_value(h);
    Slot *s = slot_of(v);
    // The exchange (seq_cst: it acquires the publication of the object)
    // leaves the dead key; any other key (a later generation) makes it fail.
    // No hazard: the kind comes from the handle, not the slot (which a
    // racing destroy and reuse may write), and the exchange checks the key.
    // The plain load first: a forged handle's slot may lie in a read-only
    // part of the table, where even a failing exchange faults (its key is
    // 0, which no handle is).
    if (__builtin_expect((v & kKindMask) != want, 0) ||
        __builtin_expect(!key_is(s, v), 0) ||
        !s->key.compare_exchange_strong(v, dead_key(v), std::memory_order_seq_cst))
        return bad_handle(fn, role, handle_value(h), want);
    *out = s;
    return 0;
}

// Frees the object of an unpublished slot once no thread holds it: at once
// if none does, else as the last call that holds it ends (the retiring
// thread does nothing more for it). An object its kind's batch hook takes
// (plain events, timers, timelines, borrowed streams into the thread's
// batch, pooled events into their pool's: nothing of theirs must go
// promptly) is first collected: the scan that frees a batch runs once per
// kRetireBatch of them (or when something needs them: a trim on any
// thread, retire_take_over(); a pool's acquire or stats), and those it
// finds held are then freed as their last holder ends. Returns the status
// of freeing it now (a deferred free returns success).
Freed retire_freed(ThreadRecord *r, const void *h);

// retire_freed()'s status, for the kinds whose free hook is a PlainFreeHook
// (none reports a failing pop).
inline evx_status_t retire(ThreadRecord *r, const void *h) { return retire_freed(r, h).res; }

// Frees the object of an unpublished slot now: waits until no thread holds
// it (their calls have returned), frees it and the slot. For a destroy that
// must not return before the object is gone. Returns the free's status.
Freed retire_waiting(ThreadRecord *r, const void *h);

// Frees what this thread collected (retire()) that no thread holds: one
// heavy_barrier() where light_hazards() and one pass over the hazard slots
// per part of the list; those held are freed as their last holder ends.
void retire_rescan(ThreadRecord *r);

// retire_rescan() of another thread's list, by `r` (a trim), while
// steal_others() keeps that thread out of it: what no thread holds is freed
// into r's cache.
void retire_take_over(ThreadRecord *r, ThreadRecord *other);

// Frees the object of a retired slot of one kind (the slot's obj; for
// events, its Event). Each module registers the hook of its kinds: a
// FreeHook when its free makes a driver call under a ContextGuard whose pop
// may fail after the work (Freed tells), else a PlainFreeHook, whose status
// is the free's driver status alone.
using FreeHook = Freed (*)(ThreadRecord *r, void *obj);
using PlainFreeHook = evx_status_t (*)(ThreadRecord *r, void *obj);

// Takes a retired slot into a batch when its object may wait for one (its
// free makes no driver call that must be prompt, and cannot fail): the
// thread's (retire_batched()), or the module's own (a pool's released
// events). False: retire() frees it now, or hands it to its holder.
// nullptr: never batched.
using BatchHook = bool (*)(ThreadRecord *r, void *obj, uint32_t index);

// The thread's batch: the slot is freed by the thread's next scan, once per
// kRetireBatch retired slots (or by a trim on any thread). False when out
// of memory (nothing taken). retire_batched_slow(): the push that grows the
// list or fills the batch.
// retire_batched_kept(): the common case, with no call (room below the
// scan, no thief); false, nothing taken, else.
bool retire_batched_slow(ThreadRecord *r, uint32_t index) __attribute__((noinline));
inline bool retire_batched_kept(ThreadRecord *r, uint32_t index) {
    if (__builtin_expect(!own_try_enter(r), 0)) return false;
    const uint32_t n = r->retired_n;
    const bool room = __builtin_expect(n < r->retired_cap && n + 1 < r->retire_limit, 1);
    if (room) {
        r->retired[n] = index;
        r->retired_n = n + 1;
    }
    own_leave(r);
    return room;
}
inline bool retire_batched(ThreadRecord *r, uint32_t index) {
    return retire_batched_kept(r, index) || retire_batched_slow(r, index);
}

// Frees the retired slots index[0..n) that no thread holds, after one
// heavy_barrier() (where light_hazards()) run after their generations
// flipped, and hands those held to their holders. Returns how many are
// left at the start of `index` (held, and no memory to hand them over).
uint32_t retire_scan(ThreadRecord *r, uint32_t *index, uint32_t n);

// The hooks, indexed by Kind; filled before any call, at library load.
extern FreeHook g_free_hooks[kKinds];
extern PlainFreeHook g_plain_free_hooks[kKinds];
extern BatchHook g_batch_hooks[kKinds];

// Registers a module's hooks at library load: one static object per kind,
// `const FreeHookEntry kStreamFree(kStream, stream_free, stream_batch);`.
struct FreeHookEntry {
    FreeHookEntry(Kind kind, FreeHook hook, BatchHook batch = nullptr) {
        g_free_hooks[kind] = hook;
        g_batch_hooks[kind] = batch;
    }
    FreeHookEntry(Kind kind, PlainFreeHook hook, BatchHook batch = nullptr) {
        g_plain_free_hooks[kind] = hook;
        g_batch_hooks[kind] = batch;
    }
};

}  // namespace evx

#endif  // EVX_SRC_RECLAIM_HPP
