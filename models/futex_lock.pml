/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 *
 * The lock of src/futex_lock.hpp (FutexLock: U. Drepper, "Futexes Are
 * Tricky", mutex 3), for SPIN; checked by models/check.sh.
 *
 * NP threads each take and leave the lock ROUNDS times:
 *   - lock(): a compare-and-swap of the word from 0 to 1; if it was held
 *     (c, the value seen, 1 or 2), an exchange to 2 unless c was 2, then
 *     while the value seen is not 0: FUTEX_WAIT(2), an exchange to 2;
 *   - unlock(): an exchange to 0; FUTEX_WAKE(1) unless the value was 1;
 *   - FUTEX_WAIT(val) checks the word and goes to sleep in one step (the
 *     kernel does both under its hash-bucket lock), or returns at once if
 *     the word is not val; FUTEX_WAKE(1) wakes one sleeper, any, if there
 *     is one.
 * Every access to the word is an atomic read-modify-write (or the kernel's
 * check), so the interleavings are all the orders there are. Spurious
 * wakeups are left out: a woken thread only exchanges again, which a
 * spurious wakeup would do too, and with them a thread that is never woken
 * would not show as stuck.
 *
 * Properties: at most one thread in the critical section (assertion); no
 * thread asleep forever once the others are done (pan's invalid end
 * states: a thread blocked in FUTEX_WAIT at the end is one).
 *
 * Variants that must fail, so that the model is not vacuous: -DRELOCK_1
 * (the exchange after a wait sets 1, not 2: a wakeup is lost), -DNO_WAKE
 * (unlock never wakes), -DTEST_THEN_SET (the fast path reads, then
 * writes: two threads in the critical section).
 */

#define NP 3
#define ROUNDS 2

byte w = 0;        /* the lock word: 0 free, 1 held, 2 held and maybe waited for */
bool asleep[NP];   /* in FUTEX_WAIT */
byte in_cs = 0;

inline futex_wait(val) {
    atomic {
        if
        :: w == val -> asleep[_pid] = 1
        :: else -> skip
        fi
    }
    (asleep[_pid] == 0)
}

inline futex_wake() {
    atomic {
        if
        :: asleep[0] -> asleep[0] = 0
        :: asleep[1] -> asleep[1] = 0
        :: asleep[2] -> asleep[2] = 0
        :: else -> skip
        fi
    }
}

inline xchg(c, v) { atomic { c = w; w = v } }

inline lock(c) {
#ifdef TEST_THEN_SET
    c = w;
    if :: c == 0 -> w = 1 :: else -> skip fi;
#else
    atomic { c = w; if :: w == 0 -> w = 1 :: else -> skip fi }
#endif
    if
    :: c != 0 ->
        if
        :: c != 2 -> xchg(c, 2)
        :: else -> skip
        fi;
        do
        :: c != 0 ->
            futex_wait(2);
#ifdef RELOCK_1
            xchg(c, 1)
#else
            xchg(c, 2)
#endif
        :: else -> break
        od
    :: else -> skip
    fi
}

inline unlock(u) {
    xchg(u, 0);
#ifndef NO_WAKE
    if
    :: u != 1 -> futex_wake()
    :: else -> skip
    fi
#endif
}

active [NP] proctype thread() {
    byte c, round = 0;
    do
    :: round < ROUNDS ->
        lock(c);
        in_cs++;
        assert(in_cs == 1);
        in_cs--;
        unlock(c);
        round++
    :: else -> break
    od
}
