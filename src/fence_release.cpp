// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Pinned memory that fence calls give back to the driver without waiting
// (docs/design.md, "Fences"): an interprocess fence's page, registered
// with cuMemHostRegister, and a page of the word pool that a create could
// not use. The driver's cuMemHostUnregister and cuMemFreeHost wait until
// the work queued on the context has completed, so a fence call never makes
// them: it hands the memory to one thread of evx, started on first use,
// which makes them (and unmaps the page) while the caller goes on. The
// memory is counted pending (evx_fence_reclaim()) until released. What the
// driver refuses to release is kept and counted as kept until
// evx_device_trim() of its device tries again (that call may wait).
#include <sys/mman.h>
#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>
#include <vector>

#include "driver.hpp"
#include "fence.hpp"

namespace evx {

namespace {

struct Release {
    int device;
    void *mem;
    bool registered;  // an IPC page: unregister and unmap; else cuMemFreeHost
};

constexpr size_t kIpcPage = 4096;  // fence_ipc.cpp's page

struct Releaser {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Release> queue;
    std::vector<Release> refused;  // by the driver: kept until a trim
    size_t busy = 0;               // taken by the thread, not released yet
    pid_t started = 0;             // the process that started the thread (a fork's child has none)
};

Releaser &rel() {
    static auto *r = new Releaser;  // never destroyed: the thread outlives exit
    return *r;
}

}  // namespace

void sync_known_devices() {
    for (int d = 0; d < g_driver.device_count; ++d) {
        if (!known_primary(d)) continue;  // a device evx never used: nothing of ours there
        ContextGuard guard;
        guard.enter(nullptr, d);
        sync_before_host_free();
    }
}

namespace {

CUresult release_now(const Release &x) {
    CUresult res;
    sync_known_devices();
    {
        ContextGuard guard;
        guard.enter(nullptr, x.device);  // released all the same on failure
        res = x.registered ? cu().cuMemHostUnregister(x.mem) : cu().cuMemFreeHost(x.mem);
    }
    // A page the driver still holds stays mapped: it never keeps a page
    // the process unmapped.
    if (res == CUDA_SUCCESS && x.registered) munmap(x.mem, kIpcPage);
    return res;
}

// Kept until a trim; under r.mu. No memory to remember it: lost for good.
void refuse(Releaser &r, const Release &x) {
    try {
        r.refused.push_back(x);
    } catch (const std::bad_alloc &) {
    }
}

void thread_main() {
    Releaser &r = rel();
    std::unique_lock<std::mutex> lk(r.mu);
    for (;;) {
        r.cv.wait(lk, [&] { return !r.queue.empty(); });
        const Release x = r.queue.front();
        r.queue.pop_front();
        ++r.busy;
        lk.unlock();
        const CUresult res = release_now(x);  // may wait for the device
        lk.lock();
        --r.busy;
        if (res != CUDA_SUCCESS) refuse(r, x);
    }
}

}  // namespace

void fence_release_later(int device, void *mem, bool registered) {
    Releaser &r = rel();
    const Release x{device, mem, registered};
    std::lock_guard<std::mutex> lk(r.mu);
    const pid_t self = getpid();
    if (r.started != self) {
        try {
            std::thread(thread_main).detach();
            r.started = self;
        } catch (const std::system_error &) {
        }
    }
    try {
        if (r.started != self) throw std::bad_alloc();  // no thread: left to a trim
        r.queue.push_back(x);
    } catch (const std::bad_alloc &) {
        refuse(r, x);
        return;
    }
    r.cv.notify_one();
}

void fence_release_counts(uint64_t *pending, uint64_t *kept) {
    Releaser &r = rel();
    std::lock_guard<std::mutex> lk(r.mu);
    *pending = r.queue.size() + r.busy;
    *kept = r.refused.size();
}

CUresult fence_release_retry(int device, const char **what) {
    Releaser &r = rel();
    std::vector<Release> mine;
    {
        std::lock_guard<std::mutex> lk(r.mu);
        size_t n = 0;
        for (const Release &x : r.refused) {
            if (x.device != device) {
                r.refused[n++] = x;
                continue;
            }
            try {
                mine.push_back(x);
            } catch (const std::bad_alloc &) {
                r.refused[n++] = x;  // tried at a later trim
            }
        }
        r.refused.resize(n);
    }
    CUresult first = CUDA_SUCCESS;
    for (const Release &x : mine) {
        const CUresult res = release_now(x);  // may wait for the device
        if (res == CUDA_SUCCESS) continue;
        if (first == CUDA_SUCCESS) {
            first = res;
            *what = x.registered ? "cuMemHostUnregister" : "cuMemFreeHost";
        }
        std::lock_guard<std::mutex> lk(r.mu);
        refuse(r, x);
    }
    return first;
}

}  // namespace evx
