// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0

//! Await events from any executor: a [`Future`] for event completion, and
//! the notifier's file descriptor for callers with a reactor of their own
//! (`include/evx/notify.h`).
//!
//! ```no_run
//! # fn block_on<F: std::future::Future>(f: F) -> F::Output { unimplemented!() }
//! use evx::{notify, Device, EventFlags};
//! let dev = Device::new(0)?;
//! let stream = dev.create_stream(0, true)?;
//! let done = dev.create_event(EventFlags::DISABLE_TIMING)?;
//! // ... queue GPU work on stream ...
//! done.record(&stream)?;
//! let fut = notify::wait(&done)?;   // the watch is made here
//! block_on(fut)?;                   // any executor: tokio, async-std, your own
//! # Ok::<(), evx::Status>(())
//! ```
//!
//! No thread blocks and none polls: the future's waker is woken from the
//! notifier's callback, which the driver's host-function thread (or the
//! notifier's pump thread, for work that had completed when the pump came
//! to it) runs when the event's work completes. The watch is made when [`wait`] (or [`Notifier::wait`]) is
//! called and captures the event's last record at that moment, as
//! `cuStreamWaitEvent` does; re-recording or dropping the event afterwards
//! does not change it. Dropping the future before it completes is allowed.
//!
//! Wakers are woken on one of those threads: a waker must not call evx or
//! CUDA (the usual wakers only schedule a task or
//! unpark a thread).

use std::future::Future;
use std::os::raw::{c_int, c_void};
use std::os::unix::io::RawFd;
use std::pin::Pin;
use std::ptr;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use crate::{check, sys, Event, EventFlags, Result, Status, Stream};

/// A completion notifier (`evx_notifier_t`): watch events under tokens and
/// read the tokens back when its file descriptor is readable, or make
/// futures. Dropping it waits until every pending watch is delivered (so
/// every future made from it completes first).
pub struct Notifier {
    raw: sys::evx_notifier_t,
}

handle_type!(Notifier, sys::evx_notifier_destroy);

struct Shared {
    // done, the waker, and the failure of a host function before the event
    state: Mutex<(bool, Option<Waker>, Option<Status>)>,
}

unsafe extern "C" fn wake_trampoline(user: *mut c_void) {
    complete(user, None);
}

// The callback of an event watch: `status` is that of a host function that
// failed before the event, whose message (and Rust error) this thread's
// last error gives during the callback.
unsafe extern "C" fn status_trampoline(status: sys::evx_status_t, user: *mut c_void) {
    let failure = if status != 0 { Some(Status::last(status)) } else { None };
    complete(user, failure);
}

unsafe fn complete(user: *mut c_void, failure: Option<Status>) {
    // SAFETY: `user` is the Arc<Shared> leaked by new_future, and the
    // notifier runs each callback exactly once.
    let shared: Arc<Shared> = Arc::from_raw(user as *const Shared);
    // A panic must not unwind into the driver.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        let waker = {
            let mut st = shared.state.lock().unwrap_or_else(|e| e.into_inner());
            st.0 = true;
            st.2 = failure;
            st.1.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }));
}

impl Notifier {
    /// A notifier with the default options.
    pub fn new() -> Result<Notifier> {
        Notifier::create(ptr::null())
    }

    /// A notifier with at most `max` internal streams per device (1 to
    /// `sys::EVX_NOTIFIER_MAX_STREAMS`; see `evx/notify.h` on head-of-line
    /// blocking).
    pub fn with_max_streams(max: u32) -> Result<Notifier> {
        if max == 0 || max > sys::EVX_NOTIFIER_MAX_STREAMS {
            return Err(Status::new(
                sys::EVX_ERROR_INVALID_VALUE as i32,
                format!(
                    "evx::notify::Notifier::with_max_streams({}): give 1 to {}",
                    max,
                    sys::EVX_NOTIFIER_MAX_STREAMS
                ),
            ));
        }
        let opts = sys::evx_notifier_options_t {
            struct_size: std::mem::size_of::<sys::evx_notifier_options_t>() as u32,
            flags: sys::EVX_NOTIFIER_DEFAULT,
            max_streams_per_device: max,
        };
        Notifier::create(&opts)
    }

    fn create(opts: *const sys::evx_notifier_options_t) -> Result<Notifier> {
        let mut raw: sys::evx_notifier_t = ptr::null_mut();
        check(unsafe { sys::evx_notifier_create(opts, &mut raw) })?;
        Ok(Notifier { raw })
    }

    /// The file descriptor (an `eventfd`), readable while tokens are queued.
    /// Owned by the notifier: poll it, never read or close it; remove it
    /// from any poll set before the notifier is dropped.
    pub fn fd(&self) -> Result<RawFd> {
        let mut fd: c_int = -1;
        check(unsafe { sys::evx_notifier_get_fd(self.raw, &mut fd) })?;
        Ok(fd)
    }

    /// Watches `event` under `token`: the token is queued once the work the
    /// event's last record marks now has completed.
    pub fn watch(&self, event: &Event, token: u64) -> Result<()> {
        check(unsafe { sys::evx_notifier_watch(self.raw, event.as_raw(), token) })
    }

    /// Takes queued tokens into `tokens` (oldest first, at most
    /// `u32::MAX` per call); returns how many. Never blocks.
    pub fn read(&self, tokens: &mut [u64]) -> Result<usize> {
        if tokens.is_empty() {
            return Err(Status::new(
                sys::EVX_ERROR_INVALID_VALUE as i32,
                "evx::notify::Notifier::read: tokens is empty (give room for 1 or more)",
            ));
        }
        let cap = u32::try_from(tokens.len()).unwrap_or(u32::MAX);
        let mut n: u32 = 0;
        check(unsafe { sys::evx_notifier_read(self.raw, tokens.as_mut_ptr(), cap, &mut n) })?;
        Ok(n as usize)
    }

    /// `(pending, queued)`: watches not yet delivered, tokens not yet read.
    pub fn counts(&self) -> Result<(u64, u64)> {
        let (mut p, mut q) = (0u64, 0u64);
        check(unsafe { sys::evx_notifier_get_counts(self.raw, &mut p, &mut q) })?;
        Ok((p, q))
    }

    /// A future that completes once the work the event's last record marks
    /// now has completed (at once for a never-recorded event).
    pub fn wait(&self, event: &Event) -> Result<EventFuture> {
        watch_future(self.raw, event)
    }

    /// The evx handle.
    pub fn as_raw(&self) -> sys::evx_notifier_t {
        self.raw
    }

    /// Destroys the notifier now (waiting for pending watches), reporting
    /// the status that drop ignores.
    pub fn destroy(self) -> Result<()> {
        let raw = self.raw;
        std::mem::forget(self);
        check(unsafe { sys::evx_notifier_destroy(raw) })
    }
}

fn watch_future(raw: sys::evx_notifier_t, event: &Event) -> Result<EventFuture> {
    new_future(|user| unsafe {
        sys::evx_notifier_watch_callback_status(raw, event.as_raw(), Some(status_trampoline), user)
    })
}

// A future completed by a notifier callback that `watch` arranges (a fence
// watch): `watch(callback, user_data)` returns the call's status.
pub(crate) fn callback_future(
    watch: impl FnOnce(sys::evx_notify_fn_t, *mut c_void) -> sys::evx_status_t,
) -> Result<EventFuture> {
    new_future(|user| watch(Some(wake_trampoline), user))
}

fn new_future(watch: impl FnOnce(*mut c_void) -> sys::evx_status_t) -> Result<EventFuture> {
    let shared = Arc::new(Shared { state: Mutex::new((false, None, None)) });
    let user = Arc::into_raw(shared.clone()) as *mut c_void;
    let st = watch(user);
    if st != 0 {
        // SAFETY: on failure the callback never runs: take the reference back.
        drop(unsafe { Arc::from_raw(user as *const Shared) });
        return Err(Status::last(st));
    }
    Ok(EventFuture { shared })
}

/// The completion of an event's work (or a fence's value reached), as a
/// [`Future`] (output `Result<()>`). `Ok` once complete, or, for an event,
/// the `Status` of a host function launched with
/// `Stream::launch_host_func_result` before the event's last record (on the
/// same stream handle) that failed and whose failure no other call reported
/// (`evx_notifier_watch_callback_status`); its message ends with the
/// function's error or panic. `Send`, `'static`, works with any executor.
pub struct EventFuture {
    shared: Arc<Shared>,
}

impl EventFuture {
    /// Whether it has completed, without a waker.
    pub fn is_done(&self) -> bool {
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner()).0
    }
}

impl Future for EventFuture {
    type Output = Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        let mut st = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
        if st.0 {
            return Poll::Ready(match st.2.take() {
                Some(failure) => Err(failure),
                None => Ok(()),
            });
        }
        match &st.1 {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => st.1 = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}

impl std::fmt::Debug for EventFuture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EventFuture {{ done: {} }}", self.is_done())
    }
}

// The process-wide notifier of wait() and synchronize(), made on first use
// and never destroyed.
static DEFAULT: Mutex<Option<Notifier>> = Mutex::new(None);

pub(crate) fn default_raw() -> Result<sys::evx_notifier_t> {
    let mut n = DEFAULT.lock().unwrap_or_else(|e| e.into_inner());
    if n.is_none() {
        *n = Some(Notifier::new()?);
    }
    Ok(n.as_ref().map(|n| n.raw).unwrap_or(ptr::null_mut()))
}

/// A future for the event's work, from a process-wide notifier.
pub fn wait(event: &Event) -> Result<EventFuture> {
    watch_future(default_raw()?, event)
}

/// A future for all work queued on the stream so far, from a process-wide
/// notifier.
pub fn synchronize(stream: &Stream) -> Result<EventFuture> {
    let ev = stream.device()?.create_event(EventFlags::DISABLE_TIMING)?;
    ev.record(stream)?;
    wait(&ev) // dropping the event after the watch is allowed
}
