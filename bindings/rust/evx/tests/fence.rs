// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// evx::Fence against a driver (EVX_DRIVER=host here): waits queued before
// their signals, host signals and waits with timeouts, the rule that values
// grow, futures of fence values, IPC handles, bad values refused before C,
// waits with flags (FLUSH refused where the device cannot flush).

mod common;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::{Duration, Instant};

use evx::notify::Notifier;
use evx::{sys, WaitFlags, FENCE_MAX_VALUE};

struct Unpark(thread::Thread);
impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Polls a future on this thread until ready or `limit` passed.
fn block_on<F: Future + Unpin>(mut f: F, limit: Duration) -> Option<F::Output> {
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Poll::Ready(v) = Pin::new(&mut f).poll(&mut cx) {
            return Some(v);
        }
        thread::park_timeout(Duration::from_millis(200));
    }
    None
}

#[test]
fn wait_before_signal_on_two_streams() {
    let dev = common::dev();
    let a = dev.create_stream(0, true).unwrap();
    let b = dev.create_stream(0, true).unwrap();
    let fence = dev.create_fence(0, false).unwrap();
    let passed = Arc::new(AtomicBool::new(false));
    b.wait_fence(&fence, 1).unwrap();
    let p = passed.clone();
    b.launch_host_func(move || p.store(true, Ordering::SeqCst)).unwrap();
    let gate = common::gate(&a);
    fence.signal(&a, 1).unwrap();
    thread::sleep(Duration::from_millis(100));
    assert!(!passed.load(Ordering::SeqCst), "B passed its wait before A signalled");
    assert_eq!(fence.value().unwrap(), 0);
    drop(gate);
    b.synchronize().unwrap();
    assert!(passed.load(Ordering::SeqCst));
    assert_eq!(fence.value().unwrap(), 1);
}

#[test]
fn host_signal_and_wait_with_timeout() {
    let fence = common::dev().create_fence(3, false).unwrap();
    assert!(fence.wait(3, Some(Duration::ZERO)).unwrap());
    assert!(!fence.wait(4, Some(Duration::ZERO)).unwrap());
    let t0 = Instant::now();
    assert!(!fence.wait(4, Some(Duration::from_millis(50))).unwrap());
    assert!(t0.elapsed() >= Duration::from_millis(49));
    let f = Arc::new(fence);
    let f2 = f.clone();
    let th = thread::spawn(move || {
        thread::sleep(Duration::from_millis(30));
        f2.signal_host(4).unwrap();
    });
    assert!(f.wait(4, None).unwrap());
    th.join().unwrap();
    assert_eq!(f.value().unwrap(), 4);
}

#[test]
fn values_only_grow() {
    let dev = common::dev();
    let s = dev.create_stream(0, true).unwrap();
    let fence = dev.create_fence(10, false).unwrap();
    let e = fence.signal_host(10).unwrap_err();
    assert!(e.is(sys::EVX_ERROR_INVALID_VALUE), "{}", e);
    assert!(e.message().contains("value 10 is not above 10"), "{}", e);
    fence.signal(&s, 11).unwrap();
    let e = fence.signal(&s, 11).unwrap_err();
    assert!(e.is(sys::EVX_ERROR_INVALID_VALUE), "{}", e);
    s.synchronize().unwrap();
    fence.signal_host(12).unwrap();
    assert_eq!(fence.value().unwrap(), 12);
}

#[test]
fn bad_values_refused_before_c() {
    let dev = common::dev();
    let e = dev.create_fence(FENCE_MAX_VALUE + 1, false).unwrap_err();
    assert!(e.is(sys::EVX_ERROR_INVALID_VALUE));
    assert!(e.message().contains("evx::Device::create_fence"), "{}", e);
    assert!(e.message().contains("9223372036854775808"), "{}", e);
    let fence = dev.create_fence(0, false).unwrap();
    let e = fence.wait(0, Some(Duration::MAX)).unwrap_err();
    assert!(e.message().contains("evx::Fence::wait") && e.message().contains("timeout"), "{}", e);
    let e = fence.wait_async(u64::MAX).unwrap_err();
    assert!(e.message().contains("18446744073709551615"), "{}", e);
    // a fence of another process only: not exportable without interprocess
    assert!(fence.ipc_handle().unwrap_err().is(sys::EVX_ERROR_INVALID_HANDLE));
}

#[test]
fn futures_of_fence_values() {
    let dev = common::dev();
    let s = dev.create_stream(0, true).unwrap();
    let fence = dev.create_fence(0, false).unwrap();
    let fut = fence.wait_async(2).unwrap();
    assert!(!fut.is_done());
    fence.signal_host(1).unwrap();
    thread::sleep(Duration::from_millis(50));
    assert!(!fut.is_done(), "a future of 2 completed at 1");
    fence.signal(&s, 2).unwrap();
    assert!(block_on(fut, Duration::from_secs(20)).expect("the future completed").is_ok());
    // a notifier's own futures and tokens
    let n = Notifier::new().unwrap();
    let done = n.wait_fence(&fence, 2).unwrap();
    assert!(block_on(done, Duration::from_secs(20)).is_some());
    n.watch_fence(&fence, 3, 33).unwrap();
    fence.signal_host(3).unwrap();
    let mut tok = [0u64; 4];
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut got = 0;
    while got == 0 && Instant::now() < deadline {
        got = n.read(&mut tok).unwrap();
        thread::sleep(Duration::from_millis(2));
    }
    assert_eq!((got, tok[0]), (1, 33));
}

#[test]
fn ipc_handle_refused_in_own_process() {
    let dev = common::dev();
    let fence = dev.create_fence(0, true).unwrap();
    let h = fence.ipc_handle().unwrap();
    let e = dev.open_ipc_fence(&h).unwrap_err();
    assert!(e.is(sys::EVX_ERROR_INVALID_CONTEXT), "{}", e);
    fence.destroy().unwrap();
}

#[test]
fn flush_wait_refused_where_the_device_cannot() {
    let dev = common::dev();
    let s = dev.create_stream(0, true).unwrap();
    let fence = dev.create_fence(1, false).unwrap();
    let after = dev.create_fence(0, false).unwrap();
    s.wait_fence_with(&fence, 1, WaitFlags::DEFAULT).unwrap();
    assert!(WaitFlags::FLUSH.contains(WaitFlags::DEFAULT));
    assert!(!WaitFlags::DEFAULT.contains(WaitFlags::FLUSH));
    match s.wait_fence_with(&fence, 2, WaitFlags::FLUSH) {
        // a device with GPUDirect RDMA flushes: release the wait
        Ok(()) => {
            assert!(!evx::is_emulation().unwrap(), "the emulation cannot flush remote writes");
            fence.signal_host(2).unwrap();
        }
        Err(e) => {
            assert!(e.is(sys::EVX_ERROR_NOT_SUPPORTED), "{}", e);
            let m = e.message();
            assert!(m.contains("evx_stream_wait_fence_with_flags"), "{}", m);
            assert!(m.contains("device 0"), "{}", m);
            assert!(m.contains("CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES"), "{}", m);
        }
    }
    // nothing was queued by the refusal: the stream runs on past it
    after.signal(&s, 1).unwrap();
    assert!(after.wait(1, Some(Duration::from_secs(20))).unwrap(), "the stream is blocked");
    let e = s.wait_fence_with(&fence, FENCE_MAX_VALUE + 1, WaitFlags::FLUSH).unwrap_err();
    assert!(e.is(sys::EVX_ERROR_INVALID_VALUE), "{}", e);
    let m = e.message();
    assert!(m.contains("evx::Stream::wait_fence_with"), "{}", m);
    assert!(m.contains("9223372036854775808"), "{}", m);
    s.synchronize().unwrap();
}
