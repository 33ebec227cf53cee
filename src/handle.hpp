// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// The handle table: slots, generations, kinds, the making of handles and
// the messages of bad ones. Their safe use and reclamation (hazards,
// lookup, unpublish, retire) is reclaim.hpp's. See docs/design.md,
// "Handles".
//
// A handle is (generation << 32) | (index << kKindBits) | kind. A slot's
// generation word is odd while live; destroy makes it even, reuse makes it
// odd again.
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

// --- making handles ------------------------------------------------------

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
