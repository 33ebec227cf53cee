// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//! Host functions whose failures surface (evx_stream_launch_host_func_status):
//! the closures still to run and the error texts of those that failed, by
//! the number each launch passes as its user data.

use std::collections::HashMap;
use std::ffi::CString;
use std::fmt;
use std::os::raw::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::{sys, Status};

type Outcome = Result<(), String>;

/// A launched function: run once, or (captured into a graph) at each launch
/// of the graph; kept until the library releases it.
enum Body {
    Once(Option<Box<dyn FnOnce() -> Outcome + Send + 'static>>),
    Repeat(Box<dyn FnMut() -> Outcome + Send + 'static>),
}

/// The library keeps at most 4096 unreported failures; so do these texts
/// (the oldest go).
const MAX_FAILED: usize = 4096;

static NEXT: AtomicUsize = AtomicUsize::new(1);
// Each body has its own lock: two executables of one graph may run it at
// the same time, and a long body must not hold up the others.
static PENDING: Mutex<Option<HashMap<usize, Arc<Mutex<Body>>>>> = Mutex::new(None);
static FAILED: Mutex<Vec<(usize, String)>> = Mutex::new(Vec::new());

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn run(body: &mut Body) -> Outcome {
    match body {
        Body::Once(f) => match f.take() {
            Some(f) => f(),
            None => Err("a FnOnce host function ran again (launch_host_func_result_mut runs at \
                         each launch of a graph)"
                .to_string()),
        },
        Body::Repeat(f) => f(),
    }
}

extern "C" fn trampoline(user: *mut c_void) -> sys::evx_status_t {
    let key = user as usize;
    let body = lock(&PENDING).as_ref().and_then(|m| m.get(&key).cloned());
    let Some(body) = body else { return 0 };
    // A panic must not unwind into the driver: caught, it is a failure.
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&mut lock(&body))));
    let (status, text) = match outcome {
        Ok(Ok(())) => return 0,
        Ok(Err(text)) => (sys::EVX_ERROR_UNKNOWN as i32, text),
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".to_string());
            (sys::EVX_ERROR_UNKNOWN as i32, format!("panicked: {what}"))
        }
    };
    let mut failed = lock(&FAILED);
    if failed.len() == MAX_FAILED {
        failed.remove(0);
    }
    failed.push((key, text));
    status
}

// The options' release: the library no longer calls the function (after its
// run, or once the graph it was captured into is destroyed).
extern "C" fn release(user: *mut c_void) {
    let key = user as usize;
    let body = lock(&PENDING).as_mut().and_then(|m| m.remove(&key));
    drop(body); // outside the table's lock: dropping a closure runs user code
}

/// The error text of the host function whose failure the thread's last
/// failed call reported, forgotten.
pub(crate) fn take_failure() -> Option<String> {
    let mut ud: *mut c_void = std::ptr::null_mut();
    // SAFETY: a thread-local read into a valid out-pointer.
    if unsafe { sys::evx_last_error_host_func(&mut ud) } != 0 {
        return None;
    }
    let key = ud as usize;
    let mut failed = lock(&FAILED);
    let i = failed.iter().position(|(k, _)| *k == key)?;
    Some(failed.remove(i).1)
}

/// Queues `f` (run once) on `stream` through
/// evx_stream_launch_host_func_status. A stream being captured refuses it:
/// a graph runs its nodes at every launch.
pub(crate) fn launch<F, E>(
    stream: sys::evx_stream_t,
    name: &str,
    spin: bool,
    f: F,
) -> Result<(), Status>
where
    F: FnOnce() -> Result<(), E> + Send + 'static,
    E: fmt::Display,
{
    let mut cap: sys::evx_capture_status_t = sys::EVX_CAPTURE_STATUS_NONE;
    // SAFETY: a valid out-pointer; a bad stream is the launch's to report.
    if unsafe { sys::evx_stream_get_capture_status(stream, &mut cap) } == 0
        && cap == sys::EVX_CAPTURE_STATUS_ACTIVE
    {
        return Err(Status::new(
            sys::EVX_ERROR_STREAM_CAPTURE_UNSUPPORTED as i32,
            format!(
                "Stream::launch_host_func_result: host function {name:?}: the stream is being \
                 captured into a graph, which runs it at every launch; a FnOnce runs once \
                 (use Stream::launch_host_func_result_mut)"
            ),
        ));
    }
    queue(stream, name, spin, Body::Once(Some(Box::new(move || f().map_err(|e| e.to_string())))))
}

/// Queues `f` on `stream`, to run once, or at every launch of the graph a
/// capture of `stream` makes it a node of.
pub(crate) fn launch_mut<F, E>(
    stream: sys::evx_stream_t,
    name: &str,
    spin: bool,
    mut f: F,
) -> Result<(), Status>
where
    F: FnMut() -> Result<(), E> + Send + 'static,
    E: fmt::Display,
{
    queue(stream, name, spin, Body::Repeat(Box::new(move || f().map_err(|e| e.to_string()))))
}

fn queue(stream: sys::evx_stream_t, name: &str, spin: bool, body: Body) -> Result<(), Status> {
    let cname = CString::new(name).map_err(|_| {
        Status::new(
            sys::EVX_ERROR_INVALID_VALUE as i32,
            format!("Stream::launch_host_func_result: name {name:?} holds a NUL byte"),
        )
    })?;
    let key = NEXT.fetch_add(1, Ordering::Relaxed);
    lock(&PENDING)
        .get_or_insert_with(HashMap::new)
        .insert(key, Arc::new(Mutex::new(body)));
    let opts = sys::evx_host_func_options_t {
        struct_size: std::mem::size_of::<sys::evx_host_func_options_t>() as u32,
        flags: if spin {
            sys::EVX_HOST_FUNC_SPINWAIT as u32
        } else {
            0
        },
        name: cname.as_ptr(),
        release: Some(release),
    };
    // SAFETY: opts and its name outlive the call, which copies the name.
    let st = unsafe {
        sys::evx_stream_launch_host_func_status(stream, Some(trampoline), key as *mut c_void, &opts)
    };
    if st != 0 {
        let err = Status::last(st);
        // Not queued: the driver never calls it, nor release.
        let body = lock(&PENDING).as_mut().and_then(|m| m.remove(&key));
        drop(body);
        return Err(err);
    }
    Ok(())
}
