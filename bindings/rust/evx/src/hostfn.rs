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
use std::sync::Mutex;

use crate::{sys, Status};

pub(crate) type HostFnResult = Box<dyn FnOnce() -> Result<(), String> + Send + 'static>;

/// The library keeps at most 4096 unreported failures; so do these texts
/// (the oldest go).
const MAX_FAILED: usize = 4096;

static NEXT: AtomicUsize = AtomicUsize::new(1);
static PENDING: Mutex<Option<HashMap<usize, HostFnResult>>> = Mutex::new(None);
static FAILED: Mutex<Vec<(usize, String)>> = Mutex::new(Vec::new());

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

extern "C" fn trampoline(user: *mut c_void) -> sys::evx_status_t {
    let key = user as usize;
    let f = lock(&PENDING).as_mut().and_then(|m| m.remove(&key));
    let Some(f) = f else { return 0 };
    // A panic must not unwind into the driver: caught, it is a failure.
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
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

/// Queues `f` on `stream` through evx_stream_launch_host_func_status.
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
    let cname = CString::new(name).map_err(|_| {
        Status::new(
            sys::EVX_ERROR_INVALID_VALUE as i32,
            format!("Stream::launch_host_func_result: name {name:?} holds a NUL byte"),
        )
    })?;
    let key = NEXT.fetch_add(1, Ordering::Relaxed);
    let boxed: HostFnResult = Box::new(move || f().map_err(|e| e.to_string()));
    lock(&PENDING)
        .get_or_insert_with(HashMap::new)
        .insert(key, boxed);
    let opts = sys::evx_host_func_options_t {
        struct_size: std::mem::size_of::<sys::evx_host_func_options_t>() as u32,
        flags: if spin {
            sys::EVX_HOST_FUNC_SPINWAIT as u32
        } else {
            0
        },
        name: cname.as_ptr(),
    };
    // SAFETY: opts and its name outlive the call, which copies the name.
    let st = unsafe {
        sys::evx_stream_launch_host_func_status(stream, Some(trampoline), key as *mut c_void, &opts)
    };
    if st != 0 {
        let err = Status::last(st);
        // Not queued: the driver never calls it.
        lock(&PENDING).as_mut().and_then(|m| m.remove(&key));
        return Err(err);
    }
    Ok(())
}
