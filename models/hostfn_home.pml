/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 *
 * The records of host-function launches (src/hostfn.cpp, HostHome), for
 * SPIN; checked by models/check.sh.
 *
 * One thread's home of N records, the thread that owns it (proctype owner)
 * and T driver threads that run host functions (proctype trampoline):
 *   - the owner takes a record from its free list with plain loads and
 *     stores (call_take()) and launches it (a message on `driver`); when
 *     the free list is empty it takes the whole give-back stack at once,
 *     an exchange of its head with 0 (call_refill()), and that list becomes
 *     its free list;
 *   - a trampoline, having run the function, gives the record back
 *     (call_give_back()): it loads the head, stores it as the record's
 *     next, and compare-and-swaps the head from what it loaded to the
 *     record, loading the head again when that fails;
 *   - no one pops a single record off the stack, so a head that went from
 *     A away and back to A (ABA) only means the record's next is A, which
 *     it is.
 * Atomic steps are the exchange and the compare-and-swap; every other load
 * and store is a step of its own. (The memory order is not modelled: the
 * give-back's release pairs with the take-all's acquire, so the owner's
 * reuse of a record comes after the trampoline's last use of it.)
 *
 * Properties (assertions): the owner launches only records it holds; a
 * trampoline gives back only records it was given; every record the owner
 * takes back was given back, and only once; when all are done, every record
 * is on the free list or on the stack (none lost, none on both, no cycle).
 *
 * Variants that must fail, so that the model is not vacuous:
 * -DSPLIT_TAKE (the take-all loads the head, then stores 0: a give-back in
 * between is lost), -DSPLIT_PUSH (the give-back stores the head with a
 * plain store, no compare-and-swap: of two racing give-backs one is lost).
 */

#define N 3        /* records of the home */
#define T 2        /* driver threads */
#define ROUNDS 5   /* launches the owner tries */

#define OWNED 0    /* on the owner's free list */
#define OUT 1      /* the driver's: launched, not given back yet */
#define BACK 2     /* on the give-back stack */

byte back = 0;     /* head of the give-back stack (0: empty) */
byte nxt[N + 1];   /* a record's next, on whichever list it is */
byte state[N + 1];
byte freel = 0;    /* the owner's free list */
byte finished = 0; /* trampolines that have stopped */
chan driver = [N + T] of { byte };

inline give_back(c) {
    head = back;
    state[c] = BACK;
    do
    :: nxt[c] = head;
#ifdef SPLIT_PUSH
       back = c;
       break
#else
       atomic {
           if
           :: back == head -> back = c; break
           :: else -> head = back
           fi
       }
#endif
    od
}

active [T] proctype trampoline() {
    byte c, head;
    do
    :: driver ? c ->
       if
       :: c == 0 -> break
       :: else ->
          assert(state[c] == OUT);
          give_back(c)
       fi
    od;
    finished++
}

active proctype owner() {
    byte i, c, k, l, n;
    /* Every record starts on the free list. */
    for (i : 1 .. N) {
        nxt[i] = (i < N -> i + 1 : 0);
        state[i] = OWNED
    }
    freel = 1;
    for (i : 1 .. ROUNDS) {
        if
        :: freel == 0 ->
#ifdef SPLIT_TAKE
           l = back;
           back = 0;
#else
           atomic { l = back; back = 0 };
#endif
           /* The list taken is the owner's alone now. */
           k = l;
           n = 0;
           do
           :: k != 0 ->
              assert(state[k] == BACK);
              state[k] = OWNED;
              n++;
              assert(n <= N);
              k = nxt[k]
           :: else -> break
           od;
           freel = l
        :: else -> skip
        fi;
        if
        :: freel != 0 ->
           c = freel;
           freel = nxt[c];
           assert(state[c] == OWNED);
           state[c] = OUT;
           driver ! c
        :: else -> skip  /* none back yet: the code makes a new record */
        fi
    }
    for (i : 1 .. T) { driver ! 0 }
    (finished == T);
    /* Every record is on one of the two lists, once. */
    n = 0;
    k = freel;
    do
    :: k != 0 -> assert(state[k] == OWNED); n++; assert(n <= N); k = nxt[k]
    :: else -> break
    od;
    k = back;
    do
    :: k != 0 -> assert(state[k] == BACK); n++; assert(n <= N); k = nxt[k]
    :: else -> break
    od;
    assert(n == N)
}
