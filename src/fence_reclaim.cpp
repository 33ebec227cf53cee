// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Reclaiming a destroyed fence's memory (docs/fences.md, "Destroying a
// fence"). Every operation evx queues on a fence's counter is queued on a
// stream whose handle the fence tracks (fence_track()). When the fence is
// freed its memory goes to a list here; the next fence call marks each
// tracked stream that is still live with an event recorded after what it
// queued, and a later call frees the memory once every mark completed.
// Nothing here waits for the GPU: destroy never blocks. A word goes back to
// the pool (fence_pool.cpp), a page is kept for a trim (fence_release.cpp):
// the driver's own release would wait.
//
// The marks are made at a later fence call rather than by the free itself,
// because a free may run inside another call's release of its hazards
// (reclaim.cpp), where a lookup of the stream handles must not start. By
// then the fence's handle is dead and no call holds it, so the tracked
// streams are final; an event recorded later still follows them in stream
// order. A stream freed before its mark records, as it is freed, one
// event that every fence still needing it waits for
// (fence_stream_gone(), from stream.cpp). A notifier's watch waits on an internal stream of the notifier,
// tracked with the notifier's handle: marked while the notifier lives,
// and needing no mark once it is destroyed (its destroy waited for every
// watch). What cannot be marked (a per-thread default stream, a stream
// whose event the driver refused, or a fence the reclaimer had no memory to
// remember) is kept for the life of the process and counted
// (evx_fence_reclaim()).
//
// A stream taking part in a capture is not marked until the capture ends:
// the mark would be a node of the caller's graph, and the query of it would
// invalidate the capture. Nor is the legacy stream while a blocking stream
// of its context captures (a record there would invalidate that capture).
// The entry stays unmarked and a later fence call tries again. A stream
// freed while capturing records no event; its fences are kept.
#include <sched.h>

#include <mutex>
#include <new>
#include <utility>
#include <vector>

#include "driver.hpp"
#include "error.hpp"
#include "evx/fence.h"
#include "fence.hpp"
#include "scope.hpp"
#include "stream_object.hpp"

namespace evx {

// The tracking entries of a fence after its first Fence::kTrack, a chunk
// at a time, linked as they are added (never moved, so that a scan without
// the lock may read them) and freed with the fence.
struct FenceTrackChunk {
    static constexpr uint32_t kSize = 32;
    FenceTrack e[kSize] = {};
    FenceTrackChunk *next = nullptr;  // set before ntracked counts an entry of it
};

namespace {

// A stream freed while fences' reclamation still needed it: the event
// recorded on it then, which those fences wait for instead of one of
// their own. Shared by `refs` fences not marked yet.
struct Gone {
    const Stream *obj;
    uint64_t seq;  // its place in the order of gone streams
    CUevent ev;    // nullptr once it completed (or could not be recorded)
    bool failed;   // no event could be recorded: the fences keep their memory
    uint32_t refs;
};

// One tracked stream of a destroyed fence, and how its mark is waited for.
struct Mark {
    FenceTrack t;
    CUevent event;  // its own mark, or null
    uint64_t gone;  // else the Gone record's seq, or 0
    bool done;      // marked (or found unmarkable); its stream's reference dropped
};

// What an attempt to mark gives.
enum class Marked { kYes, kNo, kLater };

struct Deferred {
    int device;
    bool ipc;
    bool keep;    // kept for good: its streams' references are only dropped
    bool marked;  // events recorded (or found) for every tracked stream
    void *mem;    // the word (cuMemHostAlloc) or the registered page
    std::vector<Mark> marks;
};

std::mutex g_mu;  // guards the list and the gone records; no lookup under it
std::vector<Deferred> &list() {
    static auto *l = new std::vector<Deferred>;  // never destroyed: used at exit
    return *l;
}
std::vector<Gone> &gone() {
    static auto *g = new std::vector<Gone>;
    return *g;
}
uint64_t g_gone_seq = 0;          // under g_mu
std::atomic<size_t> g_count{0};   // list().size()
std::atomic<uint64_t> g_kept{0};  // memory kept for the life of the process

// Whether stream `cs` (its context current) is clear of every capture:
// neither taking part in one nor, for the legacy stream, held by a
// blocking stream's capture (STREAM_CAPTURE_IMPLICIT). A query the driver
// fails otherwise counts as clear: the record that follows fails too, and
// the fence is kept.
bool capture_clear(CUstream cs) {
    if (!cu().cuStreamIsCapturing) return true;
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    const CUresult r = cu().cuStreamIsCapturing(cs, &st);
    if (r == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) return false;
    return r != CUDA_SUCCESS || st == CU_STREAM_CAPTURE_STATUS_NONE;
}

// An event recorded on `cs` with its context current (entered: the
// status of making it current): *ev, or false.
bool record_mark(evx_status_t entered, CUstream cs, CUevent *ev) {
    if (entered || cu().cuEventCreate(ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) return false;
    if (cu().cuEventRecord(*ev, cs) == CUDA_SUCCESS) return true;
    cu().cuEventDestroy(*ev);
    *ev = nullptr;
    return false;
}

// The Gone record of the lifetime of the stream m tracked: the first one of
// that address after the entry's seq. Under g_mu.
Gone *find_gone(const Mark &m) {
    Gone *best = nullptr;
    for (Gone &g : gone())
        if (g.obj == m.t.obj && g.seq > m.t.seq && (!best || g.seq < best->seq)) best = &g;
    return best;
}

// The mark of a live stream s of d: its own event, unless d is kept or s
// takes part in a capture (kLater: its reference stays).
Marked mark_stream(const Deferred &d, Mark &m, const Stream *s) {
    bool ok = true;
    if (!d.keep) {
        ContextGuard guard;
        const evx_status_t st = s->default_stream
                                    ? guard.enter(nullptr, s->device)
                                    : guard.enter_context(nullptr, s->ctx, s->device);
        if (st == 0 && !capture_clear(s->cu)) return Marked::kLater;
        ok = record_mark(st, s->cu, &m.event);
    }
    s->fence_refs.fetch_sub(1, std::memory_order_release);
    return ok ? Marked::kYes : Marked::kNo;
}

// Mark m of d: its own event on a live stream (or notifier lane), or the
// Gone record of its stream; drops the stream's reference either way
// (keep: only that), unless it is to be tried again later.
Marked mark_one(const Deferred &d, Mark &m) {
    static const char fn[] = "evx_fence_destroy";
    HandleScope scope;
    Slot *slot = nullptr;
    m.event = nullptr;
    m.gone = 0;
    if (m.t.lane) {
        // A destroyed notifier waited for its watches: nothing to mark.
        if (d.keep || scope.lookup(fn, m.t.handle, kNotifier, "notifier", &slot) != 0)
            return Marked::kYes;
        ContextGuard guard;  // lanes are streams of the primary context
        return record_mark(guard.enter(nullptr, d.device), m.t.lane, &m.event) ? Marked::kYes
                                                                               : Marked::kNo;
    }
    if (scope.lookup(fn, m.t.handle, kStream, "stream", &slot) == 0)
        return mark_stream(d, m, static_cast<const Stream *>(slot->obj));
    // Freed since: its free recorded the event (fence_stream_gone()).
    std::lock_guard<std::mutex> lk(g_mu);
    Gone *g = find_gone(m);
    if (!g) return Marked::kNo;
    --g->refs;
    if (d.keep || g->failed) return Marked::kNo;
    m.gone = g->seq;
    ++g->refs;  // held until d is freed
    return Marked::kYes;
}

// Marks every entry of d not marked yet (no lock held): kLater if one
// must wait for a capture to end, else kNo if one cannot be marked.
Marked mark(Deferred &d) {
    bool ok = !d.keep, later = false;
    for (Mark &m : d.marks) {
        if (m.done) continue;
        const Marked r = mark_one(d, m);
        if (r == Marked::kLater) {
            later = true;
            continue;
        }
        m.done = true;
        ok = r == Marked::kYes && ok;
    }
    if (ok) return later ? Marked::kLater : Marked::kYes;
    if (later) {  // kept: the streams left still hold references to drop
        d.keep = true;
        for (Mark &m : d.marks)
            if (!m.done) m.done = mark_one(d, m) != Marked::kLater;
    }
    return Marked::kNo;
}

// Whether a Gone record's event completed; under g_mu.
bool gone_done(uint64_t seq, bool *failed) {
    for (Gone &g : gone()) {
        if (g.seq != seq) continue;
        if (g.ev) {
            const CUresult r = cu().cuEventQuery(g.ev);
            if (r == CUDA_ERROR_NOT_READY) return false;
            if (r != CUDA_SUCCESS) g.failed = true;
            cu().cuEventDestroy(g.ev);
            g.ev = nullptr;
        }
        if (g.failed) *failed = true;
        return true;
    }
    return true;
}

// Whether every mark of d completed; *failed when one never will be known.
bool completed(const Deferred &d, bool *failed) {
    for (const Mark &m : d.marks) {
        if (m.gone && !gone_done(m.gone, failed)) return false;
        if (!m.event) continue;
        const CUresult r = cu().cuEventQuery(m.event);
        if (r == CUDA_ERROR_NOT_READY) return false;
        if (r != CUDA_SUCCESS) *failed = true;
    }
    return true;
}

// Drops d's events and Gone references, and frees its memory; under g_mu.
void drop_deferred(Deferred &d, bool free_mem) {
    for (Mark &m : d.marks) {
        if (m.event) cu().cuEventDestroy(m.event);
        m.event = nullptr;
        for (Gone &g : gone())
            if (m.gone && g.seq == m.gone) --g.refs;
        m.gone = 0;
    }
    if (!free_mem) return;
    // Never a driver free here: cuMemFreeHost and cuMemHostUnregister wait
    // for the device's queued work, and this runs in calls that must not.
    if (d.ipc)
        fence_keep_for_trim(d.device, d.mem, true);
    else
        fence_word_put(d.device, static_cast<FenceWord *>(d.mem));
}

// Gone records no fence needs any more; under g_mu.
void prune_gone() {
    std::vector<Gone> &g = gone();
    for (size_t i = 0; i < g.size();) {
        bool failed = false;
        if (g[i].refs == 0 && (g[i].ev == nullptr || gone_done(g[i].seq, &failed))) {
            if (g[i].ev) cu().cuEventDestroy(g[i].ev);
            g[i] = g.back();
            g.pop_back();
        } else {
            ++i;
        }
    }
}

// Frees what completed; under g_mu.
void poll_locked() {
    std::vector<Deferred> &l = list();
    for (size_t i = 0; i < l.size();) {
        bool failed = false;
        if (!l[i].marked || !completed(l[i], &failed)) {
            ++i;
            continue;
        }
        // A mark that failed (the context was reset): the GPU's state is
        // unknown, so the memory is kept.
        drop_deferred(l[i], !failed);
        if (failed) g_kept.fetch_add(1, std::memory_order_relaxed);
        l[i] = std::move(l.back());
        l.pop_back();
    }
    prune_gone();
    g_count.store(l.size(), std::memory_order_relaxed);
}

// Calls fn(entry) for each of the first n tracking entries of f until it
// returns true; whether one did. n: ntracked, loaded with acquire (or
// under track_mu), so that the entries it counts, and the chunk links that
// reach them, are seen.
template <class Fn>
bool any_entry(const Fence *f, uint32_t n, Fn fn) {
    const uint32_t k = n < Fence::kTrack ? n : Fence::kTrack;
    for (uint32_t i = 0; i < k; ++i)
        if (fn(f->tracked[i])) return true;
    n -= k;
    for (const FenceTrackChunk *c = f->more; n > 0; c = c->next) {
        const uint32_t m = n < FenceTrackChunk::kSize ? n : FenceTrackChunk::kSize;
        for (uint32_t i = 0; i < m; ++i)
            if (fn(c->e[i])) return true;
        n -= m;
    }
    return false;
}

// Whether f tracks (h, lane) already: a scan of the entries published so
// far, with no lock (an entry is written before `ntracked` counts it, and
// never changes after), so that streams taking turns on one fence add no
// locked instruction to their operations.
bool tracked_already(const Fence *f, const void *h, CUstream lane) {
    return any_entry(f, f->ntracked.load(std::memory_order_acquire),
                     [&](const FenceTrack &t) { return t.handle == h && t.lane == lane; });
}

// Where entry n goes (under track_mu), a chunk added if it is the first
// of one; nullptr when out of memory.
FenceTrack *new_entry(Fence *f, uint32_t n) {
    if (n < Fence::kTrack) return &f->tracked[n];
    n -= Fence::kTrack;
    FenceTrackChunk **link = &f->more;
    for (; n >= FenceTrackChunk::kSize; n -= FenceTrackChunk::kSize) link = &(*link)->next;
    if (n == 0) *link = new (std::nothrow) FenceTrackChunk;
    return *link ? &(*link)->e[n] : nullptr;
}

void track(Fence *f, const void *h, CUstream lane, const Stream *s) {
    if (tracked_already(f, h, lane)) return;
    while (f->track_mu.exchange(true, std::memory_order_acquire)) sched_yield();
    const uint32_t n = f->ntracked.load(std::memory_order_relaxed);
    if (!tracked_already(f, h, lane)) {  // else added meanwhile
        FenceTrack *t = new_entry(f, n);
        if (t) {
            *t = FenceTrack{h, lane, s, 0};
            if (s) {
                s->fence_refs.fetch_add(1, std::memory_order_relaxed);
                std::lock_guard<std::mutex> lk(g_mu);
                t->seq = g_gone_seq;
            }
            f->ntracked.store(n + 1, std::memory_order_release);
        } else {
            f->untracked.store(true, std::memory_order_relaxed);  // no memory to follow it
        }
    }
    f->track_mu.store(false, std::memory_order_release);
}

}  // namespace

void fence_track(Fence *f, const void *stream, const Stream *s) { track(f, stream, nullptr, s); }

void fence_track_lane(Fence *f, const void *notifier, CUstream lane) {
    track(f, notifier, lane, nullptr);
}

void fence_track_free(Fence *f) {
    for (FenceTrackChunk *c = f->more; c;) {
        FenceTrackChunk *next = c->next;
        delete c;
        c = next;
    }
    f->more = nullptr;
}

void fence_untrack(Fence *f) { f->untracked.store(true, std::memory_order_relaxed); }

void fence_count_lost() { g_kept.fetch_add(1, std::memory_order_relaxed); }

void fence_stream_gone(const Stream *s) {
    Gone g{s, 0, nullptr, false, 0};
    {
        ContextGuard guard;
        const evx_status_t st = s->default_stream
                                    ? guard.enter(nullptr, s->device)
                                    : guard.enter_context(nullptr, s->ctx, s->device);
        // Not on a capturing stream: its fences are kept instead.
        g.failed = (st == 0 && !capture_clear(s->cu)) || !record_mark(st, s->cu, &g.ev);
    }
    std::lock_guard<std::mutex> lk(g_mu);
    g.seq = ++g_gone_seq;
    g.refs = s->fence_refs.load(std::memory_order_acquire);
    try {
        gone().push_back(g);
    } catch (const std::bad_alloc &) {
        if (g.ev) cu().cuEventDestroy(g.ev);  // its fences find none: kept
    }
}

void fence_defer_free(Fence *f, void *mem, bool ipc) {
    Deferred d{};
    d.device = f->device;
    d.ipc = ipc;
    d.keep = f->untracked.load(std::memory_order_relaxed);
    d.mem = mem;
    std::lock_guard<std::mutex> lk(g_mu);
    try {
        d.marks.reserve(f->ntracked.load(std::memory_order_acquire));
        any_entry(f, f->ntracked.load(std::memory_order_acquire), [&](const FenceTrack &t) {
            d.marks.push_back(Mark{t, nullptr, 0, false});
            return false;
        });
        list().push_back(std::move(d));
    } catch (const std::bad_alloc &) {
        g_kept.fetch_add(1, std::memory_order_relaxed);  // no memory to remember it
        return;
    }
    g_count.store(list().size(), std::memory_order_relaxed);
}

namespace {

// One step: marks what is not marked yet (outside the lock: the lookups
// may free fences and streams, which come back here), then frees what
// completed. block: wait for the lock (evx_fence_reclaim) rather than
// leave the step to another thread.
void step(bool block) {
    std::unique_lock<std::mutex> lk(g_mu, std::defer_lock);
    if (block)
        lk.lock();
    else if (!lk.try_lock())
        return;
    std::vector<Deferred> todo;
    std::vector<Deferred> &l = list();
    for (size_t i = 0; i < l.size();) {
        if (l[i].marked) {
            ++i;
            continue;
        }
        try {
            todo.push_back(std::move(l[i]));  // untouched if it throws
        } catch (const std::bad_alloc &) {
            break;  // marked at a later step
        }
        l[i] = std::move(l.back());
        l.pop_back();
    }
    g_count.store(l.size() + todo.size(), std::memory_order_relaxed);
    lk.unlock();
    std::vector<bool> failed(todo.size(), false);
    for (size_t i = 0; i < todo.size(); ++i) {
        const Marked r = mark(todo[i]);
        todo[i].marked = r == Marked::kYes;
        failed[i] = r == Marked::kNo;
    }
    lk.lock();
    size_t kept = 0;
    for (size_t i = 0; i < todo.size(); ++i) {
        Deferred &d = todo[i];
        bool pushed = false;
        if (!failed[i]) {  // marked, or to be marked at a later step
            try {
                l.push_back(std::move(d));
                pushed = true;
            } catch (const std::bad_alloc &) {
            }
        }
        if (!pushed) {
            drop_deferred(d, false);  // its memory is kept
            ++kept;
        }
    }
    if (kept) g_kept.fetch_add(kept, std::memory_order_relaxed);
    poll_locked();
}

}  // namespace

void fence_reclaim_step() {
    if (__builtin_expect(g_count.load(std::memory_order_relaxed) == 0, 1)) return;
    step(false);
}

}  // namespace evx

using namespace evx;

extern "C" {

EVX_API evx_status_t evx_fence_reclaim(uint64_t *pending, uint64_t *kept) {
    if (g_count.load(std::memory_order_relaxed) != 0) step(true);
    // Pages waiting for a trim are kept (fence_release.cpp says why).
    if (pending) *pending = g_count.load(std::memory_order_relaxed);
    if (kept) *kept = g_kept.load(std::memory_order_relaxed) + fence_kept_count();
    return EVX_SUCCESS;
}

}  // extern "C"
