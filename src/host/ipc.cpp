// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// IPC events across processes: cuIpcGetEventHandle, cuIpcOpenEventHandle.
//
// An event made with CU_EVENT_INTERPROCESS keeps its state in a POSIX
// shared-memory object (shm_open) instead of its Event: the records issued,
// the latest one that completed, and a ring of completed records. Any
// process that maps it (the maker, or one that opened its handle) records
// it, queries it and waits for it through that object, with atomics that
// are address-free, so the processes see each other's records and
// completions. A waiter blocks on a futex word of the object (FUTEX_WAIT
// without the private flag works across processes), woken by every
// completion, with a timeout so that a peer that died never hangs it.
//
// The handle (64 bytes) holds a magic and the object's name. The maker
// unlinks the name when its event is destroyed; mappings made before stay
// valid. A handle opened in the process that made it is refused with
// CUDA_ERROR_INVALID_CONTEXT, as the driver does.
//
// Limits: a wait is exact while fewer than kRing records of one event are in
// flight; a process that ends without running its exit handlers (a crash,
// _exit) leaves the names of its IPC events in /dev/shm.
#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>

#include "api.hpp"
#include "state.hpp"

namespace evxh {

namespace {

constexpr char kMagic[8] = {'e', 'v', 'x', 'h', 'i', 'p', 'c', '1'};
constexpr std::size_t kNameMax = CU_IPC_HANDLE_SIZE - sizeof kMagic;
constexpr std::uint64_t kRing = 256;

// The shared object. Plain integers, used only through __atomic builtins.
struct Shared {
    char magic[8];
    std::int32_t owner_pid;  // the process that made the event
    std::uint32_t wake;      // futex word: bumped on every completion
    std::uint64_t issued;    // records made, in any process
    std::uint64_t done;      // the latest record, once it completed
    std::uint64_t ring[kRing];  // ring[g % kRing]: highest completed g
};

std::uint64_t load(const std::uint64_t *p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }

void store_max(std::uint64_t *p, std::uint64_t v) {
    std::uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (cur < v &&
           !__atomic_compare_exchange_n(p, &cur, v, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
    }
}

long futex(std::uint32_t *word, int op, std::uint32_t val, const timespec *timeout) {
    return syscall(SYS_futex, word, op, val, timeout, nullptr, 0);
}

Shared *map(int fd) {
    void *p = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    return p == MAP_FAILED ? nullptr : static_cast<Shared *>(p);
}

}  // namespace

struct IpcLink {
    Shared *rec = nullptr;
    char name[kNameMax] = {};
    bool owner = false;
    IpcLink *prev = nullptr, *next = nullptr;  // the owned links (owned_links())
    IpcLink() = default;
    IpcLink(const IpcLink &) = delete;
    IpcLink &operator=(const IpcLink &) = delete;
    ~IpcLink();
};

namespace {

// The links whose names this process made, so that a process that exits
// without destroying its IPC events still removes their names, as the
// driver's objects go with the process. Never destroyed (see state.hpp).
struct OwnedLinks {
    std::mutex mu;
    IpcLink *head = nullptr;
};

OwnedLinks &owned_links() {
    static OwnedLinks *o = new OwnedLinks;
    return *o;
}

__attribute__((destructor)) void unlink_owned_at_exit() {
    OwnedLinks &o = owned_links();
    std::lock_guard<std::mutex> lk(o.mu);
    for (IpcLink *l = o.head; l; l = l->next) shm_unlink(l->name);
}

}  // namespace

IpcLink::~IpcLink() {
    if (rec) munmap(rec, sizeof(Shared));
    if (!owner) return;
    shm_unlink(name);
    OwnedLinks &o = owned_links();
    std::lock_guard<std::mutex> lk(o.mu);
    (prev ? prev->next : o.head) = next;
    if (next) next->prev = prev;
}

CUresult ipc_attach(Event &ev) {
    static std::atomic<std::uint64_t> counter{0};
    auto link = std::make_shared<IpcLink>();
    std::snprintf(link->name, sizeof link->name, "/evxh-%d-%llx-%llx", static_cast<int>(getpid()),
                  static_cast<unsigned long long>(counter.fetch_add(1) + 1),
                  static_cast<unsigned long long>(now_ns() & 0xffffffffu));
    const int fd = shm_open(link->name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
    link->owner = true;  // unlinked with the link from now on
    {
        OwnedLinks &o = owned_links();
        std::lock_guard<std::mutex> lk(o.mu);
        link->next = o.head;
        if (o.head) o.head->prev = link.get();
        o.head = link.get();
    }
    if (ftruncate(fd, sizeof(Shared)) != 0) {
        close(fd);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    link->rec = map(fd);
    close(fd);
    if (!link->rec) return CUDA_ERROR_OUT_OF_MEMORY;
    link->rec->owner_pid = static_cast<std::int32_t>(getpid());
    std::memcpy(link->rec->magic, kMagic, sizeof kMagic);  // zero-filled otherwise
    ev.ipc = std::move(link);
    return CUDA_SUCCESS;
}

std::uint64_t ipc_issue(IpcLink &l) {
    return __atomic_add_fetch(&l.rec->issued, 1, __ATOMIC_SEQ_CST);
}

void ipc_complete(IpcLink &l, std::uint64_t gen) {
    Shared *m = l.rec;
    store_max(&m->ring[gen % kRing], gen);
    if (load(&m->issued) == gen) store_max(&m->done, gen);  // not re-recorded since
    __atomic_add_fetch(&m->wake, 1, __ATOMIC_SEQ_CST);
    futex(&m->wake, FUTEX_WAKE, INT_MAX, nullptr);
}

std::uint64_t ipc_pending(IpcLink &l) {
    const std::uint64_t issued = load(&l.rec->issued);
    return issued == 0 || load(&l.rec->done) >= issued ? 0 : issued;
}

void ipc_wait(IpcLink &l, std::uint64_t gen) {
    Shared *m = l.rec;
    for (;;) {
        const std::uint32_t w = __atomic_load_n(&m->wake, __ATOMIC_SEQ_CST);
        if (load(&m->ring[gen % kRing]) >= gen) return;
        const timespec nap{0, 50 * 1000 * 1000};
        futex(&m->wake, FUTEX_WAIT, w, &nap);
    }
}

CUresult ipc_get_event_handle(CUipcEventHandle *handle, CUevent e) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!e) return CUDA_ERROR_INVALID_VALUE;  // a NULL event (as an H100 answers)
    std::shared_ptr<Event> ev = find_event(e);
    if (!ev || !ev->ipc) return CUDA_ERROR_INVALID_HANDLE;  // not INTERPROCESS: as the driver
    if (!handle) return CUDA_ERROR_INVALID_VALUE;
    std::memset(handle->reserved, 0, sizeof handle->reserved);
    std::memcpy(handle->reserved, kMagic, sizeof kMagic);
    std::memcpy(handle->reserved + sizeof kMagic, ev->ipc->name, kNameMax);
    return CUDA_SUCCESS;
}

CUresult ipc_open_event_handle(CUevent *ph, CUipcEventHandle handle) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = CUDA_SUCCESS;
    Context *c = require_context(&r);  // opened into the current context
    if (!c) return r;
    if (!ph) return CUDA_ERROR_INVALID_VALUE;
    auto link = std::make_shared<IpcLink>();
    std::memcpy(link->name, handle.reserved + sizeof kMagic, kNameMax);
    if (std::memcmp(handle.reserved, kMagic, sizeof kMagic) != 0 || link->name[0] != '/' ||
        std::memchr(link->name, '\0', kNameMax) == nullptr)
        return CUDA_ERROR_INVALID_VALUE;  // not a handle of this emulation
    const int fd = shm_open(link->name, O_RDWR, 0);
    if (fd < 0) return CUDA_ERROR_INVALID_VALUE;  // its event was destroyed
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size != static_cast<off_t>(sizeof(Shared))) {
        close(fd);
        return CUDA_ERROR_INVALID_VALUE;
    }
    link->rec = map(fd);
    close(fd);
    if (!link->rec) return CUDA_ERROR_OUT_OF_MEMORY;
    if (link->rec->owner_pid == static_cast<std::int32_t>(getpid()))
        return CUDA_ERROR_INVALID_CONTEXT;  // the driver's answer in the exporting process
    // As the driver: an opened event behaves as one made with DISABLE_TIMING.
    auto ev = std::make_shared<Event>(c, CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS);
    ev->ipc = std::move(link);
    *ph = reinterpret_cast<CUevent>(global().events.add(std::move(ev)));
    return CUDA_SUCCESS;
}

}  // namespace evxh
