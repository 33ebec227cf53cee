// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// The handle table: chunk allocation, the shared free list, handle
// messages. (Hazard scans, retire lists and the reclaim of what was retired
// while a call held it: reclaim.cpp.)
#include "handle.hpp"

#include <sched.h>
#include <time.h>

#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#include "error.hpp"
#include "evx/event.h"

namespace evx {

std::atomic<Slot *> g_chunks[kMaxChunks];

namespace {

// Fresh slot indexes are handed out in batches from this counter.
std::atomic<uint32_t> g_next_index{0};
std::mutex g_chunk_mu;

// Slot indexes spilled by threads whose rings overflowed or that exited:
// they have done their quarantine and are ready for use.
SharedFree g_free;
std::atomic<uint32_t> g_free_count{0};

bool ensure_chunk(uint32_t chunk) {
    if (g_chunks[chunk].load(std::memory_order_acquire)) return true;
    std::lock_guard<std::mutex> lock(g_chunk_mu);
    if (g_chunks[chunk].load(std::memory_order_relaxed)) return true;
    Slot *slots = new (std::nothrow) Slot[kChunkSize];
    if (!slots) return false;
    g_chunks[chunk].store(slots, std::memory_order_release);
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
    Slot *s = slot_at(handle_index(v));
    if (!s || (handle_gen(v) & 1u) == 0)
        return fail(EVX_ERROR_INVALID_HANDLE,
                    "%s: %s handle 0x%" PRIx64 " was never made by evx (forged or corrupted)",
                    fn, role, v);
    const uint32_t now = s->gen.load(std::memory_order_relaxed);
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
        const uint32_t batch = 32;
        uint32_t first = g_next_index.load(std::memory_order_relaxed);
        do {
            if (first >= kMaxSlots) break;
        } while (!g_next_index.compare_exchange_weak(first, first + batch,
                                                     std::memory_order_relaxed));
        if (first < kMaxSlots) {
            // kChunkSize is a multiple of the batch: one chunk holds it all.
            if (!ensure_chunk(first >> kChunkBits)) {
                // Nobody else can use these indexes now; drop them.
                return fail(EVX_ERROR_OUT_OF_MEMORY,
                            "%s: out of memory growing the handle table", fn);
            }
            for (uint32_t i = batch; i > 0; --i) r->ready[r->ready_n++] = first + i - 1;
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
                "%s: the handle table is full (%u live handles)", fn, kMaxSlots);
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
