// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Fence::reclaim's counts after destroys. Its counts are the process's, so
// this binary holds one test: no other test's fences change them.

mod common;

use std::thread;
use std::time::{Duration, Instant};

use evx::{Fence, ReclaimCount};

/// Reclaims until nothing is pending (up to 20 s): the events evx records
/// behind a fence's queued work complete after the stream's host work.
fn settle() -> ReclaimCount {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let c = Fence::reclaim().unwrap();
        if c.pending == 0 || Instant::now() > deadline {
            return c;
        }
        thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn reclaim_counts_after_destroy() {
    let dev = common::dev();
    let s = dev.create_stream(0, true).unwrap();
    assert_eq!(settle(), ReclaimCount { pending: 0, kept: 0 });

    // a fence whose queued signal has not run: pending until it ran
    let gate = common::gate(&s);
    let f = dev.create_fence(0, false).unwrap();
    f.signal(&s, 1).unwrap();
    f.destroy().unwrap();
    assert_eq!(Fence::reclaim().unwrap(), ReclaimCount { pending: 1, kept: 0 });
    drop(gate);
    s.synchronize().unwrap();
    assert_eq!(settle(), ReclaimCount { pending: 0, kept: 0 });

    // a fence never used on a stream: a plain one's word is back in the
    // pool at once; an interprocess one's page is kept until a trim of its
    // device (the driver's unregister may wait for the device's work)
    dev.create_fence(0, false).unwrap().destroy().unwrap();
    assert_eq!(Fence::reclaim().unwrap(), ReclaimCount { pending: 0, kept: 0 });
    dev.create_fence(0, true).unwrap().destroy().unwrap();
    assert_eq!(Fence::reclaim().unwrap(), ReclaimCount { pending: 0, kept: 1 });
    dev.trim().unwrap();
    assert_eq!(Fence::reclaim().unwrap(), ReclaimCount { pending: 0, kept: 0 });

    // a fence used on more streams than evx keeps inline (8): reclaimed too
    let streams: Vec<_> = (0..20).map(|_| dev.create_stream(0, true).unwrap()).collect();
    let f = dev.create_fence(0, false).unwrap();
    for (i, st) in streams.iter().enumerate() {
        f.signal(st, i as u64 + 1).unwrap();
        st.synchronize().unwrap();
    }
    drop(f);
    assert_eq!(settle(), ReclaimCount { pending: 0, kept: 0 });
}
