// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Pinned memory of fences that only evx_device_trim() gives back to the
// driver (docs/fences.md, "Destroying a fence"): an interprocess fence's
// page, registered with cuMemHostRegister, once the GPU is done with it,
// and a page of the word pool that a create could not use.
//
// The driver's cuMemHostUnregister and cuMemFreeHost wait until the work
// queued on the context has completed, and while they wait every other
// driver call of the process waits too. No fence call may wait for the
// device, so none releases; nor may a thread of evx release in the
// background: work queued by the program while that thread is in the
// driver's release (a stream waiting for a fence that a later call of the
// program signals) would wait for that later call, which waits for the
// release: a deadlock. So the memory is kept, counted, and released by a
// trim, the one call documented to wait for the device, made where the
// program has chosen to wait.
#include <sys/mman.h>
#include <unistd.h>

#include <mutex>
#include <new>
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

struct Kept {
    std::mutex mu;
    std::vector<Release> list;
    pid_t owner = 0;  // the process whose driver registered them
};

Kept &kept() {
    static auto *k = new Kept;  // never destroyed: fence frees may run at exit
    return *k;
}

// A fork's child inherits the list but not the driver's state: it must
// not release its parent's registrations. Under k.mu.
void forget_parents(Kept &k) {
    const pid_t self = getpid();
    if (k.owner == self) return;
    k.list.clear();
    k.owner = self;
}

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

}  // namespace

void sync_known_devices() {
    for (int d = 0; d < g_driver.device_count; ++d) {
        if (!known_primary(d)) continue;  // a device evx never used: nothing of ours there
        ContextGuard guard;
        guard.enter(nullptr, d);
        sync_before_host_free();
    }
}

void fence_keep_for_trim(int device, void *mem, bool registered) {
    Kept &k = kept();
    std::lock_guard<std::mutex> lk(k.mu);
    forget_parents(k);
    try {
        k.list.push_back(Release{device, mem, registered});
    } catch (const std::bad_alloc &) {
        // No memory to remember it: kept for the life of the process.
        fence_count_lost();
    }
}

uint64_t fence_kept_count() {
    Kept &k = kept();
    std::lock_guard<std::mutex> lk(k.mu);
    forget_parents(k);
    return k.list.size();
}

CUresult fence_release_kept(int device, const char **what) {
    Kept &k = kept();
    std::vector<Release> mine;
    {
        std::lock_guard<std::mutex> lk(k.mu);
        forget_parents(k);
        size_t n = 0;
        for (const Release &x : k.list) {
            bool taken = false;
            if (x.device == device) {
                try {
                    mine.push_back(x);
                    taken = true;
                } catch (const std::bad_alloc &) {
                    // tried at a later trim
                }
            }
            if (!taken) k.list[n++] = x;
        }
        k.list.resize(n);
    }
    CUresult first = CUDA_SUCCESS;
    for (const Release &x : mine) {
        const CUresult res = release_now(x);  // may wait for the device
        if (res == CUDA_SUCCESS) continue;
        if (first == CUDA_SUCCESS) {
            first = res;
            *what = x.registered ? "cuMemHostUnregister" : "cuMemFreeHost";
        }
        std::lock_guard<std::mutex> lk(k.mu);
        try {
            k.list.push_back(x);  // refused: kept for a later trim
        } catch (const std::bad_alloc &) {
            fence_count_lost();
        }
    }
    return first;
}

}  // namespace evx
