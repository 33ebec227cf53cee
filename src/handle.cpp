// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// The handle table: its reservation and growth, the shared free list,
// handle messages. (Hazard scans, retire lists and the reclaim of what was retired
// while a call held it: reclaim.cpp.)
#include "handle.hpp"

#include <sched.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#include "error.hpp"
#include "evx/event.h"

// LeakSanitizer scans the heap and globals, not a mapping of ours: the
// table's writable part is registered with it, so that what only a live
// slot refers to (a handle the program never destroyed) counts as
// reachable, as it did when slots were on the heap.
#if defined(__SANITIZE_ADDRESS__)
#define EVX_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#define EVX_LSAN 1
#endif
#endif
#ifndef EVX_LSAN
#define EVX_LSAN 0
#endif
#if EVX_LSAN
#include <sanitizer/lsan_interface.h>
#endif

namespace evx {

namespace {

// The table where no reservation could be made: one slot, its key 0, never
// written. Constant-initialized, so that a lookup before load-time
// initialization (another library's constructor) fails cleanly too.
Slot g_no_slot;

}  // namespace

char *g_slot_base = reinterpret_cast<char *>(&g_no_slot);
uint64_t g_slot_mask = 0;

namespace {

uint32_t g_capacity = 0;  // slots reserved (g_slot_mask's); set at load

// Fresh slot indexes are handed out in batches of kBatch from this counter;
// the slots below g_writable are writable (and constructed). A batch lies
// in one step of growth: both are multiples of kBatch slots.
constexpr uint32_t kBatch = 32;
constexpr uint32_t kGrowSlots = 1024;
std::atomic<uint32_t> g_next_index{0};
std::atomic<uint32_t> g_writable{0};
std::mutex g_grow_mu;

// Slot indexes spilled by threads whose rings overflowed or that exited:
// they have done their quarantine and are ready for use.
SharedFree g_free;
std::atomic<uint32_t> g_free_count{0};

// The reservation, at load: kMaxSlots slots, or, while the address space
// is refused (RLIMIT_AS), a quarter of the largest that fits, down to
// kMinSlots (so that the table leaves the process most of what is left);
// else no table (every call that makes a handle fails, every lookup
// fails). Read-only, private and not reserved against the commit limit:
// untouched, it costs address space only, and its pages read as zeros;
// table_grow() makes ranges writable as slots are handed out. Never aborts.
void *table_map(uint64_t slots) {
    return mmap(nullptr, slots * sizeof(Slot), PROT_READ,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
}

__attribute__((constructor(101))) void table_reserve() {
    for (uint64_t slots = kMaxSlots; slots >= kMinSlots; slots /= 2) {
        void *p = table_map(slots);
        if (p == MAP_FAILED) continue;
        if (slots < kMaxSlots && slots / 4 >= kMinSlots) {
            munmap(p, slots * sizeof(Slot));
            slots /= 4;
            p = table_map(slots);
            if (p == MAP_FAILED) return;
        }
        g_slot_base = static_cast<char *>(p);
        g_slot_mask = (slots - 1) * sizeof(Slot);
        g_capacity = static_cast<uint32_t>(slots);
        return;
    }
}

// Makes the slots below `end` (a multiple of kBatch, within the capacity)
// writable and constructs them: a step of kGrowSlots at least, and whole
// pages. False when the system refuses the memory (the commit limit).
bool table_grow(uint32_t end) {
    if (end <= g_writable.load(std::memory_order_acquire)) return true;
    std::lock_guard<std::mutex> lock(g_grow_mu);
    const uint32_t from = g_writable.load(std::memory_order_relaxed);
    if (end <= from) return true;
    const long page = sysconf(_SC_PAGESIZE);
    uint32_t step = kGrowSlots;
    while (page > 0 && uint64_t{step} * sizeof(Slot) < static_cast<uint64_t>(page)) step *= 2;
    uint64_t to = (uint64_t{end} + step - 1) / step * step;
    if (to > g_capacity) to = g_capacity;
    char *start = g_slot_base + uint64_t{from} * sizeof(Slot);
    if (mprotect(start, (to - from) * sizeof(Slot), PROT_READ | PROT_WRITE) != 0) return false;
    for (uint64_t i = from; i < to; ++i) new (g_slot_base + i * sizeof(Slot)) Slot;
#if EVX_LSAN
    __lsan_register_root_region(start, (to - from) * sizeof(Slot));
#endif
    g_writable.store(static_cast<uint32_t>(to), std::memory_order_release);
    return true;
}

// "n" before a vowel: "an event", "a stream".
const char *article(const char *noun) {
    return std::strchr("aeiou", noun[0]) ? "n" : "";
}

}  // namespace

bool shared_push(SharedFree &f, const uint32_t *src, uint32_t n) {
    if (f.n + n > f.cap) {
        uint32_t cap = f.cap ? f.cap : 1024;
        while (cap < f.n + n) cap *= 2;
        void *p = std::realloc(f.v, sizeof(uint32_t) * cap);
        if (!p) return false;
        f.v = static_cast<uint32_t *>(p);
        f.cap = cap;
    }
    for (uint32_t i = 0; i < n; ++i) f.v[f.n++] = src[i];
    return true;
}

const char *kind_name(uint32_t kind) {
    switch (kind) {
    case kEvent: return "event";
    case kStream: return "stream";
    case kPool: return "event pool";
    case kTimer: return "timer";
    case kTimeline: return "timeline";
    case kNotifier: return "notifier";
    case kFence: return "fence";
    default: return nullptr;
    }
}

evx_status_t bad_handle(const char *fn, const char *role, uint64_t v,
                        uint32_t want) {
    const char *want_name = kind_name(want);
    if (v == 0) return fail(EVX_ERROR_INVALID_HANDLE, "%s: null %s handle", fn, role);
    const char *tag = kind_name(static_cast<uint32_t>(v & kKindMask));
    if ((v & kKindMask) != want) {
        if (tag) {
            const bool same = std::strcmp(role, want_name) == 0;
            return fail(EVX_ERROR_INVALID_HANDLE,
                        "%s: handle 0x%" PRIx64 " is a%s %s, not a%s %s%s%s%s", fn, v,
                        article(tag), tag, article(want_name), want_name,
                        same ? "" : " (the ", same ? "" : role,
                        same ? "" : " argument)");
        }
        return fail(EVX_ERROR_INVALID_HANDLE,
                    "%s: %s handle 0x%" PRIx64 " is not an evx handle (forged or corrupted)",
                    fn, role, v);
    }
    const uint32_t index = handle_index(v);
    if (index >= g_capacity)
        return fail(EVX_ERROR_INVALID_HANDLE,
                    "%s: %s handle 0x%" PRIx64 " was never made by evx (forged or corrupted: "
                    "its slot %u is beyond the handle table's %u slots)",
                    fn, role, v, index, g_capacity);
    // Slots never handed out, and generation 0 or even in a handle: never a
    // live handle's.
    if (index >= g_next_index.load(std::memory_order_relaxed) || (handle_gen(v) & 1u) == 0)
        return fail(EVX_ERROR_INVALID_HANDLE,
                    "%s: %s handle 0x%" PRIx64 " was never made by evx (forged or corrupted)",
                    fn, role, v);
    const Slot *s = &slot_ref(index);
    const uint32_t now = handle_gen(s->key.load(std::memory_order_relaxed));
    if (static_cast<int32_t>(now - handle_gen(v)) > 0)
        return fail(EVX_ERROR_INVALID_HANDLE,
                    "%s: %s handle 0x%" PRIx64 " is stale: it was destroyed",
                    fn, role, v);
    return fail(EVX_ERROR_INVALID_HANDLE,
                "%s: %s handle 0x%" PRIx64 " is not live (forged, or of an object "
                "that no longer exists)",
                fn, role, v);
}

evx_status_t slot_alloc_slow(ThreadRecord *r, const char *fn, uint32_t *index) {
    // Old slots other threads gave up, then fresh ones, then (when the table
    // is full) whatever the quarantine ring holds.
    if (g_free_count.load(std::memory_order_relaxed) > 0) {
        std::lock_guard<std::mutex> lock(g_free.mu);
        while (g_free.n > 0 && r->ready_n < kReadyMax / 2)
            r->ready[r->ready_n++] = g_free.v[--g_free.n];
        g_free_count.store(g_free.n, std::memory_order_relaxed);
    }
    if (r->ready_n == 0) {
        if (g_capacity == 0)
            return fail(EVX_ERROR_OUT_OF_MEMORY,
                        "%s: out of memory: no address space for the handle table "
                        "(reserving %u slots failed at load)",
                        fn, kMinSlots);
        uint32_t first = g_next_index.load(std::memory_order_relaxed);
        do {
            if (first >= g_capacity) break;
        } while (!g_next_index.compare_exchange_weak(first, first + kBatch,
                                                     std::memory_order_relaxed));
        if (first < g_capacity) {
            if (!table_grow(first + kBatch)) {
                // Nobody else can use these indexes now; drop them.
                return fail(EVX_ERROR_OUT_OF_MEMORY,
                            "%s: out of memory growing the handle table", fn);
            }
            for (uint32_t i = kBatch; i > 0; --i) r->ready[r->ready_n++] = first + i - 1;
        }
    }
    if (r->ready_n > 0) {
        *index = r->ready[--r->ready_n];
        return 0;
    }
    if (r->ring_count > 0) {
        *index = r->ring[r->ring_head];
        r->ring_head = (r->ring_head + 1) & (kRingSize - 1);
        --r->ring_count;
        return 0;
    }
    return fail(EVX_ERROR_OUT_OF_MEMORY,
                "%s: the handle table is full (%u live handles)", fn, g_capacity);
}

void slot_spill(ThreadRecord *r) {
    // Moves the older half of the ring to the shared list.
    uint32_t tmp[kRingSize / 2];
    for (uint32_t i = 0; i < kRingSize / 2; ++i) {
        tmp[i] = r->ring[r->ring_head];
        r->ring_head = (r->ring_head + 1) & (kRingSize - 1);
    }
    r->ring_count -= kRingSize / 2;
    std::lock_guard<std::mutex> lock(g_free.mu);
    if (shared_push(g_free, tmp, kRingSize / 2)) {
        g_free_count.store(g_free.n, std::memory_order_relaxed);
    }
    // Out of memory: the slots are lost, which only costs table space.
}

void slots_detach(ThreadRecord *r) {
    uint32_t tmp[kRingSize + kReadyMax];
    uint32_t n = 0;
    while (r->ring_count > 0) {
        tmp[n++] = r->ring[r->ring_head];
        r->ring_head = (r->ring_head + 1) & (kRingSize - 1);
        --r->ring_count;
    }
    while (r->ready_n > 0) tmp[n++] = r->ready[--r->ready_n];
    std::lock_guard<std::mutex> lock(g_free.mu);
    if (shared_push(g_free, tmp, n)) g_free_count.store(g_free.n, std::memory_order_relaxed);
}

}  // namespace evx
