// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// evx::notify against a driver (EVX_DRIVER=host here): futures driven by a
// minimal executor written below (std only), the file descriptor polled with
// poll(2), dropping futures early, many futures on one thread, bad input.

use std::future::Future;
use std::os::raw::{c_int, c_short, c_ulong};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use evx::notify::{self, Notifier};
use evx::{sys, Event, EventFlags};

// ---- a minimal executor ---------------------------------------------------

struct ThreadWaker {
    thread: Thread,
    wakes: AtomicUsize,
}

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
        self.thread.unpark();
    }
}

/// Polls every future on this thread, parking in between, until all are
/// ready or `limit` passed; returns (outputs, wakes seen).
fn run_all<F: Future + Unpin>(mut futs: Vec<F>, limit: Duration) -> (Vec<Option<F::Output>>, usize) {
    let tw = Arc::new(ThreadWaker { thread: thread::current(), wakes: AtomicUsize::new(0) });
    let waker = Waker::from(tw.clone());
    let mut cx = Context::from_waker(&waker);
    let mut out: Vec<Option<F::Output>> = futs.iter().map(|_| None).collect();
    let mut left = futs.len();
    let deadline = Instant::now() + limit;
    while left > 0 && Instant::now() < deadline {
        for (i, f) in futs.iter_mut().enumerate() {
            if out[i].is_none() {
                if let Poll::Ready(v) = Pin::new(f).poll(&mut cx) {
                    out[i] = Some(v);
                    left -= 1;
                }
            }
        }
        if left > 0 {
            thread::park_timeout(Duration::from_millis(200));
        }
    }
    (out, tw.wakes.load(Ordering::SeqCst))
}

fn block_on<F: Future + Unpin>(f: F, limit: Duration) -> Option<F::Output> {
    run_all(vec![f], limit).0.pop().unwrap()
}

// ---- helpers ----------------------------------------------------------------

mod common;
use common::{dev, gate};

#[repr(C)]
struct PollFd {
    fd: c_int,
    events: c_short,
    revents: c_short,
}

extern "C" {
    fn poll(fds: *mut PollFd, nfds: c_ulong, timeout: c_int) -> c_int;
}

fn readable(fd: c_int, timeout_ms: c_int) -> bool {
    let mut p = PollFd { fd, events: 1 /* POLLIN */, revents: 0 };
    unsafe { poll(&mut p, 1, timeout_ms) == 1 && (p.revents & 1) != 0 }
}

const LIMIT: Duration = Duration::from_secs(10);

// ---- tests ------------------------------------------------------------------

#[test]
fn future_of_a_never_recorded_event_is_ready() {
    let ev = dev().create_event(EventFlags::DEFAULT).unwrap();
    let r = block_on(notify::wait(&ev).unwrap(), LIMIT).expect("completes");
    assert!(r.is_ok());
}

#[test]
fn future_waits_for_the_work_and_is_woken() {
    let d = dev();
    let s = d.create_stream(0, true).unwrap();
    let n = Notifier::new().unwrap();
    let tx = gate(&s);
    let ev = d.create_event(EventFlags::DISABLE_TIMING).unwrap();
    ev.record(&s).unwrap();
    let fut = n.wait(&ev).unwrap();
    let sync = notify::synchronize(&s).unwrap();
    thread::sleep(Duration::from_millis(30));
    assert!(!fut.is_done() && !sync.is_done());
    let opener = thread::spawn(move || {
        thread::sleep(Duration::from_millis(50));
        tx.send(()).unwrap();
    });
    let (out, wakes) = run_all(vec![fut, sync], LIMIT);
    opener.join().unwrap();
    assert!(out.iter().all(|o| matches!(o, Some(Ok(())))));
    assert!(wakes >= 1, "the executor was never woken");
    assert!(ev.is_done().unwrap() && s.is_done().unwrap());
}

#[test]
fn watch_keeps_the_record_it_captured() {
    let d = dev();
    let held = d.create_stream(0, true).unwrap();
    let idle = d.create_stream(0, true).unwrap();
    let tx = gate(&held);
    let ev = d.create_event(EventFlags::DEFAULT).unwrap();
    ev.record(&held).unwrap();
    let fut = notify::wait(&ev).unwrap();
    ev.record(&idle).unwrap(); // overwrites the event
    ev.synchronize().unwrap();
    drop(ev); // allowed after the watch
    thread::sleep(Duration::from_millis(30));
    assert!(!fut.is_done());
    tx.send(()).unwrap();
    assert!(matches!(block_on(fut, LIMIT), Some(Ok(()))));
}

#[test]
fn fd_and_tokens() {
    let d = dev();
    let s = d.create_stream(0, true).unwrap();
    let n = Notifier::with_max_streams(2).unwrap();
    let fd = n.fd().unwrap();
    assert!(fd >= 0);
    assert!(!readable(fd, 0));
    let tx = gate(&s);
    let events: Vec<Event> = (0..40).map(|_| d.create_event(EventFlags::DISABLE_TIMING).unwrap()).collect();
    for (i, e) in events.iter().enumerate() {
        e.record(&s).unwrap();
        n.watch(e, 100 + i as u64).unwrap();
    }
    assert_eq!(n.counts().unwrap(), (40, 0));
    assert!(!readable(fd, 20));
    tx.send(()).unwrap();
    let mut seen = vec![0u32; 40];
    let mut buf = [0u64; 7];
    let deadline = Instant::now() + LIMIT;
    let mut total = 0;
    while total < 40 && Instant::now() < deadline {
        readable(fd, 100);
        let k = n.read(&mut buf).unwrap();
        for t in &buf[..k] {
            seen[(*t - 100) as usize] += 1;
        }
        total += k;
    }
    assert!(seen.iter().all(|&c| c == 1), "{:?}", seen);
    assert!(!readable(fd, 0));
    assert_eq!(n.counts().unwrap(), (0, 0));
    n.destroy().unwrap();
}

#[test]
fn dropping_a_future_early_is_safe() {
    let d = dev();
    let s = d.create_stream(0, true).unwrap();
    let tx = gate(&s);
    let ev = d.create_event(EventFlags::DISABLE_TIMING).unwrap();
    ev.record(&s).unwrap();
    let n = Notifier::new().unwrap();
    let early = n.wait(&ev).unwrap();
    let polled = n.wait(&ev).unwrap();
    drop(early);
    // poll once (registering a waker), then drop it too
    let tw = Arc::new(ThreadWaker { thread: thread::current(), wakes: AtomicUsize::new(0) });
    let waker = Waker::from(tw.clone());
    let mut polled = polled;
    assert!(Pin::new(&mut polled).poll(&mut Context::from_waker(&waker)).is_pending());
    drop(polled);
    tx.send(()).unwrap();
    // dropping the notifier waits for both watches; the callbacks ran
    n.destroy().unwrap();
    assert_eq!(tw.wakes.load(Ordering::SeqCst), 1);
}

#[test]
fn many_futures_on_one_thread() {
    let d = dev();
    let s = d.create_stream(0, true).unwrap();
    let tx = gate(&s);
    let events: Vec<Event> = (0..2000).map(|_| d.create_event(EventFlags::DISABLE_TIMING).unwrap()).collect();
    for e in &events {
        e.record(&s).unwrap();
    }
    let futs: Vec<_> = events.iter().map(|e| notify::wait(e).unwrap()).collect();
    tx.send(()).unwrap();
    let (out, _) = run_all(futs, Duration::from_secs(60));
    assert!(out.iter().all(|o| matches!(o, Some(Ok(())))));
}

#[test]
fn futures_are_send_and_complete_on_other_threads() {
    fn assert_send<T: Send + 'static>(_: &T) {}
    let d = dev();
    let ev = d.create_event(EventFlags::DEFAULT).unwrap();
    let fut = notify::wait(&ev).unwrap();
    assert_send(&fut);
    let r = thread::spawn(move || block_on(fut, LIMIT)).join().unwrap();
    assert!(matches!(r, Some(Ok(()))));
}

#[test]
fn bad_input() {
    let n = Notifier::new().unwrap();
    let e = n.read(&mut []).unwrap_err();
    assert!(e.is(sys::EVX_ERROR_INVALID_VALUE));
    assert!(e.message().contains("Notifier::read"), "{}", e);
    for bad in [0u32, 65] {
        let e = Notifier::with_max_streams(bad).unwrap_err();
        assert!(e.is(sys::EVX_ERROR_INVALID_VALUE));
        assert!(e.message().contains(&format!("with_max_streams({})", bad)), "{}", e);
    }
    // a destroyed event (evx checks handles: a status, never a crash)
    let raw = dev().create_event(EventFlags::DEFAULT).unwrap().into_raw();
    unsafe { sys::evx_event_destroy(raw) };
    let dead = unsafe { Event::from_raw(raw) };
    let e = n.watch(&dead, 1).unwrap_err();
    assert!(e.is(sys::EVX_ERROR_INVALID_HANDLE));
    assert!(e.message().contains("evx_notifier_watch"), "{}", e);
    let e = n.wait(&dead).unwrap_err();
    assert!(e.is(sys::EVX_ERROR_INVALID_HANDLE));
    assert!(e.message().contains("evx_notifier_watch_callback"), "{}", e);
    std::mem::forget(dead); // its handle is dead already
    assert_eq!(n.counts().unwrap(), (0, 0));
}
