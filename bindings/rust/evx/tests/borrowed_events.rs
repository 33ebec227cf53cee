// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Event::wrap and Event::wrap_with_owner: a CUevent made with the driver evx
// opened (the host emulation or libcuda), as another framework makes its
// own, used through evx and never destroyed by it.

mod common;

use std::ffi::{c_void, CString};
use std::os::raw::{c_char, c_int, c_uint};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use common::{dev, gate};
use evx::{sys, Device, Event};

#[link(name = "dl")]
extern "C" {
    fn dlopen(filename: *const c_char, flag: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}

type Ptr = *mut c_void;

/// The driver's event calls, with device 0's primary context made current
/// around each create.
struct Raw {
    retain: extern "C" fn(*mut Ptr, c_int) -> c_int,
    release: extern "C" fn(c_int) -> c_int,
    get_current: extern "C" fn(*mut Ptr) -> c_int,
    set_current: extern "C" fn(Ptr) -> c_int,
    create: extern "C" fn(*mut Ptr, c_uint) -> c_int,
    destroy: extern "C" fn(Ptr) -> c_int,
    record: extern "C" fn(Ptr, Ptr) -> c_int,
    query: extern "C" fn(Ptr) -> c_int,
}

unsafe fn sym<T: Copy>(lib: Ptr, name: &str) -> T {
    let c = CString::new(name).unwrap();
    let p = dlsym(lib, c.as_ptr());
    assert!(!p.is_null(), "the driver has no {}", name);
    std::mem::transmute_copy(&p)
}

impl Raw {
    fn open() -> Raw {
        let path = CString::new(evx::driver_path().expect("driver path")).unwrap();
        unsafe {
            let lib = dlopen(path.as_ptr(), 2 /* RTLD_NOW */);
            assert!(!lib.is_null());
            Raw {
                retain: sym(lib, "cuDevicePrimaryCtxRetain"),
                release: sym(lib, "cuDevicePrimaryCtxRelease_v2"),
                get_current: sym(lib, "cuCtxGetCurrent"),
                set_current: sym(lib, "cuCtxSetCurrent"),
                create: sym(lib, "cuEventCreate"),
                destroy: sym(lib, "cuEventDestroy_v2"),
                record: sym(lib, "cuEventRecord"),
                query: sym(lib, "cuEventQuery"),
            }
        }
    }

    /// Runs `f` with device 0's primary context current on this thread.
    fn in_primary<R>(&self, f: impl FnOnce() -> R) -> R {
        let (mut ctx, mut prev): (Ptr, Ptr) = (std::ptr::null_mut(), std::ptr::null_mut());
        assert_eq!((self.retain)(&mut ctx, 0), 0);
        assert_eq!((self.get_current)(&mut prev), 0);
        assert_eq!((self.set_current)(ctx), 0);
        let r = f();
        assert_eq!((self.set_current)(prev), 0);
        assert_eq!((self.release)(0), 0);
        r
    }

    fn event(&self, flags: c_uint) -> Ptr {
        self.in_primary(|| {
            let mut ev: Ptr = std::ptr::null_mut();
            assert_eq!((self.create)(&mut ev, flags), 0);
            ev
        })
    }
}

#[test]
fn wrap_borrows_without_destroying() {
    let raw = Raw::open();
    let d = dev();
    let s = d.create_stream(0, true).unwrap();
    let native = raw.event(0);
    {
        let e = unsafe { Event::wrap(Some(d), native) }.unwrap();
        assert!(!e.is_owned().unwrap());
        assert_eq!(e.native().unwrap(), native);
        assert_eq!(e.device().unwrap(), d);
        let err = e.flags().unwrap_err();
        assert!(err.is(sys::EVX_ERROR_NOT_SUPPORTED), "{}", err);
        e.record(&s).unwrap();
        e.synchronize().unwrap();
        assert!(e.is_done().unwrap());
        let end = s.record_new().unwrap();
        end.synchronize().unwrap();
        assert!(end.elapsed_since(&e).unwrap() >= 0.0);
    } // the evx handle ends here; the driver event must survive
    assert_eq!((raw.query)(native), 0);
    assert_eq!((raw.destroy)(native), 0);
    assert!(d
        .create_event(evx::EventFlags::DEFAULT)
        .unwrap()
        .is_owned()
        .unwrap());
}

#[test]
fn streams_wait_for_a_borrowed_event() {
    let raw = Raw::open();
    let d = dev();
    let (a, b) = (
        d.create_stream(0, true).unwrap(),
        d.create_stream(0, true).unwrap(),
    );
    let native = raw.event(0);
    let tx = gate(&a);
    assert_eq!((raw.record)(native, a.native().unwrap()), 0); // the maker records it
    let e = unsafe { Event::wrap(Some(d), native) }.unwrap();
    b.wait_event(&e).unwrap();
    let after = b.record_new().unwrap();
    thread::sleep(Duration::from_millis(20));
    assert!(
        !after.is_done().unwrap(),
        "b must wait for the borrowed event"
    );
    assert!(!e.is_done().unwrap());
    tx.send(()).unwrap();
    after.synchronize().unwrap();
    drop(e);
    assert_eq!((raw.destroy)(native), 0);
}

struct CountsDrop(Arc<AtomicUsize>);

impl Drop for CountsDrop {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn wrap_with_owner_keeps_the_owner_until_the_borrow_ends() {
    let raw = Raw::open();
    let d = dev();
    let native = raw.event(0);
    let drops = Arc::new(AtomicUsize::new(0));
    let e = unsafe { Event::wrap_with_owner(Some(d), native, CountsDrop(drops.clone())) }.unwrap();
    assert_eq!(
        drops.load(Ordering::SeqCst),
        0,
        "kept while the borrow lives"
    );
    e.synchronize().unwrap();
    e.destroy().unwrap();
    assert_eq!(
        drops.load(Ordering::SeqCst),
        1,
        "dropped once, when destroy returns"
    );
    // A failed wrap drops the owner before it returns, and only then.
    let err = unsafe {
        Event::wrap_with_owner(
            Some(Device::new(0).unwrap()),
            std::ptr::null_mut(),
            CountsDrop(drops.clone()),
        )
    }
    .unwrap_err();
    assert!(err.is(sys::EVX_ERROR_INVALID_VALUE), "{}", err);
    assert_eq!(drops.load(Ordering::SeqCst), 2);
    assert_eq!((raw.destroy)(native), 0);
}

#[test]
fn wrap_takes_the_current_context() {
    let raw = Raw::open();
    let native = raw.event(0);
    // No context current on this thread: refused, naming the fix.
    let err = unsafe { Event::wrap(None, native) }.unwrap_err();
    assert!(err.is(sys::EVX_ERROR_INVALID_VALUE), "{}", err);
    assert!(err.to_string().contains("no context is current"), "{}", err);
    let e = raw
        .in_primary(|| unsafe { Event::wrap(None, native) })
        .unwrap();
    assert_eq!(e.device().unwrap(), dev());
    drop(e);
    let err = unsafe { Event::wrap(Some(dev()), std::ptr::null_mut()) }.unwrap_err();
    assert!(err.is(sys::EVX_ERROR_INVALID_VALUE), "{}", err);
    assert_eq!((raw.destroy)(native), 0);
}
