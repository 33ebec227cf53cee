// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// The shared counter of an EVX_FENCE_INTERPROCESS fence: a POSIX
// shared-memory object (shm_open, in /dev/shm) of one page, mapped by each
// process that uses the fence and registered with the driver there
// (cuMemHostRegister, mapped to the device), so that every process's GPU
// work and host calls act on the same word. The handle is a magic and the
// object's name. Cross-process memory of the driver (cuIpcGetMemHandle) is
// device memory only, whose host reads cost a copy; a registered shared
// page keeps a host read a load, as for a fence of one process.
//
// The maker unlinks the name when its fence is destroyed (and at exit, for
// fences still alive then); mappings made before stay valid. A page that
// had work queued on it stays mapped and registered after the handle dies:
// the GPU may still reach it (see fence.cpp).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "driver.hpp"
#include "error.hpp"
#include "evx/fence.h"
#include "fence.hpp"

namespace evx {

namespace {

constexpr char kMagic[8] = {'e', 'v', 'x', 'f', 'e', 'n', 'c', 'e'};
constexpr size_t kPage = 4096;

// Names this process made and has not unlinked yet, unlinked at exit as the
// driver's objects go with the process. A plain array: nothing to destroy.
std::mutex g_names_mu;
char (*g_names)[56] = nullptr;
size_t g_names_n = 0, g_names_cap = 0;

void remember_name(const char *name) {
    std::lock_guard<std::mutex> lk(g_names_mu);
    if (g_names_n == g_names_cap) {
        const size_t cap = g_names_cap ? g_names_cap * 2 : 16;
        void *p = std::realloc(g_names, cap * sizeof *g_names);
        if (!p) return;  // only the unlink at exit is lost
        g_names = static_cast<char(*)[56]>(p);
        g_names_cap = cap;
    }
    std::memcpy(g_names[g_names_n++], name, 56);
}

void forget_name(const char *name) {
    std::lock_guard<std::mutex> lk(g_names_mu);
    for (size_t i = 0; i < g_names_n; ++i)
        if (std::strncmp(g_names[i], name, 56) == 0) {
            std::memcpy(g_names[i], g_names[--g_names_n], 56);
            return;
        }
}

// Runs when the library is unloaded or the process exits.
void unlink_names_at_exit() __attribute__((destructor));
void unlink_names_at_exit() {
    std::lock_guard<std::mutex> lk(g_names_mu);
    for (size_t i = 0; i < g_names_n; ++i) shm_unlink(g_names[i]);
    g_names_n = 0;
}

// Maps the object and registers it (the device's context is current).
evx_status_t map_and_register(const char *fn, Fence *f, int fd) {
    void *p = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return fail(EVX_ERROR_OUT_OF_MEMORY, "%s: mmap of the fence's shared object %s: %s", fn,
                    f->name, std::strerror(errno));
    f->map = p;
    return 0;
}

evx_status_t register_page(const char *fn, Fence *f) {
    CUresult res = cu().cuMemHostRegister(
        f->map, kPage, CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP);
    if (res != CUDA_SUCCESS)
        return driver_failed(res, fn, "cuMemHostRegister", "the shared page of fence %s, device %d",
                             f->name, f->device);
    res = cu().cuMemHostGetDevicePointer(&f->dptr, f->map, 0);
    if (res != CUDA_SUCCESS) {
        cu().cuMemHostUnregister(f->map);
        return driver_failed(res, fn, "cuMemHostGetDevicePointer",
                             "the shared page of fence %s, device %d", f->name, f->device);
    }
    f->word = static_cast<FenceWord *>(f->map);
    f->last = &f->word->last;  // the monotonic rule holds across processes
    f->wake = &f->word->wake;  // a shared page: other processes wake it too
    f->futex_private = 0;
    return 0;
}

}  // namespace

evx_status_t fence_ipc_create(const char *fn, Fence *f, uint64_t initial) {
    static std::atomic<uint64_t> counter{0};
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    std::snprintf(f->name, sizeof f->name, "/evx-fence-%d-%llx-%lx", static_cast<int>(getpid()),
                  static_cast<unsigned long long>(counter.fetch_add(1) + 1),
                  static_cast<long>(ts.tv_nsec));
    const int fd = shm_open(f->name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0)
        return fail(EVX_ERROR_OPERATING_SYSTEM,
                    "%s: shm_open(\"%s\") for an interprocess fence: %s (IPC fences need a "
                    "writable /dev/shm)",
                    fn, f->name, std::strerror(errno));
    evx_status_t st = 0;
    if (ftruncate(fd, kPage) != 0)
        st = fail(EVX_ERROR_OUT_OF_MEMORY, "%s: ftruncate of the fence's shared object %s: %s", fn,
                  f->name, std::strerror(errno));
    if (!st) st = map_and_register(fn, f, fd);
    close(fd);
    if (!st) {
        FenceWord *w = static_cast<FenceWord *>(f->map);
        w->value = w->last = initial;
        w->owner_pid = static_cast<int32_t>(getpid());
        std::memcpy(w->magic, kMagic, sizeof kMagic);
        st = register_page(fn, f);
    }
    if (st) {
        if (f->map) munmap(f->map, kPage);
        f->map = nullptr;
        shm_unlink(f->name);
        return st;
    }
    remember_name(f->name);
    return 0;
}

evx_status_t fence_ipc_open(const char *fn, Fence *f, const unsigned char *handle, size_t size) {
    static_assert(sizeof kMagic + sizeof f->name == EVX_IPC_FENCE_HANDLE_SIZE, "handle layout");
    (void)size;
    std::memcpy(f->name, handle + sizeof kMagic, sizeof f->name);
    if (std::memcmp(handle, kMagic, sizeof kMagic) != 0 || f->name[0] != '/' ||
        std::memchr(f->name, '\0', sizeof f->name) == nullptr)
        return fail(EVX_ERROR_INVALID_VALUE,
                    "%s: the handle is not one that evx_fence_get_ipc_handle() made", fn);
    const int fd = shm_open(f->name, O_RDWR, 0);
    if (fd < 0)
        return fail(EVX_ERROR_INVALID_VALUE,
                    "%s: the fence's shared object %s cannot be opened (%s): its fence was "
                    "destroyed, or /dev/shm is not shared with the exporting process",
                    fn, f->name, std::strerror(errno));
    struct stat sb;
    evx_status_t st = 0;
    if (fstat(fd, &sb) != 0 || sb.st_size != static_cast<off_t>(kPage))
        st = fail(EVX_ERROR_INVALID_VALUE, "%s: %s is not a fence's shared object", fn, f->name);
    if (!st) st = map_and_register(fn, f, fd);
    close(fd);
    if (!st) {
        const FenceWord *w = static_cast<const FenceWord *>(f->map);
        if (std::memcmp(w->magic, kMagic, sizeof kMagic) != 0)
            st = fail(EVX_ERROR_INVALID_VALUE, "%s: %s is not a fence's shared object", fn,
                      f->name);
        else if (w->owner_pid == static_cast<int32_t>(getpid()))
            st = fail(EVX_ERROR_INVALID_CONTEXT,
                      "%s: the handle was exported by this same process: use the fence itself "
                      "(as the driver, evx opens an IPC handle only in another process)",
                      fn);
    }
    if (!st) st = register_page(fn, f);
    if (st && f->map) {
        munmap(f->map, kPage);
        f->map = nullptr;
    }
    return st;
}

void fence_ipc_handle(const Fence *f, unsigned char *out, size_t size) {
    std::memset(out, 0, size);
    std::memcpy(out, kMagic, sizeof kMagic);
    std::memcpy(out + sizeof kMagic, f->name, sizeof f->name);
}

CUresult fence_ipc_release(Fence *f) {
    if (!f->opened) {
        shm_unlink(f->name);
        forget_name(f->name);
    }
    if (f->used.load(std::memory_order_acquire)) return CUDA_SUCCESS;  // the GPU may reach it
    CUresult res;
    {
        ContextGuard guard;
        guard.enter(nullptr, f->device);  // unregister all the same on failure
        res = cu().cuMemHostUnregister(f->map);
    }
    // Refused: the page stays registered (the driver drops it at exit) and
    // mapped, so that the driver never holds a page the process unmapped.
    if (res == CUDA_SUCCESS) munmap(f->map, kPage);
    return res;
}

}  // namespace evx
