// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Events: a record is an item in a stream; when the stream's worker reaches
// it, the event takes the time (CLOCK_MONOTONIC) and counts as complete,
// unless a later record has been made since.
#include "api.hpp"
#include "state.hpp"

namespace evxh {

namespace {

constexpr unsigned kEventFlags = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;

struct Snapshot {
    std::uint64_t issued, done;
    std::int64_t time_ns;
};

Snapshot snapshot(Event &ev) {
    std::lock_guard<std::mutex> lk(ev.mu);
    return Snapshot{ev.issued, ev.done, ev.time_ns};
}

}  // namespace

std::shared_ptr<Event> find_event(CUevent e) {
    return global().events.find(reinterpret_cast<std::uintptr_t>(e));
}

void complete_record(Event &ev, std::uint64_t gen) {
    if (ev.ipc) return ipc_complete(*ev.ipc, gen);
    std::lock_guard<std::mutex> lk(ev.mu);
    if (gen != ev.issued) return;  // re-recorded since: the later record counts
    ev.done = gen;
    ev.time_ns = now_ns();
}

CUresult event_create(CUevent *ph, unsigned flags) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = CUDA_SUCCESS;
    Context *c = require_context(&r);  // the driver checks the context first
    if (!c) return r;
    if (!ph || (flags & ~kEventFlags) != 0) return CUDA_ERROR_INVALID_VALUE;
    if ((flags & CU_EVENT_INTERPROCESS) && !(flags & CU_EVENT_DISABLE_TIMING))
        return CUDA_ERROR_INVALID_VALUE;
    auto ev = std::make_shared<Event>(c, flags);
    if (flags & CU_EVENT_INTERPROCESS) {
        r = ipc_attach(*ev);
        if (r != CUDA_SUCCESS) return r;
    }
    *ph = reinterpret_cast<CUevent>(global().events.add(std::move(ev)));
    return CUDA_SUCCESS;
}

CUresult event_destroy(CUevent e) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    // Queued records keep the event alive until they have run.
    return global().events.remove(reinterpret_cast<std::uintptr_t>(e)) ? CUDA_SUCCESS
                                                                       : CUDA_ERROR_INVALID_HANDLE;
}

CUresult event_record(CUevent e, CUstream h, unsigned flags, bool with_flags, bool ptsz) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    std::shared_ptr<Stream> s;
    CUresult r = resolve_stream(h, ptsz, &s);  // before the event, as the driver
    if (r != CUDA_SUCCESS) return r;
    // IMPLICIT on the legacy stream while a blocking stream captures, and
    // INVALIDATED on a stream whose capture is, before any look at the event
    // or the flags (as an H100 answers).
    if ((r = capture_stream_check(s, false)) != CUDA_SUCCESS) return r;
    std::shared_ptr<Event> ev = find_event(e);
    if (!ev) return CUDA_ERROR_INVALID_HANDLE;
    const bool external = with_flags && (flags & CU_EVENT_RECORD_EXTERNAL) != 0;
    if (with_flags && (flags & ~static_cast<unsigned>(CU_EVENT_RECORD_EXTERNAL)) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    // An event of another context: INVALID_HANDLE, in a capture too (an
    // EXTERNAL record outside a capture is ILLEGAL_STATE first).
    if (!external && ev->ctx != s->ctx) return CUDA_ERROR_INVALID_HANDLE;
    bool taken = false;
    r = capture_record(s, ev, external, &taken);  // a record node, or a fork point
    if (taken) return r;
    if (external) return CUDA_ERROR_ILLEGAL_STATE;  // only in a capture
    if (ev->ctx != s->ctx) return CUDA_ERROR_INVALID_HANDLE;
    std::uint64_t seq = 0;
    return record_queued(ev, s, &seq);
}

CUresult record_queued(const std::shared_ptr<Event> &ev, const std::shared_ptr<Stream> &s, std::uint64_t *seq) {
    std::lock_guard<std::mutex> lk(ev->mu);
    Item it;
    it.kind = Item::Kind::Record;
    it.event = ev;
    if (ev->ipc) {
        // The driver orders the records of an INTERPROCESS event: a record
        // waits for the one before it, so a record behind work that never
        // ends holds back the stream of the next one too.
        it.ipc_gen = ipc_pending(*ev->ipc);
        if (it.ipc_gen) it.ipc = ev->ipc;
    }
    it.gen = ev->ipc ? ipc_issue(*ev->ipc) : ev->issued + 1;
    const std::uint64_t gen = it.gen;
    CUresult r = submit(s, std::move(it), seq);
    if (r != CUDA_SUCCESS) {
        if (ev->ipc) ipc_complete(*ev->ipc, gen);  // issued to peers: never leave it pending
        return r;
    }
    // The worker cannot complete the record before this is set: it needs ev->mu.
    ev->issued++;
    ev->last_stream = s;
    ev->last_seq = *seq;
    return CUDA_SUCCESS;
}

CUresult event_query(CUevent e) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    std::shared_ptr<Event> ev = find_event(e);
    if (!ev) return CUDA_ERROR_INVALID_HANDLE;
    if (const CUresult r = capture_event_check(ev)) return r;
    if (ev->ipc) return ipc_pending(*ev->ipc) ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
    Snapshot sn = snapshot(*ev);
    return sn.done == sn.issued ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult event_synchronize(CUevent e) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    std::shared_ptr<Event> ev = find_event(e);
    if (!ev) return CUDA_ERROR_INVALID_HANDLE;
    if (const CUresult r = capture_event_check(ev)) return r;
    if (ev->ipc) {
        if (const std::uint64_t gen = ipc_pending(*ev->ipc)) ipc_wait(*ev->ipc, gen);
        return CUDA_SUCCESS;
    }
    Dep d;
    {
        std::lock_guard<std::mutex> lk(ev->mu);
        if (ev->done == ev->issued) return CUDA_SUCCESS;  // never recorded, or done
        d = Dep{ev->last_stream, ev->last_seq};
    }
    wait_reached(d);
    return CUDA_SUCCESS;
}

// The driver's order: any handle problem (NULL, timing disabled, never
// recorded, events of two contexts) is INVALID_HANDLE before NOT_READY.
CUresult event_elapsed_time(float *ms, CUevent start, CUevent end) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!ms) return CUDA_ERROR_INVALID_HANDLE;  // what the driver returns for it
    std::shared_ptr<Event> a = find_event(start), b = find_event(end);
    if (!a || !b) return CUDA_ERROR_INVALID_HANDLE;
    if (const CUresult r = capture_elapsed_check(a, b)) return r;
    if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
    Snapshot sa = snapshot(*a), sb = snapshot(*b);
    if (sa.issued == 0 || sb.issued == 0 || a->ctx != b->ctx) return CUDA_ERROR_INVALID_HANDLE;
    if (sa.done != sa.issued || sb.done != sb.issued) return CUDA_ERROR_NOT_READY;
    *ms = static_cast<float>(static_cast<double>(sb.time_ns - sa.time_ns) / 1e6);
    return CUDA_SUCCESS;
}

}  // namespace evxh
