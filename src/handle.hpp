// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// The handle table: slots, generations, kinds, the making of handles and
// the messages of bad ones. Their safe use and reclamation (hazards,
// lookup, unpublish, retire) is reclaim.hpp's. See docs/design.md,
// "Handles".
//
// A handle is (generation << 32) | (index << kKindBits) | kind. A slot's
// key is the live handle itself (odd generation) while live; destroy makes
// the generation even, the kind bits 0 (no kind) and the index the next
// slot's (dead_key()); reuse makes it the next live handle. So one compare
// of the key with a handle of the wanted kind checks its generation, index
// and kind.
#ifndef EVX_SRC_HANDLE_HPP
#define EVX_SRC_HANDLE_HPP

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <mutex>

#include "event_object.hpp"
#include "evx/common.h"
#include "thread.hpp"

namespace evx {

// The kind tag: the low kKindBits of a handle.
constexpr uint32_t kKindBits = 4;
constexpr uint32_t kKinds = 1u << kKindBits;
constexpr uint32_t kKindMask = kKinds - 1;
// The slot index: the bits between the kind and the generation (a handle
// has kMaxSlots of them, the higher ones 0).
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

// 128 bytes (the alignment rounds it up): a slot's byte offset in the
// table is its index shifted by 7, which is the handle shifted by 3.
struct alignas(64) Slot {
    // The live handle, or (not live) a value no handle of a kind has: kind
    // bits 0 (even generation after a destroy, 0 before the first
    // publication).
    std::atomic<uint64_t> key{0};
    // The kind of the last publication, set before it: what the free hooks
    // of a destroyed slot go by.
    uint32_t kind = 0;
    void *obj = nullptr;  // the object (&event for events)
    Event event;
};
static_assert(sizeof(Slot) == uint64_t{1} << (kKindBits + 3), "a slot's offset is handle << 3");

// The most slots a table has (16 M live handles, 2 GiB of address space),
// and the fewest a table reserved under an address-space limit has.
constexpr uint32_t kMaxSlots = 1u << 24;
constexpr uint32_t kMinSlots = 1u << 12;

// The slot table, one address-space reservation made at library load
// (handle.cpp, table_reserve()): g_slot_base its start, g_slot_mask the
// byte offsets of its slots ((capacity - 1) << 7; 0 where no reservation
// could be made, and g_slot_base then a single slot whose key stays 0).
// Slots not handed out yet are read-only zero pages: a lookup of any handle
// reads some slot, and a forged one fails the key compare (no bound check
// on the hot path). Hidden, so that each is one RIP-relative operand.
// Written only at load, before any call.
extern char *g_slot_base __attribute__((visibility("hidden")));
extern uint64_t g_slot_mask __attribute__((visibility("hidden")));

inline uint64_t handle_value(const void *h) {
    return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(h));
}
// The slot index bits of a handle (those above the capacity name no slot).
inline uint32_t handle_index(uint64_t v) {
    return static_cast<uint32_t>(v >> kKindBits) & kIndexMask;
}
inline uint32_t handle_gen(uint64_t v) { return static_cast<uint32_t>(v >> 32); }

// The slot of a handle: its index bits below the capacity, shifted (the
// kind bits fall below the mask, the generation above it). A handle with
// index bits above the capacity reads the slot of the bits below, whose
// key (a live handle has its own index) is not it.
inline Slot *slot_of(uint64_t v) {
    return reinterpret_cast<Slot *>(g_slot_base + ((v << 3) & g_slot_mask));
}

// slot_of() of the two handles of a call. On x86-64 the mask and the base
// are memory operands of an `and` and an `add` for each: the compiler
// would otherwise load the base into a register once and spend an add
// more. (One handle's slot_of() compiles to those three already.)
inline Slot *slot_of_one_of_two(uint64_t v) {
#if defined(__x86_64__)
    uintptr_t p = v << 3;
    asm("andq %[mask], %[p]\n\taddq %[base], %[p]"
        : [p] "+r"(p)
        : [mask] "m"(g_slot_mask), [base] "m"(g_slot_base)
        : "cc");
    return reinterpret_cast<Slot *>(p);
#else
    return slot_of(v);
#endif
}

// The slot of an index known to be in the table (allocated by slot_alloc).
inline Slot &slot_ref(uint32_t index) {
    return *reinterpret_cast<Slot *>(g_slot_base + uint64_t{index} * sizeof(Slot));
}

// The message and status for a handle that is not a live `want`: null,
// another kind, forged, stale or destroyed. `role` names the argument
// ("event", "start event", "stream").
evx_status_t bad_handle(const char *fn, const char *role, uint64_t v,
                        uint32_t want) __attribute__((cold, noinline));

// Whether the 8-byte atomic word w holds v, as an acquire load: on x86-64
// one compare with the word in memory (the compiler does not fold an
// atomic load into another instruction; an x86 load is an acquire load as
// it is), else the load and a compare. For the hot paths' tests of a word
// another thread may change (Event::hot, Fence::fast and claimer).
template <class T>
inline bool word_is(const std::atomic<T> &w, T v) {
    static_assert(sizeof(T) == 8, "one 8-byte compare");
#if defined(__x86_64__) && !EVX_TSAN
    bool eq;
    asm volatile("cmpq %[w], %[v]" : "=@ccz"(eq) : [w] "m"(w), [v] "r"(v) : "memory");
    return eq;
#else
    return w.load(std::memory_order_acquire) == v;
#endif
}

// Whether s's key is v, as an acquire load. On x86-64 one compare with the
// key in memory: the compiler does not fold an atomic load into another
// instruction, and an x86 load is an acquire load as it is (the asm's
// memory clobber keeps the compiler from moving later accesses above it).
// ThreadSanitizer sees the atomic load.
inline bool key_is(const Slot *s, uint64_t v) {
#if defined(__x86_64__) && !EVX_TSAN
    bool eq;
    asm volatile("cmpq %[key], %[v]" : "=@ccz"(eq) : [key] "m"(s->key), [v] "r"(v) : "memory");
    return eq;
#else
    return s->key.load(std::memory_order_acquire) == v;
#endif
}

// Whether v is the live handle of its slot s, of kind `want` (never 0, so
// no dead key matches). The acquire load orders the use of the object, and
// the read of s->kind, after its publication; once the key is v, s->kind
// is v's kind bits (publish()), and stays so while the caller's hazard
// keeps the slot from being freed and published again.
inline bool slot_is(const Slot *s, uint64_t v, uint32_t want) {
    return key_is(s, v) && s->kind == want;
}

// The key a destroy leaves: the generation made even, the kind bits 0, and
// the index bits those of the next slot. slot_is() takes the kind from the
// slot, not from the handle, so a value equal to a slot's own dead key would
// pass its lookup and reach the freed object; a dead key names another
// slot, whose key is never that value (a live key has kind bits, a dead key
// the index after its own, and no key is 0 once published). Indexes stay
// below kMaxSlots, so the index + 1 never carries into the generation.
inline uint64_t dead_key(uint64_t v) {
    return (v + (uint64_t{1} << 32) + (uint64_t{1} << kKindBits)) & ~uint64_t{kKindMask};
}
static_assert(kMaxSlots <= kIndexMask, "a dead key's index + 1 stays in the index bits");

// The handle that a lookup of the calling thread matched on slot s, while
// its hazard still holds s: the key while live, else the handle its
// destroy ended (dead_key() undone; a held slot is not published again, so
// its kind is still that handle's). For the cold failure messages of a hot
// call, so that the handle values need not stay in registers across its
// driver call.
inline uint64_t held_handle(const Slot *s) {
    const uint64_t key = s->key.load(std::memory_order_relaxed);
    if (key & kKindMask) return key;
    return (key - (uint64_t{1} << 32) - (uint64_t{1} << kKindBits)) | s->kind;
}

// held_handle(), as the public handle type H (evx_event_t, ...).
template <class H>
inline H held_handle_as(const Slot *s) {
    return reinterpret_cast<H>(static_cast<uintptr_t>(held_handle(s)));
}

// --- making handles ------------------------------------------------------

evx_status_t slot_alloc_slow(ThreadRecord *r, const char *fn, uint32_t *index);

// Whether the thread's ring has a slot past its quarantine
// (slot_from_ring()): the common case of slot_alloc().
inline bool slot_ring_ready(const ThreadRecord *r) { return r->ring_count > kQuarantine; }

// The oldest slot of the ring; only when slot_ring_ready().
inline uint32_t slot_from_ring(ThreadRecord *r) {
    const uint32_t index = r->ring[r->ring_head];
    r->ring_head = (r->ring_head + 1) & (kRingSize - 1);
    --r->ring_count;
    return index;
}

// A free slot for a new handle (not live yet).
inline evx_status_t slot_alloc(ThreadRecord *r, const char *fn,
                               uint32_t *index) {
    if (__builtin_expect(slot_ring_ready(r), 1)) {
        *index = slot_from_ring(r);
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

// Makes the slot s (slot_ref(index)) live with a new generation and
// returns the handle value.
inline uint64_t publish_at(Slot &s, uint32_t index, uint32_t kind, void *obj) {
    const uint32_t gen = handle_gen(s.key.load(std::memory_order_relaxed)) + 1u;
    const uint64_t v = (static_cast<uint64_t>(gen) << 32) |
                       (static_cast<uint64_t>(index) << kKindBits) | kind;
    s.kind = kind;
    s.obj = obj;
    s.key.store(v, std::memory_order_release);
    return v;
}

// publish_at() of the slot of an index.
inline uint64_t publish(uint32_t index, uint32_t kind, void *obj) {
    return publish_at(slot_ref(index), index, kind, obj);
}

// publish(), as the public handle type H (evx_event_t, ...).
template <class H>
inline H publish_as(uint32_t index, uint32_t kind, void *obj) {
    return reinterpret_cast<H>(static_cast<uintptr_t>(publish(index, kind, obj)));
}

// A list of slot indexes shared by all threads (the free slots spilled by
// threads; the retired slots a call held, reclaim.cpp). A plain array
// (grown with realloc) so that nothing here has a destructor to run at exit.
struct SharedFree {
    std::mutex mu;
    uint32_t *v = nullptr;
    uint32_t n = 0;
    uint32_t cap = 0;
};

// Appends n indexes under f.mu (held by the caller); false when out of
// memory (nothing appended).
bool shared_push(SharedFree &f, const uint32_t *src, uint32_t n);

// At thread exit, after its retired slots were handled (reclaim.cpp): the
// thread's free slots go to the shared list.
void slots_detach(ThreadRecord *r);

}  // namespace evx

#endif  // EVX_SRC_HANDLE_HPP
