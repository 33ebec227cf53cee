// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// The object behind a fence handle, as fence.cpp, fence_ipc.cpp and the
// notifier (notify.cpp) see it. See include/evx/fence.h and
// docs/design.md, "Fences".
#ifndef EVX_SRC_FENCE_HPP
#define EVX_SRC_FENCE_HPP

#include <cuda.h>

#include <atomic>
#include <cstdint>

#include "evx/common.h"

namespace evx {

struct Stream;  // stream_object.hpp

// A stream a fence had an operation queued on (fence_reclaim.cpp).
struct FenceTrack {
    const void *handle;  // the stream's handle, or a notifier's
    CUstream lane;       // a notifier's internal stream, else null
    const Stream *obj;   // the stream's object (null for a notifier)
    uint64_t seq;        // the streams gone when it was tracked
};
struct FenceTrackChunk;  // fence_reclaim.cpp

// The memory of a fence, shared with the GPU (and, for an IPC fence, with
// other processes): pinned host memory mapped to the device. Plain
// integers, used only through __atomic builtins (address-free, so they work
// across processes). The counter the GPU writes and waits on has a cache
// line of its own: the host's compare-and-swap on `last` and its sleepers'
// wake word do not share it with the device's polling.
struct FenceWord {
    uint64_t value;      // the counter (cuStreamWriteValue64 / cuStreamWaitValue64)
    char pad0[56];
    uint64_t last;       // IPC: the largest value signalled or queued, in any process
    uint32_t wake;       // IPC fences' futex word: bumped by every host signal
    int32_t owner_pid;   // IPC: the process that made the fence
    char magic[8];       // IPC: "evxfence"
    uint64_t nonce;      // IPC: the fence's identity, also in its handles
    char pad1[32];
};
static_assert(sizeof(FenceWord) == 128, "FenceWord is two cache lines");

// Aligned to a cache line: what a signal or wait reads and claims (device,
// used, dptr, fast, last, claimer and, for a fence of this
// process, last_local) is on one.
struct alignas(64) Fence {
    int device = 0;
    unsigned flags = 0;        // EVX_FENCE_*
    // Set by the first signal, wait or watch queued on a stream: from then
    // on the GPU may touch the word after the handle dies, so it is kept.
    std::atomic<bool> used{false};
    bool opened = false;       // evx_device_open_ipc_fence()
    CUdeviceptr dptr = 0;      // the device's address of word->value
    // The fast path of a queued operation (fence.cpp): the handles of up
    // to two streams (nullptr: none) for which a call needs no check and
    // no tracking; two, so that the usual pair, one stream that signals
    // and one that waits, both stay here. A stream is put here only once the fence is `used`, the
    // stream is tracked, is of the fence's device (the counter's address is
    // dptr) and is no default stream; a handle names one stream object for
    // its whole life, so each of these facts holds for as long as the
    // handle is live, and any entry a racing thread wrote is as good.
    std::atomic<const void *> fast[2] = {};
    // The largest value signalled or queued: &word->last for an IPC fence,
    // which other processes signal too; else &last_local, in this process's
    // memory (no other process can signal it), so that a signal's claim
    // touches neither the pinned page nor a line the device writes near.
    uint64_t *last = &last_local;
    uint64_t last_local = 0;
    // Who claims values with plain loads and stores of last_local instead
    // of a compare-and-swap (fence.cpp, claim_value()): nobody yet
    // (nullptr), the ThreadRecord of the one thread that has claimed so
    // far, or kClaimShared: every claim is a compare-and-swap (an IPC
    // fence, or one a second thread has claimed).
    std::atomic<const void *> claimer{nullptr};
    FenceWord *word = nullptr; // host address
    // The host sleepers' futex word, bumped by every host signal: for an
    // IPC fence, word->wake in the shared page (FUTEX_WAIT without the
    // private flag, so that other processes' signals wake it); else
    // wake_local, in ordinary memory (private). Never a word of
    // cuMemHostAlloc's memory: the driver maps it so that the kernel
    // refuses a futex there (EFAULT), and a waiter would spin.
    uint32_t wake_local = 0;
    uint32_t *wake = &wake_local;
    int futex_private = 1;
    // IPC fences (fence_ipc.cpp): the shared mapping, the descriptor of its
    // object (open for the fence's life: peers may open it through /proc),
    // the fence's identity and the object's name (for messages when not
    // `named`: a memfd).
    void *map = nullptr;
    int fd = -1;
    int32_t maker_pid = 0;
    uint64_t nonce = 0;
    bool named = false;
    char name[56] = {};
    // Other devices (fence.cpp, foreign_address()): the address of
    // word->value on each device, device_count entries, 0 until a stream of
    // that device first uses the fence; dptrs[device] is dptr.
    std::atomic<CUdeviceptr> *dptrs = nullptr;
    // Reclamation (fence_reclaim.cpp): the streams that had operations
    // queued on the fence, so that its memory is freed once they ran them.
    // Entries are added under track_mu and never change after; ntracked
    // counts those written (release), the first kTrack here, the rest in
    // `more`'s chunks, so that a scan needs no lock.
    std::atomic<bool> track_mu{false};
    std::atomic<bool> untracked{false};  // an operation evx cannot follow: kept for good
    std::atomic<uint32_t> ntracked{0};
    static constexpr uint32_t kTrack = 8;
    FenceTrack tracked[kTrack] = {};
    FenceTrackChunk *more = nullptr;  // the entries after kTrack (fence_reclaim.cpp)
};

inline uint64_t fence_value(const Fence *f) {
    return __atomic_load_n(&f->word->value, __ATOMIC_ACQUIRE);
}

inline void fence_set_used(Fence *f) {
    if (!f->used.load(std::memory_order_relaxed)) f->used.store(true, std::memory_order_relaxed);
}

// An operation queued on a stream that evx cannot mark later (a per-thread
// default stream): the memory is kept for the life of the process.
void fence_untrack(Fence *f);

// A notifier's watch (notify.cpp) about to queue its wait.
inline void fence_mark_used(Fence *f) { fence_set_used(f); }

// A notifier's watch queued its wait on an internal stream (`lane`) of the
// notifier `notifier` (a handle): followed for reclamation as long as the
// notifier lives (destroying it waits for every pending watch).
void fence_track_lane(Fence *f, const void *notifier, CUstream lane);

// --- fence_reclaim.cpp: freeing a destroyed fence's memory once the
// operations queued on it have run

// Remembers that `stream` (a handle; s its object) had an operation queued
// on f (a lock-free scan when it is tracked already).
void fence_track(Fence *f, const void *stream, const Stream *s);
// At free, for a fence whose memory the GPU may still reach: hands the
// memory (`mem`: the word, or an IPC fence's registered page) to the
// reclaimer, which gives the word back to the pool (keeps the page for a
// trim) once every tracked stream ran what it queued.
void fence_defer_free(Fence *f, void *mem, bool ipc);
// At free, for every fence: frees the tracking entries beyond the first
// Fence::kTrack.
void fence_track_free(Fence *f);
// A stream with fence_refs is being freed (stream.cpp, before its driver
// stream is destroyed): records the event the fences' reclamation waits
// for in place of their own.
void fence_stream_gone(const Stream *s);
// Marks the streams of fences freed since, and frees the memory of those
// whose marks completed; never blocks on the GPU. Called by fence calls.
void fence_reclaim_step();

// --- fence_pool.cpp: the pinned words of plain fences, a pool per device
// of words carved from pinned pages; no call here waits for the device,
// but fence_memory_trim().

// A word for a new fence of `device` (its context current): zeroed, with
// its device address; a new page when none is free.
evx_status_t fence_word_get(const char *fn, int device, FenceWord **word, CUdeviceptr *dptr);
// Gives a word back to the pool: no queued work may reach it any more.
void fence_word_put(int device, FenceWord *word);
// evx_device_trim(): reclaims what completed, frees the pages of the pool
// whose words are all free and retries the releases the driver refused;
// these driver calls wait for the device's queued work. 0, or the first
// refusal (the memory is kept; a later trim tries again).
evx_status_t fence_memory_trim(const char *fn, int device);

// --- fence_release.cpp: pinned memory kept until evx_device_trim(), as the
// driver's release waits for the device's queued work and holds every
// other driver call of the process meanwhile

// Before a pinned free or unregister: synchronizes every device whose
// primary context evx holds (sync_before_host_free() in driver.hpp says
// why; a portable page is mapped in each, and its free may wait for any of
// their work). May wait for the device: only a trim calls it.
void sync_known_devices();

// Keeps memory the GPU is done with until a trim of `device` releases it:
// an IPC page (registered: unregistered and unmapped) or a pool page
// (cuMemFreeHost). Makes no driver call.
void fence_keep_for_trim(int device, void *mem, bool registered);
// How many are kept so.
uint64_t fence_kept_count();
// Releases those of `device` now (may wait for the device): the first
// refusal (*what: the driver call; the memory stays kept), or CUDA_SUCCESS.
CUresult fence_release_kept(int device, const char **what);
// Counts memory kept for the life of the process (no memory to remember
// it; fence_reclaim.cpp's count).
void fence_count_lost();

// --- fence_ipc.cpp: the shared mapping of an EVX_FENCE_INTERPROCESS fence

// Makes the shared object (in /dev/shm, else a memfd), maps it and
// registers it with the driver (the device's context current); fills
// f->word, f->map, f->fd, f->nonce, f->name.
evx_status_t fence_ipc_create(const char *fn, Fence *f, uint64_t initial);
// Opens the object a handle names, by name, else through the exporter's
// /proc/<pid>/fd (same fills).
evx_status_t fence_ipc_open(const char *fn, Fence *f, const unsigned char *handle, size_t size);
// The handle bytes of an IPC fence.
void fence_ipc_handle(const Fence *f, unsigned char *out, size_t size);
// At free: unlinks the name (the maker), closes the descriptor, and unless
// the GPU may still touch it, keeps the page for a trim (fence_keep_for_trim()).
void fence_ipc_release(Fence *f);
// Opens a fence page given by a descriptor (evx_device_import_fence_fd):
// checks it, keeps its own duplicate, maps and registers it.
evx_status_t fence_ipc_import(const char *fn, Fence *f, int fd);
// A new descriptor of an IPC fence's page (close-on-exec).
evx_status_t fence_ipc_export_fd(const char *fn, const Fence *f, int *out);

}  // namespace evx

#endif  // EVX_SRC_FENCE_HPP
