// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Events and streams of contexts other than a device's primary context. See
// docs/design.md, "Contexts", and docs/engines.md.
//
// The driver records an event only on a stream of the context the event was
// made in (else cuEventRecord returns CUDA_ERROR_INVALID_HANDLE). evx makes
// its driver events in the primary context; a record on a stream of another
// context (one the caller made with cuCtxCreate) moves the evx event there:
// a driver event is made in the stream's context on the first such record,
// as PyTorch makes its events on first record, recorded, and becomes the
// event's. The one it replaces is kept in the event's `away` list (never
// destroyed while the event lives, so a racing query or wait that read it
// still names a live driver event), and a later record on a stream of that
// context takes it back. So each evx event has at most one driver event per
// context. When the event is freed, the driver events of other contexts are
// destroyed and the primary context's one goes back to the reuse cache or
// pool (cache.cpp is keyed by device and flags, and only ever holds primary
// context events). Streams of a green context belong to the primary context
// as far as records go (cuStreamGetCtx_v2 says so), and take the common path.
#include <cinttypes>
#include <cstdio>
#include <new>

#include "contexts.hpp"
#include "driver.hpp"
#include "error.hpp"
#include "event_state.hpp"
#include "evx/event.h"
#include "handle.hpp"
#include "stream_object.hpp"

namespace evx {

namespace {

// cuEventDestroy of a driver event of context `ctx`, with it current.
void destroy_in_context(CUcontext ctx, CUevent ev) {
    ContextGuard guard;
    // A context that cannot be made current any more took its events with
    // it; see docs/engines.md for the order of destruction.
    if (guard.enter_context(nullptr, ctx, -1) == 0) cu().cuEventDestroy(ev);
}

}  // namespace

void context_name(char *buf, size_t n, CUcontext ctx, CUgreenCtx green, int device) {
    if (green)
        std::snprintf(buf, n, "green context %p of device %d", static_cast<void *>(green),
                      device);
    else if (ctx == known_primary(device))
        std::snprintf(buf, n, "context %p (device %d's primary context)",
                      static_cast<void *>(ctx), device);
    else
        std::snprintf(buf, n, "context %p (created by the caller) of device %d",
                      static_cast<void *>(ctx), device);
}

evx_status_t native_stream_context(const char *fn, CUstream cs, int device, CUcontext *ctx,
                                   CUgreenCtx *green) {
    *ctx = nullptr;
    *green = nullptr;
    CUresult res = CUDA_SUCCESS;
    const char *call = "cuStreamGetCtx";
    if (cu().cuStreamGetCtx_v2)
        res = cu().cuStreamGetCtx_v2(cs, ctx, green);
    else if (cu().cuStreamGetCtx)
        res = cu().cuStreamGetCtx(cs, ctx);
    if (res != CUDA_SUCCESS)
        return driver_failed(res, fn, call, "native stream %p of device %d",
                             static_cast<void *>(cs), device);
    if (*ctx == nullptr) return primary_context(fn, device, ctx);  // the driver cannot tell
    return 0;
}

evx_status_t other_context_refused(const char *fn, const char *what, const void *h,
                                   const void *stream, const Stream *s) {
    char sctx[128];
    context_name(sctx, sizeof sctx, s->ctx, s->green, s->device);
    return fail(EVX_ERROR_INVALID_HANDLE,
                "%s: stream 0x%" PRIx64 " belongs to %s, but %s 0x%" PRIx64
                " records driver events of device %d's primary context, which the driver "
                "records only on streams of that context",
                fn, handle_value(stream), sctx, what, handle_value(h), s->device);
}

namespace {

// A borrowed event recorded on a stream of another context than its own:
// refused (its driver event is its maker's, made in one context, and the
// borrow cannot make another).
evx_status_t borrowed_other_context(const char *fn, const Event *e, const Stream *s,
                                    const void *event, const void *stream) {
    char ectx[128], sctx[128];
    context_name(ectx, sizeof ectx, e->ctx.load(std::memory_order_acquire), nullptr, e->device);
    context_name(sctx, sizeof sctx, s->ctx, s->green, s->device);
    return fail(EVX_ERROR_INVALID_HANDLE,
                "%s: stream 0x%" PRIx64 " belongs to %s, but borrowed event 0x%" PRIx64
                " was borrowed as an event of %s; the driver records an event only on streams "
                "of its context, and evx never moves a borrowed event to another one (wrap it "
                "with EVX_DEVICE_CURRENT while its context is current, if that is not where "
                "it was made)",
                fn, handle_value(stream), sctx, handle_value(event), ectx);
}

}  // namespace

evx_status_t record_other_context(const char *fn, Event *e, const Stream *s, const void *event,
                                  const void *stream, bool with_flags, unsigned flags) {
    if (e->borrowed) return borrowed_other_context(fn, e, s, event, stream);
    char ectx[128], sctx[128];
    context_name(sctx, sizeof sctx, s->ctx, s->green, s->device);
    if (e->flags & EVX_EVENT_INTERPROCESS) {
        context_name(ectx, sizeof ectx, e->ctx.load(std::memory_order_relaxed), nullptr,
                     e->device);
        return fail(EVX_ERROR_INVALID_HANDLE,
                    "%s: stream 0x%" PRIx64 " belongs to %s, but interprocess event 0x%" PRIx64
                    " is a driver event of %s; the driver records an event only on streams of "
                    "its context, and an interprocess event cannot be moved to another one "
                    "(its IPC handle names this driver event)",
                    fn, handle_value(stream), sctx, handle_value(event), ectx);
    }
    uint8_t prev = kOwn;
    claim_event(e, true, &prev);
    const CUevent cur = e->cu.load(std::memory_order_relaxed);
    const CUcontext cur_ctx = e->ctx.load(std::memory_order_relaxed);
    context_name(ectx, sizeof ectx, cur_ctx, nullptr, e->device);
    CUevent target = cur;
    AwayEvent *node = nullptr;
    bool new_node = false;  // node is ours (not in the list yet)
    bool fresh = false;     // target was made here
    evx_status_t st = 0;
    if (cur_ctx != s->ctx) {
        for (AwayEvent *a = e->away.load(std::memory_order_relaxed); a; a = a->next)
            if (a->ctx == s->ctx) node = a;
        if (node) {
            target = node->ev;
        } else if (!(node = new (std::nothrow) AwayEvent{cur_ctx, cur, nullptr})) {
            st = fail(EVX_ERROR_OUT_OF_MEMORY, "%s: out of memory", fn);
        } else {
            new_node = true;
            char what[400];
            std::snprintf(what, sizeof what,
                          "making %s current, to make a driver event for event 0x%" PRIx64
                          " there; the event stays in %s",
                          sctx, handle_value(event), ectx);
            ContextGuard guard;
            st = guard.enter_context(fn, s->ctx, -1, what);
            if (!st) {
                const CUresult r = cu().cuEventCreate(&target, e->flags);
                if (r == CUDA_SUCCESS)
                    fresh = true;
                else
                    st = driver_failed(r, fn, "cuEventCreate",
                                       "making a driver event for event 0x%" PRIx64
                                       " in %s, the context of stream 0x%" PRIx64
                                       "; the event stays in %s",
                                       handle_value(event), sctx, handle_value(stream), ectx);
                // A failing pop: the new driver event is destroyed below, the
                // event not recorded.
                if (!st) st = guard.leave(fn, "nothing was recorded");
            }
        }
    }
    CUresult res = CUDA_SUCCESS;
    evx_status_t pop_st = 0;
    if (!st) {
        ContextGuard guard;
        st = stream_context(guard, fn, s);
        if (!st)
            res = with_flags ? cu().cuEventRecordWithFlags(target, s->cu, flags)
                             : cu().cuEventRecord(target, s->cu);
        // A failing pop after a failed record: the record's failure is the
        // one reported (the destructor pops). After a successful one the
        // record stands (below) and the pop's failure is returned.
        if (!st && res == CUDA_SUCCESS) pop_st = guard.leave(fn, "the event was recorded");
    }
    if (!st && res == CUDA_SUCCESS) {
        if (target != cur) {
            if (new_node) {
                node->next = e->away.load(std::memory_order_relaxed);
                e->away.store(node, std::memory_order_release);
            } else {
                node->ctx = cur_ctx;
                node->ev = cur;
            }
            e->ctx.store(s->ctx, std::memory_order_release);
            e->cu.store(target, std::memory_order_release);
        }
        e->former.store(kOwn, std::memory_order_release);
        return pop_st ? pop_st | kPopFailed : 0;
    }
    if (fresh) destroy_in_context(s->ctx, target);
    if (new_node) delete node;
    e->former.store(prev, std::memory_order_release);
    if (st) return st;
    return driver_failed(res, fn, with_flags ? "cuEventRecordWithFlags" : "cuEventRecord",
                         "event 0x%" PRIx64 " with its driver event of %s, stream 0x%" PRIx64
                         " of %s, flags 0x%x",
                         handle_value(event), target == cur ? ectx : sctx,
                         handle_value(stream), sctx, flags);
}

void event_come_home(Event *e) {
    AwayEvent *a = e->away.exchange(nullptr, std::memory_order_acq_rel);
    const CUcontext primary = known_primary(e->device);
    CUevent home = nullptr;
    const CUcontext c = e->ctx.load(std::memory_order_relaxed);
    const CUevent ev = e->cu.load(std::memory_order_relaxed);
    if (c == primary)
        home = ev;
    else
        destroy_in_context(c, ev);
    while (a) {
        AwayEvent *next = a->next;
        if (a->ctx == primary)
            home = a->ev;
        else
            destroy_in_context(a->ctx, a->ev);
        delete a;
        a = next;
    }
    e->cu.store(home, std::memory_order_relaxed);
    e->ctx.store(primary, std::memory_order_relaxed);
}

}  // namespace evx
