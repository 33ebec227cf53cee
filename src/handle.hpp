// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// The handle table: slots, generations, kinds, lookup under a hazard, and
// retirement. See docs/design.md, "Handles" and "Safe use against a racing
// destroy".
//
// A handle is (generation << 32) | (index << kKindBits) | kind. A slot's
// generation word is odd while live; destroy makes it even, reuse makes it
// odd again.
#ifndef EVX_SRC_HANDLE_HPP
#define EVX_SRC_HANDLE_HPP

#include <cuda.h>

#include <atomic>
#include <cstdint>

#include "evx/common.h"
#include "thread.hpp"

namespace evx {

// The kind tag: the low kKindBits of a handle.
constexpr uint32_t kKindBits = 4;
constexpr uint32_t kKinds = 1u << kKindBits;
constexpr uint32_t kKindMask = kKinds - 1;
// The slot index: the bits between the kind and the generation.
constexpr uint32_t kIndexMask = (1u << (32 - kKindBits)) - 1;

enum Kind : uint32_t {
    kEvent = 1,
    kStream = 2,
    kPool = 3,
    kTimer = 4,
    kTimeline = 5,
    kNotifier = 6,
    kFence = 7,
};

// "event", "stream", ...; nullptr for a tag that is no kind.
const char *kind_name(uint32_t kind);

struct Pool;

// A driver event of an evx event that is not its current one: made in
// another context (or the first one, of the primary context), kept until the
// evx event is freed. See contexts.cpp.
struct AwayEvent {
    CUcontext ctx;
    CUevent ev;
    AwayEvent *next;
};

// An evx event. Events live in their slots, so making one allocates nothing.
struct Event {
    // The driver event and the context it was made in: the device's primary
    // context, until a record on a stream of another context moves the event
    // there (contexts.cpp). Changed only by a claimant (see `former`); read
    // without a lock.
    std::atomic<CUevent> cu{nullptr};
    std::atomic<CUcontext> ctx{nullptr};
    // The event's other driver events, one per context it was recorded in
    // before (the primary one among them while it is away); nullptr for an
    // event that never left the primary context, which is almost every one.
    std::atomic<AwayEvent *> away{nullptr};
    int device = 0;
    unsigned flags = 0;
    std::atomic<bool> recorded{false};  // recorded in this evx life
    // Pooled events only (pool != nullptr): successful records in this
    // life, and the count as it was before the last query, synchronize or
    // elapsed time that saw the event complete. done == records at release:
    // no pending work, so the pool hands the driver event out again with no
    // query (pool.cpp). Plain events keep both at 0.
    std::atomic<uint32_t> records{0};
    std::atomic<uint32_t> done{0};
    // kFormer: the driver event was recorded in a former life and not yet in
    // this one, so its driver state is the former record's. The first
    // record, or a call that hands the driver event to other code, claims
    // it (kClaimed) and leaves it kOwn. See event.cpp, claim_former(). A
    // record that moves the event to another context claims it from kOwn
    // too (contexts.cpp).
    std::atomic<uint8_t> former{0};
    Pool *pool = nullptr;               // the pool it came from, or nullptr
    // The stream handle of its last record if host functions that can fail
    // were launched there (Stream::hf_id, 0: none), and how many had been
    // launched by then: the failures its synchronize reports (hostfn.cpp).
    std::atomic<uint64_t> hf_id{0};
    std::atomic<uint64_t> hf_ticket{0};
    // A borrowed event (evx_event_wrap_external(), event_wrap.cpp): its
    // driver event is its maker's, never destroyed, kept, pooled or moved
    // to another context. release: called once the borrow has ended
    // (evx_event_wrap_external_with_release()), never by the free.
    bool borrowed = false;
    void (*release)(void *) = nullptr;
    void *release_user = nullptr;
};

enum : uint8_t { kOwn = 0, kFormer = 1, kClaimed = 2 };

struct Slot {
    std::atomic<uint32_t> gen{0};   // odd = live
    std::atomic<uint32_t> kind{0};  // set before the generation goes live
    void *obj = nullptr;            // the object (&event for events)
    Event event;
};

constexpr uint32_t kChunkBits = 10;
constexpr uint32_t kChunkSize = 1u << kChunkBits;
constexpr uint32_t kMaxChunks = 1u << 14;
constexpr uint32_t kMaxSlots = kChunkSize * kMaxChunks;  // 16 M live handles

extern std::atomic<Slot *> g_chunks[kMaxChunks];

inline Slot *slot_at(uint32_t index) {
    if (index >= kMaxSlots) return nullptr;
    Slot *chunk = g_chunks[index >> kChunkBits].load(std::memory_order_acquire);
    return chunk ? chunk + (index & (kChunkSize - 1)) : nullptr;
}

// The slot of an index known to be in the table (allocated by slot_alloc).
inline Slot &slot_ref(uint32_t index) {
    return g_chunks[index >> kChunkBits].load(std::memory_order_acquire)[index & (kChunkSize - 1)];
}

inline uint64_t handle_value(const void *h) {
    return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(h));
}
inline uint32_t handle_index(uint64_t v) {
    return static_cast<uint32_t>(v >> kKindBits) & kIndexMask;
}
inline uint32_t handle_gen(uint64_t v) { return static_cast<uint32_t>(v >> 32); }

// The message and status for a handle that is not a live `want`: null,
// another kind, forged, stale or destroyed. `role` names the argument
// ("event", "start event", "stream").
evx_status_t bad_handle(const char *fn, const char *role, uint64_t v,
                        uint32_t want) __attribute__((cold, noinline));

inline bool slot_is(const Slot *s, uint32_t gen, uint32_t want) {
    return s->gen.load(std::memory_order_acquire) == gen && (gen & 1u) &&
           s->kind.load(std::memory_order_relaxed) == want;
}

inline Slot *decode(uint64_t v, uint32_t want) {
    return (v & kKindMask) == want ? slot_at(handle_index(v)) : nullptr;
}

// Frees what was retired while held and no call holds any more: the end of
// a call whose thread a destroy flagged (ThreadRecord::reclaim).
void reclaim_held(ThreadRecord *r) __attribute__((cold, noinline));

// Ends a call's hold on its handles: one release store, then one load of the
// thread's own flag and a branch not taken unless a destroy found this call
// holding what it retired. The compiler barrier keeps the load after the
// store; the hardware may still move it before the store, which the
// destroyer covers with a barrier on every thread of the process
// (heavy_barrier() in thread.cpp): either it then sees this store, or this
// load sees its flag. See docs/design.md, "Reclaiming what a call held".
inline void release_hazards(ThreadRecord *r) {
    r->hazards.store(0, std::memory_order_release);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (__builtin_expect(r->reclaim.load(std::memory_order_relaxed) != 0, 0)) reclaim_held(r);
}

// Publishes the hazard slots. Where light_hazards(): a release store and a
// compiler barrier, no fence. The hardware may move the generation load
// that follows before the store; every reader of hazards that decides a
// free runs heavy_barrier() after the generation flipped (unpublish()) and
// before its loads, so either it sees this store, or that load sees the
// flipped generation. (Release: a reclaimer that reads the next call's
// hazard is ordered after this call's use of the last one.) Else, and
// under ThreadSanitizer, which does not model membarrier(2), a seq_cst
// exchange, paired with unpublish()'s seq_cst exchange and the seq_cst
// hazard loads. See docs/design.md, "Safe use against a racing destroy".
inline void set_hazards(ThreadRecord *r, uint32_t index0, uint32_t index1_plus_1) {
    const uint64_t h = (static_cast<uint64_t>(index1_plus_1) << 32) | (index0 + 1u);
#if !EVX_TSAN
    if (__builtin_expect(r->light, 1)) {
        r->hazards.store(h, std::memory_order_release);
        std::atomic_signal_fence(std::memory_order_seq_cst);
        return;
    }
#endif
    r->hazards.exchange(h, std::memory_order_seq_cst);
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
    Slot *s = decode(v, want);
    if (__builtin_expect(s == nullptr, 0)) return bad_handle(fn, role, v, want);
    set_hazards(r, handle_index(v), 0);
    if (__builtin_expect(!slot_is(s, handle_gen(v), want), 0))
        return bad_handle_held(r, fn, role, v, want);
    *out = s;
    return 0;
}

// Two handles under both hazard slots, one store (or fence) for both.
inline evx_status_t lookup2(ThreadRecord *r, const char *fn, const void *h0,
                            uint32_t want0, const char *role0, Slot **out0,
                            const void *h1, uint32_t want1, const char *role1,
                            Slot **out1) {
    const uint64_t v0 = handle_value(h0), v1 = handle_value(h1);
    Slot *s0 = decode(v0, want0);
    if (__builtin_expect(s0 == nullptr, 0)) return bad_handle(fn, role0, v0, want0);
    Slot *s1 = decode(v1, want1);
    if (__builtin_expect(s1 == nullptr, 0)) return bad_handle(fn, role1, v1, want1);
    set_hazards(r, handle_index(v0), handle_index(v1) + 1);
    if (__builtin_expect(!slot_is(s0, handle_gen(v0), want0), 0))
        return bad_handle_held(r, fn, role0, v0, want0);
    if (__builtin_expect(!slot_is(s1, handle_gen(v1), want1), 0))
        return bad_handle_held(r, fn, role1, v1, want1);
    *out0 = s0;
    *out1 = s1;
    return 0;
}

// --- making and ending handles -------------------------------------------

evx_status_t slot_alloc_slow(ThreadRecord *r, const char *fn, uint32_t *index);

// A free slot for a new handle (not live yet).
inline evx_status_t slot_alloc(ThreadRecord *r, const char *fn,
                               uint32_t *index) {
    if (__builtin_expect(r->ring_count > kQuarantine, 1)) {
        *index = r->ring[r->ring_head];
        r->ring_head = (r->ring_head + 1) & (kRingSize - 1);
        --r->ring_count;
        return 0;
    }
    if (r->ready_n > 0) {
        *index = r->ready[--r->ready_n];
        return 0;
    }
    return slot_alloc_slow(r, fn, index);
}

void slot_spill(ThreadRecord *r);

// Gives back a slot that is not live (never published, or retired).
inline void slot_free(ThreadRecord *r, uint32_t index) {
    if (__builtin_expect(r->ring_count == kRingSize, 0)) slot_spill(r);
    r->ring[(r->ring_head + r->ring_count) & (kRingSize - 1)] = index;
    ++r->ring_count;
}

// Makes the slot live with a new generation and returns the handle value.
inline uint64_t publish(uint32_t index, uint32_t kind, void *obj) {
    Slot &s = slot_ref(index);
    const uint32_t gen = s.gen.load(std::memory_order_relaxed) + 1u;
    s.kind.store(kind, std::memory_order_relaxed);
    s.obj = obj;
    s.gen.store(gen, std::memory_order_release);
    return (static_cast<uint64_t>(gen) << 32) |
           (static_cast<uint64_t>(index) << kKindBits) | kind;
}

// publish(), as the public handle type H (evx_event_t, ...).
template <class H>
inline H publish_as(uint32_t index, uint32_t kind, void *obj) {
    return reinterpret_cast<H>(static_cast<uintptr_t>(publish(index, kind, obj)));
}

// Ends a live handle: of racing calls exactly one wins. The winner owns the
// slot's object until it calls retire(); the others get INVALID_HANDLE.
inline evx_status_t unpublish(const void *h, uint32_t want, const char *fn,
                              const char *role, Slot **out) {
    const uint64_t v = handle_value(h);
    Slot *s = decode(v, want);
    if (__builtin_expect(s == nullptr, 0)) return bad_handle(fn, role, v, want);
    uint32_t gen = handle_gen(v);
    // The acquire load orders the kind read after this generation's
    // publication; a later generation makes the exchange fail.
    if (__builtin_expect(!slot_is(s, gen, want), 0) ||
        !s->gen.compare_exchange_strong(gen, gen + 1u,
                                        std::memory_order_seq_cst))
        return bad_handle(fn, role, v, want);
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
// of freeing it now (a deferred free returns EVX_SUCCESS).
evx_status_t retire(ThreadRecord *r, const void *h);

// Frees the object of an unpublished slot now: waits until no thread holds
// it (their calls have returned), frees it and the slot. For a destroy that
// must not return before the object is gone. Returns the free's status.
evx_status_t retire_waiting(ThreadRecord *r, const void *h);

// Frees what this thread collected (retire()) that no thread holds: one
// heavy_barrier() where light_hazards() and one pass over the hazard slots
// per part of the list; those held are freed as their last holder ends.
void retire_rescan(ThreadRecord *r);

// retire_rescan() of another thread's list, by `r` (a trim), while
// steal_others() keeps that thread out of it: what no thread holds is freed
// into r's cache.
void retire_take_over(ThreadRecord *r, ThreadRecord *other);

// Frees the object of a retired slot of one kind (the slot's obj; for
// events, its Event). Each module registers the hook of its kinds.
using FreeHook = evx_status_t (*)(ThreadRecord *r, void *obj);

// Takes a retired slot into a batch when its object may wait for one (its
// free makes no driver call that must be prompt, and cannot fail): the
// thread's (retire_batched()), or the module's own (a pool's released
// events). False: retire() frees it now, or hands it to its holder.
// nullptr: never batched.
using BatchHook = bool (*)(ThreadRecord *r, void *obj, uint32_t index);

// The thread's batch: the slot is freed by the thread's next scan, once per
// kRetireBatch retired slots (or by a trim on any thread). False when out
// of memory (nothing taken).
bool retire_batched(ThreadRecord *r, uint32_t index);

// Frees the retired slots index[0..n) that no thread holds, after one
// heavy_barrier() (where light_hazards()) run after their generations
// flipped, and hands those held to their holders. Returns how many are
// left at the start of `index` (held, and no memory to hand them over).
uint32_t retire_scan(ThreadRecord *r, uint32_t *index, uint32_t n);

// The hooks, indexed by Kind; filled before any call, at library load.
extern FreeHook g_free_hooks[kKinds];
extern BatchHook g_batch_hooks[kKinds];

// Registers a module's hooks at library load: one static object per kind,
// `const FreeHookEntry kStreamFree(kStream, stream_free, stream_batch);`.
struct FreeHookEntry {
    FreeHookEntry(Kind kind, FreeHook hook, BatchHook batch = nullptr) {
        g_free_hooks[kind] = hook;
        g_batch_hooks[kind] = batch;
    }
};

}  // namespace evx

#endif  // EVX_SRC_HANDLE_HPP
