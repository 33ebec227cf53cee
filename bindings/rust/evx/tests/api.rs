// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// The safe layer against a driver: run with EVX_DRIVER=host (the host
// emulation) here, or on a GPU. "Slow work" is a host function that blocks
// until the test releases it, so pending states are exact, not timed.

use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use evx::{sys, Device, EventFlags, EventPool, Status, Stream, Timeline, Timer};

mod common;
use common::{dev, gate};

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn handles_are_send_and_sync() {
    assert_send_sync::<evx::Event>();
    assert_send_sync::<evx::Stream>();
    assert_send_sync::<evx::Timer>();
    assert_send_sync::<evx::Timeline>();
    assert_send_sync::<evx::EventPool>();
    assert_send_sync::<Status>();
}

#[test]
fn driver_and_devices() {
    evx::driver_open().expect("driver opens");
    assert!(Device::count().unwrap() >= 1);
    assert!(evx::driver_version().unwrap() > 0);
    assert!(!evx::driver_path().unwrap().is_empty());
    let _ = evx::is_emulation().unwrap();
    let want = format!("{}.{}.{}", sys::EVX_VERSION_MAJOR, sys::EVX_VERSION_MINOR, sys::EVX_VERSION_PATCH);
    assert_eq!(evx::library_version(), want);
    let (least, greatest) = dev().stream_priority_range().unwrap();
    assert!(greatest <= least);
}

#[test]
fn device_out_of_range_is_refused() {
    let n = Device::count().unwrap();
    let err = Device::new(n).unwrap_err();
    assert!(err.is(sys::EVX_ERROR_INVALID_DEVICE));
    assert_eq!(err.name(), "EVX_ERROR_INVALID_DEVICE");
    assert!(err.message().contains(&n.to_string()), "{}", err);
}

#[test]
fn record_query_sync_elapsed() {
    let d = dev();
    let s = d.create_stream(0, true).unwrap();
    let a = d.create_event(EventFlags::DEFAULT).unwrap();
    let b = d.create_event(EventFlags::DEFAULT).unwrap();
    assert!(a.is_done().unwrap(), "a never-recorded event counts as done");
    a.record(&s).unwrap();
    b.record(&s).unwrap();
    b.synchronize().unwrap();
    assert!(a.is_done().unwrap() && b.is_done().unwrap());
    let ms = b.elapsed_since(&a).unwrap();
    assert!(ms >= 0.0 && ms < 1000.0, "{}", ms);
    assert_eq!(a.elapsed_since(&a).unwrap(), 0.0);
    assert_eq!(a.device().unwrap(), d);
    assert_eq!(a.flags().unwrap(), EventFlags::DEFAULT);
    assert!(!a.native().unwrap().is_null());
    s.synchronize().unwrap();
    assert!(s.is_done().unwrap());
}

#[test]
fn pending_work_is_seen_as_pending() {
    let d = dev();
    let s = d.create_stream(0, true).unwrap();
    let ev = d.create_event(EventFlags::DEFAULT).unwrap();
    let start = d.create_event(EventFlags::DEFAULT).unwrap();
    start.record(&s).unwrap();
    let tx = gate(&s);
    ev.record(&s).unwrap();
    assert_eq!(ev.is_done().unwrap(), false);
    assert_eq!(s.is_done().unwrap(), false);
    let err = ev.elapsed_since(&start).unwrap_err();
    assert!(err.is(sys::EVX_ERROR_NOT_READY), "{}", err);
    tx.send(()).unwrap();
    ev.synchronize().unwrap();
    assert!(ev.is_done().unwrap());
    assert!(ev.elapsed_since(&start).unwrap() >= 0.0);
}

#[test]
fn errors_carry_status_name_and_message() {
    let d = dev();
    // Elapsed time with a never-recorded event.
    let a = d.create_event(EventFlags::DEFAULT).unwrap();
    let b = d.create_event(EventFlags::DEFAULT).unwrap();
    let err = b.elapsed_since(&a).unwrap_err();
    assert!(err.is(sys::EVX_ERROR_INVALID_HANDLE), "{}", err);
    assert_eq!(err.name(), "EVX_ERROR_INVALID_HANDLE");
    assert!(!err.message().is_empty());
    assert!(format!("{}", err).starts_with("EVX_ERROR_INVALID_HANDLE (400): "));

    // INTERPROCESS without DISABLE_TIMING.
    let err = d.create_event(EventFlags::INTERPROCESS).unwrap_err();
    assert!(err.is(sys::EVX_ERROR_INVALID_VALUE), "{}", err);
    assert!(!err.message().is_empty());

    // A priority out of range is refused, never clamped.
    let (least, greatest) = d.stream_priority_range().unwrap();
    let err = d.create_stream(greatest - 100, true).unwrap_err();
    assert!(err.is(sys::EVX_ERROR_INVALID_VALUE), "{}", err);
    let err = d.create_stream(least + 7, true).unwrap_err();
    assert!(err.is(sys::EVX_ERROR_INVALID_VALUE), "{}", err);

    // A destroyed handle.
    let ev = d.create_event(EventFlags::DEFAULT).unwrap();
    let raw = ev.into_raw();
    assert_eq!(unsafe { sys::evx_event_destroy(raw) }, 0);
    let dead = unsafe { evx::Event::from_raw(raw) };
    let err = dead.is_done().unwrap_err();
    assert!(err.is(sys::EVX_ERROR_INVALID_HANDLE));
    let err = dead.destroy().unwrap_err();
    assert!(err.is(sys::EVX_ERROR_INVALID_HANDLE));
}

#[test]
fn timing_disabled_event_refuses_elapsed() {
    let d = dev();
    let s = d.create_stream(0, true).unwrap();
    let a = d.create_event(EventFlags::DISABLE_TIMING).unwrap();
    let b = d.create_event(EventFlags::DEFAULT).unwrap();
    assert!(a.flags().unwrap().contains(EventFlags::DISABLE_TIMING));
    a.record(&s).unwrap();
    b.record(&s).unwrap();
    s.synchronize().unwrap();
    assert!(b.elapsed_since(&a).unwrap_err().is(sys::EVX_ERROR_INVALID_HANDLE));
}

#[test]
fn streams_priority_flags_device_owned() {
    let d = dev();
    let (least, greatest) = d.stream_priority_range().unwrap();
    let s = d.create_stream(greatest, false).unwrap();
    assert_eq!(s.priority().unwrap(), greatest);
    assert_eq!(s.flags().unwrap(), sys::EVX_STREAM_DEFAULT as u32);
    assert_eq!(s.device().unwrap(), d);
    assert!(s.is_owned().unwrap());
    let t = d.create_stream(least, true).unwrap();
    assert_eq!(t.flags().unwrap(), sys::EVX_STREAM_NON_BLOCKING as u32);
    assert!(!t.native().unwrap().is_null());
    s.destroy().unwrap();
}

#[test]
fn wrap_raw_borrows_without_destroying() {
    let d = dev();
    let owner = d.create_stream(0, true).unwrap();
    let native = owner.native().unwrap();
    {
        let borrowed = unsafe { Stream::wrap_raw(None, native) }.unwrap();
        assert!(!borrowed.is_owned().unwrap());
        assert_eq!(borrowed.native().unwrap(), native);
        assert_eq!(borrowed.device().unwrap(), d);
        let ev = borrowed.record_new().unwrap();
        ev.synchronize().unwrap();
    } // the borrowed handle ends here; the driver stream must survive
    let ev = owner.record_new().unwrap();
    ev.synchronize().unwrap();
    // A default stream needs a device.
    let err = unsafe { Stream::wrap_raw(None, sys::EVX_STREAM_LEGACY) }.unwrap_err();
    assert!(err.is(sys::EVX_ERROR_INVALID_VALUE), "{}", err);
    let legacy = unsafe { Stream::wrap_raw(Some(d), sys::EVX_STREAM_LEGACY) }.unwrap();
    assert_eq!(legacy.native().unwrap(), sys::EVX_STREAM_LEGACY);
    legacy.record_new().unwrap().synchronize().unwrap();
}

#[test]
fn wait_orders_streams() {
    let d = dev();
    let a = d.create_stream(0, true).unwrap();
    let b = d.create_stream(0, true).unwrap();
    let tx = gate(&a);
    b.wait_stream(&a).unwrap();
    let on_b = b.record_new().unwrap();
    thread::sleep(Duration::from_millis(20));
    assert_eq!(on_b.is_done().unwrap(), false, "b must wait for a's gate");
    tx.send(()).unwrap();
    on_b.synchronize().unwrap();
    let ev = a.record_new().unwrap();
    b.wait_event(&ev).unwrap();
    b.synchronize().unwrap();
}

#[test]
fn host_functions_run_in_order_and_panics_are_contained() {
    let d = dev();
    let s = d.create_stream(0, true).unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    for i in 0..20 {
        let log = Arc::clone(&log);
        s.launch_host_func(move || log.lock().unwrap().push(i)).unwrap();
        if i == 10 {
            s.launch_host_func(|| panic!("a host function panics (expected by the test)"))
                .unwrap();
        }
    }
    s.synchronize().unwrap();
    assert_eq!(*log.lock().unwrap(), (0..20).collect::<Vec<_>>());
}

#[test]
fn timer_guard_marks_stop_on_drop() {
    let d = dev();
    let s = d.create_stream(0, true).unwrap();
    let mut timer = d.create_timer().unwrap();
    // Not started: the stop and the reading are refused.
    let err = timer.synchronize().unwrap_err();
    assert!(err.is(sys::EVX_ERROR_ILLEGAL_STATE), "{}", err);
    let tx;
    {
        let _guard = timer.start(&s).unwrap();
        tx = gate(&s);
    }
    assert_eq!(timer.elapsed().unwrap(), None, "the stop waits behind the gate");
    tx.send(()).unwrap();
    let ms = timer.synchronize().unwrap();
    assert!(ms >= 0.0);
    assert_eq!(timer.elapsed().unwrap(), Some(ms));
    let guard = timer.start(&s).unwrap();
    guard.stop().unwrap();
    assert!(timer.synchronize().unwrap() >= 0.0);
}

#[test]
fn timeline_intervals() {
    let d = dev();
    let s = d.create_stream(0, true).unwrap();
    let tl = d.create_timeline(4).unwrap();
    assert_eq!(tl.intervals().unwrap(), Vec::<f32>::new());
    for i in 0..4 {
        assert_eq!(tl.mark(&s).unwrap(), i);
    }
    let err = tl.mark(&s).unwrap_err();
    assert!(err.is(sys::EVX_ERROR_OUT_OF_MEMORY), "{}", err);
    assert_eq!(tl.count().unwrap(), 4);
    let iv = tl.intervals().unwrap();
    assert_eq!(iv.len(), 3);
    assert!(iv.iter().all(|&x| x >= 0.0));
    tl.reset().unwrap();
    assert_eq!(tl.count().unwrap(), 0);
    assert!(d.create_timeline(1).unwrap_err().is(sys::EVX_ERROR_INVALID_VALUE));
}

#[test]
fn event_pool_bounds_and_stats() {
    let d = dev();
    let s = d.create_stream(0, true).unwrap();
    let pool = d.create_event_pool(EventFlags::DEFAULT, 2, 1).unwrap();
    let st = pool.stats().unwrap();
    assert_eq!((st.capacity, st.idle, st.in_use), (2, 1, 0));
    let a = pool.acquire().unwrap();
    let b = pool.acquire().unwrap();
    let err = pool.acquire().unwrap_err();
    assert!(err.is(sys::EVX_ERROR_OUT_OF_MEMORY), "{}", err);
    assert!(!err.message().is_empty());
    a.record(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(pool.stats().unwrap().exhausted_total, 1);
    pool.release(a).unwrap();
    drop(b); // destroy returns it to its pool
    s.synchronize().unwrap();
    let st = pool.stats().unwrap();
    assert_eq!(st.in_use, 0);
    assert_eq!(st.acquired_total, 2);
    // An event of another pool is refused.
    let other = d.create_event_pool(EventFlags::DEFAULT, 1, 0).unwrap();
    let foreign = other.acquire().unwrap();
    assert!(pool.release(foreign).unwrap_err().is(sys::EVX_ERROR_INVALID_VALUE));
    assert_eq!(other.stats().unwrap().in_use, 0, "the refused event went home on drop");
    assert!(d.create_event_pool(EventFlags::INTERPROCESS | EventFlags::DISABLE_TIMING, 1, 0)
        .unwrap_err()
        .is(sys::EVX_ERROR_INVALID_VALUE));
}

#[test]
fn events_used_across_threads() {
    let d = dev();
    let s = Arc::new(d.create_stream(0, true).unwrap());
    let ev = Arc::new(d.create_event(EventFlags::DEFAULT).unwrap());
    let mut joins = Vec::new();
    for _ in 0..4 {
        let s = Arc::clone(&s);
        let ev = Arc::clone(&ev);
        joins.push(thread::spawn(move || {
            for _ in 0..200 {
                ev.record(&s).unwrap();
                let _ = ev.is_done().unwrap();
            }
        }));
    }
    for j in joins {
        j.join().unwrap();
    }
    s.synchronize().unwrap();
    assert!(ev.is_done().unwrap());
}

// The constructors before Device::create_timer, create_timeline and
// create_event_pool stay, deprecated, and make the same objects.
#[test]
#[allow(deprecated)]
fn deprecated_constructors_still_work() {
    let d = dev();
    let timer: Timer = Timer::new(d).unwrap();
    let tl: Timeline = Timeline::new(d, 4).unwrap();
    let pool: EventPool = EventPool::new(d, EventFlags::DEFAULT, 1, 0).unwrap();
    assert!(format!("{:?}", timer).starts_with("Timer(0x"));
    assert!(format!("{:?}", tl).starts_with("Timeline(0x"));
    assert!(format!("{:?}", pool).starts_with("EventPool(0x"));
    assert!(Timeline::new(d, 1).unwrap_err().is(sys::EVX_ERROR_INVALID_VALUE));
}
