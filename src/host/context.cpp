// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// cuInit, devices, primary contexts, contexts made by cuCtxCreate, and each
// thread's context stack.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <pthread.h>

#include "api.hpp"
#include "state.hpp"

namespace evxh {

Global &global() {
    static Global *g = new Global;  // never freed (see state.hpp)
    return *g;
}

std::int64_t now_ns() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return static_cast<std::int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

namespace {

struct ThreadState {
    std::vector<Context *> stack;  // back() is current
    std::shared_ptr<Stream> pt[kMaxDevices];
    std::uint64_t pt_epoch[kMaxDevices] = {};
    // Per-thread streams of created contexts (never reused: a destroyed
    // context's memory is kept, so a key names one context forever).
    std::vector<std::pair<Context *, std::shared_ptr<Stream>>> pt_created;
    ThreadState() = default;
    ThreadState(const ThreadState &) = delete;
    ThreadState &operator=(const ThreadState &) = delete;
    ~ThreadState() {
        // The thread's per-thread streams finish their work and go.
        for (auto &s : pt)
            if (s) release_stream(s);
        for (auto &p : pt_created) release_stream(p.second);
    }
};

// Each thread's state lives on the heap, found through a pthread key whose
// destructor frees it. No C++ thread_local: the dynamic TLS of a library
// opened with dlopen, touched at thread exit, trips ThreadSanitizer when glibc
// hands the thread's memory to a new thread.
void free_thread_state(void *p) { delete static_cast<ThreadState *>(p); }

struct StateKey {
    pthread_key_t key;
    bool ok;
    StateKey() { ok = pthread_key_create(&key, free_thread_state) == 0; }
};

ThreadState &thread_state() {
    static const StateKey *k = new StateKey;  // never freed
    if (k->ok) {
        if (void *p = pthread_getspecific(k->key)) return *static_cast<ThreadState *>(p);
        // Also reached from a later key destructor of the exiting thread: the
        // new state is freed on the next round of destructors.
        ThreadState *t = new ThreadState;
        if (pthread_setspecific(k->key, t) == 0) return *t;
        delete t;
    }
    // No key to be had (all taken): one state per thread, never freed.
    thread_local ThreadState *fallback = nullptr;
    if (!fallback) fallback = new ThreadState;
    return *fallback;
}

// EVX_HOST_DEVICES: unset or empty means 1; else an integer 1..16.
bool device_count_from_env(int *n) {
    const char *v = std::getenv("EVX_HOST_DEVICES");
    if (!v || !*v) {
        *n = 1;
        return true;
    }
    char *end = nullptr;
    errno = 0;
    long x = std::strtol(v, &end, 10);
    if (errno || end == v || *end != '\0' || x < 1 || x > kMaxDevices) return false;
    *n = static_cast<int>(x);
    return true;
}

// Last release of a primary context, or cuCtxDestroy: like the driver,
// which resets or destroys the context, wait for its work and drop its
// streams and events.
void reset(Context *ctx) {
    context_synchronize(ctx);
    Global &g = global();
    auto events = g.events.remove_all(ctx);
    auto streams = g.streams.remove_all(ctx);
    for (auto &s : streams) release_stream(s);
    std::vector<std::shared_ptr<Stream>> all;
    {
        std::lock_guard<std::mutex> lk(ctx->list_mu);
        all = ctx->streams;
    }
    for (auto &s : all)
        if (s->kind == Stream::Kind::PerThread) release_stream(s);
    ctx->epoch.fetch_add(1, std::memory_order_acq_rel);
}

}  // namespace

bool valid_device(CUdevice d) { return d >= 0 && d < global().device_count; }

Context *context_from_handle(CUcontext c) {
    Global &g = global();
    for (int i = 0; i < g.device_count; i++)
        if (reinterpret_cast<Context *>(c) == &g.contexts[i]) return &g.contexts[i];
    std::lock_guard<std::mutex> lk(g.created_mu);
    for (Context *x : g.created)
        if (reinterpret_cast<Context *>(c) == x) return x;
    return nullptr;  // unknown, or destroyed
}

std::vector<Context *> live_contexts() {
    Global &g = global();
    std::vector<Context *> out;
    for (int i = 0; i < g.device_count; i++)
        if (g.contexts[i].active.load(std::memory_order_acquire)) out.push_back(&g.contexts[i]);
    std::lock_guard<std::mutex> lk(g.created_mu);
    out.insert(out.end(), g.created.begin(), g.created.end());
    return out;
}

long long created_context_count() {
    Global &g = global();
    std::lock_guard<std::mutex> lk(g.created_mu);
    return static_cast<long long>(g.created.size());
}

Context *current_context() {
    ThreadState &t = thread_state();
    return t.stack.empty() ? nullptr : t.stack.back();
}

Context *require_context(CUresult *r) {
    Context *c = current_context();
    if (!c || !c->active.load(std::memory_order_acquire)) {
        // A created context destroyed while current to this thread stays
        // current; the driver then answers CONTEXT_IS_DESTROYED.
        *r = c && c->destroyed.load(std::memory_order_acquire) ? CUDA_ERROR_CONTEXT_IS_DESTROYED
                                                               : CUDA_ERROR_INVALID_CONTEXT;
        return nullptr;
    }
    return c;
}

std::shared_ptr<Stream> per_thread_stream(Context *ctx) {
    ThreadState &t = thread_state();
    if (!ctx->primary) {
        for (auto &p : t.pt_created)
            if (p.first == ctx) return p.second;
        t.pt_created.emplace_back(
            ctx, new_stream(ctx, Stream::Kind::PerThread, CU_STREAM_DEFAULT, kLeastPriority));
        return t.pt_created.back().second;
    }
    const int d = ctx->device;
    const std::uint64_t epoch = ctx->epoch.load(std::memory_order_acquire);
    if (!t.pt[d] || t.pt_epoch[d] != epoch) {
        if (t.pt[d]) release_stream(t.pt[d]);
        t.pt[d] = new_stream(ctx, Stream::Kind::PerThread, CU_STREAM_DEFAULT, kLeastPriority);
        t.pt_epoch[d] = epoch;
    }
    return t.pt[d];
}

CUresult context_synchronize(Context *ctx) {
    for (const Dep &d : pending_points(ctx, true)) wait_reached(d);
    return CUDA_SUCCESS;
}

CUresult init(unsigned flags) {
    if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
    Global &g = global();
    if (g.initialized.load(std::memory_order_acquire)) return CUDA_SUCCESS;
    std::lock_guard<std::mutex> lk(g.init_mu);
    if (g.initialized.load(std::memory_order_relaxed)) return CUDA_SUCCESS;
    int n = 0;
    if (!device_count_from_env(&n)) return CUDA_ERROR_INVALID_VALUE;
    for (int i = 0; i < n; i++) {
        Context &c = g.contexts[i];
        c.device = i;
        c.legacy = std::make_shared<Stream>(&c, Stream::Kind::Legacy, CU_STREAM_DEFAULT,
                                            kLeastPriority);
        c.streams.push_back(c.legacy);
    }
    g.device_count = n;
    g.initialized.store(true, std::memory_order_release);
    return CUDA_SUCCESS;
}

int driver_version() {
    static const int v = [] {
        const char *e = std::getenv("EVX_HOST_DRIVER_VERSION");
        if (!e || !*e) return kDriverVersion;
        if (std::strcmp(e, "13000") == 0) return 13000;
        if (std::strcmp(e, "13020") == 0) return 13020;
        return -1;
    }();
    return v;
}

CUresult driver_get_version(int *version) {
    if (!version) return CUDA_ERROR_INVALID_VALUE;
    // answered before cuInit too, as the driver does
    *version = driver_version() > 0 ? driver_version() : kDriverVersion;
    return CUDA_SUCCESS;
}

CUresult device_get_count(int *count) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!count) return CUDA_ERROR_INVALID_VALUE;
    *count = global().device_count;
    return CUDA_SUCCESS;
}

CUresult device_get(CUdevice *device, int ordinal) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!device) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

CUresult device_get_name(char *name, int len, CUdevice dev) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
    std::snprintf(name, static_cast<std::size_t>(len), "%s", "evx host emulation");
    return CUDA_SUCCESS;
}

CUresult device_get_attribute(int *value, CUdevice_attribute attr, CUdevice dev) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!value) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
    switch (attr) {
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *value = dev; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: *value = 0; return CUDA_SUCCESS;
    // Stream memory operations on mapped host memory (memops.cpp); no
    // flush of remote writes (there is no remote writer to flush).
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
    case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM:
    case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED: *value = 1; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS:
    case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR:
        *value = stream_mem_ops_off() ? 0 : 1;  // EVX_HOST_NO_STREAM_MEM_OPS (tests)
        return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES: *value = 0; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;  // not modelled
    }
}

CUresult primary_ctx_retain(CUcontext *pctx, CUdevice dev) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
    Context &c = global().contexts[dev];
    {
        std::lock_guard<std::mutex> lk(c.state_mu);
        if (c.refs++ == 0) c.active.store(true, std::memory_order_release);
    }
    *pctx = to_handle(&c);
    return CUDA_SUCCESS;
}

CUresult primary_ctx_release(CUdevice dev) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
    Context &c = global().contexts[dev];
    {
        std::lock_guard<std::mutex> lk(c.state_mu);
        if (c.refs == 0) return CUDA_ERROR_INVALID_CONTEXT;
        if (--c.refs > 0) return CUDA_SUCCESS;
        c.active.store(false, std::memory_order_release);
    }
    reset(&c);
    return CUDA_SUCCESS;
}

CUresult ctx_get_current(CUcontext *pctx) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    *pctx = to_handle(current_context());
    return CUDA_SUCCESS;
}

CUresult ctx_set_current(CUcontext ctx) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    ThreadState &t = thread_state();
    if (!ctx) {  // pops the top, if any (the driver does the same)
        if (!t.stack.empty()) t.stack.pop_back();
        return CUDA_SUCCESS;
    }
    Context *c = context_from_handle(ctx);
    if (!c) return CUDA_ERROR_INVALID_CONTEXT;
    if (t.stack.empty())
        t.stack.push_back(c);
    else
        t.stack.back() = c;
    return CUDA_SUCCESS;
}

CUresult ctx_push_current(CUcontext ctx) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!ctx) return CUDA_ERROR_INVALID_VALUE;
    Context *c = context_from_handle(ctx);
    if (!c) return CUDA_ERROR_INVALID_CONTEXT;
    thread_state().stack.push_back(c);
    return CUDA_SUCCESS;
}

CUresult ctx_pop_current(CUcontext *pctx) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    ThreadState &t = thread_state();
    if (t.stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
    Context *c = t.stack.back();
    t.stack.pop_back();
    if (pctx) *pctx = to_handle(c);
    return CUDA_SUCCESS;
}

CUresult ctx_get_device(CUdevice *device, CUcontext ctx) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!device) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = CUDA_SUCCESS;
    Context *c = ctx ? context_from_handle(ctx) : require_context(&r);
    if (!c) return CUDA_ERROR_INVALID_CONTEXT;
    *device = c->device;
    return CUDA_SUCCESS;
}

CUresult ctx_get_stream_priority_range(int *least, int *greatest) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = CUDA_SUCCESS;
    if (!require_context(&r)) return r;
    if (least) *least = kLeastPriority;
    if (greatest) *greatest = kGreatestPriority;
    return CUDA_SUCCESS;
}

CUresult ctx_synchronize(CUcontext ctx) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = CUDA_SUCCESS;
    Context *c = ctx ? context_from_handle(ctx) : require_context(&r);
    if (!c) return CUDA_ERROR_INVALID_CONTEXT;
    if (const CUresult cr = capture_context_sync(c)) return cr;
    return context_synchronize(c);
}

namespace {

// A new created context, pushed on the calling thread's stack as cuCtxCreate
// does ("supplanted by the newly created context").
CUresult create_context(CUcontext *pctx, unsigned flags, CUdevice dev) {
    if ((flags & ~static_cast<unsigned>(CU_CTX_FLAGS_MASK)) != 0) return CUDA_ERROR_INVALID_VALUE;
    const unsigned sched = flags & CU_CTX_SCHED_MASK;
    if ((sched & (sched - 1)) != 0) return CUDA_ERROR_INVALID_VALUE;  // one scheduling flag at most
    if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
    Context *c = new Context;  // never freed (see Global::gone)
    c->device = dev;
    c->primary = false;
    c->refs = 1;
    c->active.store(true, std::memory_order_release);
    c->legacy = std::make_shared<Stream>(c, Stream::Kind::Legacy, CU_STREAM_DEFAULT, kLeastPriority);
    c->streams.push_back(c->legacy);
    Global &g = global();
    {
        std::lock_guard<std::mutex> lk(g.created_mu);
        g.created.push_back(c);
    }
    thread_state().stack.push_back(c);
    *pctx = to_handle(c);
    return CUDA_SUCCESS;
}

}  // namespace

CUresult ctx_create(CUcontext *pctx, const CUctxCreateParams *params, unsigned flags, CUdevice dev) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    if (params) {
        // "Exactly one of execAffinityParams and cigParams must be non-NULL."
        if ((params->execAffinityParams == nullptr) == (params->cigParams == nullptr))
            return CUDA_ERROR_INVALID_VALUE;
        return CUDA_ERROR_NOT_SUPPORTED;  // neither execution affinity nor CIG is modelled
    }
    return create_context(pctx, flags, dev);
}

CUresult ctx_create_v3(CUcontext *pctx, const CUexecAffinityParam *params, int nparams,
                       unsigned flags, CUdevice dev) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!pctx || nparams < 0 || (nparams > 0 && !params)) return CUDA_ERROR_INVALID_VALUE;
    if (nparams > 0) return CUDA_ERROR_NOT_SUPPORTED;  // execution affinity is not modelled
    return create_context(pctx, flags, dev);
}

CUresult ctx_destroy(CUcontext ctx) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!ctx) return CUDA_ERROR_INVALID_VALUE;
    Global &g = global();
    Context *c = nullptr;
    {
        std::lock_guard<std::mutex> lk(g.created_mu);
        for (std::size_t i = 0; i < g.created.size(); i++) {
            if (reinterpret_cast<Context *>(ctx) == g.created[i]) {
                c = g.created[i];
                g.created.erase(g.created.begin() + static_cast<std::ptrdiff_t>(i));
                g.gone.push_back(c);
                break;
            }
        }
    }
    // A primary context (released with cuDevicePrimaryCtxRelease), one
    // destroyed already, or no context.
    if (!c) return CUDA_ERROR_INVALID_CONTEXT;
    c->destroyed.store(true, std::memory_order_release);
    c->active.store(false, std::memory_order_release);
    reset(c);
    release_stream(c->legacy);  // its worker, if any, drains and ends
    // Popped from the calling thread's stack if current there; other
    // threads keep it current and get CONTEXT_IS_DESTROYED.
    ThreadState &t = thread_state();
    if (!t.stack.empty() && t.stack.back() == c) t.stack.pop_back();
    return CUDA_SUCCESS;
}

}  // namespace evxh
