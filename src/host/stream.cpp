// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Streams: an ordered queue each, run by a worker thread started on the
// first work and ended when the stream is destroyed and drained. The legacy
// default stream synchronizes implicitly with the blocking streams of its
// context (per-thread streams included), as the real driver does.
#include <system_error>
#include <thread>

#include "api.hpp"
#include "state.hpp"

namespace evxh {

namespace {

void forget(Stream *s) {
    std::lock_guard<std::mutex> lk(s->ctx->list_mu);
    auto &v = s->ctx->streams;
    for (std::size_t i = 0; i < v.size(); i++) {
        if (v[i].get() == s) {
            v[i] = std::move(v.back());
            v.pop_back();
            return;
        }
    }
}

void run_item(Stream &s, Item &it) {
    for (const Dep &d : it.deps) wait_reached(d);
    if (it.ipc) ipc_wait(*it.ipc, it.ipc_gen);  // a record of any process
    switch (it.kind) {
    case Item::Kind::Record: complete_record(*it.event, it.gen); break;
    case Item::Kind::HostFn: {
        // The driver runs the host functions of one context one at a time.
        std::lock_guard<std::mutex> lk(s.ctx->hostfn_mu);
        it.fn(it.data);
        global().host_funcs_pending.fetch_sub(1, std::memory_order_acq_rel);
        break;
    }
    case Item::Kind::Wait: break;  // its wait is it.ipc's, above
    case Item::Kind::WriteValue: run_write_value(it); break;
    case Item::Kind::WaitValue: run_wait_value(it); break;
    }
}

void worker(std::shared_ptr<Stream> s) {
    std::unique_lock<std::mutex> lk(s->mu);
    for (;;) {
        s->work_cv.wait(lk, [&] { return !s->queue.empty() || s->destroyed; });
        if (s->queue.empty()) break;  // destroyed and drained
        Item it = std::move(s->queue.front());
        s->queue.pop_front();
        lk.unlock();
        run_item(*s, it);
        const std::uint64_t seq = it.seq;
        it = Item();  // drop what it held with no lock taken
        lk.lock();
        s->completed = seq;
        s->done_cv.notify_all();
    }
    s->worker_running = false;
    lk.unlock();
    forget(s.get());
}

CUresult push(const std::shared_ptr<Stream> &s, Item item, std::uint64_t *seq) {
    std::lock_guard<std::mutex> lk(s->mu);
    if (!s->worker_running) {
        try {
            std::thread(worker, s).detach();
        } catch (const std::system_error &) {
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        s->worker_running = true;
    }
    item.seq = ++s->submitted;
    *seq = item.seq;
    s->queue.push_back(std::move(item));
    s->work_cv.notify_one();
    return CUDA_SUCCESS;
}

// The tail of a stream if it has work not done; caller holds no stream lock.
void add_if_pending(const std::shared_ptr<Stream> &s, std::vector<Dep> *out) {
    std::lock_guard<std::mutex> lk(s->mu);
    if (s->completed < s->submitted) out->push_back(Dep{s, s->submitted});
}

}  // namespace

std::shared_ptr<Stream> new_stream(Context *ctx, Stream::Kind kind, unsigned flags, int priority) {
    auto s = std::make_shared<Stream>(ctx, kind, flags, priority);
    std::lock_guard<std::mutex> lk(ctx->list_mu);
    ctx->streams.push_back(s);
    return s;
}

void wait_reached(const Dep &d) {
    std::unique_lock<std::mutex> lk(d.stream->mu);
    d.stream->done_cv.wait(lk, [&] { return d.stream->completed >= d.seq; });
}

bool reached(const Dep &d) {
    std::lock_guard<std::mutex> lk(d.stream->mu);
    return d.stream->completed >= d.seq;
}

void release_stream(const std::shared_ptr<Stream> &s) {
    bool forget_now = false;
    {
        std::lock_guard<std::mutex> lk(s->mu);
        if (s->destroyed) return;
        s->destroyed = true;
        forget_now = !s->worker_running;  // then nothing is queued
        s->work_cv.notify_all();
    }
    if (forget_now) forget(s.get());
}

std::vector<Dep> pending_points(Context *ctx, bool all) {
    std::vector<Dep> out;
    std::lock_guard<std::mutex> lk(ctx->list_mu);
    for (const auto &s : ctx->streams)
        if (all || s->kind == Stream::Kind::Legacy || s->blocking()) add_if_pending(s, &out);
    return out;
}

CUresult submit(const std::shared_ptr<Stream> &s, Item item, std::uint64_t *seq) {
    if (const CUresult r = capture_legacy_check(*s)) return r;
    if (s->kind != Stream::Kind::Legacy && !s->blocking()) return push(s, std::move(item), seq);
    // Work on the legacy stream waits for the blocking streams' work queued
    // so far, and work on a blocking stream for the legacy stream's.
    Context *ctx = s->ctx;
    std::lock_guard<std::mutex> order(ctx->submit_mu);
    if (s->kind == Stream::Kind::Legacy) {
        std::lock_guard<std::mutex> lk(ctx->list_mu);
        for (const auto &b : ctx->streams)
            if (b != s && b->blocking()) add_if_pending(b, &item.deps);
    } else {
        add_if_pending(ctx->legacy, &item.deps);
    }
    return push(s, std::move(item), seq);
}

CUresult resolve_stream(CUstream h, bool ptsz, std::shared_ptr<Stream> *out) {
    if (h == nullptr) h = ptsz ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
    if (h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) {
        CUresult r = CUDA_SUCCESS;
        Context *c = require_context(&r);
        if (!c) return r;
        *out = h == CU_STREAM_LEGACY ? c->legacy : per_thread_stream(c);
        return CUDA_SUCCESS;
    }
    *out = global().streams.find(reinterpret_cast<std::uintptr_t>(h));
    return *out ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult stream_create(CUstream *ph, unsigned flags, int priority) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!ph || (flags & ~static_cast<unsigned>(CU_STREAM_NON_BLOCKING)) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = CUDA_SUCCESS;
    Context *c = require_context(&r);
    if (!c) return r;
    if (priority > kLeastPriority) priority = kLeastPriority;  // clamped silently
    if (priority < kGreatestPriority) priority = kGreatestPriority;
    auto s = new_stream(c, Stream::Kind::Ordinary, flags, priority);
    *ph = to_handle(global().streams.add(std::move(s)));
    return CUDA_SUCCESS;
}

CUresult stream_destroy(CUstream h) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    // Default streams (NULL, legacy, per-thread) cannot be destroyed: they
    // are not in the registry, so they fall through to INVALID_HANDLE.
    auto s = global().streams.remove(reinterpret_cast<std::uintptr_t>(h));
    if (!s) return CUDA_ERROR_INVALID_HANDLE;
    capture_stream_gone(s);
    release_stream(s);  // queued work still runs
    return CUDA_SUCCESS;
}

CUresult stream_wait_event(CUstream h, CUevent e, unsigned flags, bool ptsz) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    std::shared_ptr<Stream> s;
    CUresult r = resolve_stream(h, ptsz, &s);
    if (r != CUDA_SUCCESS) return r;
    // IMPLICIT on the legacy stream while a blocking stream captures (a wait
    // is work on it whether or not it has anything left to wait for), and
    // INVALIDATED on a stream whose capture is, before any look at the
    // flags or the event (as an H100 answers).
    if ((r = capture_stream_check(s, false)) != CUDA_SUCCESS) return r;
    if ((flags & ~static_cast<unsigned>(CU_EVENT_WAIT_EXTERNAL)) != 0) return CUDA_ERROR_INVALID_VALUE;
    std::shared_ptr<Event> ev = find_event(e);
    if (!ev) return CUDA_ERROR_INVALID_HANDLE;
    bool taken = false;
    r = capture_wait(s, ev, (flags & CU_EVENT_WAIT_EXTERNAL) != 0, &taken);
    if (taken) return r;
    if (flags & CU_EVENT_WAIT_EXTERNAL) return CUDA_ERROR_ILLEGAL_STATE;  // only in a capture
    std::uint64_t seq = 0;
    return wait_queued(s, ev, &seq);
}

CUresult wait_queued(const std::shared_ptr<Stream> &s, const std::shared_ptr<Event> &ev, std::uint64_t *seq) {
    *seq = 0;
    if (ev->ipc) {
        // Under the event's lock, which event_record holds from numbering a
        // record to queueing it: a wait never sees the number of a record of
        // this process that is not queued yet, so it is never queued on a
        // stream ahead of the record it waits for. (The driver takes a record
        // and a wait of one event whole, in some order.)
        std::lock_guard<std::mutex> lk(ev->mu);
        const std::uint64_t gen = ipc_pending(*ev->ipc);
        if (!gen) return CUDA_SUCCESS;
        Item it;
        it.kind = Item::Kind::Wait;
        it.ipc = ev->ipc;
        it.ipc_gen = gen;
        return submit(s, std::move(it), seq);
    }
    Dep dep;
    {
        std::lock_guard<std::mutex> lk(ev->mu);
        if (ev->done == ev->issued) return CUDA_SUCCESS;  // never recorded, or done
        dep = Dep{ev->last_stream, ev->last_seq};
    }
    if (dep.stream == s || reached(dep)) return CUDA_SUCCESS;
    Item it;
    it.kind = Item::Kind::Wait;
    it.deps.push_back(std::move(dep));
    return submit(s, std::move(it), seq);
}

CUresult stream_query(CUstream h, bool ptsz) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    std::shared_ptr<Stream> s;
    CUresult r = resolve_stream(h, ptsz, &s);
    if (r != CUDA_SUCCESS) return r;
    if ((r = capture_sync_check(s)) != CUDA_SUCCESS) return r;
    if (s->kind == Stream::Kind::Legacy)  // also busy while a blocking stream is
        return pending_points(s->ctx, false).empty() ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
    std::lock_guard<std::mutex> lk(s->mu);
    return s->completed == s->submitted ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult stream_synchronize(CUstream h, bool ptsz) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    std::shared_ptr<Stream> s;
    CUresult r = resolve_stream(h, ptsz, &s);
    if (r != CUDA_SUCCESS) return r;
    if ((r = capture_sync_check(s)) != CUDA_SUCCESS) return r;
    if (s->kind == Stream::Kind::Legacy) {
        for (const Dep &d : pending_points(s->ctx, false)) wait_reached(d);
        return CUDA_SUCCESS;
    }
    Dep d{s, 0};
    {
        std::lock_guard<std::mutex> lk(s->mu);
        d.seq = s->submitted;
    }
    wait_reached(d);
    return CUDA_SUCCESS;
}

CUresult launch_host_func(CUstream h, CUhostFn fn, void *data, bool ptsz) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!fn) return CUDA_ERROR_INVALID_VALUE;
    std::shared_ptr<Stream> s;
    CUresult r = resolve_stream(h, ptsz, &s);
    if (r != CUDA_SUCCESS) return r;
    bool taken = false;
    r = capture_host_func(s, fn, data, &taken);  // a host node
    if (taken) return r;
    std::uint64_t seq = 0;
    return host_func_queued(s, fn, data, &seq);
}

CUresult host_func_queued(const std::shared_ptr<Stream> &s, CUhostFn fn, void *data, std::uint64_t *seq,
                          std::shared_ptr<void> keep) {
    Item it;
    it.kind = Item::Kind::HostFn;
    it.fn = fn;
    it.data = data;
    it.keep = std::move(keep);
    // Counted before it is queued: the worker may run it at once.
    global().host_funcs_pending.fetch_add(1, std::memory_order_acq_rel);
    const CUresult r = submit(s, std::move(it), seq);
    if (r != CUDA_SUCCESS) global().host_funcs_pending.fetch_sub(1, std::memory_order_acq_rel);
    return r;
}

CUresult launch_host_func_v2(CUstream h, CUhostFn fn, void *data, unsigned sync_mode, bool ptsz) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (sync_mode > 1) return CUDA_ERROR_INVALID_VALUE;  // CU_HOST_TASK_BLOCKING or _SPINWAIT
    return launch_host_func(h, fn, data, ptsz);
}

CUresult stream_get_priority(CUstream h, int *priority, bool ptsz) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!priority) return CUDA_ERROR_INVALID_VALUE;
    std::shared_ptr<Stream> s;
    CUresult r = resolve_stream(h, ptsz, &s);
    if (r != CUDA_SUCCESS) return r;
    if ((r = capture_stream_check(s, false)) != CUDA_SUCCESS) return r;
    *priority = s->priority;
    return CUDA_SUCCESS;
}

CUresult stream_get_flags(CUstream h, unsigned *flags, bool ptsz) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!flags) return CUDA_ERROR_INVALID_VALUE;
    std::shared_ptr<Stream> s;
    CUresult r = resolve_stream(h, ptsz, &s);
    if (r != CUDA_SUCCESS) return r;
    if ((r = capture_stream_check(s, true)) != CUDA_SUCCESS) return r;
    *flags = s->flags;
    return CUDA_SUCCESS;
}

CUresult stream_get_device(CUstream h, CUdevice *device, bool ptsz) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!device) return CUDA_ERROR_INVALID_VALUE;
    std::shared_ptr<Stream> s;
    CUresult r = resolve_stream(h, ptsz, &s);
    if (r != CUDA_SUCCESS) return r;
    if ((r = capture_stream_check(s, true)) != CUDA_SUCCESS) return r;
    *device = s->ctx->device;
    return CUDA_SUCCESS;
}

CUresult stream_get_ctx(CUstream h, CUcontext *pctx, CUgreenCtx *pgreen, bool ptsz) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    // cuStreamGetCtx_v2 needs only one of its outs (the driver answers a
    // NULL context out with the green one given); cuStreamGetCtx passes no
    // green out, so its NULL context out stays INVALID_VALUE.
    if (!pctx && !pgreen) return CUDA_ERROR_INVALID_VALUE;
    std::shared_ptr<Stream> s;
    CUresult r = resolve_stream(h, ptsz, &s);
    if (r != CUDA_SUCCESS) return r;
    if ((r = capture_stream_check(s, false)) != CUDA_SUCCESS) return r;
    if (pctx) *pctx = to_handle(s->ctx);
    if (pgreen) *pgreen = nullptr;  // no green contexts
    return CUDA_SUCCESS;
}

std::uint64_t new_stream_id() {
    static std::atomic<std::uint64_t> last{0};
    return ++last;
}

CUresult stream_get_id(CUstream h, unsigned long long *id, bool ptsz) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!id) return CUDA_ERROR_INVALID_VALUE;
    std::shared_ptr<Stream> s;
    CUresult r = resolve_stream(h, ptsz, &s);
    if (r != CUDA_SUCCESS) return r;
    if ((r = capture_stream_check(s, true)) != CUDA_SUCCESS) return r;
    *id = s->id;
    return CUDA_SUCCESS;
}

}  // namespace evxh
