// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Fences (include/evx/fence.h): a 64-bit counter in pinned host memory
// mapped to the device, signalled by cuStreamWriteValue64 and waited for by
// cuStreamWaitValue64 (GEQ) on streams, and by plain loads, stores and a
// futex on the host. See docs/design.md, "Fences".
//
// The rule that values grow is kept by a compare-and-swap on the last value
// signalled or queued: for an IPC fence in the shared word itself, so that
// it holds across the processes that share it; for a fence of one process
// in its Fence (fence.hpp), with plain loads and stores while one thread
// alone signals it (claim_value()). A host signal that would overtake a signal
// queued and not yet run is refused: that signal would set the counter back
// when it ran. A host signal stores the counter after its claim, as an
// atomic maximum (or a plain store while its claim holds off every other
// claimer), so that a larger signal claimed after it and stored before it
// is never overwritten. The protocol, and the Promela model that checks
// it, are in docs/fences.md ("What is atomic") and models/fence.pml.
#include "fence.hpp"

#include <linux/futex.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <climits>
#include <cstdio>
#include <cstring>
#include <new>

#include "capture.hpp"
#include "driver.hpp"
#include "error.hpp"
#include "evx/fence.h"
#include "handle.hpp"
#include "scope.hpp"
#include "stream_object.hpp"
#include "thread.hpp"

static_assert(sizeof(evx_ipc_fence_handle_t) == EVX_IPC_FENCE_HANDLE_SIZE,
              "evx_ipc_fence_handle_t is EVX_IPC_FENCE_HANDLE_SIZE bytes");

// The debug hook (docs/fences.md, "The window, for tests"): where the
// program defines it (exported, C linkage), every host signal calls it
// between its claim and its store of the counter, so that a test can hold
// a thread there as a debugger would. Weak and undefined in every other
// program: a load of its address and a branch not taken. Not part of the
// API; its signature may change.
extern "C" __attribute__((weak, visibility("default"))) void evx_debug_fence_window(
    evx_fence_t fence, uint64_t value);

namespace evx {

namespace {

evx_status_t no_entry(const char *fn, const char *call) {
    return fail(EVX_ERROR_NOT_SUPPORTED, "%s: the driver (%s) has no %s, which fences need", fn,
                g_driver.path, call);
}

// Whether the driver and device can do fences; NOT_SUPPORTED naming the
// entry point or attribute that is missing. Asked at every creation (a few
// attribute reads; fences are made rarely), so a driver that changes its
// answer is seen.
// use: what needs it, for the message ("fences need" by default).
evx_status_t check_support(const char *fn, int device, const char *use = nullptr) {
    const DriverApi &d = cu();
    if (!d.cuDeviceGetAttribute) return no_entry(fn, "cuDeviceGetAttribute");
    if (!d.cuMemHostAlloc) return no_entry(fn, "cuMemHostAlloc");
    if (!d.cuMemFreeHost) return no_entry(fn, "cuMemFreeHost");
    if (!d.cuMemHostGetDevicePointer) return no_entry(fn, "cuMemHostGetDevicePointer");
    if (!d.cuMemHostRegister) return no_entry(fn, "cuMemHostRegister");
    if (!d.cuMemHostUnregister) return no_entry(fn, "cuMemHostUnregister");
    if (!d.cuStreamWriteValue64) return no_entry(fn, "cuStreamWriteValue64");
    if (!d.cuStreamWaitValue64) return no_entry(fn, "cuStreamWaitValue64");
    static const struct {
        CUdevice_attribute attr;
        const char *name;
    } kNeeded[] = {
        {CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS,
         "CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS"},
        {CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, "CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY"},
        {CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, "CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING"},
    };
    for (const auto &a : kNeeded) {
        int v = 0;
        const CUresult r = d.cuDeviceGetAttribute(&v, a.attr, g_driver.devices[device].dev);
        if (r != CUDA_SUCCESS)
            return driver_failed(r, fn, "cuDeviceGetAttribute", "%s of device %d", a.name, device);
        if (!v)
            return fail(EVX_ERROR_NOT_SUPPORTED,
                        "%s: device %d reports %s = 0: %s stream memory operations on "
                        "mapped host memory",
                        fn, device, a.name, use ? use : "fences need");
    }
    return 0;
}

// The address of f's counter for a stream of another device (cold: once
// per fence and device, then a load). Portable pinned memory (and a page
// registered PORTABLE) is mapped in every context; the driver gives each
// device's address with that device's context current.
evx_status_t foreign_address(const char *fn, const void *fence, Fence *f, int device,
                             CUdeviceptr *out) __attribute__((cold, noinline));
evx_status_t foreign_address(const char *fn, const void *fence, Fence *f, int device,
                             CUdeviceptr *out) {
    CUdeviceptr a = f->dptrs[device].load(std::memory_order_acquire);
    if (a) {
        *out = a;
        return 0;
    }
    char use[96];
    std::snprintf(use, sizeof use, "a stream of device %d cannot use fence 0x%" PRIx64
                  " of device %d, which needs", device, handle_value(fence), f->device);
    evx_status_t st = check_support(fn, device, use);
    if (st) return st;
    ContextGuard guard;
    st = guard.enter(fn, device);
    if (st) return st;
    const CUresult res = cu().cuMemHostGetDevicePointer(&a, &f->word->value, 0);
    if (res != CUDA_SUCCESS)
        return driver_failed(res, fn, "cuMemHostGetDevicePointer",
                             "fence 0x%" PRIx64 " of device %d, for device %d",
                             handle_value(fence), f->device, device);
    f->dptrs[device].store(a, std::memory_order_release);
    *out = a;
    return 0;
}

long futex(uint32_t *word, int op, uint32_t val, const timespec *timeout) {
    return syscall(SYS_futex, word, op, val, timeout, nullptr, 0);
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

int64_t mono_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

evx_status_t value_too_large(const char *fn, uint64_t value) __attribute__((cold, noinline));
evx_status_t value_too_large(const char *fn, uint64_t value) {
    return fail(EVX_ERROR_INVALID_VALUE,
                "%s: value %" PRIu64 " is above EVX_FENCE_MAX_VALUE (2^63 - 1): the GPU "
                "compares fence values cyclically",
                fn, value);
}

inline evx_status_t check_value(const char *fn, uint64_t value) {
    if (__builtin_expect(value <= EVX_FENCE_MAX_VALUE, 1)) return 0;
    return value_too_large(fn, value);
}

evx_status_t not_above(const char *fn, const void *h, uint64_t value, uint64_t last)
    __attribute__((cold, noinline));
evx_status_t not_above(const char *fn, const void *h, uint64_t value, uint64_t last) {
    return fail(EVX_ERROR_INVALID_VALUE,
                "%s: value %" PRIu64 " is not above %" PRIu64
                ", the last value signalled or queued on fence 0x%" PRIx64
                ": fence values only grow",
                fn, value, last, handle_value(h));
}

evx_status_t queued_not_run(const char *fn, const void *h, uint64_t value, uint64_t last,
                            uint64_t cur) __attribute__((cold, noinline));
evx_status_t queued_not_run(const char *fn, const void *h, uint64_t value, uint64_t last,
                            uint64_t cur) {
    return fail(EVX_ERROR_ILLEGAL_STATE,
                "%s: fence 0x%" PRIx64 " has a signal of value %" PRIu64
                " queued on a stream that has not run yet (the counter is %" PRIu64
                "): a host signal of %" PRIu64 " now would be set back when it runs",
                fn, handle_value(h), last, cur, value);
}

// `last` (Fence::last, FenceWord::last): the largest value claimed, with
// this bit set when that claim is a queued signal's (values are below
// 2^63). A host signal's claim leaves it clear.
constexpr uint64_t kQueuedBit = uint64_t{1} << 63;

// Whether `value` may be claimed over `last`. A host signal is refused
// only while the last claim is a queued signal the counter has not reached
// (the counter only grows, so that signal has not run).
inline evx_status_t check_claim(const char *fn, const void *h, const Fence *f, uint64_t value,
                                uint64_t last, bool host) {
    const uint64_t lv = last & ~kQueuedBit;
    if (__builtin_expect(value <= lv, 0)) return not_above(fn, h, value, lv);
    if (host && (last & kQueuedBit)) {
        const uint64_t cur = __atomic_load_n(&f->word->value, __ATOMIC_ACQUIRE);
        if (cur < lv) return queued_not_run(fn, h, value, lv, cur);
    }
    return 0;
}

// ThreadRecord::claim while its thread is in a plain claim's window: a
// value no claimed value is (those are at most EVX_FENCE_MAX_VALUE), and
// one store of a sign-extended immediate.
constexpr uint64_t kClaiming = ~uint64_t{0};

// Fence::claimer when every claim is a compare-and-swap.
const void *const kClaimShared = reinterpret_cast<const void *>(uintptr_t{1});

// Who claims a new fence's values: where calls publish their hazards with
// no fence (light_hazards()), the barrier that takes plain claims away
// from a thread (heavy_barrier()) is there; else no thread ever has them.
const void *first_claimer(unsigned flags) {
    return (flags & EVX_FENCE_INTERPROCESS) || !light_hazards() ? kClaimShared : nullptr;
}

// A claim of a thread that is not the fence's claimer (cold: once per
// fence and thread, until every claim is a compare-and-swap). A fence
// nobody claimed yet gets this thread as its claimer. Else this thread
// takes the plain claims away from the claimer: from now on every claim of
// every thread is a compare-and-swap. The claimer's side (plain_claim(),
// claim_value()) announces its window in its own record (claim =
// kClaiming), then loads `claimer` with a compiler barrier only; this side
// stores `claimer`, runs heavy_barrier() and then loads the claimer's
// announcement (c is its record). So either the claimer sees
// kClaimShared, or this side sees its claim under way and waits for its
// end (a few loads and stores, or a host signal's store of the counter),
// after which its store of last_local is seen. models/fence.pml.
void not_the_claimer(Fence *f, const void *c, const void *me) __attribute__((cold, noinline));
void not_the_claimer(Fence *f, const void *c, const void *me) {
    if (c == nullptr && f->claimer.compare_exchange_strong(c, me, std::memory_order_seq_cst))
        return;
    if (c == kClaimShared) return;  // another thread shared them meanwhile
    f->claimer.store(kClaimShared, std::memory_order_seq_cst);
    (void)heavy_barrier();  // registered where light_hazards(): cannot fail
    const ThreadRecord *old = static_cast<const ThreadRecord *>(c);
    while (old->claim.load(std::memory_order_acquire) == kClaiming) sched_yield();
}

// Claims `value` as the last value signalled or queued; INVALID_VALUE if it
// is not above it. A queued signal's claim is stored with kQueuedBit (the
// claim of a write that runs later); a host signal's without. host: also
// refuses while the last claim is a queued signal whose value the counter
// has not reached, and only then: after a host claim every earlier queued
// signal has run (its own claim checked so), even if that host signal has
// not stored the counter yet. *prev receives the `last` it replaced.
//
// The thread that claimed a fence of this process first claims with plain
// loads and stores, as long as no other thread claims: a compare-and-swap
// is a locked instruction, the largest cost of a signal after the driver
// call. A second thread takes that away (not_the_claimer()), once. *held
// (a host signal; else nullptr) is set when the claim was plain: the
// caller then stores the counter with a plain store and ends the claim
// after it (end_plain_claim()), so that a thread taking the claims away
// waits for that store too.
//
// The claim's window is announced in the claiming thread's own record
// (ThreadRecord::claim, kClaiming until the window ends), so that a thread
// may announce before it knows it is the claimer: the thread that takes
// the claims away waits on the claimer's record only.
inline evx_status_t claim_value(const char *fn, const void *h, Fence *f, uint64_t value,
                                uint64_t *prev, bool *held) {
    const uint64_t mine = held ? value : value | kQueuedBit;
    ThreadRecord *const me = t_record;
    for (;;) {
        const void *c = f->claimer.load(std::memory_order_relaxed);
        if (__builtin_expect(c == me, 1)) {
            // Announce, then `claimer` again: it may have become
            // kClaimShared since (never anything else).
            me->claim.store(kClaiming, std::memory_order_relaxed);
            std::atomic_signal_fence(std::memory_order_seq_cst);
            if (__builtin_expect(f->claimer.load(std::memory_order_relaxed) == me, 1)) {
                const uint64_t last = __atomic_load_n(&f->last_local, __ATOMIC_RELAXED);
                const evx_status_t st = check_claim(fn, h, f, value, last, held != nullptr);
                if (!st) __atomic_store_n(&f->last_local, mine, __ATOMIC_RELAXED);
                *prev = last;
                if (!st && held) {
                    *held = true;  // the window stays open until the counter is stored
                    return 0;
                }
                me->claim.store(0, std::memory_order_release);
                return st;
            }
            me->claim.store(0, std::memory_order_release);
            break;
        }
        if (c == kClaimShared) break;  // an IPC fence, or one two threads claimed
        not_the_claimer(f, c, me);
    }
    uint64_t *const lastp = f->last;
    // One load, then one compare-and-swap, which reloads `last` itself when
    // it fails (another signaller came in between).
    uint64_t last = __atomic_load_n(lastp, __ATOMIC_ACQUIRE);
    for (;;) {
        const evx_status_t st = check_claim(fn, h, f, value, last, held != nullptr);
        if (st) return st;
        if (__builtin_expect(__atomic_compare_exchange_n(lastp, &last, mine, false,
                                                         __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE),
                             1))
            break;
    }
    *prev = last;
    return 0;
}

// What plain_claim() did.
enum PlainClaim { kClaimed, kNotAbove, kNotPlain };

// A queued signal's claim by the fence's claimer thread (`me`, the calling
// thread's record), with plain loads and stores as in claim_value(), which
// tells the protocol: kClaimed, kNotAbove (the value is not above the last,
// or above EVX_FENCE_MAX_VALUE), or kNotPlain when this thread is not the
// claimer (claim_value() then). The `last` it replaced, or was not above,
// goes to me->claim_prev. A value above EVX_FENCE_MAX_VALUE is not above
// any `last`: the compare is signed (every `last` without kQueuedBit is
// below 2^63), so evx_fence_signal() checks the value on this path's
// refusal only (not_claimed()).
//
// The window is announced first (me->claim = kClaiming), before the one
// load of `claimer` (the handshake of not_the_claimer()), and ended by the
// store of the value to me->claim (release, after the store of
// last_local), which the signal keeps there for its failure path anyway:
// a claimed value is at most EVX_FENCE_MAX_VALUE, never kClaiming.
inline PlainClaim plain_claim(Fence *f, uint64_t value, ThreadRecord *me) {
    me->claim.store(kClaiming, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (__builtin_expect(!word_is(f->claimer, static_cast<const void *>(me)), 0)) {
        me->claim.store(0, std::memory_order_release);
        return kNotPlain;
    }
    const uint64_t last = __atomic_load_n(&f->last_local, __ATOMIC_RELAXED);
    me->claim_prev = last;
    if (__builtin_expect(static_cast<int64_t>(value) > static_cast<int64_t>(last & ~kQueuedBit),
                         1)) {
        __atomic_store_n(&f->last_local, value | kQueuedBit, __ATOMIC_RELAXED);
        me->claim.store(value, std::memory_order_release);
        return kClaimed;
    }
    me->claim.store(0, std::memory_order_release);
    return kNotAbove;
}

// The end of a host signal's plain claim (claim_value() on r): the counter
// was stored.
inline void end_plain_claim(ThreadRecord *r) { r->claim.store(0, std::memory_order_release); }

// The counter becomes at least `value`: an atomic maximum, so that a host
// signal whose store comes after a larger signal's (claimed after its own,
// stored before it) leaves the larger value. A queued write that lands
// between the load and the compare-and-swap is larger (claimed after this
// one): the compare-and-swap fails and the loop ends.
inline void raise_counter(FenceWord *w, uint64_t value) {
    uint64_t cur = __atomic_load_n(&w->value, __ATOMIC_RELAXED);
    while (cur < value && !__atomic_compare_exchange_n(&w->value, &cur, value, true,
                                                       __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
    }
}

// Gives a queued signal's claim back after the driver refused the signal
// (unless a later claim came in between: then the value stays claimed,
// which only makes the next signals stricter until a later one runs).
void unclaim_value(Fence *f, uint64_t value, uint64_t prev) {
    value |= kQueuedBit;
    __atomic_compare_exchange_n(f->last, &value, prev, false, __ATOMIC_ACQ_REL,
                                __ATOMIC_RELAXED);
}

// Never a driver free: cuMemFreeHost and cuMemHostUnregister wait for the
// device's queued work, and a destroy must not (fence_pool.cpp).
evx_status_t fence_free(ThreadRecord *, void *obj) {
    Fence *f = static_cast<Fence *>(obj);
    const bool used = f->used.load(std::memory_order_acquire);
    const bool ipc = f->flags & EVX_FENCE_INTERPROCESS;
    if (ipc) {
        fence_ipc_release(f);
    } else if (!used) {
        // Never on a stream: no GPU operation can touch it any more.
        fence_word_put(f->device, f->word);
    }
    // A used word goes to the reclaimer: queued operations may still reach
    // it; it goes back to the pool once they ran.
    if (used) fence_defer_free(f, ipc ? f->map : static_cast<void *>(f->word), ipc);
    fence_track_free(f);
    delete[] f->dptrs;
    delete f;
    return 0;
}

const FreeHookEntry kFenceFree(kFence, fence_free);

// A memory operation: the stream, the counter's address on its device, the
// value, the wait's flags (CU_STREAM_WAIT_VALUE_FLUSH or 0).
using MemOp = CUresult (*)(const Stream *, CUdeviceptr, uint64_t, unsigned);

inline CUresult write_value(const Stream *s, CUdeviceptr a, uint64_t value, unsigned) {
    return cu().cuStreamWriteValue64(s->cu, a, value, 0);
}

inline CUresult wait_value(const Stream *s, CUdeviceptr a, uint64_t value, unsigned flags) {
    return cu().cuStreamWaitValue64(s->cu, a, value, CU_STREAM_WAIT_VALUE_GEQ | flags);
}

// The failure of a signal (signal: true) or wait the driver refused.
evx_status_t memop_failed(const char *fn, evx_fence_t fence, evx_stream_t stream,
                          const Stream *s, uint64_t value, CUresult res, bool signal)
    __attribute__((cold, noinline));
evx_status_t memop_failed(const char *fn, evx_fence_t fence, evx_stream_t stream,
                          const Stream *s, uint64_t value, CUresult res, bool signal) {
    const char *call = signal ? "cuStreamWriteValue64" : "cuStreamWaitValue64";
    if (is_capture_status(res)) return capture_failed(fn, call, res, stream, s);
    if (signal)
        return driver_failed(res, fn, call,
                             "fence 0x%" PRIx64 ", stream 0x%" PRIx64 ", value %" PRIu64,
                             handle_value(fence), handle_value(stream), value);
    return driver_failed(res, fn, call, "stream 0x%" PRIx64 ", fence 0x%" PRIx64 ", value %" PRIu64,
                         handle_value(stream), handle_value(fence), value);
}

// A signal (prev: the value its claim replaced) or wait on a borrowed
// default stream: under the guard that makes its device's primary context
// current and then restores the caller's. Kept out of line, as
// record_default_stream() in event.cpp, so that the usual call on a stream
// of evx's carries no guard. A signal the driver refuses, or that the
// context refuses before it, gives its claim back.
evx_status_t on_default_stream(const char *fn, evx_fence_t fence, evx_stream_t stream, Fence *f,
                               const Stream *s, CUdeviceptr addr, uint64_t value, uint64_t prev,
                               MemOp memop, unsigned flags) __attribute__((noinline));
evx_status_t on_default_stream(const char *fn, evx_fence_t fence, evx_stream_t stream, Fence *f,
                               const Stream *s, CUdeviceptr addr, uint64_t value, uint64_t prev,
                               MemOp memop, unsigned flags) {
    const bool signal = memop == write_value;
    CUresult res;
    {
        ContextGuard guard;
        const evx_status_t st = stream_context(guard, fn, s);
        if (st) {
            if (signal) unclaim_value(f, value, prev);
            return st;
        }
        res = memop(s, addr, value, flags);
    }
    if (res == CUDA_SUCCESS) return EVX_SUCCESS;
    if (signal) unclaim_value(f, value, prev);
    return memop_failed(fn, fence, stream, s, value, res, signal);
}

// Whether the stream's device can flush remote writes before a wait
// (CU_STREAM_WAIT_VALUE_FLUSH); NOT_SUPPORTED naming the device if not.
evx_status_t check_flush(const char *fn, int device) __attribute__((cold, noinline));
evx_status_t check_flush(const char *fn, int device) {
    int v = 0;
    const CUresult r = cu().cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES,
                                                 g_driver.devices[device].dev);
    if (r != CUDA_SUCCESS)
        return driver_failed(r, fn, "cuDeviceGetAttribute",
                             "CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES of device %d", device);
    if (!v)
        return fail(EVX_ERROR_NOT_SUPPORTED,
                    "%s: device %d reports CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES = 0: it "
                    "cannot flush remote writes before a wait (EVX_FENCE_WAIT_FLUSH)",
                    fn, device);
    return 0;
}

// --- the general path of a queued operation

// Whether `stream` is one of f's `fast` streams (fence.hpp): the call then
// needs no device check and no tracking, and the counter's address is
// f->dptr. Acquire: what the thread that put it there did before (`used`,
// the tracking entry) happens before this call, and so before the free of
// the fence, which comes after this call's hazard is released.
inline bool is_fast(const Fence *f, const void *stream) {
    return __builtin_expect(word_is(f->fast[0], static_cast<const void *>(stream)), 1) ||
           f->fast[1].load(std::memory_order_acquire) == stream;
}

// The checks and the tracking of a stream that is none of f's fast ones:
// the counter's address on s's device in *addr. Then s is one of the fast
// ones if it may be (its device's, no default stream); the one it
// replaces stays tracked and only takes the general path again.
evx_status_t prepare_stream(const char *fn, evx_fence_t fence, evx_stream_t stream, Fence *f,
                            const Stream *s, CUdeviceptr *addr) {
    *addr = f->dptr;
    if (f->device != s->device) {
        const evx_status_t st = foreign_address(fn, fence, f, s->device, addr);
        if (st) return st;
    }
    fence_set_used(f);
    if (s->default_stream && s->cu == CU_STREAM_PER_THREAD) {
        fence_untrack(f);  // another thread cannot mark this thread's stream
        return 0;
    }
    fence_track(f, stream, s);
    if (!s->default_stream && f->device == s->device &&
        f->fast[0].load(std::memory_order_relaxed) != stream) {
        f->fast[1].store(f->fast[0].load(std::memory_order_relaxed), std::memory_order_release);
        f->fast[0].store(stream, std::memory_order_release);
    }
    return 0;
}

// A signal the driver refused: the claim given back, and the message. The
// fence and stream are those the call on r holds (held_slot(): the fence
// first), the value and the `last` its claim replaced those it kept in r
// (ThreadRecord::claim and claim_prev, plain_claim()).
evx_status_t signal_failed(const ThreadRecord *r, const char *fn, CUresult res)
    __attribute__((cold, noinline));
evx_status_t signal_failed(const ThreadRecord *r, const char *fn, CUresult res) {
    const uint64_t value = r->claim.load(std::memory_order_relaxed), prev = r->claim_prev;
    const Slot *sf = held_slot(r, 0), *ss = held_slot(r, 1);
    unclaim_value(static_cast<Fence *>(sf->obj), value, prev);
    return memop_failed(fn, held_handle_as<evx_fence_t>(sf), held_handle_as<evx_stream_t>(ss),
                        static_cast<const Stream *>(ss->obj), value, res, true);
}

// A wait the driver refused (as above; the value the call kept in r).
evx_status_t wait_failed(const ThreadRecord *r, const char *fn, CUresult res)
    __attribute__((cold, noinline));
evx_status_t wait_failed(const ThreadRecord *r, const char *fn, CUresult res) {
    const uint64_t value = r->keep;
    const Slot *sf = held_slot(r, 0), *ss = held_slot(r, 1);
    return memop_failed(fn, held_handle_as<evx_fence_t>(sf), held_handle_as<evx_stream_t>(ss),
                        static_cast<const Stream *>(ss->obj), value, res, false);
}

// A signal once its stream was checked and tracked (a: the counter's
// address on its device), claimed by claim_value(): the claims that are
// not a plain one, and the signals on a default stream.
evx_status_t signal_claimed_by_any(const char *fn, evx_fence_t fence, evx_stream_t stream,
                                   Fence *f, const Stream *s, uint64_t value, CUdeviceptr a)
    __attribute__((noinline));
evx_status_t signal_claimed_by_any(const char *fn, evx_fence_t fence, evx_stream_t stream,
                                   Fence *f, const Stream *s, uint64_t value, CUdeviceptr a) {
    uint64_t prev = 0;
    evx_status_t st = check_value(fn, value);  // evx_fence_signal() leaves it to its paths
    if (!st) st = claim_value(fn, fence, f, value, &prev, nullptr);
    if (st) return st;
    if (s->default_stream)
        return on_default_stream(fn, fence, stream, f, s, a, value, prev, write_value, 0);
    const CUresult res = write_value(s, a, value, 0);
    if (res == CUDA_SUCCESS) return EVX_SUCCESS;
    unclaim_value(f, value, prev);
    return memop_failed(fn, fence, stream, s, value, res, true);
}

// A signal on a stream that is not one of f's fast ones (both handles held).
evx_status_t signal_general(const char *fn, evx_fence_t fence, evx_stream_t stream, Fence *f,
                            const Stream *s, uint64_t value) __attribute__((noinline));
evx_status_t signal_general(const char *fn, evx_fence_t fence, evx_stream_t stream, Fence *f,
                            const Stream *s, uint64_t value) {
    CUdeviceptr a;
    evx_status_t st = check_value(fn, value);  // before the stream is tracked
    if (!st) st = prepare_stream(fn, fence, stream, f, s, &a);
    if (st) return st;
    return signal_claimed_by_any(fn, fence, stream, f, s, value, a);
}

// A wait on a stream that is not one of f's fast ones, or with flags (both
// handles held).
evx_status_t wait_general(const char *fn, evx_fence_t fence, evx_stream_t stream, Fence *f,
                          const Stream *s, uint64_t value, unsigned flags)
    __attribute__((noinline));
evx_status_t wait_general(const char *fn, evx_fence_t fence, evx_stream_t stream, Fence *f,
                          const Stream *s, uint64_t value, unsigned flags) {
    CUdeviceptr a;
    evx_status_t st = prepare_stream(fn, fence, stream, f, s, &a);
    if (!st && flags) st = check_flush(fn, s->device);
    if (st) return st;
    if (s->default_stream)
        return on_default_stream(fn, fence, stream, f, s, a, value, 0, wait_value, flags);
    const CUresult res = wait_value(s, a, value, flags);
    if (res == CUDA_SUCCESS) return EVX_SUCCESS;
    return memop_failed(fn, fence, stream, s, value, res, false);
}

// The fence and stream of a queued operation, held by `scope`.
inline evx_status_t lookup_queued(HandleScope &scope, const char *fn, evx_fence_t fence,
                                  evx_stream_t stream, Fence **f, const Stream **s) {
    Slot *sf = nullptr, *ss = nullptr;
    const evx_status_t st =
        scope.lookup2(fn, fence, kFence, "fence", &sf, stream, kStream, "stream", &ss);
    if (st) return st;
    *f = static_cast<Fence *>(sf->obj);
    *s = static_cast<const Stream *>(ss->obj);
    return 0;
}

// The first call of a thread (no record yet), or any call of a thread
// without light hazards, out of the hot paths: so that no value of theirs
// lives across attach_thread(). Each attaches the record if need be and
// runs the call's body again with t_record (kHot false).
evx_status_t wait_unattached(const char *fn, evx_stream_t stream, evx_fence_t fence,
                             uint64_t value, unsigned flags) __attribute__((cold, noinline));
evx_status_t signal_unattached(evx_fence_t fence, evx_stream_t stream, uint64_t value)
    __attribute__((cold, noinline));

// What wait_fence() does with both handles held (by the call on r): the
// value waits in r (ThreadRecord::keep) for the failure path, so that the
// call needs no frame.
inline __attribute__((always_inline)) evx_status_t wait_held(const char *fn, ThreadRecord *r,
                                                             evx_fence_t fence,
                                                             evx_stream_t stream, Fence *f,
                                                             const Stream *s, uint64_t value,
                                                             unsigned flags) noexcept {
    if (__builtin_expect(flags != 0, 0) || !is_fast(f, stream))
        return wait_general(fn, fence, stream, f, s, value, flags);
    r->keep = value;
    const CUresult res = wait_value(s, f->dptr, value, 0);
    if (__builtin_expect(res == CUDA_SUCCESS, 1)) return driver_success(res);
    return wait_failed(r, fn, res);
}

// Both waits: flags is 0 or CU_STREAM_WAIT_VALUE_FLUSH. Inlined into each,
// so that the plain wait's flags are a constant. A fast stream and no
// flags (the usual wait): the driver call and nothing more.
// kHot: as signal_fence()'s.
template <bool kHot = true>
inline __attribute__((always_inline)) evx_status_t wait_fence(const char *fn,
                                                              evx_stream_t stream,
                                                              evx_fence_t fence, uint64_t value,
                                                              unsigned flags) noexcept {
    ThreadRecord *r = kHot ? light_record() : t_record;
    if (__builtin_expect(r == nullptr, 0))
        return wait_unattached(fn, stream, fence, value, flags);
    HandleScope scope(r);
    Fence *f;
    const Stream *s;
    const evx_status_t st = lookup_queued(scope, fn, fence, stream, &f, &s);
    if (st) return scope.finish(st);
    return scope.finish(wait_held(fn, r, fence, stream, f, s, value, flags));
}

// The body of evx_fence_signal(). A fence's fast stream, and this thread
// its claimer (the usual signal): the plain claim, the driver call and
// nothing more.
// A plain claim's refusal (plain_claim()'s kNotAbove): a value above
// EVX_FENCE_MAX_VALUE, or one not above `last`.
evx_status_t not_claimed(const char *fn, const void *h, uint64_t value, uint64_t last)
    __attribute__((cold, noinline));
evx_status_t not_claimed(const char *fn, const void *h, uint64_t value, uint64_t last) {
    if (value > EVX_FENCE_MAX_VALUE) return value_too_large(fn, value);
    return not_above(fn, h, value, last & ~kQueuedBit);
}

// What signal_fence() does with both handles held (by the call on r).
inline __attribute__((always_inline)) evx_status_t signal_held(const char *fn, ThreadRecord *r,
                                                               evx_fence_t fence,
                                                               evx_stream_t stream, Fence *f,
                                                               const Stream *s,
                                                               uint64_t value) noexcept {
    if (!is_fast(f, stream)) return signal_general(fn, fence, stream, f, s, value);
    const PlainClaim c = plain_claim(f, value, r);
    if (__builtin_expect(c != kClaimed, 0)) {
        if (c == kNotAbove) return not_claimed(fn, fence, value, r->claim_prev);
        return signal_claimed_by_any(fn, fence, stream, f, s, value, f->dptr);
    }
    const CUresult res = write_value(s, f->dptr, value, 0);
    if (__builtin_expect(res == CUDA_SUCCESS, 1)) return driver_success(res);
    return signal_failed(r, fn, res);
}

// kHot: the public call, which takes the thread's record from t_light (a
// thread not attached yet, or without light hazards, goes through
// signal_unattached(), which runs the body with t_record). What the failure
// path needs after the driver call (the value, the claim it replaced) waits
// in the thread's record (ThreadRecord::keep), so that the call needs no
// frame.
template <bool kHot>
inline __attribute__((always_inline)) evx_status_t signal_fence(evx_fence_t fence,
                                                                evx_stream_t stream,
                                                                uint64_t value) noexcept {
    static const char fn[] = "evx_fence_signal";
    ThreadRecord *r = kHot ? light_record() : t_record;
    if (__builtin_expect(r == nullptr, 0)) return signal_unattached(fence, stream, value);
    HandleScope scope(r);
    Fence *f;
    const Stream *s;
    const evx_status_t st = lookup_queued(scope, fn, fence, stream, &f, &s);
    if (st) return scope.finish(st);
    return scope.finish(signal_held(fn, r, fence, stream, f, s, value));
}

evx_status_t wait_unattached(const char *fn, evx_stream_t stream, evx_fence_t fence,
                             uint64_t value, unsigned flags) {
    if (!self()) return no_thread_record();
    return wait_fence<false>(fn, stream, fence, value, flags);
}

evx_status_t signal_unattached(evx_fence_t fence, evx_stream_t stream, uint64_t value) {
    if (!self()) return no_thread_record();
    return signal_fence<false>(fence, stream, value);
}

evx_status_t publish_fence(ThreadRecord *r, const char *fn, Fence *f, evx_fence_t *out) {
    uint32_t index;
    const evx_status_t st = slot_alloc(r, fn, &index);
    if (st) {
        fence_free(r, f);
        return st;
    }
    f->dptrs[f->device].store(f->dptr, std::memory_order_relaxed);
    *out = publish_as<evx_fence_t>(index, kFence, f);
    return 0;
}

// The start of both calls that make a fence: out-pointer, driver, device,
// support, and a new Fence in *f.
evx_status_t enter_new_fence(const char *fn, int device, evx_fence_t *out, ThreadRecord **r,
                             Fence **f) {
    if (!out) return fail(EVX_ERROR_INVALID_VALUE, "%s: out (the out-pointer) is NULL", fn);
    *out = nullptr;
    evx_status_t st = enter_device(fn, device, r);
    if (!st) st = check_support(fn, device);
    if (!st) st = enter_device_new(fn, device, r, f);
    if (!st) {
        (*f)->dptrs = new (std::nothrow) std::atomic<CUdeviceptr>[g_driver.device_count]();
        if (!(*f)->dptrs) {
            delete *f;
            *f = nullptr;
            st = fail(EVX_ERROR_OUT_OF_MEMORY, "%s: out of memory", fn);
        }
    }
    if (!st) fence_reclaim_step();  // frees what earlier fences left
    return st;
}

// A fence that was never published.
void drop_new_fence(Fence *f) {
    delete[] f->dptrs;
    delete f;
}

// An export of an interprocess fence (a handle or a descriptor): `op` on
// the live fence, refused for a fence made without EVX_FENCE_INTERPROCESS.
template <class Op>
evx_status_t on_exported(const char *fn, evx_fence_t fence, Op op) {
    return with_live(fn, fence, kFence, "fence", [&](Slot &slot) -> evx_status_t {
        const Fence *f = static_cast<const Fence *>(slot.obj);
        if (!(f->flags & EVX_FENCE_INTERPROCESS))
            return fail(EVX_ERROR_INVALID_HANDLE,
                        "%s: fence 0x%" PRIx64 " was created without EVX_FENCE_INTERPROCESS: "
                        "only such a fence can be exported",
                        fn, handle_value(fence));
        return op(f);
    });
}

}  // namespace

}  // namespace evx

using namespace evx;

extern "C" {

EVX_API evx_status_t evx_device_create_fence(int device, uint64_t initial_value, unsigned flags,
                                             evx_fence_t *out) {
    static const char fn[] = "evx_device_create_fence";
    if (out) *out = nullptr;
    evx_status_t st = check_known_flags(fn, "fence", flags, EVX_FENCE_INTERPROCESS,
                                        "EVX_FENCE_INTERPROCESS 0x1");
    if (!st) st = check_value(fn, initial_value);
    if (st) return st;
    ThreadRecord *r;
    Fence *f = nullptr;
    st = enter_new_fence(fn, device, out, &r, &f);
    if (st) return st;
    f->flags = flags;
    f->claimer.store(first_claimer(flags), std::memory_order_relaxed);
    {
        ContextGuard guard;
        st = guard.enter(fn, device);
        if (!st && (flags & EVX_FENCE_INTERPROCESS)) {
            st = fence_ipc_create(fn, f, initial_value);
        } else if (!st) {
            st = fence_word_get(fn, device, &f->word, &f->dptr);
            if (!st) f->word->value = f->last_local = initial_value;
        }
    }
    if (st) {
        drop_new_fence(f);
        return st;
    }
    return publish_fence(r, fn, f, out);
}

EVX_API evx_status_t evx_device_open_ipc_fence(int device, const evx_ipc_fence_handle_t *handle,
                                               evx_fence_t *out) {
    static const char fn[] = "evx_device_open_ipc_fence";
    if (out) *out = nullptr;
    if (!handle) {
        if (!out) return fail(EVX_ERROR_INVALID_VALUE, "%s: out (the out-pointer) is NULL", fn);
        return fail(EVX_ERROR_INVALID_VALUE, "%s: handle is NULL", fn);
    }
    ThreadRecord *r;
    Fence *f = nullptr;
    evx_status_t st = enter_new_fence(fn, device, out, &r, &f);
    if (st) return st;
    f->flags = EVX_FENCE_INTERPROCESS;
    f->claimer.store(first_claimer(f->flags), std::memory_order_relaxed);
    f->opened = true;
    {
        ContextGuard guard;
        st = guard.enter(fn, device);
        if (!st) st = fence_ipc_open(fn, f, handle->reserved, sizeof handle->reserved);
    }
    if (st) {
        drop_new_fence(f);
        return st;
    }
    return publish_fence(r, fn, f, out);
}

EVX_API evx_status_t evx_device_import_fence_fd(int device, int fd, evx_fence_t *out) {
    static const char fn[] = "evx_device_import_fence_fd";
    if (out) *out = nullptr;
    if (out && fd < 0)
        return fail(EVX_ERROR_INVALID_VALUE, "%s: fd %d is not a file descriptor", fn, fd);
    ThreadRecord *r;
    Fence *f = nullptr;
    evx_status_t st = enter_new_fence(fn, device, out, &r, &f);
    if (st) return st;
    f->flags = EVX_FENCE_INTERPROCESS;
    f->claimer.store(first_claimer(f->flags), std::memory_order_relaxed);
    f->opened = true;
    {
        ContextGuard guard;
        st = guard.enter(fn, device);
        if (!st) st = fence_ipc_import(fn, f, fd);
    }
    if (st) {
        drop_new_fence(f);
        return st;
    }
    return publish_fence(r, fn, f, out);
}

EVX_API evx_status_t evx_fence_export_fd(evx_fence_t fence, int *fd_out) {
    static const char fn[] = "evx_fence_export_fd";
    if (!fd_out) return fail(EVX_ERROR_INVALID_VALUE, "%s: fd_out (the out-pointer) is NULL", fn);
    *fd_out = -1;
    return on_exported(fn, fence, [&](const Fence *f) { return fence_ipc_export_fd(fn, f, fd_out); });
}

EVX_API evx_status_t evx_fence_destroy(evx_fence_t fence) {
    static const char fn[] = "evx_fence_destroy";
    ThreadRecord *r;
    evx_status_t st = enter_thread(&r);
    if (st) return st;
    Slot *s = nullptr;
    st = unpublish(fence, kFence, fn, "fence", &s);
    if (st) return st;
    // Ours now: racing calls only read it under their hazards.
    const bool ipc = static_cast<const Fence *>(s->obj)->flags & EVX_FENCE_INTERPROCESS;
    st = retire(r, fence);  // the free's status (a deferred free: success)
    fence_reclaim_step();
    if (st)
        return driver_failed(static_cast<CUresult>(st), fn,
                             ipc ? "cuMemHostUnregister" : "cuMemFreeHost",
                             "fence 0x%" PRIx64 "; the handle is dead all the same",
                             handle_value(fence));
    return EVX_SUCCESS;
}

EVX_API evx_status_t evx_fence_signal(evx_fence_t fence, evx_stream_t stream, uint64_t value) {
    // The value is checked where it is claimed (plain_claim()'s signed
    // compare, and check_value() on the other paths), after the handles.
    return signal_fence<true>(fence, stream, value);
}

EVX_API evx_status_t evx_stream_wait_fence(evx_stream_t stream, evx_fence_t fence, uint64_t value) {
    static const char fn[] = "evx_stream_wait_fence";
    if (__builtin_expect(value > EVX_FENCE_MAX_VALUE, 0)) return value_too_large(fn, value);
    return wait_fence(fn, stream, fence, value, 0);
}

EVX_API evx_status_t evx_stream_wait_fence_with_flags(evx_stream_t stream, evx_fence_t fence,
                                                      uint64_t value, unsigned flags) {
    static const char fn[] = "evx_stream_wait_fence_with_flags";
    evx_status_t st = check_known_flags(fn, "fence wait", flags, EVX_FENCE_WAIT_FLUSH,
                                        "EVX_FENCE_WAIT_FLUSH 0x1");
    if (!st) st = check_value(fn, value);
    if (st) return st;
    return wait_fence(fn, stream, fence, value,
                      (flags & EVX_FENCE_WAIT_FLUSH) ? CU_STREAM_WAIT_VALUE_FLUSH : 0);
}

EVX_API evx_status_t evx_fence_signal_host(evx_fence_t fence, uint64_t value) {
    static const char fn[] = "evx_fence_signal_host";
    evx_status_t st = check_value(fn, value);
    if (st) return st;
    return with_live(fn, fence, kFence, "fence", [&](Slot &slot) -> evx_status_t {
        Fence *f = static_cast<Fence *>(slot.obj);
        uint64_t prev = 0;
        bool held = false;
        const evx_status_t cst = claim_value(fn, fence, f, value, &prev, &held);
        if (cst) return cst;
        if (__builtin_expect(evx_debug_fence_window != nullptr, 0))
            evx_debug_fence_window(fence, value);
        if (__builtin_expect(held, 1)) {
            // The one claimer: nothing else stores the counter now (every
            // queued signal claimed before has run; a thread that takes
            // the claims away waits for the end of this claim).
            __atomic_store_n(&f->word->value, value, __ATOMIC_RELEASE);
            end_plain_claim(t_record);
        } else {
            raise_counter(f->word, value);
        }
        __atomic_add_fetch(f->wake, 1, __ATOMIC_SEQ_CST);
        futex(f->wake, f->futex_private ? FUTEX_WAKE_PRIVATE : FUTEX_WAKE, INT_MAX, nullptr);
        return EVX_SUCCESS;
    });
}

EVX_API evx_status_t evx_fence_get_value(evx_fence_t fence, uint64_t *value) {
    static const char fn[] = "evx_fence_get_value";
    if (!value) return fail(EVX_ERROR_INVALID_VALUE, "%s: value (the out-pointer) is NULL", fn);
    return with_live(fn, fence, kFence, "fence", [value](Slot &slot) {
        *value = fence_value(static_cast<Fence *>(slot.obj));
        return EVX_SUCCESS;
    });
}

EVX_API evx_status_t evx_fence_wait_host(evx_fence_t fence, uint64_t value, uint64_t timeout_ns) {
    static const char fn[] = "evx_fence_wait_host";
    evx_status_t st = check_value(fn, value);
    if (st) return st;
    return with_live(fn, fence, kFence, "fence", [&](Slot &slot) -> evx_status_t {
        Fence *f = static_cast<Fence *>(slot.obj);
        if (fence_value(f) >= value) return EVX_SUCCESS;
        const int64_t start = mono_ns();
        // A short spin first: a signal that is about to come is seen with no
        // sleep and wake-up. Bounded to a few microseconds.
        const uint64_t spin_ns = timeout_ns < 4000 ? timeout_ns : 4000;
        while (static_cast<uint64_t>(mono_ns() - start) < spin_ns) {
            if (fence_value(f) >= value) return EVX_SUCCESS;
            cpu_relax();
        }
        // Then sleep on the wake word: host signals wake it at once; a GPU
        // signal raises no interrupt, so the sleep is cut into naps that grow
        // to 100 us, after each of which the counter is read again. The
        // thread's timer slack (50 us by default) would stretch every nap
        // by up to that much: it is made 1 us for the wait, then restored.
        const int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
        if (slack > 1000) prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
        struct RestoreSlack {
            int slack;
            ~RestoreSlack() {
                if (slack > 1000) prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(slack), 0, 0, 0);
            }
        } restore{slack};
        int64_t nap = 10000;
        for (;;) {
            const uint32_t seen = __atomic_load_n(f->wake, __ATOMIC_ACQUIRE);
            const uint64_t cur = fence_value(f);
            if (cur >= value) return EVX_SUCCESS;
            const uint64_t spent = static_cast<uint64_t>(mono_ns() - start);
            if (spent >= timeout_ns)
                return fail(EVX_ERROR_TIMEOUT,
                            "%s: fence 0x%" PRIx64 " is at %" PRIu64 ", not yet %" PRIu64
                            ", after the timeout of %" PRIu64 " ns",
                            fn, handle_value(fence), cur, value, timeout_ns);
            const uint64_t left = timeout_ns - spent;
            const int64_t ns = left < static_cast<uint64_t>(nap) ? static_cast<int64_t>(left) : nap;
            const timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
            // A futex the kernel refuses (neither woken, timed out, nor
            // changed meanwhile) must still not turn the nap into a spin.
            if (futex(f->wake, f->futex_private ? FUTEX_WAIT_PRIVATE : FUTEX_WAIT, seen, &ts) != 0 &&
                errno != ETIMEDOUT && errno != EAGAIN && errno != EINTR)
                nanosleep(&ts, nullptr);
            if (nap < 100000) nap *= 2;
        }
    });
}

EVX_API evx_status_t evx_fence_get_ipc_handle(evx_fence_t fence, evx_ipc_fence_handle_t *out) {
    static const char fn[] = "evx_fence_get_ipc_handle";
    if (!out) return fail(EVX_ERROR_INVALID_VALUE, "%s: out (the out-pointer) is NULL", fn);
    return on_exported(fn, fence, [&](const Fence *f) -> evx_status_t {
        fence_ipc_handle(f, out->reserved, sizeof out->reserved);
        return EVX_SUCCESS;
    });
}

}  // extern "C"
