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
#include <memory>
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
                                    const void *event, const void *stream)
    __attribute__((cold, noinline));

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

evx_status_t interprocess_refused(const char *fn, const Event *e, const void *event,
                                  const void *stream, const char *sctx)
    __attribute__((cold, noinline));

evx_status_t interprocess_refused(const char *fn, const Event *e, const void *event,
                                  const void *stream, const char *sctx) {
    char ectx[128];
    context_name(ectx, sizeof ectx, e->ctx.load(std::memory_order_relaxed), nullptr, e->device);
    return fail(EVX_ERROR_INVALID_HANDLE,
                "%s: stream 0x%" PRIx64 " belongs to %s, but interprocess event 0x%" PRIx64
                " is a driver event of %s; the driver records an event only on streams of "
                "its context, and an interprocess event cannot be moved to another one "
                "(its IPC handle names this driver event)",
                fn, handle_value(stream), sctx, handle_value(event), ectx);
}

// A record of an event on a stream of another context: the event's driver
// event (cur, of cur_ctx) and the one recorded (target: cur itself, one of
// the away list, or one made here), with the context names of the messages.
struct Move {
    Move(const char *fn_, Event *e_, const Stream *s_, const void *event_, const void *stream_)
        : fn(fn_), e(e_), s(s_), event(event_), stream(stream_) {}
    const char *fn;
    Event *e;
    const Stream *s;
    const void *event;
    const void *stream;
    CUevent cur = nullptr;
    CUcontext cur_ctx = nullptr;
    CUevent target = nullptr;
    AwayEvent *node = nullptr;            // target's entry in the away list
    std::unique_ptr<AwayEvent> new_node;  // or the entry cur gets (not in the list yet)
    bool fresh = false;                   // target was made here
    char ectx[128];
    char sctx[128];
};

// cuEventCreate of m->target in the stream's context.
evx_status_t make_target(Move *m) {
    char what[400];
    std::snprintf(what, sizeof what,
                  "making %s current, to make a driver event for event 0x%" PRIx64
                  " there; the event stays in %s",
                  m->sctx, handle_value(m->event), m->ectx);
    ContextGuard guard;
    evx_status_t st = guard.enter_context(m->fn, m->s->ctx, -1, what);
    if (st) return st;
    const CUresult r = cu().cuEventCreate(&m->target, m->e->flags);
    if (r != CUDA_SUCCESS)
        return driver_failed(r, m->fn, "cuEventCreate",
                             "making a driver event for event 0x%" PRIx64
                             " in %s, the context of stream 0x%" PRIx64 "; the event stays in %s",
                             handle_value(m->event), m->sctx, handle_value(m->stream), m->ectx);
    m->fresh = true;
    // A failing pop: the new driver event is destroyed by the caller, the
    // event not recorded.
    return guard.leave(m->fn, "nothing was recorded");
}

// Finds (or makes) the driver event of the stream's context.
evx_status_t find_target(Move *m) {
    m->target = m->cur;
    if (m->cur_ctx == m->s->ctx) return 0;
    for (AwayEvent *a = m->e->away.load(std::memory_order_relaxed); a; a = a->next)
        if (a->ctx == m->s->ctx) m->node = a;
    if (m->node) {
        m->target = m->node->ev;
        return 0;
    }
    m->new_node.reset(new (std::nothrow) AwayEvent{m->cur_ctx, m->cur, nullptr});
    if (!m->new_node) return fail(EVX_ERROR_OUT_OF_MEMORY, "%s: out of memory", m->fn);
    return make_target(m);
}

// The event's driver event is target now; cur goes to the away list.
void commit_move(Move *m) {
    Event *e = m->e;
    if (m->target == m->cur) return;
    if (m->new_node) {
        AwayEvent *node = m->new_node.release();
        node->next = e->away.load(std::memory_order_relaxed);
        e->away.store(node, std::memory_order_release);
    } else {
        m->node->ctx = m->cur_ctx;
        m->node->ev = m->cur;
    }
    e->ctx.store(m->s->ctx, std::memory_order_release);
    e->cu.store(m->target, std::memory_order_release);
}

}  // namespace

evx_status_t record_other_context(const char *fn, Event *e, const Stream *s, const void *event,
                                  const void *stream, bool with_flags, unsigned flags,
                                  bool *pop_failed) {
    *pop_failed = false;
    if (e->borrowed) return borrowed_other_context(fn, e, s, event, stream);
    Move m(fn, e, s, event, stream);
    context_name(m.sctx, sizeof m.sctx, s->ctx, s->green, s->device);
    if (e->flags & EVX_EVENT_INTERPROCESS) return interprocess_refused(fn, e, event, stream, m.sctx);
    uint8_t prev = kOwn;
    claim_event(e, true, &prev);
    if (prev == kOwn) event_refresh_hot(e);  // records and waits take the rare path meanwhile
    m.cur = e->cu.load(std::memory_order_relaxed);
    m.cur_ctx = e->ctx.load(std::memory_order_relaxed);
    context_name(m.ectx, sizeof m.ectx, m.cur_ctx, nullptr, e->device);
    evx_status_t st = find_target(&m);
    CUresult res = CUDA_SUCCESS;
    evx_status_t pop_st = 0;
    if (!st) {
        ContextGuard guard;
        st = stream_context(guard, fn, s);
        if (!st)
            res = with_flags ? cu().cuEventRecordWithFlags(m.target, s->cu, flags)
                             : cu().cuEventRecord(m.target, s->cu);
        // A failing pop after a failed record: the record's failure is the
        // one reported (the destructor pops). After a successful one the
        // record stands (below) and the pop's failure is returned.
        if (!st && res == CUDA_SUCCESS) pop_st = guard.leave(fn, "the event was recorded");
    }
    if (!st && res == CUDA_SUCCESS) {
        commit_move(&m);
        e->former.store(kOwn, std::memory_order_release);
        event_refresh_hot(e);
        *pop_failed = pop_st != 0;
        return pop_st;
    }
    if (m.fresh) destroy_in_context(s->ctx, m.target);
    e->former.store(prev, std::memory_order_release);
    event_refresh_hot(e);
    if (st) return st;
    return driver_failed(res, fn, with_flags ? "cuEventRecordWithFlags" : "cuEventRecord",
                         "event 0x%" PRIx64 " with its driver event of %s, stream 0x%" PRIx64
                         " of %s, flags 0x%x",
                         handle_value(event), m.target == m.cur ? m.ectx : m.sctx,
                         handle_value(stream), m.sctx, flags);
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
