/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 *
 * The fence protocol of src/fence.cpp, for SPIN (docs/fences.md, "What is
 * atomic"; docs/design.md, "Models"). Checked exhaustively by
 * models/check.sh (scripts/test.sh spin):
 *
 *   spin -a models/fence.pml && cc -O2 -o pan pan.c && ./pan
 *
 * What is modelled, step by step as the C code does it:
 *   - the claim of a value (`last`, the largest value claimed, and its
 *     kQueuedBit: the last claim is a queued signal's), on the plain path
 *     of the one claiming thread (plain_claim(), claim_value(): announce
 *     the claim's window in the thread's own word, ThreadRecord::claim,
 *     `claiming[me]` here; load `claimer`; plain load and store of `last`;
 *     end the window) and on the compare-and-swap path, and the switch
 *     between them (not_the_claimer(): `claimer` made shared,
 *     heavy_barrier(), wait for the old claimer's window to end). Every
 *     thread announces before its one load of `claimer` (the queued
 *     signal's plain_claim() does; claim_value() of a host signal loads
 *     `claimer` once more before it announces, which only skips an
 *     announcement that this thread would end at once); only the old
 *     claimer's word is waited on. A thread's announcement may stay in its
 *     store buffer past its load of `claimer` (x86-TSO's one reordering;
 *     stores leave the buffer in order): `pend[me]` is that buffered
 *     store; it drains at any time (proctype drain), before the thread's
 *     next store, and at the barrier (membarrier(2): every thread of the
 *     process runs a full fence);
 *   - an IPC fence (-DIPC): every claim a compare-and-swap on the shared
 *     page from the start, by two processes;
 *   - the host signal's check (ILLEGAL_STATE), its store of the counter
 *     (an atomic maximum on the compare-and-swap path, a plain store while
 *     the plain claim is held), and the check of its return;
 *   - the queued signal: claim, then the driver call, which may refuse
 *     (then the claim is given back by a compare-and-swap, unclaim_value());
 *     a stream that runs the queued writes later, as plain stores, in
 *     claim order (the program's rule: queued signals run in increasing
 *     order);
 *   - a reader's loads of the counter.
 *
 * -DOLD_PROTOCOL is the protocol before issue 30: no kQueuedBit (a host
 * signal is refused whenever the counter is below `last`), the host store a
 * plain store after the claim (and after the window is ended).
 *
 * Properties (assertions; -DPROP_MONO, -DPROP_ILLEGAL, -DPROP_LOST,
 * -DPROP_CLAIM pick one, default all):
 *   MONO     every write of the counter (host store, stream write) leaves
 *            it at least what it was; every reader's loads do not decrease;
 *   CLAIM    no value is claimed twice (both claims standing);
 *   ILLEGAL  a host signal is refused with ILLEGAL_STATE only if a queued
 *            signal had not run (its call in flight, or queued and not yet
 *            run by the stream) when the host signal loaded `last` or the
 *            counter: a queued signal that the driver refuses meanwhile
 *            was in flight at the load, so the refusal is linearizable
 *            there;
 *   LOST     a host signal has taken effect by its return (the counter is
 *            at least its value), and once every call has returned and the
 *            stream has run, the counter is the largest value accepted.
 */

#if !defined(PROP_MONO) && !defined(PROP_ILLEGAL) && !defined(PROP_LOST) && !defined(PROP_CLAIM)
#define PROP_MONO
#define PROP_ILLEGAL
#define PROP_LOST
#define PROP_CLAIM
#endif

#define OPS 2         /* signals per thread */
#define NT 2          /* signalling threads (processes, with -DIPC) */
#define MAXV (NT * OPS)
#define MAXP (NT * OPS)

#define NONE 0
#define SHARED 3      /* claimer: kClaimShared; 1..NT: that thread */

/* queued signals, in claim order: their state */
#define CLAIMED 1     /* claimed, driver call in flight */
#define QUEUED 2      /* on the stream, not run yet */
#define RAN 3
#define REFUSED 4     /* the driver refused it; its call returned */

byte counter = 0;     /* FenceWord::value */
byte lastv = 0;       /* `last` ... */
bool lastq = 0;       /* ... and its kQueuedBit: one word in C */
byte claimer = NONE;
bool claiming[NT + 1];  /* each thread's window (ThreadRecord::claim == kClaiming), visible */
bool pend[NT + 1];      /* a thread's announcement, still in its store buffer */

/* ghost state, for the properties only */
byte pv[MAXP];        /* queued signals in claim order: value, state */
byte ps[MAXP];
byte np = 0;
byte inflight = 0;    /* queued signals claimed and neither run nor refused */
bool claimed[MAXV + 1];
byte accepted = 0;    /* the largest value of a signal that was not refused */
byte done = 0;

inline write_counter(v) {
#ifdef PROP_MONO
    assert(v >= counter);
#endif
    counter = v
}

inline note_claim(v) {
#ifdef PROP_CLAIM
    assert(!claimed[v]);
#endif
    claimed[v] = 1
}

/* The checks of check_claim() on a `last` just loaded (lv, lq): ok = 0
 * INVALID_VALUE, 1 may claim, 2 ILLEGAL_STATE. The counter load and the
 * property of a refusal are one step. */
inline check(v, host, lv, lq, ok) {
    if
    :: v <= lv -> ok = 0
    :: else ->
        ok = 1;
#ifdef OLD_PROTOCOL
        if
        :: host -> atomic {
            if
            :: counter < lv ->
                ok = 2;
#ifdef PROP_ILLEGAL
                assert(inflight > 0 || seen)
#endif
            :: else -> skip
            fi }
        :: else -> skip
        fi
#else
        if
        :: host && lq -> atomic {
            if
            :: counter < lv ->
                ok = 2;
#ifdef PROP_ILLEGAL
                assert(inflight > 0 || seen)
#endif
            :: else -> skip
            fi }
        :: else -> skip
        fi
#endif
    fi
}

/* The successful claim's own bookkeeping (ghost), in the claim's step. */
inline record(v, host) {
    note_claim(v);
    if
    :: !host -> pv[np] = v; ps[np] = CLAIMED; slot = np; np++; inflight++
    :: else -> skip
    fi
}

proctype signaller(byte me) {
    byte v, c, lv, ok, slot, cur, k;
    bool host, lq, held, pq, seen;
    byte pl;
    k = 0;
    do
    :: k == OPS -> break
    :: k < OPS ->
        k++;
        if :: host = 1 :: host = 0 fi;
        /* thread 1 signals 1 then 3, thread 2 signals 2 then 4, each
         * from the host or queued: every order of claims is possible (a
         * value claimed after a larger one is refused, INVALID_VALUE) */
        v = me + 2 * (k - 1);
        held = 0;
        ok = 0;
        /* --- plain_claim() / claim_value() */
retry:
        pend[me] = 1;                       /* announce, buffered */
        c = claimer;                        /* may pass the buffered store */
        if
        :: c == me ->
            atomic { pl = lastv; pq = lastq; seen = inflight > 0 };
            check(v, host, pl, pq, ok);
            if
            :: ok == 1 -> atomic {
                /* the store of last_local: the buffer drains in order */
                if :: pend[me] -> claiming[me] = 1; pend[me] = 0 :: else -> skip fi;
                lastv = v; lastq = !host; record(v, host) }
            :: else -> skip
            fi;
#ifdef OLD_PROTOCOL
            atomic { pend[me] = 0; claiming[me] = 0 };
#else
            if
            :: ok == 1 && host -> held = 1   /* the window stays open over the store */
            :: else -> atomic { pend[me] = 0; claiming[me] = 0 }
            fi;
#endif
            goto claimed_
        :: c == SHARED -> atomic { pend[me] = 0; claiming[me] = 0 }; goto cas
        :: else ->
            atomic { pend[me] = 0; claiming[me] = 0 };
            /* not_the_claimer() */
            if
            :: c == NONE -> atomic {
                if
                :: claimer == NONE -> claimer = me; goto retry
                :: else -> c = claimer
                fi }
            :: else -> skip
            fi;
            if
            :: c == SHARED -> goto cas
            :: else -> skip
            fi;
            claimer = SHARED;
#ifndef NO_BARRIER
            atomic {
                if :: pend[1] -> claiming[1] = 1; pend[1] = 0 :: else -> skip fi;
                if :: pend[2] -> claiming[2] = 1; pend[2] = 0 :: else -> skip fi }
#endif
            (claiming[c] == 0);
            goto cas
        fi;
cas:
        atomic { pl = lastv; pq = lastq; seen = inflight > 0 };
cas_loop:
        check(v, host, pl, pq, ok);
        if
        :: ok == 1 -> atomic {
            if
            :: lastv == pl && lastq == pq -> lastv = v; lastq = !host; record(v, host)
            :: else -> pl = lastv; pq = lastq; seen = inflight > 0; goto cas_loop
            fi }
        :: else -> skip
        fi;
claimed_:
        /* --- the signal after its claim */
        if
        :: ok == 1 && host ->
#ifdef OLD_PROTOCOL
            atomic { write_counter(v) };
#else
            if
            :: held -> atomic { write_counter(v) }; claiming[me] = 0
            :: else ->
                /* raise_counter(): an atomic maximum */
                cur = counter;
                do
                :: cur >= v -> break
                :: else -> atomic {
                    if
                    :: counter == cur -> write_counter(v); break
                    :: else -> cur = counter
                    fi }
                od
            fi;
#endif
            atomic {
#ifdef PROP_LOST
                assert(counter >= v);
#endif
                if :: v > accepted -> accepted = v :: else -> skip fi }
        :: ok == 1 && !host ->
            /* the driver call: queued, or refused and the claim given back */
            if
            :: atomic { ps[slot] = QUEUED;
                        if :: v > accepted -> accepted = v :: else -> skip fi }
            :: atomic {
                if
                :: lastv == v && lastq ->
                    lastv = pl; lastq = pq; claimed[v] = 0
                :: else -> skip
                fi;
                ps[slot] = REFUSED; inflight-- }
            fi
        :: else -> skip
        fi;
        /* dead locals: fewer states */
        d_step { c = 0; pl = 0; pq = 0; seen = 0; cur = 0; slot = 0; ok = 0; held = 0; v = 0 }
    od;
    done++
}

/* The stream: runs the queued writes in claim order, as plain stores. */
active proctype stream() {
    byte i = 0;
end:
    do
    :: i < np && ps[i] == QUEUED -> atomic { write_counter(pv[i]); ps[i] = RAN; inflight-- }; i++
    :: i < np && ps[i] == REFUSED -> i++
    od
}

/* The store buffers of the signalling threads (their announcements). */
active proctype drain() {
end:
    do
    :: atomic { pend[1] -> claiming[1] = 1; pend[1] = 0 }
    :: atomic { pend[2] -> claiming[2] = 1; pend[2] = 0 }
    od
}

/* A reader: evx_fence_get_value() twice. */
active proctype reader() {
    byte a, b;
    a = counter;
    b = counter;
#ifdef PROP_MONO
    assert(b >= a)
#endif
}

/* Once every call has returned and the stream has run: no signal lost. */
active proctype quiescent() {
    (done == NT && inflight == 0);
#ifdef PROP_LOST
    assert(counter == accepted)
#endif
}

init {
#ifdef IPC
    claimer = SHARED;
#endif
    atomic {
        run signaller(1);
        run signaller(2)
    }
}
