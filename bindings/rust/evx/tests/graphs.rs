// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Timelines and the timer guard on a stream captured into a CUDA graph
// (docs/graphs.md): the marks are nodes of the graph, read after each
// launch. The capture and the graph are made with the driver evx opened (the
// host emulation or libcuda), as other code would make them.

use std::ffi::{c_void, CString};
use std::os::raw::{c_char, c_int, c_ulonglong};
use std::sync::atomic::{AtomicU64, Ordering};

use evx::{sys, Device};

#[link(name = "dl")]
extern "C" {
    fn dlopen(filename: *const c_char, flag: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}

type Ptr = *mut c_void;
type HostFn = extern "C" fn(Ptr);

/// The driver's capture and graph calls, on device 0's primary context
/// (current while the value lives: cuGraphInstantiate needs one).
struct Graphs {
    retain: extern "C" fn(*mut Ptr, c_int) -> c_int,
    release: extern "C" fn(c_int) -> c_int,
    set_current: extern "C" fn(Ptr) -> c_int,
    begin: extern "C" fn(Ptr, c_int) -> c_int,
    end: extern "C" fn(Ptr, *mut Ptr) -> c_int,
    instantiate: extern "C" fn(*mut Ptr, Ptr, c_ulonglong) -> c_int,
    launch: extern "C" fn(Ptr, Ptr) -> c_int,
    exec_destroy: extern "C" fn(Ptr) -> c_int,
    graph_destroy: extern "C" fn(Ptr) -> c_int,
    host_func: extern "C" fn(Ptr, HostFn, Ptr) -> c_int,
}

unsafe fn sym<T: Copy>(lib: Ptr, name: &str) -> T {
    let c = CString::new(name).unwrap();
    let p = dlsym(lib, c.as_ptr());
    assert!(!p.is_null(), "the driver has no {}", name);
    std::mem::transmute_copy(&p)
}

impl Graphs {
    fn open() -> Graphs {
        let path = CString::new(evx::driver_path().expect("driver path")).unwrap();
        unsafe {
            let lib = dlopen(path.as_ptr(), 2 /* RTLD_NOW */);
            assert!(!lib.is_null());
            let g = Graphs {
                retain: sym(lib, "cuDevicePrimaryCtxRetain"),
                release: sym(lib, "cuDevicePrimaryCtxRelease_v2"),
                set_current: sym(lib, "cuCtxSetCurrent"),
                begin: sym(lib, "cuStreamBeginCapture_v2"),
                end: sym(lib, "cuStreamEndCapture"),
                instantiate: sym(lib, "cuGraphInstantiateWithFlags"),
                launch: sym(lib, "cuGraphLaunch"),
                exec_destroy: sym(lib, "cuGraphExecDestroy"),
                graph_destroy: sym(lib, "cuGraphDestroy"),
                host_func: sym(lib, "cuLaunchHostFunc"),
            };
            let mut ctx: Ptr = std::ptr::null_mut();
            assert_eq!((g.retain)(&mut ctx, 0), 0);
            assert_eq!((g.set_current)(ctx), 0);
            g
        }
    }
}

impl Drop for Graphs {
    fn drop(&mut self) {
        (self.set_current)(std::ptr::null_mut());
        (self.release)(0);
    }
}

static SLEEP_MS: AtomicU64 = AtomicU64::new(5);

// A sleep run at each launch of the graph (evx's launch_host_func is for
// one run; a graph's host node runs at every launch).
extern "C" fn sleep_host(_: Ptr) {
    std::thread::sleep(std::time::Duration::from_millis(
        SLEEP_MS.load(Ordering::SeqCst),
    ));
}

const RELAXED: c_int = 2;

// The tests of this file run one at a time: a failure in a graph launch is
// the device's, reported by whichever waiting call on it ends first, and
// cargo runs tests on threads of one process.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn timeline_and_timer_in_a_captured_graph() {
    let _serial = serial();
    let dev = Device::new(0).expect("device 0");
    let stream = dev.create_stream(0, true).unwrap();
    let native = stream.native().unwrap();
    let cu = Graphs::open();
    let tl = dev.create_timeline(4).unwrap();
    let mut timer = dev.create_timer().unwrap();

    tl.mark(&stream).unwrap(); // before the capture
    assert_eq!((cu.begin)(native, RELAXED), 0);
    tl.mark(&stream).unwrap();
    {
        let _guard = timer.start(&stream).unwrap(); // stops on drop, in the graph
        assert_eq!((cu.host_func)(native, sleep_host, std::ptr::null_mut()), 0);
    }
    tl.mark(&stream).unwrap();
    let mut graph: Ptr = std::ptr::null_mut();
    assert_eq!((cu.end)(native, &mut graph), 0);

    // before any launch: refused, naming the mark
    let err = tl.intervals().unwrap_err();
    assert!(err.is(sys::EVX_ERROR_ILLEGAL_STATE), "{}", err);
    assert!(err.message().contains("mark 1"), "{}", err);
    let err = timer.synchronize().unwrap_err();
    assert!(err.is(sys::EVX_ERROR_ILLEGAL_STATE), "{}", err);
    assert!(err.message().contains("the start mark"), "{}", err);

    let mut exec: Ptr = std::ptr::null_mut();
    assert_eq!((cu.instantiate)(&mut exec, graph, 0), 0);
    for (launch, ms) in [(0, 5u64), (1, 30)] {
        SLEEP_MS.store(ms, Ordering::SeqCst);
        assert_eq!((cu.launch)(exec, native), 0);
        let iv = tl.intervals().unwrap(); // waits for this launch's marks
        let t = timer.synchronize().unwrap();
        let least = (ms - 1) as f32;
        assert!(
            iv.len() == 2 && iv[1] >= least,
            "launch {}: {:?}",
            launch,
            iv
        );
        assert!(t >= least, "launch {}: timer {} ms", launch, t);
    }
    stream.synchronize().unwrap();
    SLEEP_MS.store(5, Ordering::SeqCst);
    assert_eq!((cu.exec_destroy)(exec), 0);
    assert_eq!((cu.graph_destroy)(graph), 0);
}

// Sets its flag when dropped: tells when evx released a captured closure.
struct DropFlag(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[test]
fn failing_host_function_in_a_captured_graph() {
    use std::sync::atomic::{AtomicBool, AtomicU32};
    use std::sync::Arc;

    let _serial = serial();
    let dev = Device::new(0).expect("device 0");
    let stream = dev.create_stream(0, true).unwrap();
    let other = dev.create_stream(0, true).unwrap();
    let native = stream.native().unwrap();
    let other_native = other.native().unwrap();
    let cu = Graphs::open();
    let runs = Arc::new(AtomicU32::new(0));
    let dropped = Arc::new(AtomicBool::new(false));

    assert_eq!((cu.begin)(native, RELAXED), 0);
    // a FnOnce is refused in a capture: the graph would run it again
    let err = stream
        .launch_host_func_result("once", || Ok::<(), String>(()))
        .unwrap_err();
    assert!(err.is(sys::EVX_ERROR_STREAM_CAPTURE_UNSUPPORTED), "{}", err);
    let (r, flag) = (runs.clone(), DropFlag(dropped.clone()));
    stream
        .launch_host_func_result_mut("graph_check", move || {
            let _keep = &flag;
            let k = r.fetch_add(1, Ordering::SeqCst) + 1;
            if k == 2 {
                Err(format!("launch {k} fails on purpose"))
            } else {
                Ok(())
            }
        })
        .unwrap();
    let mut graph: Ptr = std::ptr::null_mut();
    assert_eq!((cu.end)(native, &mut graph), 0);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let mut exec: Ptr = std::ptr::null_mut();
    assert_eq!((cu.instantiate)(&mut exec, graph, 0), 0);

    assert_eq!((cu.launch)(exec, other_native), 0);
    other.synchronize().unwrap();
    assert_eq!((cu.launch)(exec, other_native), 0);
    let err = other.synchronize().unwrap_err();
    assert!(err.is(sys::EVX_ERROR_UNKNOWN), "{}", err);
    assert!(err.message().contains("graph_check"), "{}", err);
    assert!(err.message().contains("launch of its graph"), "{}", err);
    assert!(err.message().contains("launch 2 fails on purpose"), "{}", err);
    stream.synchronize().unwrap(); // reported once
    assert_eq!((cu.launch)(exec, other_native), 0);
    other.synchronize().unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    assert!(!dropped.load(Ordering::SeqCst), "the graph keeps its closure");

    assert_eq!((cu.exec_destroy)(exec), 0);
    assert_eq!((cu.graph_destroy)(graph), 0);
    // the driver may release it on its own thread
    for _ in 0..1000 {
        if dropped.load(Ordering::SeqCst) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(dropped.load(Ordering::SeqCst), "destroying the graph drops the closure");
}
