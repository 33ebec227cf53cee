// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Per-thread records: hazard slots, free handle slots, retired handles,
// the thread's event caches (their types are cache.hpp's) and the last
// error. See docs/design.md, "Safe use against a
// racing destroy".
#ifndef EVX_SRC_THREAD_HPP
#define EVX_SRC_THREAD_HPP

#include <atomic>
#include <cstdint>

#include "evx/common.h"

// ThreadSanitizer does not model membarrier(2): under it calls publish their
// hazards with a seq_cst exchange, which it follows (light_hazards()).
#if defined(__SANITIZE_THREAD__)
#define EVX_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define EVX_TSAN 1
#endif
#endif
#ifndef EVX_TSAN
#define EVX_TSAN 0
#endif

namespace evx {

constexpr uint32_t kMessageSize = 512;
// Free handle slots a thread keeps: an index comes back only after
// kQuarantine others were freed by the same thread.
constexpr uint32_t kRingSize = 4096;
constexpr uint32_t kQuarantine = 1024;
constexpr uint32_t kReadyMax = 256;
// Destroyed events a thread collects before it scans the hazard slots.
constexpr uint32_t kRetireBatch = 32;

struct CacheBucket;  // cache.hpp
struct HostHome;     // hostfn.cpp

struct ThreadRecord {
    // The two hazard slots, one word: low half for the first handle of a
    // call, high half for the second; each holds the low half of a handle
    // (index and kind: holds() in reclaim.hpp), 0 = none.
    // Published with a plain 32-bit store per half where light_hazards(),
    // else with a seq_cst exchange of the word (set_hazards() in
    // reclaim.hpp); cleared whole at a call's end. Read by every
    // destroying thread, so kept on a cache line of its own.
    alignas(64) std::atomic<uint64_t> hazards{0};
    // Nonzero when a destroy found this thread holding what it retired: the
    // call that holds it, as it ends, frees what no call holds any more
    // (release_hazards() in reclaim.hpp). On the hazard line, which the call
    // has just written, so looking at it costs the end of a call a load
    // from its own cache.
    std::atomic<uint32_t> reclaim{0};
    // light_hazards(), copied when the record is made: read by every call
    // from the line it writes anyway.
    bool light = false;
    // What a hot call keeps across its driver call for what follows it
    // (elapsed time's result and out-pointer, a fence wait's value, for
    // its failure path): on the line the call writes anyway, so that the
    // hot calls need no stack frame for them. The owner's alone.
    float keep_ms = 0.0f;
    uint64_t keep = 0;
    // A fence signal's plain claim (fence.cpp, plain_claim() and
    // claim_value()): kClaiming while this thread is in a claim's window
    // (announced before it loads Fence::claimer; a thread that takes the
    // claims away from this one waits for its end), else the value of its
    // last queued signal, and the `last` that claim replaced, for the
    // signal's failure path.
    std::atomic<uint64_t> claim{0};
    uint64_t claim_prev = 0;

    alignas(64) ThreadRecord *next = nullptr;  // registry link, immutable
    std::atomic<bool> in_use{false};

    evx_status_t last_status = 0;
    char message[kMessageSize] = {};
    // The user_data of the failed host function the last failure reported
    // (hostfn.cpp); host_set is cleared by every other failure.
    void *host_data = nullptr;
    bool host_set = false;
    // The records of this record's host-function launches (hostfn.cpp),
    // made on its first launch; stays with the record, as the driver may
    // still run launches of a thread that has exited.
    HostHome *host_home = nullptr;

    // The owner's hold on what another thread may reach into: the retired
    // list and the event caches below (see own_enter()). busy: 1 while the
    // owner holds them; steal: set by a thread that wants to reach in
    // (steal_others()). On the line the owner writes on every create and
    // destroy anyway.
    alignas(64) std::atomic<uint32_t> busy{0};
    std::atomic<uint32_t> steal{0};

    // Free handle slots: a FIFO ring (quarantine) and a stack of slots
    // ready for use at once (fresh ones, or old ones from other threads).
    uint32_t ring_head = 0;
    uint32_t ring_count = 0;
    uint32_t ready_n = 0;
    uint32_t ring[kRingSize];
    uint32_t ready[kReadyMax];

    // Destroyed handles whose objects are not freed yet: plain events
    // waiting for the next batch scan (another thread's trim may take them
    // over, under the owner's hold), and, when there was no memory to hand
    // them over, objects another thread held.
    uint32_t *retired = nullptr;
    uint32_t retired_n = 0;
    uint32_t retired_cap = 0;
    uint32_t retire_limit = kRetireBatch;  // scan when retired_n reaches it

    // Event caches, device * 4 + (flags & 3); allocated on first use. Used
    // under the owner's hold: another thread's trim destroys what they keep.
    CacheBucket **buckets = nullptr;
    uint32_t nbuckets = 0;
};

extern __thread ThreadRecord *t_record __attribute__((tls_model("initial-exec")));
// t_record where its `light` is set, else nullptr (no record yet, or hazards
// published with an exchange): so that a hot call tells its common case,
// an attached thread with light hazards, with one test of a thread-local
// (light_record()), and takes one cold path for both of the others.
// Zero-initialized, as t_record (no relocation in the TLS image).
extern __thread ThreadRecord *t_light __attribute__((tls_model("initial-exec")));

// Takes a free record (or makes one) for the calling thread; nullptr when
// out of memory.
ThreadRecord *attach_thread();

inline ThreadRecord *self() {
    ThreadRecord *r = t_record;
    if (__builtin_expect(r != nullptr, 1)) return r;
    return attach_thread();
}

// t_light: the calling thread's record if it publishes its hazards with
// plain stores (ThreadRecord::light), else nullptr. The compiler is told
// that such a record's `light` is set, so that set_hazards() tests nothing
// more.
inline ThreadRecord *light_record() {
    ThreadRecord *r = t_light;
    if (r != nullptr && !r->light) __builtin_unreachable();
    return r;
}

// The registry of every record ever made (records are never freed).
ThreadRecord *thread_list();

// A barrier on every thread of the process that runs now: each executes a
// full fence at some point during this call. It lets the other side of a
// store-then-load handshake order its store and load with a compiler
// barrier only (set_hazards() and release_hazards() in reclaim.hpp,
// own_enter() below). False
// when the system offers no way to do it (nothing was ordered).
bool heavy_barrier();

// Whether calls publish their hazards with a plain store and a compiler
// barrier (no fence), every reader of hazards that decides a free running
// heavy_barrier() first: where membarrier(2)'s expedited barrier is
// registered, which once registered cannot fail. Decided once, at the first
// thread's first call, before any handle exists; false under
// ThreadSanitizer. See docs/design.md, "Safe use against a racing destroy".
bool light_hazards();

// --- the owner's hold on its record --------------------------------------
//
// A thread's retired list and event caches are its own: it uses them with
// no lock. Another thread reaches into them only through steal_others(),
// for evx_device_trim(). The owner's side is a plain store, a compiler
// barrier and a load of its own steal flag; the thief's side sets the
// flags, runs heavy_barrier() and waits for each owner's busy word to be 0.
// So either the thief sees the owner's hold (and waits for its end), or the
// owner sees the flag (and waits for the thief). Holds do not nest: a hold
// covers list and stack operations only, never a free hook (which gives to
// the cache) or a driver call.

// The owner waits for a thief to be done with its record (cold).
void own_wait(ThreadRecord *r) __attribute__((cold, noinline));

inline void own_enter(ThreadRecord *r) {
    r->busy.store(1, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (__builtin_expect(r->steal.load(std::memory_order_acquire) != 0, 0)) own_wait(r);
}

inline void own_leave(ThreadRecord *r) { r->busy.store(0, std::memory_order_release); }

// own_enter() for a fast path that has a slow one to fall back on: false,
// holding nothing, when a thief wants in (the slow path's own_enter() then
// waits for it), so that the fast path makes no call.
inline bool own_try_enter(ThreadRecord *r) {
    r->busy.store(1, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (__builtin_expect(r->steal.load(std::memory_order_acquire) == 0, 1)) return true;
    own_leave(r);
    return false;
}

// The owner's hold for a block.
class OwnHold {
public:
    explicit OwnHold(ThreadRecord *r) : r_(r) { own_enter(r_); }
    ~OwnHold() { own_leave(r_); }
    OwnHold(const OwnHold &) = delete;
    OwnHold &operator=(const OwnHold &) = delete;

private:
    ThreadRecord *r_;
};

// Runs visit(self, other, arg) on every record but `self`, each while its
// owner holds nothing and cannot start a hold. One thief at a time (a
// mutex); the caller must hold nothing of its own record. False, with
// nothing visited, when heavy_barrier() is not available.
using StealVisit = void (*)(ThreadRecord *self, ThreadRecord *other, void *arg);
bool steal_others(ThreadRecord *self, StealVisit visit, void *arg);

// Work a module does for a thread that exits, before its record is left for
// reuse: registered at library load (as the handle table's free hooks are),
// so that this file names no module above it. They run in stage order.
enum ExitStage : uint32_t {
    kExitHandles = 0,  // retired handles freed or handed over (reclaim.cpp)
    kExitCaches = 1,   // kept driver events moved to the shared depot (cache.cpp)
    kExitStages = 2,
};
using ExitHook = void (*)(ThreadRecord *r);
extern ExitHook g_exit_hooks[kExitStages];

// `const ExitHookEntry kCacheExit(kExitCaches, cache_flush_thread);`
struct ExitHookEntry {
    ExitHookEntry(ExitStage stage, ExitHook hook) { g_exit_hooks[stage] = hook; }
};

}  // namespace evx

#endif  // EVX_SRC_THREAD_HPP
