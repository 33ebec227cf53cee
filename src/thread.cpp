// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Per-thread records: made on a thread's first call, linked into a registry
// that destroy scans, never freed. A thread that exits clears its record and
// leaves it for the next new thread.
#include "thread.hpp"

#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <mutex>
#include <new>

namespace evx {

__thread ThreadRecord *t_record __attribute__((tls_model("initial-exec"))) = nullptr;
__thread ThreadRecord *t_light __attribute__((tls_model("initial-exec"))) = nullptr;
ExitHook g_exit_hooks[kExitStages];  // zero before any constructor runs

namespace {

std::atomic<ThreadRecord *> g_threads{nullptr};
pthread_key_t g_exit_key;
std::once_flag g_key_once;
bool g_key_ok = false;

// membarrier(2)'s expedited barrier, registered once: registration is what
// the barrier needs, after which it cannot fail.
bool expedited() {
    static const bool ok =
        syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0 &&
        syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0;
    return ok;
}

void on_thread_exit(void *p) {
    ThreadRecord *r = static_cast<ThreadRecord *>(p);
    // Handles first: the retired events they free go to this thread's
    // cache, which the next stage moves to the shared depot
    // (evx_device_trim reaches them there).
    for (ExitHook hook : g_exit_hooks)
        if (hook) hook(r);
    r->last_status = 0;
    r->message[0] = '\0';
    t_light = nullptr;
    t_record = nullptr;
    r->in_use.store(false, std::memory_order_release);
}

}  // namespace

ThreadRecord *thread_list() { return g_threads.load(std::memory_order_acquire); }

ThreadRecord *attach_thread() {
    std::call_once(g_key_once, [] {
        g_key_ok = pthread_key_create(&g_exit_key, on_thread_exit) == 0;
    });
    ThreadRecord *r = nullptr;
    for (ThreadRecord *t = thread_list(); t; t = t->next) {
        if (!t->in_use.load(std::memory_order_relaxed) &&
            !t->in_use.exchange(true, std::memory_order_acquire)) {
            r = t;
            break;
        }
    }
    if (!r) {
        r = new (std::nothrow) ThreadRecord;
        if (!r) return nullptr;
        r->in_use.store(true, std::memory_order_relaxed);
        ThreadRecord *head = g_threads.load(std::memory_order_relaxed);
        do {
            r->next = head;
        } while (!g_threads.compare_exchange_weak(head, r, std::memory_order_release,
                                                  std::memory_order_relaxed));
    }
    r->light = light_hazards();
    r->last_status = 0;
    r->message[0] = '\0';
    // Without the key the record is never given back; nothing else breaks.
    if (g_key_ok) pthread_setspecific(g_exit_key, r);
    t_record = r;
    t_light = r->light ? r : nullptr;
    return r;
}

// membarrier(2) where the kernel has it; else a protection change of a page
// this process touched, which makes the kernel interrupt every CPU that may
// hold its mappings (the fallback of folly's asymmetricHeavyBarrier and
// .NET's FlushProcessWriteBuffers).
bool heavy_barrier() {
    if (expedited()) {
        if (syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0) return true;
        // Refused only where this process is not registered (a child of
        // fork(), should a kernel not pass the registration on): again.
        if (syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0 &&
            syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0)
            return true;
    }
    static std::mutex mu;
    static void *page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    std::lock_guard<std::mutex> lock(mu);
    if (page != MAP_FAILED && mprotect(page, 4096, PROT_READ | PROT_WRITE) == 0) {
        __atomic_fetch_add(static_cast<int *>(page), 1, __ATOMIC_SEQ_CST);
        if (mprotect(page, 4096, PROT_READ) == 0) return true;
    }
    return false;
}

bool light_hazards() {
    // The mprotect() fallback is not enough here: it can fail later (no
    // memory to split a mapping), and a reclaimer without its barrier could
    // then neither free nor know who holds what.
    return !EVX_TSAN && expedited();
}

void own_wait(ThreadRecord *r) {
    // Called with the outermost hold just taken: give it up while the thief
    // works, then take it again and look once more (a second thief may have
    // come meanwhile).
    for (;;) {
        r->busy.store(0, std::memory_order_release);
        while (r->steal.load(std::memory_order_acquire) != 0) sched_yield();
        r->busy.store(1, std::memory_order_relaxed);
        std::atomic_signal_fence(std::memory_order_seq_cst);
        if (r->steal.load(std::memory_order_acquire) == 0) return;
    }
}

bool steal_others(ThreadRecord *self, StealVisit visit, void *arg) {
    static std::mutex mu;  // one thief at a time: two would wait for each other
    std::lock_guard<std::mutex> lock(mu);
    // Records are only ever added at the head: from this one on, the same
    // records both times.
    ThreadRecord *const head = thread_list();
    for (ThreadRecord *t = head; t; t = t->next)
        if (t != self) t->steal.store(1, std::memory_order_seq_cst);
    const bool ordered = heavy_barrier();
    for (ThreadRecord *t = head; t; t = t->next) {
        if (t == self) continue;
        if (ordered) {
            // A hold is a few list or cache operations: never a wait.
            while (t->busy.load(std::memory_order_acquire) != 0) sched_yield();
            visit(self, t, arg);
        }
        t->steal.store(0, std::memory_order_release);
    }
    return ordered;
}

}  // namespace evx
