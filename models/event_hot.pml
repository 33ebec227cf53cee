/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 *
 * The refresh of an event's hot word (src/event_state.hpp,
 * event_refresh_hot(); Event::hot in src/event_object.hpp), for SPIN;
 * checked by models/check.sh.
 *
 * Event::hot folds fields of the event (its context, `former`,
 * `recorded`, hf_id) into one word that the common record, wait and
 * elapsed time test once. Any thread may change one of those fields (a
 * first record, a record on a stream with host functions, a move to
 * another context, a claim of the driver state) and then refreshes hot:
 * it computes hot from the fields, stores it, and reads the fields again,
 * storing again until the two agree. Each store is an exchange: the one
 * that comes last reads from the release sequence of every changer's
 * first exchange after its change, so the reads that check it see the
 * changes that came before, as in SPIN's interleaving.
 *
 * NT threads, each changing one field (a two-valued one, as the bits of
 * hot are) ROUNDS times, each change followed by a refresh; the fields
 * are read one at a time (hot_of() makes several loads). Property
 * (assertion): once every thread is done, hot is what the fields give.
 * (A call that reads hot while a change is under way races with it; the
 * paths it may take then are those of the race before hot, see
 * event_object.hpp.)
 *
 * The variant that must fail, so that the model is not vacuous:
 * -DNO_RECHECK stores once, without reading the fields again: a thread
 * that read the fields before another's change may store after that
 * thread's refresh, and hot stays stale.
 */

#define NT 3
#define ROUNDS 2

bit field[NT];
byte hot = 0;       /* f() of the initial fields (all 0) */
byte done = 0;

/* hot_of(): the fields, read one by one, into v */
inline hot_of(v) {
    byte i_;
    v = 0;
    i_ = 0;
    do
    :: i_ < NT -> v = v | (field[i_] << i_); i_++
    :: else -> break
    od
}

proctype changer(byte me) {
    byte r = 0;
    byte h, now;
    do
    :: r < ROUNDS ->
        field[me] = 1 - field[me];   /* a change of one field */
        hot_of(h);
#ifdef NO_RECHECK
        hot = h;
#else
        do
        :: hot = h;
           hot_of(now);
           if
           :: now == h -> break
           :: else -> h = now
           fi
        od;
#endif
        r++
    :: else -> break
    od;
    done++
}

init {
    byte i = 0;
    byte want;
    atomic {
        do
        :: i < NT -> run changer(i); i++
        :: else -> break
        od
    }
    done == NT;
    hot_of(want);
    assert(hot == want)
}
