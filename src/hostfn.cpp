// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Host functions that can fail: evx_stream_launch_host_func_status(), the
// process-wide list of failures not yet reported, and the report that the
// waiting calls (stream.cpp, event.cpp) make through hostfn.hpp.
#include "hostfn.hpp"

#include <dlfcn.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#include "driver.hpp"
#include "error.hpp"
#include "evx/status.h"
#include "evx/stream.h"
#include "scope.hpp"
#include "sized.hpp"
#include "thread.hpp"

namespace evx {

std::atomic<uint32_t> g_host_failures{0};

namespace {

constexpr size_t kNameSize = 128;     // the longest name is 127 bytes
constexpr size_t kMaxFailures = 4096;  // unreported, in the process

constexpr SizedType kOptionsType{"evx_host_func_options_t", "options",
                                 offsetof(evx_host_func_options_t, name) + sizeof(const char *)};
static_assert(kOptionsType.first_size == 16, "stream.h publishes 16 bytes of options");

// One launched host function, freed by the trampoline after it ran.
struct HostCall {
    evx_host_fn_status_t fn;
    void *user_data;
    uint64_t id;       // Stream::hf_id
    uint64_t ticket;   // its number among the stream handle's launches
    uint64_t stream;   // the handle's value, for the message
    char name[kNameSize];
};

struct Failure {
    uint64_t id;
    uint64_t ticket;
    uint64_t stream;
    evx_status_t status;
    void *user_data;
    char name[kNameSize];
};

std::mutex g_mu;                 // guards g_failures
std::vector<Failure> g_failures;  // in the order they were recorded
std::atomic<uint64_t> g_next_id{1};
uint64_t g_dropped = 0;          // failures dropped over kMaxFailures (g_mu)

// Runs on the driver's host-function thread: no evx or CUDA call here.
void CUDA_CB trampoline(void *p) {
    HostCall *c = static_cast<HostCall *>(p);
    const evx_status_t st = c->fn(c->user_data);
    if (st != EVX_SUCCESS) {
        Failure f;
        f.id = c->id;
        f.ticket = c->ticket;
        f.stream = c->stream;
        f.status = st;
        f.user_data = c->user_data;
        std::memcpy(f.name, c->name, sizeof f.name);
        std::lock_guard<std::mutex> lock(g_mu);
        try {
            if (g_failures.size() == kMaxFailures) {
                g_failures.erase(g_failures.begin());
                ++g_dropped;
            } else {
                g_host_failures.fetch_add(1, std::memory_order_release);
            }
            g_failures.push_back(f);
        } catch (const std::bad_alloc &) {
            // Out of memory on the driver's thread: the failure cannot be
            // kept, and there is nobody to tell but the count below.
            ++g_dropped;
        }
    }
    delete c;
}

// The function's name: the caller's, else its symbol, else its address.
evx_status_t name_call(const char *fn, HostCall *c, const char *name) {
    if (name) {
        const size_t n = std::strlen(name);
        if (n >= kNameSize)
            return fail(EVX_ERROR_INVALID_VALUE,
                        "%s: options name is %zu bytes long; at most %zu are kept", fn, n,
                        kNameSize - 1);
        std::memcpy(c->name, name, n + 1);
        return 0;
    }
    void *addr;
    static_assert(sizeof addr == sizeof c->fn, "function pointers are not pointer-sized");
    std::memcpy(&addr, &c->fn, sizeof addr);
    Dl_info info;
    if (dladdr(addr, &info) != 0 && info.dli_sname && info.dli_saddr == addr)
        std::snprintf(c->name, sizeof c->name, "%s", info.dli_sname);
    else
        std::snprintf(c->name, sizeof c->name, "at %p", addr);
    return 0;
}

}  // namespace

evx_status_t host_failure_take(const char *fn, uint64_t id, uint64_t upto) {
    Failure f;
    {
        std::lock_guard<std::mutex> lock(g_mu);
        size_t best = g_failures.size();
        for (size_t i = 0; i < g_failures.size(); ++i) {
            const Failure &x = g_failures[i];
            if (x.id == id && x.ticket <= upto &&
                (best == g_failures.size() || x.ticket < g_failures[best].ticket))
                best = i;
        }
        if (best == g_failures.size()) return 0;
        f = g_failures[best];
        g_failures.erase(g_failures.begin() + static_cast<std::ptrdiff_t>(best));
        g_host_failures.fetch_sub(1, std::memory_order_release);
    }
    // A value that is no status code is reported as EVX_ERROR_UNKNOWN: evx
    // returns only codes of CUresult.
    const bool known =
        f.status > 0 && std::strcmp(evx_status_name(f.status), "EVX_STATUS_UNRECOGNIZED") != 0;
    if (known)
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
    std::memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    if (options) {
        const evx_status_t st = sized_in(name, kOptionsType, options, &o);
        if (st) return st;
    }
    evx_status_t st = check_known_flags(name, "host function", o.flags, EVX_HOST_FUNC_SPINWAIT,
                                        "EVX_HOST_FUNC_SPINWAIT 0x1");
    if (st) return st;
    HostCall *c = new (std::nothrow) HostCall;
    if (!c) return fail(EVX_ERROR_OUT_OF_MEMORY, "%s: out of memory", name);
    c->fn = fn;
    c->user_data = user_data;
    st = name_call(name, c, o.name);
    if (st) {
        delete c;
        return st;
    }
    HandleScope scope;
    Slot *slot = nullptr;
    st = scope.lookup(name, stream, kStream, "stream", &slot);
    if (st) {
        delete c;
        return st;
    }
    const Stream *s = static_cast<const Stream *>(slot->obj);
    CUresult res;
    const char *call = "cuStreamIsCapturing";
    {
        ContextGuard guard;
        st = stream_context(guard, name, s);
        if (st) {
            delete c;
            return st;
        }
        // Under stream capture the function would become a graph node run
        // at every replay, but this record is freed after one run.
        CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
        res = cu().cuStreamIsCapturing ? cu().cuStreamIsCapturing(s->cu, &cap) : CUDA_SUCCESS;
        if (res == CUDA_SUCCESS && cap != CU_STREAM_CAPTURE_STATUS_NONE) {
            delete c;
            return fail(EVX_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                        "%s: stream 0x%" PRIx64
                        " is being captured; a host function that can fail is not captured "
                        "(evx_stream_launch_host_func is)",
                        name, handle_value(stream));
        }
        if (res == CUDA_SUCCESS) {
            uint64_t id = s->hf_id.load(std::memory_order_acquire);
            if (id == 0) {
                uint64_t fresh = g_next_id.fetch_add(1, std::memory_order_relaxed);
                id = s->hf_id.compare_exchange_strong(id, fresh, std::memory_order_acq_rel)
                         ? fresh
                         : id;
            }
            c->id = id;
            c->ticket = s->hf_launched.fetch_add(1, std::memory_order_acq_rel) + 1;
            c->stream = handle_value(stream);
            if (cu().cuLaunchHostFunc_v2) {
                call = "cuLaunchHostFunc_v2";
                res = cu().cuLaunchHostFunc_v2(s->cu, trampoline, c,
                                               (o.flags & EVX_HOST_FUNC_SPINWAIT) ? 1u : 0u);
            } else {
                call = "cuLaunchHostFunc";
                res = cu().cuLaunchHostFunc(s->cu, trampoline, c);
            }
            // Queued: a failing pop is reported, and the function runs.
            if (res == CUDA_SUCCESS) return guard.leave(name, "the host function was queued");
        }
    }
    delete c;  // the driver did not queue it
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
