// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Test-only introspection (evx_host_debug.h): live driver objects, injected
// faults, armed by evx_host_set_fault or EVX_HOST_FAULT, and stalls, armed
// by evx_host_set_stall.
#include "evx_host_debug.h"

#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "api.hpp"
#include "state.hpp"

#define EVXH_API extern "C" __attribute__((visibility("default")))

namespace evxh {

std::atomic<int> g_faults_armed{0};

namespace {

struct Fault {
    std::string entry;
    long long left;  // calls of entry until the one that fails (1: the next)
    CUresult status;  // CUDA_SUCCESS: a stall, not a failure
};

struct Faults {
    std::mutex mu;
    std::vector<Fault> armed;
    long long fired = 0;
    bool env_ok = true;
    // Stalls: calls blocked now, and the release generation they wait on.
    std::condition_variable released;
    long long stalled = 0;
    unsigned long long release_gen = 0;
};

Faults &faults() {
    static Faults *f = new Faults;  // never freed: worker threads may outlive exit
    return *f;
}

int arm(const char *entry, long long nth, int status) {
    Faults &f = faults();
    std::lock_guard<std::mutex> lk(f.mu);
    if (nth == 0) {
        f.armed.clear();
        g_faults_armed.store(0, std::memory_order_relaxed);
        return 0;
    }
    if (!entry || !known_entry(entry) || nth < 0 || status < 0) return -1;
    f.armed.push_back(Fault{entry, nth, static_cast<CUresult>(status)});
    g_faults_armed.store(static_cast<int>(f.armed.size()), std::memory_order_relaxed);
    return 0;
}

bool parse_number(const std::string &s, long long *out) {
    if (s.empty()) return false;
    char *end = nullptr;
    errno = 0;
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (errno || *end != '\0') return false;
    *out = v;
    return true;
}

// "entry:nth:status[,...]"; status a number or a CUresult name.
bool parse_env(const char *v) {
    std::string all = v;
    std::size_t pos = 0;
    while (pos <= all.size()) {
        std::size_t comma = all.find(',', pos);
        if (comma == std::string::npos) comma = all.size();
        const std::string one = all.substr(pos, comma - pos);
        pos = comma + 1;
        const std::size_t a = one.find(':');
        const std::size_t b = a == std::string::npos ? a : one.find(':', a + 1);
        if (b == std::string::npos) return false;
        const std::string entry = one.substr(0, a), st = one.substr(b + 1);
        long long nth = 0, status = 0;
        CUresult named = CUDA_SUCCESS;
        if (!parse_number(one.substr(a + 1, b - a - 1), &nth) || nth <= 0) return false;
        if (error_from_name(st.c_str(), &named))
            status = named;
        else if (!parse_number(st, &status) || status > 0x7fffffff)
            return false;
        if (arm(entry.c_str(), nth, static_cast<int>(status)) != 0) return false;
    }
    return true;
}

__attribute__((constructor)) void faults_from_env() {
    const char *v = std::getenv("EVX_HOST_FAULT");
    if (v && *v && !parse_env(v)) {
        arm(nullptr, 0, 0);  // none of a malformed list
        faults().env_ok = false;
    }
}

}  // namespace

CUresult fault_hit(const char *entry) {
    Faults &f = faults();
    std::unique_lock<std::mutex> lk(f.mu);
    CUresult r = CUDA_SUCCESS;
    bool stall = false;
    for (std::size_t i = 0; i < f.armed.size();) {
        Fault &x = f.armed[i];
        if (x.entry != entry || --x.left > 0) {
            ++i;
            continue;
        }
        if (x.status == CUDA_SUCCESS) {
            stall = true;
        } else {
            if (r == CUDA_SUCCESS) r = x.status;  // the first armed wins; all that fire go
            ++f.fired;
        }
        f.armed.erase(f.armed.begin() + static_cast<std::ptrdiff_t>(i));
    }
    g_faults_armed.store(static_cast<int>(f.armed.size()), std::memory_order_relaxed);
    if (stall) {
        // Blocks before the call does anything, then lets it run as usual
        // (or fail, when a fault fired on the same call: so that a test can
        // act while the call is held, then see how the call reports it).
        const unsigned long long gen = f.release_gen;
        ++f.stalled;
        f.released.wait(lk, [&f, gen] { return f.release_gen != gen; });
        --f.stalled;
    }
    return r;
}

bool fault_env_ok() {
    Faults &f = faults();
    std::lock_guard<std::mutex> lk(f.mu);
    return f.env_ok;
}

}  // namespace evxh

using namespace evxh;

EVXH_API void evx_host_get_live(evx_host_live *out) {
    if (!out) return;
    Global &g = global();
    long long refs = 0;
    for (int i = 0; i < kMaxDevices; i++) {
        std::lock_guard<std::mutex> lk(g.contexts[i].state_mu);
        refs += g.contexts[i].refs;
    }
    out->events = static_cast<long long>(g.events.size());
    out->streams = static_cast<long long>(g.streams.size());
    out->contexts = refs + created_context_count();
    out->host_funcs = g.host_funcs_pending.load(std::memory_order_acquire);
    out->user_objects = g.user_objects_live.load(std::memory_order_acquire);
    out->pinned = pinned_ranges();
}

EVXH_API int evx_host_set_fault(const char *entry, long long nth, int status) {
    return arm(entry, nth, status);
}

EVXH_API long long evx_host_faults_fired(void) {
    Faults &f = faults();
    std::lock_guard<std::mutex> lk(f.mu);
    return f.fired;
}

EVXH_API int evx_host_set_stall(const char *entry, long long nth) {
    if (nth <= 0) return -1;
    return arm(entry, nth, CUDA_SUCCESS);
}

EVXH_API long long evx_host_stalled(void) {
    Faults &f = faults();
    std::lock_guard<std::mutex> lk(f.mu);
    return f.stalled;
}

EVXH_API void evx_host_release_stalls(void) {
    Faults &f = faults();
    std::lock_guard<std::mutex> lk(f.mu);
    for (std::size_t i = 0; i < f.armed.size();) {
        if (f.armed[i].status == CUDA_SUCCESS)
            f.armed.erase(f.armed.begin() + static_cast<std::ptrdiff_t>(i));
        else
            ++i;
    }
    g_faults_armed.store(static_cast<int>(f.armed.size()), std::memory_order_relaxed);
    ++f.release_gen;
    f.released.notify_all();
}
