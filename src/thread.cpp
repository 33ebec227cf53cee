// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Per-thread records: made on a thread's first call, linked into a registry
// that destroy scans, never freed. A thread that exits clears its record and
// leaves it for the next new thread.
#include "thread.hpp"

#include <pthread.h>

#include <mutex>
#include <new>

namespace evx {

__thread ThreadRecord *t_record __attribute__((tls_model("initial-exec"))) = nullptr;
ExitHook g_exit_hooks[kExitStages];  // zero before any constructor runs

namespace {

std::atomic<ThreadRecord *> g_threads{nullptr};
pthread_key_t g_exit_key;
std::once_flag g_key_once;
bool g_key_ok = false;

void on_thread_exit(void *p) {
    ThreadRecord *r = static_cast<ThreadRecord *>(p);
    // Handles first: the retired events they free go to this thread's
    // cache, which the next stage moves to the shared depot
    // (evx_device_trim reaches them there).
    for (ExitHook hook : g_exit_hooks)
        if (hook) hook(r);
    r->last_status = 0;
    r->message[0] = '\0';
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
    r->last_status = 0;
    r->message[0] = '\0';
    // Without the key the record is never given back; nothing else breaks.
    if (g_key_ok) pthread_setspecific(g_exit_key, r);
    t_record = r;
    return r;
}

}  // namespace evx
