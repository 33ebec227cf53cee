// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Host functions that can fail: evx_stream_launch_host_func_status(), the
// process-wide list of failures not yet reported, and the report that the
// waiting calls (stream.cpp, event.cpp) make through hostfn.hpp.
#include "hostfn.hpp"

#include <dlfcn.h>
#include <link.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "capture.hpp"
#include "driver.hpp"
#include "error.hpp"
#include "evx/status.h"
#include "evx/stream.h"
#include "scope.hpp"
#include "sized.hpp"
#include "thread.hpp"

namespace evx {

std::atomic<uint32_t> g_host_failures{0};
std::atomic<uint32_t> g_graph_failures{0};

constexpr size_t kNameSize = EVX_HOST_FUNC_NAME_SIZE;

// One host function's record. It comes from the launching thread's home
// (HostHome) and goes back to it when evx no longer needs it: from the
// trampoline once a launch has run, from the user object's destructor for
// one captured into a graph, from the launch itself when the driver did not
// take it. (Outside the anonymous namespace: HostHome, which thread.hpp
// names, points at it.)
// What a successful run reads and writes is on its first cache line, so
// that a launch moves one line to the driver's thread and back.
struct alignas(64) HostCall {
    evx_host_fn_status_t fn;
    void *user_data;
    evx_host_fn_t release;  // the options' release, or nullptr
    HostHome *home;    // where it goes back (never freed)
    HostCall *next;    // on the home's lists
    uint64_t id;       // Stream::hf_id (0 in a graph)
    uint64_t ticket;   // its number among the stream handle's launches
    uint64_t stream;   // the handle's value, for the message
    int device;        // the stream's device (failures in a graph)
    std::atomic<bool> queued{false};  // (in a graph) the driver took it: release is called when freed
    bool named;        // name holds the options' name; else fn's is looked up on failure
    char name[kNameSize];
};
static_assert(offsetof(HostCall, stream) + sizeof(uint64_t) <= 64,
              "a successful run reads the first line only");

// A thread record's host-function records (ThreadRecord::host_home), so
// that a launch allocates nothing and the driver's thread frees nothing: a
// free() there delays every later host function of the stream, and the
// launching thread's malloc() and that free() meet on one arena lock.
// The record's thread takes and puts records on `free` with plain loads and
// stores. Any thread gives one back by pushing it on `back` (a
// compare-and-swap); the owner takes all of `back` at once (an exchange)
// when `free` is empty. Only pushes and take-alls, never a pop of one
// node: no ABA, and nothing is lost or taken twice (models/hostfn_home.pml).
struct HostHome {
    // Pushed to by the driver's threads: a line of its own, so that they do
    // not take the owner's line away on every host function.
    alignas(64) std::atomic<HostCall *> back{nullptr};
    alignas(64) HostCall *free = nullptr;  // the owner's
    uint32_t made = 0;                     // not deleted: free, out with the driver, or back
};

namespace {

constexpr size_t kMaxFailures = 4096;  // unreported, in the process
// Records a home keeps. More exist only while more host functions of its
// thread are in flight at once; those beyond this are deleted (by the owner)
// as they come back.
constexpr uint32_t kHomeKeep = 4096;

constexpr SizedType kOptionsType{"evx_host_func_options_t", "options",
                                 offsetof(evx_host_func_options_t, name) + sizeof(const char *)};
static_assert(sizeof(evx_host_func_options_t) == 24, "stream.h publishes 24 bytes of options");
static_assert(kOptionsType.first_size == 16, "stream.h publishes 16 bytes of options");

// id 0: a failure in a graph launch, reported by a wait on its device.
struct Failure {
    uint64_t id;
    uint64_t ticket;
    uint64_t stream;
    int device;
    evx_status_t status;
    void *user_data;
    char name[kNameSize];
};

std::mutex g_mu;                 // guards g_failures
std::vector<Failure> g_failures;  // in the order they were recorded
std::atomic<uint64_t> g_next_id{1};
uint64_t g_dropped = 0;          // failures dropped over kMaxFailures (g_mu)

// The name of a function the options did not name: its symbol, else its
// address. Looked up only when it failed (the function's library is loaded
// while it runs), not at every launch: dladdr() and the formatting cost
// many times the launch itself.
void symbol_name(void *addr, char *buf, size_t n) {
    Dl_info info;
    if (dladdr(addr, &info) != 0 && info.dli_sname && info.dli_saddr == addr)
        std::snprintf(buf, n, "%s", info.dli_sname);
    else
        std::snprintf(buf, n, "at %p", addr);
}

// The dynamic linker's counts of objects loaded and unloaded
// (dl_iterate_phdr(): the first object's entry has them), or false.
int read_dl_counts(dl_phdr_info *info, size_t size, void *out) {
    if (size < offsetof(dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) return -1;
    unsigned long long *counts = static_cast<unsigned long long *>(out);
    counts[0] = info->dlpi_adds;
    counts[1] = info->dlpi_subs;
    return 1;
}

// The name of the last unnamed function that failed, kept while no object
// was loaded or unloaded since it was looked up (then the same address is
// the same symbol): a function that fails again is named without dladdr()
// and the formatting, on the driver's thread, which runs the stream's later
// host functions only after this one. Guarded by g_mu, which a failure
// takes anyway.
struct LastName {
    void *addr = nullptr;
    unsigned long long counts[2] = {0, 0};
    char name[kNameSize];
};
LastName g_last_name;

// The name of an unnamed function into `name`, under `lock` (of g_mu, held
// on entry and on return; let go around a look-up).
void unnamed_name(evx_host_fn_status_t fn, char (&name)[kNameSize],
                  std::unique_lock<std::mutex> &lock) {
    void *addr;
    static_assert(sizeof addr == sizeof fn, "function pointers are not pointer-sized");
    std::memcpy(&addr, &fn, sizeof addr);
    unsigned long long counts[2];
    const bool counted = dl_iterate_phdr(read_dl_counts, counts) == 1;
    LastName &last = g_last_name;
    if (counted && last.addr == addr && last.counts[0] == counts[0] &&
        last.counts[1] == counts[1]) {
        std::memcpy(name, last.name, kNameSize);
        return;
    }
    lock.unlock();
    symbol_name(addr, name, kNameSize);
    lock.lock();
    if (!counted) return;
    last.addr = addr;
    last.counts[0] = counts[0];
    last.counts[1] = counts[1];
    std::memcpy(last.name, name, kNameSize);
}

// Records the failure of c's function (status st); on the driver's
// host-function thread: no evx or CUDA call here.
void record_failure(const HostCall *c, evx_status_t st) __attribute__((cold, noinline));
void record_failure(const HostCall *c, evx_status_t st) {
    Failure f;
    f.id = c->id;
    f.ticket = c->ticket;
    f.stream = c->stream;
    f.device = c->device;
    f.status = st;
    f.user_data = c->user_data;
    std::unique_lock<std::mutex> lock(g_mu);
    if (c->named)
        std::memcpy(f.name, c->name, sizeof f.name);
    else
        unnamed_name(c->fn, f.name, lock);
    try {
        g_failures.reserve(g_failures.size() + 1);  // may throw: before the counts change
        if (g_failures.size() == kMaxFailures) {
            if (g_failures.front().id == 0) g_graph_failures.fetch_sub(1, std::memory_order_release);
            g_failures.erase(g_failures.begin());
            ++g_dropped;
        } else {
            g_host_failures.fetch_add(1, std::memory_order_release);
        }
        if (f.id == 0) g_graph_failures.fetch_add(1, std::memory_order_release);
        g_failures.push_back(f);
    } catch (const std::bad_alloc &) {
        // Out of memory on the driver's thread: the failure cannot be
        // kept, and there is nobody to tell but the count below.
        ++g_dropped;
    }
}

// --- records -----------------------------------------------------------

// Gives c back to its home, from any thread: a push on `back`. The release
// orders everything this thread did with c (the run, the release call)
// before the owner's take-all, which acquires; after the exchange that
// succeeds c is the owner's again and is not touched here.
void call_give_back(HostCall *c) {
    HostHome *const h = c->home;
    HostCall *head = h->back.load(std::memory_order_relaxed);
    do {
        c->next = head;
    } while (!h->back.compare_exchange_weak(head, c, std::memory_order_release,
                                            std::memory_order_relaxed));
}

// A record of `h` for a launch, on its owner's thread: what the driver's
// threads gave back (deleting those over kHomeKeep), else a new one;
// nullptr when out of memory. Its `next` is the rest of what came back.
HostCall *call_refill(HostHome *h) __attribute__((noinline));
HostCall *call_refill(HostHome *h) {
    HostCall *c = h->back.exchange(nullptr, std::memory_order_acquire);
    while (c && h->made > kHomeKeep) {
        HostCall *const rest = c->next;
        delete c;
        --h->made;
        c = rest;
    }
    if (c) return c;
    c = new (std::nothrow) HostCall;
    if (!c) return nullptr;
    c->home = h;
    c->next = nullptr;
    ++h->made;
    return c;
}

// The calling thread's home (made on its first launch), or nullptr when out
// of memory.
HostHome *home_of(ThreadRecord *r) {
    if (__builtin_expect(r->host_home == nullptr, 0))
        r->host_home = new (std::nothrow) HostHome;
    return r->host_home;
}

// A record of the calling thread's home: its free list's first, else
// call_refill()'s.
inline HostCall *call_take(HostHome *h) {
    HostCall *c = h->free;
    if (__builtin_expect(c == nullptr, 0)) c = call_refill(h);
    if (c) h->free = c->next;
    return c;
}

// A launch outside a capture: runs once, then its record goes back home.
// Besides the function, a release call if the options had one and a
// compare-and-swap: a failure alone takes a lock (record_failure()).
void CUDA_CB trampoline(void *p) {
    HostCall *c = static_cast<HostCall *>(p);
    const evx_status_t st = c->fn(c->user_data);
    if (__builtin_expect(st != EVX_SUCCESS, 0)) record_failure(c, st);
    if (c->release) c->release(c->user_data);
    call_give_back(c);
}

// A host node of a graph: runs at every launch; the record is the user
// object's, given back by graph_call_free.
void CUDA_CB graph_trampoline(void *p) {
    const HostCall *c = static_cast<const HostCall *>(p);
    const evx_status_t st = c->fn(c->user_data);
    if (st != EVX_SUCCESS) record_failure(c, st);
}

// The user object's destructor: on a driver thread, or in the driver call
// that dropped the last reference; no evx or CUDA call here.
void CUDA_CB graph_call_free(void *p) {
    HostCall *c = static_cast<HostCall *>(p);
    if (c->release && c->queued.load(std::memory_order_acquire)) c->release(c->user_data);
    call_give_back(c);
}

// A record not yet the driver's, on its owner's thread: back on the home's
// free list (with no release call) if the launch fails before the driver
// takes it.
struct CallReturn {
    void operator()(HostCall *c) const {
        c->next = c->home->free;
        c->home->free = c;
    }
};
using CallPtr = std::unique_ptr<HostCall, CallReturn>;

// Queues c as a host node of the capture s is part of. The driver's user
// object owns c from its creation on (so every failure path after it frees
// it through the object, and the function never runs then).
CUresult launch_captured(const Stream *s, CallPtr c, bool spin, const char **call) {
    c->id = 0;  // a failure in a graph launch is the device's
    c->ticket = 0;
    c->queued.store(false, std::memory_order_relaxed);
    *call = "cuStreamGetCaptureInfo";
    CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
    CUgraph graph = nullptr;
    CUresult res = cu().cuStreamGetCaptureInfo(s->cu, &cap, nullptr, &graph, nullptr, nullptr, nullptr);
    if (res != CUDA_SUCCESS) return res;
    // Ended or invalidated meanwhile: the launch gives the driver's answer.
    if (cap != CU_STREAM_CAPTURE_STATUS_ACTIVE || !graph) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    *call = "cuUserObjectCreate";
    CUuserObject obj = nullptr;
    res = cu().cuUserObjectCreate(&obj, c.get(), graph_call_free, 1,
                                  CU_USER_OBJECT_NO_DESTRUCTOR_SYNC);
    if (res != CUDA_SUCCESS) return res;
    HostCall *const owned = c.release();  // the user object's now
    *call = "cuGraphRetainUserObject";
    res = cu().cuGraphRetainUserObject(graph, obj, 1, CU_GRAPH_USER_OBJECT_MOVE);
    if (res != CUDA_SUCCESS) {
        cu().cuUserObjectRelease(obj, 1);  // frees it (not queued: no release)
        return res;
    }
    // From here the graph owns it, whatever the launch answers. queued is
    // set before the launch: the graph may be destroyed by another thread
    // the moment the node exists, and release must then be called.
    owned->queued.store(true, std::memory_order_release);
    if (cu().cuLaunchHostFunc_v2) {
        *call = "cuLaunchHostFunc_v2";
        res = cu().cuLaunchHostFunc_v2(s->cu, graph_trampoline, owned, spin ? 1u : 0u);
    } else {
        *call = "cuLaunchHostFunc";
        res = cu().cuLaunchHostFunc(s->cu, graph_trampoline, owned);
    }
    if (res != CUDA_SUCCESS) owned->queued.store(false, std::memory_order_release);  // freed by the graph, no release
    return res;
}

// The options' name, if any (else the function's symbol names it when it
// fails: symbol_name()).
evx_status_t name_call(const char *fn, HostCall *c, const char *name) {
    c->named = name != nullptr;
    if (!name) return 0;
    const size_t n = std::strlen(name);
    if (n >= kNameSize)
        return fail(EVX_ERROR_INVALID_VALUE,
                    "%s: options name is %zu bytes long; at most %zu are kept", fn, n,
                    kNameSize - 1);
    std::memcpy(c->name, name, n + 1);
    return 0;
}

// The options as the caller's size gives them, defaults for the rest, and
// their flags checked.
evx_status_t read_options(const char *name, const evx_host_func_options_t *options,
                          evx_host_func_options_t *o) {
    std::memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
    if (options) {
        const evx_status_t st = sized_in(name, kOptionsType, options, o);
        if (st) return st;
        // A size that ends inside release (no compiled struct has one) gives
        // no release rather than part of a pointer.
        if (options->struct_size < offsetof(evx_host_func_options_t, release) + sizeof o->release)
            o->release = nullptr;
    }
    return check_known_flags(name, "host function", o->flags, EVX_HOST_FUNC_SPINWAIT,
                             "EVX_HOST_FUNC_SPINWAIT 0x1");
}

// The record of a launch by r's thread, named, not yet of a stream (its
// launch sets the rest).
evx_status_t new_call(const char *name, ThreadRecord *r, evx_host_fn_status_t fn,
                      void *user_data, const evx_host_func_options_t &o, evx_stream_t stream,
                      CallPtr *out) {
    HostHome *const h = home_of(r);
    CallPtr c(h ? call_take(h) : nullptr);
    if (!c) return fail(EVX_ERROR_OUT_OF_MEMORY, "%s: out of memory", name);
    c->fn = fn;
    c->user_data = user_data;
    c->release = o.release;
    c->stream = handle_value(stream);
    const evx_status_t st = name_call(name, c.get(), o.name);
    if (!st) *out = std::move(c);
    return st;
}

// A launch on a stream being captured: a host node of its graph, with the
// stream's context current (a default stream's already is, under guard).
evx_status_t launch_in_capture(const char *name, ContextGuard &guard, const Stream *s,
                               evx_stream_t stream, CallPtr c, bool spin) {
    if (!cu().cuStreamGetCaptureInfo || !cu().cuUserObjectCreate ||
        !cu().cuUserObjectRelease || !cu().cuGraphRetainUserObject)
        return fail(EVX_ERROR_NOT_SUPPORTED,
                    "%s: stream 0x%" PRIx64
                    " is being captured, and the driver lacks cuStreamGetCaptureInfo "
                    "(CUDA 12.3), cuUserObjectCreate or cuGraphRetainUserObject, which a "
                    "host function that can fail needs in a graph",
                    name, handle_value(stream));
    // The user object and the graph belong to the stream's context.
    if (!s->default_stream) {
        CUcontext ctx = s->ctx ? s->ctx : known_primary(s->device);
        const evx_status_t st = guard.enter_context(name, ctx, s->device);
        if (st) return st;
    }
    const char *call = nullptr;
    const CUresult res = launch_captured(s, std::move(c), spin, &call);  // the driver's now
    if (res == CUDA_SUCCESS)
        return guard.leave(name, "the host function was captured into the graph");
    if (is_capture_status(res)) return capture_failed(name, call, res, stream, s);
    return driver_failed(res, name, call, "stream 0x%" PRIx64 " (being captured)",
                         handle_value(stream));
}

// A launch outside a capture: numbered among the stream handle's launches;
// *c is the driver's (released) once it is queued.
CUresult launch_queued(const Stream *s, CallPtr *c, bool spin, const char **call) {
    uint64_t id = s->hf_id.load(std::memory_order_acquire);
    if (id == 0) {
        // The stream's records take the path that notes these launches
        // (Stream::record_ctx): before the id, so that a thread that sees
        // the id sees this too.
        s->record_ctx.store(kNoContextTag, std::memory_order_relaxed);
        uint64_t fresh = g_next_id.fetch_add(1, std::memory_order_relaxed);
        id = s->hf_id.compare_exchange_strong(id, fresh, std::memory_order_acq_rel) ? fresh : id;
    }
    HostCall *const p = c->get();
    p->id = id;
    p->ticket = s->hf_launched.fetch_add(1, std::memory_order_acq_rel) + 1;
    // From the launch on the trampoline may run (and give it back) at once.
    CUresult res;
    if (cu().cuLaunchHostFunc_v2) {
        *call = "cuLaunchHostFunc_v2";
        res = cu().cuLaunchHostFunc_v2(s->cu, trampoline, p, spin ? 1u : 0u);
    } else {
        *call = "cuLaunchHostFunc";
        res = cu().cuLaunchHostFunc(s->cu, trampoline, p);
    }
    if (res == CUDA_SUCCESS) c->release();
    return res;
}

}  // namespace

evx_status_t host_failure_take(const char *fn, uint64_t id, uint64_t upto, int device) {
    Failure f;
    {
        std::lock_guard<std::mutex> lock(g_mu);
        const size_t none = g_failures.size();
        size_t best = none, graph = none;
        for (size_t i = 0; i < g_failures.size(); ++i) {
            const Failure &x = g_failures[i];
            if (id != 0 && x.id == id && x.ticket <= upto &&
                (best == none || x.ticket < g_failures[best].ticket))
                best = i;
            // The earliest recorded failure in a graph launch on the device.
            if (x.id == 0 && x.device == device && graph == none) graph = i;
        }
        // The stream handle's own failures first: they are the call's for sure.
        if (best == none) best = graph;
        if (best == none) return 0;
        f = g_failures[best];
        g_failures.erase(g_failures.begin() + static_cast<std::ptrdiff_t>(best));
        g_host_failures.fetch_sub(1, std::memory_order_release);
        if (f.id == 0) g_graph_failures.fetch_sub(1, std::memory_order_release);
    }
    // A value that is no status code is reported as EVX_ERROR_UNKNOWN: evx
    // returns only codes of CUresult.
    const bool known =
        f.status > 0 && std::strcmp(evx_status_name(f.status), "EVX_STATUS_UNRECOGNIZED") != 0;
    if (f.id == 0 && known)
        fail(f.status,
             "%s: host function %s, captured on stream 0x%" PRIx64
             " with evx_stream_launch_host_func_status, returned %s (%d) in a launch of its graph "
             "on device %d",
             fn, f.name, f.stream, evx_status_name(f.status), f.status, f.device);
    else if (f.id == 0)
        fail(EVX_ERROR_UNKNOWN,
             "%s: host function %s, captured on stream 0x%" PRIx64
             " with evx_stream_launch_host_func_status, returned %d in a launch of its graph on "
             "device %d, which is not a status code (reported as EVX_ERROR_UNKNOWN)",
             fn, f.name, f.stream, f.status, f.device);
    else if (known)
        fail(f.status,
             "%s: host function %s, launched on stream 0x%" PRIx64
             " with evx_stream_launch_host_func_status, returned %s (%d)",
             fn, f.name, f.stream, evx_status_name(f.status), f.status);
    else
        fail(EVX_ERROR_UNKNOWN,
             "%s: host function %s, launched on stream 0x%" PRIx64
             " with evx_stream_launch_host_func_status, returned %d, which is not a status "
             "code (reported as EVX_ERROR_UNKNOWN)",
             fn, f.name, f.stream, f.status);
    ThreadRecord *r = self();
    if (r) {
        r->host_data = f.user_data;
        r->host_set = true;
    }
    return known ? f.status : EVX_ERROR_UNKNOWN;
}

}  // namespace evx

using namespace evx;

extern "C" {

EVX_API evx_status_t evx_stream_launch_host_func_status(evx_stream_t stream,
                                                        evx_host_fn_status_t fn,
                                                        void *user_data,
                                                        const evx_host_func_options_t *options) {
    static const char name[] = "evx_stream_launch_host_func_status";
    if (!fn) return fail(EVX_ERROR_INVALID_VALUE, "%s: fn is NULL", name);
    evx_host_func_options_t o;
    evx_status_t st = read_options(name, options, &o);
    if (st) return st;
    ThreadRecord *const r = self();
    if (!r) return no_thread_record();
    CallPtr c;
    st = new_call(name, r, fn, user_data, o, stream, &c);
    if (st) return st;
    HandleScope scope(r);
    Slot *slot = nullptr;
    st = scope.lookup(name, stream, kStream, "stream", &slot);
    if (st) return st;
    const Stream *s = static_cast<const Stream *>(slot->obj);
    c->device = s->device;
    const bool spin = (o.flags & EVX_HOST_FUNC_SPINWAIT) != 0;
    CUresult res;
    const char *call = "cuStreamIsCapturing";
    {
        ContextGuard guard;
        st = stream_context(guard, name, s);
        if (st) return st;
        // Under stream capture the function becomes a graph host node, run
        // at every launch: its record is then the graph's (launch_captured).
        CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
        res = cu().cuStreamIsCapturing ? cu().cuStreamIsCapturing(s->cu, &cap) : CUDA_SUCCESS;
        if (res == CUDA_SUCCESS && cap == CU_STREAM_CAPTURE_STATUS_ACTIVE)
            return launch_in_capture(name, guard, s, stream, std::move(c), spin);
        if (res == CUDA_SUCCESS) {
            res = launch_queued(s, &c, spin, &call);
            // Queued: a failing pop is reported, and the function runs.
            if (res == CUDA_SUCCESS) return guard.leave(name, "the host function was queued");
        }
    }
    c.reset();  // the driver did not queue it
    if (is_capture_status(res)) return capture_failed(name, call, res, stream, s);
    return driver_failed(res, name, call, "stream 0x%" PRIx64, handle_value(stream));
}

EVX_API evx_status_t evx_last_error_host_func(void **user_data) {
    if (!user_data)
        return fail(EVX_ERROR_INVALID_VALUE,
                    "evx_last_error_host_func: user_data (the out-pointer) is NULL");
    ThreadRecord *r = self();
    if (!r || !r->host_set) return EVX_ERROR_NOT_FOUND;  // leaves the last error as it is
    *user_data = r->host_data;
    return EVX_SUCCESS;
}

EVX_API evx_status_t evx_driver_has_host_func_sync_mode(int *has) {
    static const char fn[] = "evx_driver_has_host_func_sync_mode";
    if (!has) return fail(EVX_ERROR_INVALID_VALUE, "%s: has (the out-pointer) is NULL", fn);
    const evx_status_t st = ensure_driver(fn);
    if (st) return st;
    *has = cu().cuLaunchHostFunc_v2 != nullptr;
    return EVX_SUCCESS;
}

}  // extern "C"
