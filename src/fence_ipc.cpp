// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// The shared counter of an EVX_FENCE_INTERPROCESS fence: one page of
// shared memory, mapped by each process that uses the fence and registered
// with the driver there (cuMemHostRegister, mapped to the device), so that
// every process's GPU work and host calls act on the same word.
// Cross-process memory of the driver (cuIpcGetMemHandle) is device memory
// only, whose host reads cost a copy; a registered shared page keeps a host
// read a load, as for a fence of one process.
//
// The page is a POSIX shared-memory object (shm_open, in /dev/shm) or,
// where the maker cannot create one (no /dev/shm, or not writable), a
// memfd: both are tmpfs files, which the driver pins alike. Every process
// that holds the fence keeps the object's descriptor open for the fence's
// life. The handle names the object two ways, tried in this order:
//   1. its name in /dev/shm (not for a memfd): processes sharing /dev/shm;
//   2. /proc/<pid>/fd/<fd> of the process that exported the handle:
//      processes sharing the PID namespace (the kernel checks that the
//      opener may read the exporter's state, ptrace's read mode).
// A random nonce, in the handle and in the page, checks that what was
// opened is the fence's page: a descriptor number that was closed and
// reused is refused, as is a forged handle.
//
// The maker unlinks the name when its fence is destroyed (and at exit, for
// fences still alive then), and every process closes its descriptor then;
// mappings made before stay valid. A page that had work queued on it stays
// mapped and registered after the handle dies: the GPU may still reach it
// (see fence.cpp).
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>

#include "driver.hpp"
#include "error.hpp"
#include "evx/fence.h"
#include "fence.hpp"

namespace evx {

namespace {

// The page's magic (FenceWord::magic).
constexpr char kMagic[8] = {'e', 'v', 'x', 'f', 'e', 'n', 'c', 'e'};
constexpr size_t kPage = 4096;

// The handle, 64 bytes in this process's byte order (both ends are on one
// machine):
//    0  "evxfenc"   7 bytes
//    7  version     kVersion
//    8  flags       kNamed: the object has a name in /dev/shm
//    9  zero        3 bytes
//   12  int32 fd    the object's descriptor in process `pid`
//   16  int32 pid   the process that exported this handle
//   20  int32 maker the process that made the fence (part of the name)
//   24  uint64      the nonce, also in the page
//   32  zero        32 bytes
// Version 1 (evx 1.0) was the page's magic "evxfence" and the name: still
// opened (open_v1()), by name only. evx 1.0 opens no version 2 handle.
constexpr char kHandleMagic[7] = {'e', 'v', 'x', 'f', 'e', 'n', 'c'};
constexpr unsigned char kVersion = 2;
constexpr unsigned char kNamed = 0x1;

struct HandleFields {
    unsigned char flags;
    int32_t fd, pid, maker;
    uint64_t nonce;
};

// The fences this process made or opened and has not destroyed yet: the
// names of those it made are unlinked at exit, as the driver's objects go
// with the process, and a handle this process exported is refused here
// (opened in its own process): one of a fence it made, whoever exported
// it, or one it exported from a fence it opened (re-exported: its pid and
// descriptor in the handle). The pid tells a forked child's copy of the
// list from its parent's. A plain array: nothing to destroy.
struct Held {
    uint64_t nonce;
    pid_t pid;
    int fd;
    bool made;
    bool named;
    char name[sizeof Fence::name];
};
std::mutex g_held_mu;
Held *g_held = nullptr;
size_t g_held_n = 0, g_held_cap = 0;

void remember(const Fence *f) {
    std::lock_guard<std::mutex> lk(g_held_mu);
    if (g_held_n == g_held_cap) {
        const size_t cap = g_held_cap ? g_held_cap * 2 : 16;
        void *p = std::realloc(g_held, cap * sizeof *g_held);
        if (!p) return;  // only the unlink at exit and the same-process check are lost
        g_held = static_cast<Held *>(p);
        g_held_cap = cap;
    }
    Held &m = g_held[g_held_n++];
    m.nonce = f->nonce;
    m.pid = getpid();
    m.fd = f->fd;
    m.made = !f->opened;
    m.named = f->named;
    std::memcpy(m.name, f->name, sizeof m.name);
}

void forget(const Fence *f) {
    const pid_t self = getpid();
    std::lock_guard<std::mutex> lk(g_held_mu);
    for (size_t i = 0; i < g_held_n; ++i)
        if (g_held[i].nonce == f->nonce && g_held[i].fd == f->fd && g_held[i].pid == self) {
            g_held[i] = g_held[--g_held_n];
            return;
        }
}

// Whether this process exported the handle: it made the fence, or it holds
// the fence open through the very descriptor the handle names, as the
// process the handle names.
bool exported_here(uint64_t nonce, int32_t pid, int32_t fd) {
    const pid_t self = getpid();
    std::lock_guard<std::mutex> lk(g_held_mu);
    for (size_t i = 0; i < g_held_n; ++i) {
        const Held &m = g_held[i];
        if (m.pid != self || m.nonce != nonce) continue;
        if (m.made || (pid == static_cast<int32_t>(self) && m.fd == fd)) return true;
    }
    return false;
}

// Runs when the library is unloaded or the process exits; a forked child
// leaves its parent's names alone.
void unlink_names_at_exit() __attribute__((destructor));
void unlink_names_at_exit() {
    const pid_t self = getpid();
    std::lock_guard<std::mutex> lk(g_held_mu);
    for (size_t i = 0; i < g_held_n; ++i)
        if (g_held[i].made && g_held[i].named && g_held[i].pid == self)
            shm_unlink(g_held[i].name);
    g_held_n = 0;
}

uint64_t new_nonce() {
    uint64_t n = 0;
    if (getrandom(&n, sizeof n, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof n)) {
        // No entropy yet (early boot): unique within the machine is enough,
        // the nonce is an identity, not a secret.
        static std::atomic<uint64_t> counter{0};
        timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        n = (static_cast<uint64_t>(getpid()) << 40) ^ (static_cast<uint64_t>(ts.tv_sec) << 20) ^
            static_cast<uint64_t>(ts.tv_nsec) ^ (counter.fetch_add(1) * 0x9E3779B97F4A7C15ull);
    }
    return n ? n : 1;  // 0 marks no fence
}

void name_of(char (&name)[sizeof Fence::name], int32_t maker, uint64_t nonce) {
    std::snprintf(name, sizeof name, "/evx-fence-%d-%016llx", static_cast<int>(maker),
                  static_cast<unsigned long long>(nonce));
}

evx_status_t map_page(const char *fn, Fence *f, int fd) {
    void *p = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return fail(EVX_ERROR_OUT_OF_MEMORY, "%s: mmap of the fence's shared object %s: %s", fn,
                    f->name, std::strerror(errno));
    f->map = p;
    return 0;
}

// Registers the mapped page (the device's context is current).
evx_status_t register_page(const char *fn, Fence *f) {
    CUresult res = cu().cuMemHostRegister(
        f->map, kPage, CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP);
    if (res != CUDA_SUCCESS)
        return driver_failed(res, fn, "cuMemHostRegister", "the shared page of fence %s, device %d",
                             f->name, f->device);
    res = cu().cuMemHostGetDevicePointer(&f->dptr, f->map, 0);
    if (res != CUDA_SUCCESS) {
        // Unregistered (and unmapped) by a trim: the driver's unregister
        // would wait for the device here.
        fence_keep_for_trim(f->device, f->map, true);
        f->map = nullptr;
        return driver_failed(res, fn, "cuMemHostGetDevicePointer",
                             "the shared page of fence %s, device %d", f->name, f->device);
    }
    f->word = static_cast<FenceWord *>(f->map);
    f->last = &f->word->last;  // the monotonic rule holds across processes
    f->wake = &f->word->wake;  // a shared page: other processes wake it too
    f->futex_private = 0;
    return 0;
}

// Undoes a failed create or open: the mapping, the descriptor, the name.
void undo(Fence *f, bool unlink_name) {
    if (f->map) munmap(f->map, kPage);
    f->map = nullptr;
    if (f->fd >= 0) close(f->fd);
    f->fd = -1;
    if (unlink_name) shm_unlink(f->name);
}

// The object of a handle through /proc/<pid>/fd/<fd>: a descriptor, or -1
// with `why` saying what went wrong. The link is stat()ed before it is
// opened, so that a descriptor that is no page-sized regular file of the
// kernel's shared memory (a reused number: a socket, a device, a FIFO, a
// file on disk) is never opened.
int open_by_proc(const HandleFields &h, char *path, size_t path_size, char *why,
                 size_t why_size) {
    std::snprintf(path, path_size, "/proc/%d/fd/%d", static_cast<int>(h.pid),
                  static_cast<int>(h.fd));
    struct stat sb, fsb;
    if (stat(path, &sb) != 0) {
        const int e = errno;
        char dir[32];
        std::snprintf(dir, sizeof dir, "/proc/%d", static_cast<int>(h.pid));
        if (e == ENOENT && access(dir, F_OK) != 0)
            std::snprintf(why, why_size, "no process %d here", static_cast<int>(h.pid));
        else
            std::snprintf(why, why_size, "%s", std::strerror(e));
        return -1;
    }
    struct statfs fs;  // shm objects and memfds alike are on tmpfs
    if (!S_ISREG(sb.st_mode) || sb.st_size != static_cast<off_t>(kPage) ||
        statfs(path, &fs) != 0 || fs.f_type != TMPFS_MAGIC) {
        std::snprintf(why, why_size, "not the fence's page (a reused descriptor)");
        return -1;
    }
    const int fd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        std::snprintf(why, why_size, "%s", std::strerror(errno));
        return -1;
    }
    if (fstat(fd, &fsb) != 0 || fsb.st_dev != sb.st_dev || fsb.st_ino != sb.st_ino) {
        close(fd);
        std::snprintf(why, why_size, "not the fence's page (a reused descriptor)");
        return -1;
    }
    return fd;
}

// The object an open found, descriptor fd (kept in f->fd from here on):
// a page-sized object, mapped.
evx_status_t map_opened(const char *fn, Fence *f, int fd) {
    f->fd = fd;
    struct stat sb;
    if (fstat(fd, &sb) != 0 || sb.st_size != static_cast<off_t>(kPage))
        return fail(EVX_ERROR_INVALID_VALUE, "%s: %s is not a fence's shared object", fn, f->name);
    return map_page(fn, f, fd);
}

// A handle of evx 1.0 (version 1): the page's magic, then the name of the
// object in /dev/shm, which is the only way to it. The page's layout is the
// same (its nonce is 0); the maker's pid in the page tells a handle opened
// in its own process.
evx_status_t open_v1(const char *fn, Fence *f, const unsigned char *handle) {
    std::memcpy(f->name, handle + sizeof kMagic, sizeof f->name);
    if (f->name[0] != '/' || std::memchr(f->name, '\0', sizeof f->name) == nullptr)
        return fail(EVX_ERROR_INVALID_VALUE,
                    "%s: the handle is not one that evx_fence_get_ipc_handle() made", fn);
    f->named = true;
    const int fd = shm_open(f->name, O_RDWR, 0);
    if (fd < 0)
        return fail(EVX_ERROR_INVALID_VALUE,
                    "%s: the shared object %s of an evx 1.0 fence handle cannot be opened (%s): "
                    "its fence was destroyed, or /dev/shm is not shared with the exporting "
                    "process",
                    fn, f->name, std::strerror(errno));
    evx_status_t st = map_opened(fn, f, fd);
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
        f->maker_pid = w->owner_pid;
        f->nonce = __atomic_load_n(&w->nonce, __ATOMIC_RELAXED);
    }
    if (!st) st = register_page(fn, f);
    if (st) undo(f, false);
    return st;
}

}  // namespace

evx_status_t fence_ipc_create(const char *fn, Fence *f, uint64_t initial) {
    const int32_t self = static_cast<int32_t>(getpid());
    int fd = -1, shm_errno = 0;
    // A name taken (a nonce drawn twice) draws another.
    for (int tries = 0; fd < 0 && tries < 4; ++tries) {
        f->nonce = new_nonce();
        name_of(f->name, self, f->nonce);
        fd = shm_open(f->name, O_CREAT | O_EXCL | O_RDWR, 0600);
        shm_errno = fd < 0 ? errno : 0;
        if (fd < 0 && shm_errno != EEXIST) break;
    }
    f->maker_pid = self;
    f->named = fd >= 0;
    if (fd < 0) {
        // No usable /dev/shm: an anonymous tmpfs file, which peers reach by
        // /proc only. Sealed at one page, so that no peer can shrink it
        // under the others' mappings (a store past the end is SIGBUS).
        char shm_name[sizeof f->name];
        std::memcpy(shm_name, f->name, sizeof shm_name);
        std::snprintf(f->name, sizeof f->name, "memfd:evx-fence-%d-%016llx",
                      static_cast<int>(self), static_cast<unsigned long long>(f->nonce));
        fd = memfd_create(f->name + 6, MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0)
            return fail(EVX_ERROR_OPERATING_SYSTEM,
                        "%s: an interprocess fence needs a writable /dev/shm or memfd_create: "
                        "shm_open(\"%s\"): %s; memfd_create: %s",
                        fn, shm_name, std::strerror(shm_errno), std::strerror(errno));
    }
    f->fd = fd;
    evx_status_t st = 0;
    if (ftruncate(fd, kPage) != 0)
        st = fail(EVX_ERROR_OUT_OF_MEMORY, "%s: ftruncate of the fence's shared object %s: %s", fn,
                  f->name, std::strerror(errno));
    // Sealing only guards against a peer's mistake: a kernel that cannot
    // seal still gives a working page.
    if (!st && !f->named) fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
    if (!st) st = map_page(fn, f, fd);
    if (!st) {
        FenceWord *w = static_cast<FenceWord *>(f->map);
        w->value = w->last = initial;
        w->owner_pid = self;
        w->nonce = f->nonce;
        std::memcpy(w->magic, kMagic, sizeof kMagic);
        st = register_page(fn, f);
    }
    if (st) {
        undo(f, f->named);
        return st;
    }
    remember(f);
    return 0;
}

evx_status_t fence_ipc_open(const char *fn, Fence *f, const unsigned char *handle, size_t size) {
    static_assert(EVX_IPC_FENCE_HANDLE_SIZE == 64, "handle layout");
    (void)size;
    if (std::memcmp(handle, kMagic, sizeof kMagic) == 0) {
        const evx_status_t st = open_v1(fn, f, handle);
        if (!st) remember(f);
        return st;
    }
    if (std::memcmp(handle, kHandleMagic, sizeof kHandleMagic) != 0)
        return fail(EVX_ERROR_INVALID_VALUE,
                    "%s: the handle is not one that evx_fence_get_ipc_handle() made", fn);
    if (handle[7] != kVersion)
        return fail(EVX_ERROR_INVALID_VALUE,
                    "%s: the handle is of version %u; this evx reads version %u only: export and "
                    "open it with the same evx",
                    fn, handle[7], kVersion);
    HandleFields h;
    h.flags = handle[8];
    std::memcpy(&h.fd, handle + 12, 4);
    std::memcpy(&h.pid, handle + 16, 4);
    std::memcpy(&h.maker, handle + 20, 4);
    std::memcpy(&h.nonce, handle + 24, 8);
    bool zeros = handle[9] == 0 && handle[10] == 0 && handle[11] == 0;
    for (size_t i = 32; i < EVX_IPC_FENCE_HANDLE_SIZE; ++i) zeros = zeros && handle[i] == 0;
    if (!zeros || (h.flags & ~kNamed) != 0 || h.fd < 0 || h.pid <= 0 || h.maker <= 0 ||
        h.nonce == 0)
        return fail(EVX_ERROR_INVALID_VALUE,
                    "%s: the handle is not one that evx_fence_get_ipc_handle() made", fn);
    if (exported_here(h.nonce, h.pid, h.fd))
        return fail(EVX_ERROR_INVALID_CONTEXT,
                    "%s: the handle was exported by this same process (pid %d): use the "
                    "fence itself (as the driver, evx opens an IPC handle only in another "
                    "process)",
                    fn, static_cast<int>(getpid()));
    f->nonce = h.nonce;
    f->maker_pid = h.maker;
    f->named = h.flags & kNamed;
    name_of(f->name, h.maker, h.nonce);
    // 1. By name, in this process's /dev/shm.
    char shm_why[64] = "the fence has no name (its maker had no /dev/shm)";
    int fd = -1;
    if (f->named) {
        fd = shm_open(f->name, O_RDWR, 0);
        if (fd < 0) std::snprintf(shm_why, sizeof shm_why, "%s", std::strerror(errno));
    } else {
        std::snprintf(f->name, sizeof f->name, "memfd:evx-fence-%d-%016llx",
                      static_cast<int>(h.maker), static_cast<unsigned long long>(h.nonce));
    }
    // 2. By the exporter's descriptor, in this PID namespace.
    if (fd < 0) {
        char path[48], proc_why[64];
        fd = open_by_proc(h, path, sizeof path, proc_why, sizeof proc_why);
        if (fd < 0)
            return fail(EVX_ERROR_INVALID_VALUE,
                        "%s: cannot open fence %s: by name: %s; by %s: %s. The fence was "
                        "destroyed or its process exited, or the processes share neither "
                        "/dev/shm (docker run --ipc=host or --ipc=container:NAME) nor the PID "
                        "namespace (--pid=host or --pid=container:NAME, a pod's "
                        "shareProcessNamespace; same user)",
                        fn, f->name, shm_why, path, proc_why);
    }
    evx_status_t st = map_opened(fn, f, fd);
    if (!st) {
        const FenceWord *w = static_cast<const FenceWord *>(f->map);
        if (std::memcmp(w->magic, kMagic, sizeof kMagic) != 0 ||
            __atomic_load_n(&w->nonce, __ATOMIC_RELAXED) != h.nonce)
            st = fail(EVX_ERROR_INVALID_VALUE,
                      "%s: the object the handle leads to (descriptor %d of process %d) is not "
                      "the page of fence %s: a reused descriptor, or a forged handle",
                      fn, static_cast<int>(h.fd), static_cast<int>(h.pid), f->name);
    }
    if (!st) st = register_page(fn, f);
    if (st) {
        undo(f, false);
        return st;
    }
    remember(f);
    return 0;
}

void fence_ipc_handle(const Fence *f, unsigned char *out, size_t size) {
    std::memset(out, 0, size);
    std::memcpy(out, kHandleMagic, sizeof kHandleMagic);
    out[7] = kVersion;
    out[8] = f->named ? kNamed : 0;
    const int32_t fd = f->fd, pid = static_cast<int32_t>(getpid()), maker = f->maker_pid;
    std::memcpy(out + 12, &fd, 4);
    std::memcpy(out + 16, &pid, 4);
    std::memcpy(out + 20, &maker, 4);
    std::memcpy(out + 24, &f->nonce, 8);
}

void fence_ipc_release(Fence *f) {
    if (!f->opened && f->named) shm_unlink(f->name);
    forget(f);
    close(f->fd);  // the handle's /proc path opens no more
    f->fd = -1;
    // Used: the GPU may reach it; the reclaimer hands it over later. The
    // driver's unregister waits for the device: only a trim makes it.
    if (!f->used.load(std::memory_order_acquire)) fence_keep_for_trim(f->device, f->map, true);
}

evx_status_t fence_ipc_export_fd(const char *fn, const Fence *f, int *out) {
    const int fd = fcntl(f->fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
        return fail(EVX_ERROR_OPERATING_SYSTEM, "%s: duplicating the descriptor of fence %s: %s",
                    fn, f->name, std::strerror(errno));
    *out = fd;
    return 0;
}

namespace {

// Whether a descriptor given to evx_device_import_fence_fd() is a fence's
// page: a page-sized regular file of the kernel's shared memory (shm
// objects and memfds alike are on tmpfs). Checked before it is mapped.
evx_status_t check_fd(const char *fn, int fd) {
    struct stat sb;
    struct statfs fs;
    if (fstat(fd, &sb) != 0)
        return fail(EVX_ERROR_INVALID_VALUE, "%s: fd %d: %s", fn, fd, std::strerror(errno));
    if (!S_ISREG(sb.st_mode) || sb.st_size != static_cast<off_t>(kPage) || fstatfs(fd, &fs) != 0 ||
        fs.f_type != TMPFS_MAGIC)
        return fail(EVX_ERROR_INVALID_VALUE,
                    "%s: fd %d is not a fence's page (a page-sized shared-memory file that "
                    "evx_fence_export_fd() gave)",
                    fn, fd);
    return 0;
}

}  // namespace

evx_status_t fence_ipc_import(const char *fn, Fence *f, int fd) {
    evx_status_t st = check_fd(fn, fd);
    if (st) return st;
    const int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (own < 0)
        return fail(EVX_ERROR_OPERATING_SYSTEM, "%s: duplicating fd %d: %s", fn, fd,
                    std::strerror(errno));
    std::snprintf(f->name, sizeof f->name, "fd %d", fd);
    st = map_opened(fn, f, own);
    if (!st) {
        const FenceWord *w = static_cast<const FenceWord *>(f->map);
        f->nonce = __atomic_load_n(&w->nonce, __ATOMIC_RELAXED);
        f->maker_pid = w->owner_pid;
        if (std::memcmp(w->magic, kMagic, sizeof kMagic) != 0 || f->nonce == 0)
            st = fail(EVX_ERROR_INVALID_VALUE,
                      "%s: fd %d is not a fence's page (no evx fence's mark in it)", fn, fd);
        else if (exported_here(f->nonce, 0, -1))
            st = fail(EVX_ERROR_INVALID_CONTEXT,
                      "%s: fd %d is the page of a fence this process made: use the fence itself "
                      "(as the driver, evx opens an IPC fence only in another process)",
                      fn, fd);
    }
    if (!st) {
        // Named for messages only: a re-exported handle reaches it by /proc.
        std::snprintf(f->name, sizeof f->name, "fd:evx-fence-%d-%016llx",
                      static_cast<int>(f->maker_pid), static_cast<unsigned long long>(f->nonce));
        st = register_page(fn, f);
    }
    if (st) {
        undo(f, false);
        return st;
    }
    remember(f);
    return 0;
}

}  // namespace evx
