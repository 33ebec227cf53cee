// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Pinned host memory and the 64-bit stream memory operations:
// cuMemHostAlloc, cuMemFreeHost, cuMemHostRegister, cuMemHostUnregister,
// cuMemHostGetDevicePointer, cuStreamWriteValue64, cuStreamWaitValue64.
//
// The emulated device shares the host's address space (unified
// addressing): a device pointer of pinned memory is its host address. The
// ranges allocated or registered are kept, so that a memory operation on an
// address outside them is refused (CUDA_ERROR_INVALID_VALUE) instead of
// touching memory the emulation does not own. A write is an atomic store
// when the stream's worker reaches it; a wait blocks the worker until its
// condition holds, re-reading the word at growing intervals (up to 100 us),
// as the GPU's front end re-reads a semaphore: the word may be written by
// anyone, another process through a shared mapping included, with no call
// the emulation could hook. The conditions are the driver's: GEQ is the
// cyclic (int64_t)(*addr - value) >= 0.
//
// cuMemFreeHost and cuMemHostUnregister wait, as the driver's do (an H200,
// driver 580: both returned only once a host function that held a stream
// of the context had returned), until the work queued so far on every
// stream of the memory's context has completed; of every live context for
// portable memory, which every context maps (docs/host-emulation.md says
// why); while they wait, every other entry point waits at its start
// (host_free_gate()), as every driver call of the process did behind a
// waiting cuMemHostUnregister on the H200. cuMemHostAlloc and
// cuMemHostRegister never wait.
#include <condition_variable>
#include <ctime>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "api.hpp"
#include "state.hpp"

namespace evxh {

namespace {

struct Range {
    std::size_t bytes;
    bool allocated;  // cuMemHostAlloc (else cuMemHostRegister)
    Context *ctx;    // current when it was allocated or registered
    bool portable;   // mapped in every context
};

struct Memory {
    std::mutex mu;
    std::map<std::uintptr_t, Range> ranges;  // by start address
};

// Never destroyed, as global(): workers may still look at it at exit.
Memory &memory() {
    static Memory *m = new Memory;
    return *m;
}

// The range holding [p, p + bytes), if any; caller holds mu.
const std::pair<const std::uintptr_t, Range> *find_range(Memory &m, std::uintptr_t p,
                                                          std::size_t bytes) {
    auto it = m.ranges.upper_bound(p);
    if (it == m.ranges.begin()) return nullptr;
    --it;
    if (p - it->first + bytes > it->second.bytes) return nullptr;
    return &*it;
}

bool overlaps(Memory &m, std::uintptr_t p, std::size_t bytes) {
    auto it = m.ranges.lower_bound(p);
    if (it != m.ranges.end() && it->first < p + bytes) return true;
    if (it == m.ranges.begin()) return false;
    --it;
    return it->first + it->second.bytes > p;
}

constexpr unsigned kAllocFlags =
    CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
constexpr unsigned kRegisterFlags = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                                    CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
constexpr unsigned kWaitFlags = CU_STREAM_WAIT_VALUE_GEQ | CU_STREAM_WAIT_VALUE_EQ |
                                CU_STREAM_WAIT_VALUE_AND | CU_STREAM_WAIT_VALUE_NOR;

bool holds(std::uint64_t word, std::uint64_t value, unsigned flags) {
    switch (flags & 3u) {
    case CU_STREAM_WAIT_VALUE_GEQ: return static_cast<std::int64_t>(word - value) >= 0;
    case CU_STREAM_WAIT_VALUE_EQ: return word == value;
    case CU_STREAM_WAIT_VALUE_AND: return (word & value) != 0;
    default: return ~(word | value) != 0;  // NOR
    }
}

// A memory operation's address: 8-byte aligned, inside pinned memory.
CUresult check_word(CUdeviceptr addr) {
    if (addr == 0 || (addr & 7u) != 0) return CUDA_ERROR_INVALID_VALUE;
    Memory &m = memory();
    std::lock_guard<std::mutex> lk(m.mu);
    return find_range(m, static_cast<std::uintptr_t>(addr), 8) ? CUDA_SUCCESS
                                                               : CUDA_ERROR_INVALID_VALUE;
}

// Waits until the work queued so far that may reach a range has completed
// (the caller holds no lock): that of every stream of its context, or of
// every live context for portable memory.
void wait_for_users(Context *ctx, bool portable) {
    std::vector<Dep> points;
    if (portable) {
        for (Context *c : live_contexts()) {
            std::vector<Dep> p = pending_points(c, true);
            points.insert(points.end(), p.begin(), p.end());
        }
    } else {
        points = pending_points(ctx, true);
    }
    for (const Dep &d : points) wait_reached(d);
}

// Frees or unregisters the range at p (allocated: which kind it must be)
// once the work that may reach it has completed; `missing` when p starts
// no such range.
CUresult drop_range(void *p, bool allocated, CUresult missing) {
    Memory &m = memory();
    const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(p);
    Range r{};
    {
        std::lock_guard<std::mutex> lk(m.mu);
        auto it = m.ranges.find(a);
        if (it == m.ranges.end() || it->second.allocated != allocated) return missing;
        r = it->second;
    }
    wait_for_users(r.ctx, r.portable);
    std::lock_guard<std::mutex> lk(m.mu);
    auto it = m.ranges.find(a);  // a racing free took it meanwhile
    if (it == m.ranges.end() || it->second.allocated != allocated) return missing;
    m.ranges.erase(it);
    return CUDA_SUCCESS;
}

CUresult queue_memop(CUstream h, Item::Kind kind, CUdeviceptr addr, cuuint64_t value,
                     unsigned flags, bool ptsz) {
    std::shared_ptr<Stream> s;
    CUresult r = resolve_stream(h, ptsz, &s);
    if (r != CUDA_SUCCESS) return r;
    // The capture answers come before the address's: IMPLICIT on the legacy
    // stream, and a capture takes the operation as a node (or refuses it as
    // INVALIDATED) with no look at its address (as an H100 answers); the
    // address is checked when a launch of the graph queues it.
    if ((r = capture_legacy_check(*s)) != CUDA_SUCCESS) return r;
    Item it;
    it.kind = kind;
    it.addr = reinterpret_cast<std::uint64_t *>(static_cast<std::uintptr_t>(addr));
    it.value = value;
    it.flags = flags;
    bool taken = false;  // captured: a node of the graph, not queued now
    if ((r = capture_memop(s, it, &taken)) != CUDA_SUCCESS || taken) return r;
    if ((r = check_word(addr)) != CUDA_SUCCESS) return r;
    std::uint64_t seq = 0;
    return submit(s, std::move(it), &seq);
}

}  // namespace

CUresult memop_word_check(const Item &it) {
    return check_word(static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(it.addr)));
}

bool stream_mem_ops_off() {
    const char *v = std::getenv("EVX_HOST_NO_STREAM_MEM_OPS");
    return v && *v && std::strcmp(v, "0") != 0;
}

long long pinned_ranges() {
    Memory &m = memory();
    std::lock_guard<std::mutex> lk(m.mu);
    return static_cast<long long>(m.ranges.size());
}

void run_write_value(const Item &it) { __atomic_store_n(it.addr, it.value, __ATOMIC_SEQ_CST); }

void run_wait_value(const Item &it) {
    long nap_ns = 1000;
    while (!holds(__atomic_load_n(it.addr, __ATOMIC_SEQ_CST), it.value, it.flags)) {
        const timespec ts{0, nap_ns};
        nanosleep(&ts, nullptr);
        if (nap_ns < 100 * 1000) nap_ns *= 2;
    }
}

CUresult mem_host_alloc(void **pp, std::size_t bytes, unsigned flags) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = CUDA_SUCCESS;
    Context *ctx = require_context(&r);
    if (!ctx) return r;
    if (!pp || bytes == 0 || (flags & ~kAllocFlags) != 0) return CUDA_ERROR_INVALID_VALUE;
    if ((r = capture_alloc_call()) != CUDA_SUCCESS) return r;
    const std::size_t rounded = (bytes + 4095) & ~static_cast<std::size_t>(4095);
    void *p = std::aligned_alloc(4096, rounded);
    if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
    std::memset(p, 0, rounded);
    Memory &m = memory();
    {
        std::lock_guard<std::mutex> lk(m.mu);
        m.ranges.emplace(reinterpret_cast<std::uintptr_t>(p),
                         Range{bytes, true, ctx, (flags & CU_MEMHOSTALLOC_PORTABLE) != 0});
    }
    *pp = p;
    return CUDA_SUCCESS;
}

std::atomic<int> g_host_frees{0};

namespace {

// Never destroyed: a detached thread of the program may still be in a free
// while the process exits.
struct Gate {
    std::mutex mu;
    std::condition_variable cv;
};
Gate &gate() {
    static Gate *g = new Gate;
    return *g;
}
thread_local bool t_in_host_free = false;

// The hold of a waiting free on every other entry point (host_free_gate()).
class HostFreeHold {
public:
    HostFreeHold() {
        t_in_host_free = true;
        g_host_frees.fetch_add(1, std::memory_order_acq_rel);
    }
    ~HostFreeHold() {
        Gate &g = gate();
        {
            std::lock_guard<std::mutex> lk(g.mu);
            g_host_frees.fetch_sub(1, std::memory_order_acq_rel);
        }
        g.cv.notify_all();
        t_in_host_free = false;
    }
    HostFreeHold(const HostFreeHold &) = delete;
    HostFreeHold &operator=(const HostFreeHold &) = delete;
};

}  // namespace

void host_free_gate_wait() {
    if (t_in_host_free) return;
    Gate &g = gate();
    std::unique_lock<std::mutex> lk(g.mu);
    g.cv.wait(lk, [] { return g_host_frees.load(std::memory_order_acquire) == 0; });
}

CUresult mem_free_host(void *p) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    const HostFreeHold hold;
    const CUresult r = drop_range(p, true, CUDA_ERROR_INVALID_VALUE);
    if (r == CUDA_SUCCESS) std::free(p);
    return r;
}

CUresult mem_host_get_device_pointer(CUdeviceptr *dptr, void *p, unsigned flags) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = CUDA_SUCCESS;
    if (!require_context(&r)) return r;
    if (!dptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    Memory &m = memory();
    std::lock_guard<std::mutex> lk(m.mu);
    if (!find_range(m, reinterpret_cast<std::uintptr_t>(p), 1)) return CUDA_ERROR_INVALID_VALUE;
    *dptr = static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(p));
    return CUDA_SUCCESS;
}

CUresult mem_host_register(void *p, std::size_t bytes, unsigned flags) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = CUDA_SUCCESS;
    Context *ctx = require_context(&r);
    if (!ctx) return r;
    if (!p || bytes == 0 || (flags & ~kRegisterFlags) != 0) return CUDA_ERROR_INVALID_VALUE;
    Memory &m = memory();
    std::lock_guard<std::mutex> lk(m.mu);
    const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(p);
    if (overlaps(m, a, bytes)) return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    m.ranges.emplace(a, Range{bytes, false, ctx, (flags & CU_MEMHOSTREGISTER_PORTABLE) != 0});
    return CUDA_SUCCESS;
}

CUresult mem_host_unregister(void *p) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    const HostFreeHold hold;
    return drop_range(p, false, CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
}

CUresult stream_write_value64(CUstream h, CUdeviceptr addr, cuuint64_t value, unsigned flags,
                              bool ptsz) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (stream_mem_ops_off()) return CUDA_ERROR_NOT_SUPPORTED;
    if ((flags & ~static_cast<unsigned>(CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER)) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    return queue_memop(h, Item::Kind::WriteValue, addr, value, flags, ptsz);
}

CUresult stream_wait_value64(CUstream h, CUdeviceptr addr, cuuint64_t value, unsigned flags,
                             bool ptsz) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (stream_mem_ops_off()) return CUDA_ERROR_NOT_SUPPORTED;
    if ((flags & ~(kWaitFlags | static_cast<unsigned>(CU_STREAM_WAIT_VALUE_FLUSH))) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    // No remote writes to flush: CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES is 0.
    if (flags & CU_STREAM_WAIT_VALUE_FLUSH) return CUDA_ERROR_NOT_SUPPORTED;
    return queue_memop(h, Item::Kind::WaitValue, addr, value, flags, ptsz);
}

}  // namespace evxh
