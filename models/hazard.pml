/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 *
 * The hazard and reclaim protocol of src/reclaim.hpp and src/reclaim.cpp
 * (docs/design.md, "Safe use against a racing destroy", "Reclaiming what a
 * call held"), for SPIN; checked by models/check.sh.
 *
 * One slot, two calls that use its handle (proctype user) and one destroy
 * (proctype destroyer), with light hazards:
 *   - a call publishes its hazards with a plain store of each half of its
 *     hazard word, one 32-bit store per handle (set_hazards()): the slot is
 *     its first handle (the low half) or its second (the high half, stored
 *     after the low one; the other half names another slot), or its only
 *     one (the low half alone); then it loads the generation (slot_is());
 *     uses the object if it is live;
 *     ends with a plain store of 0, then loads its reclaim flag and, if
 *     set, makes a reclaim pass (release_hazards(), reclaim_held()); a call
 *     that finds the handle dead clears its hazard with an exchange and
 *     makes a pass if the shared list is not empty (bad_handle_held());
 *   - each thread's plain stores wait in its store buffer (x86-TSO: a
 *     later load may pass them; they leave in order; the two halves are
 *     two entries, so a scan may see one and not the other): sb[t], drained by
 *     proctype drain at any time, by the thread's exchange, and by
 *     heavy_barrier() (membarrier(2): every thread runs a full fence);
 *   - the destroy flips the generation (unpublish(), a compare-and-swap),
 *     runs the barrier and reads the hazards (retire(), scan_barrier(),
 *     held()): frees at once, or hands the slot over (defer_held(): push on
 *     the shared list under its mutex, flag the holders, barrier, a pass);
 *   - a reclaim pass (reclaim_pass()): under the mutex, the slot taken off
 *     the list if no hazard holds it; freed outside the mutex by whoever
 *     took it.
 *
 * Properties (assertions): no call uses the object after it is freed; it
 * is freed at most once; once every call has returned and the destroy has
 * returned, it is freed (nothing waits for a later call; -DNO_LEAK_CHECK
 * leaves this one out).
 *
 * The variants that must fail, so that the model is not vacuous, drop one
 * barrier each: -DNO_SCAN_BARRIER (a use after free), -DNO_DEFER_BARRIER
 * (a slot that is never freed); -DLOAD_BEFORE_HALF loads the generation
 * of the second handle before storing its half (a use after free: the
 * order of store and load within a call is what the barrier relies on).
 */

#define NT 2

bool live = 1;          /* the slot's generation is odd */
/* The hazard words as other threads see them, each as whether it names the
 * slot: its low half, its high half. */
bool hlo[NT];
bool hhi[NT];
/* Each thread's buffered hazard stores: LO and HI store a half (naming the
 * slot if the call's handle in that half is the slot's, which[t]), CLEAR
 * stores 0 to the whole word. */
#define CLEAR 0
#define LO 1
#define HI 2
chan sb[NT] = [3] of { byte };
byte which[NT];         /* 0: the slot is the low half's, 1: the high half's */
#define HAZ(t) (hlo[t] || hhi[t])
bool reclaim[NT];
bool onlist = 0;        /* g_held holds the slot */
byte held_count = 0;
bool freed = 0;
byte returned = 0;      /* calls that have returned */
bool destroyed = 0;     /* the destroy has returned */

/* A buffered store of thread t reaches memory. */
inline apply(t, v) {
    if
    :: v == CLEAR -> hlo[t] = 0; hhi[t] = 0
    :: v == LO -> hlo[t] = (which[t] == 0)
    :: v == HI -> hhi[t] = (which[t] == 1)
    :: else -> skip
    fi
}

/* heavy_barrier(): every thread's buffer drains */
inline barrier() {
    d_step {
        byte bt; byte bv;
        bt = 0;
        do
        :: bt < NT ->
            do
            :: nempty(sb[bt]) -> sb[bt]?bv; apply(bt, bv)
            :: empty(sb[bt]) -> break
            od;
            bt++
        :: else -> break
        od
    }
}

/* A locked instruction of thread t (an exchange, a mutex): its own buffer
 * drains first. */
inline drain_own(t) {
    do
    :: nempty(sb[t]) -> sb[t]?ov; apply(t, ov)
    :: empty(sb[t]) -> break
    od;
    ov = 0
}

inline free_it() {
    assert(!freed);
    freed = 1
}

/* reclaim_pass(): the look and the take under the mutex, the free outside */
inline pass(took) {
    atomic {
        took = onlist && !HAZ(0) && !HAZ(1);
        if
        :: took -> onlist = 0; held_count = 0
        :: else -> skip
        fi
    };
    if
    :: took -> free_it()
    :: else -> skip
    fi
}

proctype user(byte t) {
    bool took;
    byte ov;
    bool two;
    /* set_hazards(): the slot is the only handle, the first or the second */
    if
    :: which[t] = 0; two = 0
    :: which[t] = 0; two = 1
    :: which[t] = 1; two = 1
    fi;
#ifdef LOAD_BEFORE_HALF
    if
    :: which[t] == 1 -> two = 0    /* the store of the slot's half moves below */
    :: else -> skip
    fi;
#endif
    sb[t]!LO;                      /* a plain 32-bit store */
    if
    :: two -> sb[t]!HI             /* a second plain 32-bit store */
    :: else -> skip
    fi;
    if
    :: live ->                     /* slot_is(): the generation load */
#ifdef LOAD_BEFORE_HALF
        if
        :: which[t] == 1 -> sb[t]!HI
        :: else -> skip
        fi;
#endif
        assert(!freed);            /* the call uses the object */
        sb[t]!CLEAR;               /* release_hazards(): a plain store */
        if
        :: reclaim[t] ->           /* its own flag: may pass the store */
            /* reclaim_held(): an exchange of the flag, then the pass */
            d_step { drain_own(t); reclaim[t] = 0 };
            pass(took)
        :: else -> skip
        fi
    :: else ->
        /* bad_handle_held(): an exchange (the buffer drains first) */
        d_step { drain_own(t); hlo[t] = 0; hhi[t] = 0 };
        if
        :: held_count > 0 -> pass(took)
        :: else -> skip
        fi
    fi;
    returned++
}

active proctype destroyer() {
    bool took, any;
    live = 0;                      /* unpublish() */
#ifndef NO_SCAN_BARRIER
    barrier();
#endif
    atomic { any = HAZ(0) || HAZ(1) };   /* held(): both halves of each word */
    if
    :: !any -> free_it()
    :: else ->
        /* defer_held() */
        atomic { onlist = 1; held_count = 1 };
        if :: HAZ(0) -> reclaim[0] = 1 :: else -> skip fi;
        if :: HAZ(1) -> reclaim[1] = 1 :: else -> skip fi;
#ifndef NO_DEFER_BARRIER
        barrier();
#endif
        pass(took)
    fi;
    destroyed = 1
}

/* The store buffers drain at any time, in order. */
active proctype drain() {
    byte bv;
end:
    do
    :: atomic { nempty(sb[0]) -> sb[0]?bv; apply(0, bv); bv = 0 }
    :: atomic { nempty(sb[1]) -> sb[1]?bv; apply(1, bv); bv = 0 }
    od
}

/* Every call and the destroy returned, the buffers drained: freed. */
active proctype quiescent() {
    (returned == NT && destroyed && empty(sb[0]) && empty(sb[1]));
#ifndef NO_LEAK_CHECK
    assert(freed)
#endif
}

init {
    atomic {
        run user(0);
        run user(1)
    }
}
