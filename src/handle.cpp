// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// The handle table: chunk allocation, the shared free list, handle
// messages, hazard scans and retire lists.
#include "handle.hpp"

#include <sched.h>
#include <time.h>

#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#include "error.hpp"
#include "scope.hpp"
#include "evx/event.h"

namespace evx {

std::atomic<Slot *> g_chunks[kMaxChunks];
FreeHook g_free_hooks[16];  // zero before any constructor runs

namespace {

// Fresh slot indexes are handed out in batches from this counter.
std::atomic<uint32_t> g_next_index{0};
std::mutex g_chunk_mu;

// Slot indexes spilled by threads whose rings overflowed or that exited:
// they have done their quarantine and are ready for use. A plain array
// (grown with realloc) so that nothing here has a destructor to run at exit.
struct SharedFree {
    std::mutex mu;
    uint32_t *v = nullptr;
    uint32_t n = 0;
    uint32_t cap = 0;
};
SharedFree g_free;
std::atomic<uint32_t> g_free_count{0};

// Retired slots left by threads that exited while another thread held them.
SharedFree g_orphans;
std::atomic<uint32_t> g_orphan_count{0};

bool push(SharedFree &f, const uint32_t *src, uint32_t n) {
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

bool ensure_chunk(uint32_t chunk) {
    if (g_chunks[chunk].load(std::memory_order_acquire)) return true;
    std::lock_guard<std::mutex> lock(g_chunk_mu);
    if (g_chunks[chunk].load(std::memory_order_relaxed)) return true;
    Slot *slots = new (std::nothrow) Slot[kChunkSize];
    if (!slots) return false;
    g_chunks[chunk].store(slots, std::memory_order_release);
    return true;
}

// Whether any thread's hazard slot holds `mark` (slot index + 1). The
// seq_cst loads pair with the users' seq_cst exchanges (see set_hazards):
// a user either sees the generation flipped by the destroyer, or the
// destroyer sees its hazard.
bool held(uint32_t mark) {
    for (ThreadRecord *t = thread_list(); t; t = t->next) {
        const uint64_t h = t->hazards.load(std::memory_order_seq_cst);
        if (static_cast<uint32_t>(h) == mark || static_cast<uint32_t>(h >> 32) == mark)
            return true;
    }
    return false;
}

evx_status_t free_object(ThreadRecord *r, Slot *s) {
    const FreeHook hook = g_free_hooks[s->kind.load(std::memory_order_relaxed) & 15u];
    return hook ? hook(r, s->obj) : 0;
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

void adopt_orphans(ThreadRecord *r) {
    std::lock_guard<std::mutex> lock(g_orphans.mu);
    while (g_orphans.n > 0 && push_retired(r, g_orphans.v[g_orphans.n - 1])) --g_orphans.n;
    g_orphan_count.store(g_orphans.n, std::memory_order_relaxed);
}

// "n" before a vowel: "an event", "a stream".
const char *article(const char *noun) {
    return std::strchr("aeiou", noun[0]) ? "n" : "";
}

}  // namespace

const char *kind_name(uint32_t kind) {
    switch (kind) {
    case kEvent: return "event";
    case kStream: return "stream";
    case kPool: return "event pool";
    case kTimer: return "timer";
    case kTimeline: return "timeline";
    case kNotifier: return "notifier";
    default: return nullptr;
    }
}

evx_status_t bad_handle(const char *fn, const char *role, uint64_t v,
                        uint32_t want) {
    const char *want_name = kind_name(want);
    if (v == 0) return fail(EVX_ERROR_INVALID_HANDLE, "%s: null %s handle", fn, role);
    const char *tag = kind_name(static_cast<uint32_t>(v & 15u));
    if ((v & 15u) != want) {
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
    if (push(g_free, tmp, kRingSize / 2)) {
        g_free_count.store(g_free.n, std::memory_order_relaxed);
    }
    // Out of memory: the slots are lost, which only costs table space.
}

evx_status_t retire(ThreadRecord *r, const void *h) {
    const uint32_t index = handle_index(handle_value(h));
    Slot *s = &slot_ref(index);
    evx_status_t status = 0;
    if (s->kind.load(std::memory_order_relaxed) == kEvent && s->event.pool == nullptr &&
        !(s->event.flags & EVX_EVENT_INTERPROCESS) &&
        s->event.away.load(std::memory_order_acquire) == nullptr && push_retired(r, index)) {
        // Plain events are freed in batches: one scan of every thread's
        // hazard slots per kRetireBatch destroys, instead of one per destroy,
        // keeps destroy cheap and leaves the other threads' hazard lines in
        // their own caches. Interprocess events are not batched: their
        // destroy closes the driver event now (ipc.h), unless a racing call
        // holds it. Nor are events recorded in other contexts: their driver
        // events there are destroyed now, so that the caller may destroy
        // those contexts next (contexts.cpp).
    } else if (!held(index + 1)) {
        status = free_object(r, s);
        slot_free(r, index);
    } else if (!push_retired(r, index)) {
        // No memory for the list: wait for the holder to let go.
        status = retire_waiting(r, h);
    }
    if (r->retired_n >= r->retire_limit ||
        g_orphan_count.load(std::memory_order_relaxed) > 0)
        retire_rescan(r);
    return status;
}

evx_status_t retire_waiting(ThreadRecord *r, const void *h) {
    const uint32_t index = handle_index(handle_value(h));
    // Holders leave when their call returns, which may be a long wait (a
    // synchronize): yield first, then sleep a little between looks.
    for (unsigned spins = 0; held(index + 1); ++spins) {
        if (spins < 64) {
            sched_yield();
        } else {
            const timespec nap{0, 100 * 1000};  // 0.1 ms
            nanosleep(&nap, nullptr);
        }
    }
    const evx_status_t status = free_object(r, &slot_ref(index));
    slot_free(r, index);
    return status;
}

void retire_rescan(ThreadRecord *r) {
    if (g_orphan_count.load(std::memory_order_relaxed) > 0) adopt_orphans(r);
    // One pass over the hazard slots for the whole list (seq_cst loads, after
    // the generation exchanges of every retired handle: see held()).
    constexpr uint32_t kMaxMarks = 256;
    uint32_t marks[kMaxMarks];
    uint32_t nmarks = 0;
    bool overflow = false;
    for (ThreadRecord *t = thread_list(); t && !overflow; t = t->next) {
        const uint64_t h = t->hazards.load(std::memory_order_seq_cst);
        if (h == 0) continue;
        if (nmarks + 2 > kMaxMarks) {
            overflow = true;
            break;
        }
        if (static_cast<uint32_t>(h)) marks[nmarks++] = static_cast<uint32_t>(h);
        if (h >> 32) marks[nmarks++] = static_cast<uint32_t>(h >> 32);
    }
    uint32_t kept = 0;
    for (uint32_t i = 0; i < r->retired_n; ++i) {
        const uint32_t index = r->retired[i];
        bool is_held = false;
        if (overflow) {
            is_held = held(index + 1);
        } else {
            for (uint32_t m = 0; m < nmarks && !is_held; ++m) is_held = marks[m] == index + 1;
        }
        if (is_held) {
            r->retired[kept++] = index;
        } else {
            free_object(r, &slot_ref(index));
            slot_free(r, index);
        }
    }
    r->retired_n = kept;
    // What is still held is looked at again after another batch.
    r->retire_limit = kept + kRetireBatch;
}

void handles_detach(ThreadRecord *r) {
    retire_rescan(r);
    if (r->retired_n > 0) {
        std::lock_guard<std::mutex> lock(g_orphans.mu);
        if (push(g_orphans, r->retired, r->retired_n)) {
            g_orphan_count.store(g_orphans.n, std::memory_order_relaxed);
            r->retired_n = 0;
        }
    }
    // Whatever could not be handed over stays on the record, which the next
    // thread to take it scans again.
    uint32_t tmp[kRingSize + kReadyMax];
    uint32_t n = 0;
    while (r->ring_count > 0) {
        tmp[n++] = r->ring[r->ring_head];
        r->ring_head = (r->ring_head + 1) & (kRingSize - 1);
        --r->ring_count;
    }
    while (r->ready_n > 0) tmp[n++] = r->ready[--r->ready_n];
    std::lock_guard<std::mutex> lock(g_free.mu);
    if (push(g_free, tmp, n)) g_free_count.store(g_free.n, std::memory_order_relaxed);
}

evx_status_t destroy_handle(const void *h, uint32_t kind, const char *fn, const char *role) {
    ThreadRecord *r;
    evx_status_t st = enter_thread(&r);
    if (st) return st;
    Slot *s = nullptr;
    st = unpublish(h, kind, fn, role, &s);
    return st ? st : retire(r, h);
}

}  // namespace evx
