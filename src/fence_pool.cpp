// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// The pinned words of plain fences (docs/design.md, "Fences"): a pool per
// device of words carved from pinned pages. The driver's cuMemFreeHost
// waits until the work queued on the context has completed (an H200 held
// it behind a host function for as long as that ran), so no fence call
// frees pinned memory: a fence takes a word of the pool, and its word
// comes back once no queued work can reach it any more (at once for a
// fence never used on a stream; after fence_reclaim.cpp's marks completed
// for one that was). Pages whose words are all free are freed only by
// evx_device_trim(), which is documented to wait for the device. A free
// word is taken last-in first-out: a destroyed fence's word is the next
// one made.
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <vector>

#include "driver.hpp"
#include "error.hpp"
#include "evx/fence.h"
#include "fence.hpp"

namespace evx {

namespace {

constexpr size_t kPageBytes = 4096;
constexpr uint32_t kWords = kPageBytes / sizeof(FenceWord);

struct Page {
    CUdeviceptr dptr;  // the device's address of the page's first word
    uint32_t in_use;   // words handed out and not back yet
};

struct Pool {
    std::mutex mu;
    std::map<uintptr_t, Page> pages;  // by host address
    std::vector<FenceWord *> free;    // words of `pages`, taken from the back
};

std::mutex g_pools_mu;
Pool **g_pools = nullptr;  // device_count entries, made on first use, never freed

Pool *pool_of(int device) {
    std::lock_guard<std::mutex> lk(g_pools_mu);
    if (!g_pools) {
        g_pools = new (std::nothrow) Pool *[g_driver.device_count]();
        if (!g_pools) return nullptr;
    }
    if (!g_pools[device]) g_pools[device] = new (std::nothrow) Pool;
    return g_pools[device];
}

// The page holding w; under p.mu.
Page *page_of(Pool &p, const FenceWord *w, uintptr_t *base) {
    auto it = p.pages.upper_bound(reinterpret_cast<uintptr_t>(w));
    if (it == p.pages.begin()) return nullptr;
    --it;
    *base = it->first;
    return &it->second;
}

// A new page of the device (its context current), its words added to the
// free list; false with *st set on failure. Under p.mu.
bool add_page(const char *fn, int device, Pool &p, evx_status_t *st) {
    void *mem = nullptr;
    CUresult res = cu().cuMemHostAlloc(&mem, kPageBytes,
                                       CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
    if (res != CUDA_SUCCESS) {
        *st = driver_failed(res, fn, "cuMemHostAlloc", "%zu bytes for fences of device %d",
                            kPageBytes, device);
        return false;
    }
    CUdeviceptr dptr = 0;
    res = cu().cuMemHostGetDevicePointer(&dptr, mem, 0);
    bool no_memory = false;
    if (res == CUDA_SUCCESS) {
        try {
            // Room for every word of every page: a put never allocates.
            p.free.reserve((p.pages.size() + 1) * kWords);
            p.pages.emplace(reinterpret_cast<uintptr_t>(mem), Page{dptr, 0});
        } catch (const std::bad_alloc &) {
            no_memory = true;
        }
    }
    if (res != CUDA_SUCCESS || no_memory) {
        // Freed by a trim: cuMemFreeHost would wait here.
        fence_keep_for_trim(device, mem, false);
        *st = no_memory ? fail(EVX_ERROR_OUT_OF_MEMORY, "%s: out of memory", fn)
                        : driver_failed(res, fn, "cuMemHostGetDevicePointer",
                                        "the fences' pinned memory, device %d", device);
        return false;
    }
    FenceWord *w = static_cast<FenceWord *>(mem);
    for (uint32_t i = kWords; i-- > 0;) p.free.push_back(w + i);  // the first word on top
    return true;
}

}  // namespace

evx_status_t fence_word_get(const char *fn, int device, FenceWord **word, CUdeviceptr *dptr) {
    Pool *p = pool_of(device);
    if (!p) return fail(EVX_ERROR_OUT_OF_MEMORY, "%s: out of memory", fn);
    std::lock_guard<std::mutex> lk(p->mu);
    evx_status_t st = 0;
    if (p->free.empty() && !add_page(fn, device, *p, &st)) return st;
    FenceWord *w = p->free.back();
    p->free.pop_back();
    uintptr_t base = 0;
    Page *pg = page_of(*p, w, &base);
    ++pg->in_use;
    // No queued work reaches a free word: it is reset for its new fence.
    std::memset(static_cast<void *>(w), 0, sizeof *w);
    *word = w;
    *dptr = pg->dptr + (reinterpret_cast<uintptr_t>(w) - base);
    return 0;
}

void fence_word_put(int device, FenceWord *w) {
    Pool *p = pool_of(device);  // made when w was taken
    std::lock_guard<std::mutex> lk(p->mu);
    uintptr_t base = 0;
    Page *pg = page_of(*p, w, &base);
    --pg->in_use;
    p->free.push_back(w);  // within the capacity add_page() reserved: no throw
}

namespace {

// Takes the page at mem out of the pool if none of its words is in use:
// its free words leave the free list (in place: nothing is allocated);
// false if it is gone or in use. Under p.mu.
bool take_idle(Pool &p, void *mem, Page *out) {
    auto it = p.pages.find(reinterpret_cast<uintptr_t>(mem));
    if (it == p.pages.end() || it->second.in_use != 0) return false;  // taken meanwhile
    *out = it->second;
    const uintptr_t lo = it->first, hi = lo + kPageBytes;
    size_t n = 0;
    for (FenceWord *w : p.free) {
        const uintptr_t a = reinterpret_cast<uintptr_t>(w);
        if (a < lo || a >= hi) p.free[n++] = w;
    }
    p.free.resize(n);  // smaller: keeps its capacity
    p.pages.erase(it);
    return true;
}

// A page the driver refused to free goes back to the pool whole (a later
// trim tries again); its words fit in the free list's capacity.
void put_back(Pool &p, void *mem, const Page &pg) {
    try {
        p.pages.emplace(reinterpret_cast<uintptr_t>(mem), pg);
    } catch (const std::bad_alloc &) {
        return;  // no memory to remember it: the page is lost, never reused
    }
    FenceWord *w = static_cast<FenceWord *>(mem);
    for (uint32_t i = kWords; i-- > 0;) p.free.push_back(w + i);
}

}  // namespace

namespace {

CUresult pool_trim(int device) {
    Pool *p = nullptr;
    {
        std::lock_guard<std::mutex> lk(g_pools_mu);
        if (g_pools) p = g_pools[device];
    }
    if (!p) return CUDA_SUCCESS;
    std::vector<void *> idle;
    try {
        std::lock_guard<std::mutex> lk(p->mu);
        for (const auto &e : p->pages)
            if (e.second.in_use == 0) idle.push_back(reinterpret_cast<void *>(e.first));
    } catch (const std::bad_alloc &) {
        // Those listed so far are freed; the rest at a later trim.
    }
    CUresult first = CUDA_SUCCESS;
    for (void *mem : idle) {
        Page pg{};
        {
            std::lock_guard<std::mutex> lk(p->mu);
            if (!take_idle(*p, mem, &pg)) continue;
        }
        CUresult res;
        sync_known_devices();
        {
            ContextGuard guard;
            guard.enter(nullptr, device);  // freed all the same on failure
            res = cu().cuMemFreeHost(mem);  // waits for the device's queued work
        }
        if (res == CUDA_SUCCESS) continue;
        if (first == CUDA_SUCCESS) first = res;
        std::lock_guard<std::mutex> lk(p->mu);
        put_back(*p, mem, pg);
    }
    return first;
}

}  // namespace

evx_status_t fence_memory_trim(const char *fn, int device) {
    evx_fence_reclaim(nullptr, nullptr);  // words whose work ran come back first
    const CUresult pool = pool_trim(device);
    const char *what = "cuMemFreeHost";
    const CUresult again = fence_release_kept(device, &what);
    CUresult res = again;
    if (pool != CUDA_SUCCESS) {
        res = pool;
        what = "cuMemFreeHost";
    }
    if (res == CUDA_SUCCESS) return 0;
    return driver_failed(res, fn, what,
                         "device %d: pinned fence memory was refused; it is kept, and a later "
                         "trim tries again",
                         device);
}

}  // namespace evx
