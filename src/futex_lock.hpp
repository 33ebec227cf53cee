// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// A mutex of one word for the short critical sections of hot calls (a
// timeline's mark, a notifier's token queue): taking and leaving it free is
// one compare-and-swap and one exchange, where std::mutex goes through
// pthread's generic lock and unlock. Waiters sleep on a futex. It is the
// third mutex of U. Drepper, "Futexes Are Tricky": the word is 0 (free),
// 1 (held, no waiter) or 2 (held, maybe waited for); a waiter sets 2 before
// it sleeps, so the holder's exchange sees 2 and wakes one. Checked with
// SPIN by models/futex_lock.pml (models/check.sh: mutual exclusion, and no
// waiter left asleep once the lock is free).
//
// Not recursive, no condition variables (use std::mutex where a wait is
// needed). BasicLockable: std::lock_guard<FutexLock> takes it.
#ifndef EVX_SRC_FUTEX_LOCK_HPP
#define EVX_SRC_FUTEX_LOCK_HPP

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

namespace evx {

class FutexLock {
public:
    void lock() noexcept {
        uint32_t c = 0;
        if (__builtin_expect(!w_.compare_exchange_strong(c, 1, std::memory_order_acquire,
                                                         std::memory_order_relaxed),
                             0))
            lock_slow(c);
    }
    void unlock() noexcept {
        if (__builtin_expect(w_.exchange(0, std::memory_order_release) != 1, 0)) wake();
    }

private:
    // Held by another thread (c: the word seen, 1 or 2): mark the word
    // waited for and sleep until an exchange finds it free. The exchange
    // sets 2 even when it takes the lock, as this thread cannot know that
    // no other waits.
    __attribute__((noinline, cold)) void lock_slow(uint32_t c) noexcept {
        if (c != 2) c = w_.exchange(2, std::memory_order_acquire);
        while (c != 0) {
            futex(FUTEX_WAIT_PRIVATE, 2);  // returns at once if the word is no longer 2
            c = w_.exchange(2, std::memory_order_acquire);
        }
    }
    __attribute__((noinline, cold)) void wake() noexcept { futex(FUTEX_WAKE_PRIVATE, 1); }
    void futex(int op, uint32_t val) noexcept {
        static_assert(sizeof(w_) == sizeof(uint32_t), "the futex word is the atomic itself");
        syscall(SYS_futex, reinterpret_cast<uint32_t *>(&w_), op, val, nullptr, nullptr, 0);
    }

    std::atomic<uint32_t> w_{0};
};

}  // namespace evx

#endif  // EVX_SRC_FUTEX_LOCK_HPP
