// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Host functions whose failures surface, and timeline traces: run with
// EVX_DRIVER=host here, or on a GPU.

use std::thread;
use std::time::Duration;

use evx::{sys, MarkKind};

#[allow(dead_code)] // the gate is for other test files
mod common;
use common::dev;

#[test]
fn an_err_surfaces_once_at_synchronize() {
    let s = dev().create_stream(0, true).unwrap();
    s.launch_host_func_result("load_batch", || Err::<(), _>("file missing"))
        .unwrap();
    s.launch_host_func_result("fine", || Ok::<(), String>(()))
        .unwrap();
    let e = s.synchronize().unwrap_err();
    assert!(e.is(sys::EVX_ERROR_UNKNOWN), "{e}");
    assert!(e.message().contains("load_batch"), "{e}");
    assert!(e.message().ends_with(": file missing"), "{e}");
    s.synchronize().expect("reported once");
}

#[test]
fn a_panic_surfaces_at_the_event_after_it() {
    let s = dev().create_stream(0, true).unwrap();
    let before = s.record_new().unwrap();
    s.launch_host_func_result("step", || -> Result<(), String> { panic!("boom") })
        .unwrap();
    let after = s.record_new().unwrap();
    before
        .synchronize()
        .expect("recorded before the host function");
    let e = after.synchronize().unwrap_err();
    assert!(
        e.message().contains("step") && e.message().contains("panicked: boom"),
        "{e}"
    );
    after.synchronize().unwrap();
    s.synchronize().unwrap();
}

#[test]
fn spin_and_names_checked() {
    let s = dev().create_stream(0, true).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    s.launch_host_func_result_spin("spin", move || tx.send(7).map_err(|e| e.to_string()))
        .unwrap();
    s.synchronize().unwrap();
    assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), 7);
    let e = s
        .launch_host_func_result("a\0b", || Ok::<(), String>(()))
        .unwrap_err();
    assert!(e.is(sys::EVX_ERROR_INVALID_VALUE));
    let long = "x".repeat(200);
    let e = s
        .launch_host_func_result(&long, || Ok::<(), String>(()))
        .unwrap_err();
    assert!(
        e.is(sys::EVX_ERROR_INVALID_VALUE) && e.message().contains("200"),
        "{e}"
    );
    let _ = evx::host_func_sync_mode().unwrap();
}

#[test]
fn timeline_trace_same_as_c_and_marks() {
    let d = dev();
    let a = d.create_stream(0, true).unwrap();
    let tl = d.create_timeline(16).unwrap();
    {
        let _step = tl.range("step", &a).unwrap();
        a.launch_host_func(|| thread::sleep(Duration::from_millis(2)))
            .unwrap();
        tl.mark_labeled(&a, "loss", MarkKind::Point).unwrap();
        tl.mark(&a).unwrap();
    }
    let marks = tl.marks().unwrap();
    assert_eq!(marks.len(), 4);
    assert_eq!(marks[0].kind, MarkKind::Begin);
    assert_eq!(marks[0].label, "step");
    assert_eq!(marks[3].kind, MarkKind::End);
    assert!(marks[1].ms >= 1.5, "{:?}", marks);
    assert_eq!(marks[2].label, "");
    let dir = std::env::temp_dir();
    let p = dir.join(format!("evx-rust-trace-{}.json", std::process::id()));
    tl.write_trace(&p, Some("rust")).unwrap();
    let text = std::fs::read_to_string(&p).unwrap();
    std::fs::remove_file(&p).ok();
    assert!(
        text.starts_with("{\"displayTimeUnit\":\"ms\",\"traceEvents\":["),
        "{text}"
    );
    assert!(
        text.contains("\"ph\":\"B\"") && text.contains("\"ph\":\"E\""),
        "{text}"
    );
    assert!(
        text.contains("\"name\":\"loss\",\"cat\":\"evx\",\"ph\":\"X\""),
        "{text}"
    );
    assert!(text.contains("\"args\":{\"name\":\"rust\"}"), "{text}");
    let e = tl
        .mark_labeled(&a, &"y".repeat(64), MarkKind::Point)
        .unwrap_err();
    assert!(e.is(sys::EVX_ERROR_INVALID_VALUE));
}

/// Polls `f` on this thread until it is ready or 5 s passed.
fn block_on<F: std::future::Future + Unpin>(mut f: F) -> Option<F::Output> {
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};
    struct Unpark(thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while std::time::Instant::now() < deadline {
        if let Poll::Ready(v) = std::pin::Pin::new(&mut f).poll(&mut cx) {
            return Some(v);
        }
        thread::park_timeout(Duration::from_millis(50));
    }
    None
}

#[test]
fn a_failure_before_the_event_fails_its_future_once() {
    let s = dev().create_stream(0, true).unwrap();
    let before = s.record_new().unwrap();
    s.launch_host_func_result("parse_shard", || Err::<(), _>("bad header"))
        .unwrap();
    let after = s.record_new().unwrap();
    block_on(evx::notify::wait(&before).unwrap())
        .expect("the future completes")
        .expect("recorded before the host function");
    let e = block_on(evx::notify::wait(&after).unwrap())
        .expect("the future completes")
        .unwrap_err();
    assert!(e.is(sys::EVX_ERROR_UNKNOWN), "{e}");
    assert!(
        e.message().contains("evx_notifier_watch_callback_status")
            && e.message().contains("parse_shard")
            && e.message().ends_with(": bad header"),
        "{e}"
    );
    // reported once: the next future and the stream find nothing
    block_on(evx::notify::wait(&after).unwrap())
        .expect("the future completes")
        .expect("reported once");
    s.synchronize().unwrap();
}
