// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Borrowed events (evx_event_wrap_external): a CUevent made elsewhere
// (PyTorch, CuPy, cuda.core, the CUDA runtime) used through an evx Event,
// as Stream::wrap_raw borrows a stream. Drop ends only the evx handle.

use std::ffi::c_void;
use std::os::raw::c_int;
use std::ptr;

use crate::{check, sys, Device, Event, Result, Status};

// The device argument of a borrow: the device's ordinal, whose primary
// context is the event's, or the calling thread's current context.
fn device_arg(device: Option<Device>) -> c_int {
    match device {
        Some(d) => d.0,
        None => sys::EVX_DEVICE_CURRENT,
    }
}

type Owner = Box<dyn std::any::Any + Send>;

// The release callback of wrap_with_owner: the borrow has ended (after
// every racing call on the handle returned), so the owner may go.
extern "C" fn drop_owner(user: *mut c_void) {
    // SAFETY: `user` is the Box<Owner> leaked by wrap_with_owner, and the
    // library calls release exactly once, never for a failed wrap.
    let owner: Box<Owner> = unsafe { Box::from_raw(user as *mut Owner) };
    // A panicking drop must not unwind into the library.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(owner)));
}

impl Event {
    /// Borrows an event made elsewhere: evx records it, makes streams wait
    /// for it, queries, synchronizes and times it, and never destroys it.
    /// `device`: the event's device, whose primary context must be the one
    /// the event was made in; None takes the calling thread's current
    /// context and its device (the driver cannot tell an event's device).
    /// Its flags are unknown ([`Event::flags`] gives
    /// `EVX_ERROR_NOT_SUPPORTED`); [`Event::is_owned`] is false.
    ///
    /// # Safety
    /// `native` must be a live `CUevent` (`cudaEvent_t`) of that context and
    /// stay alive for as long as the returned Event is used: evx cannot
    /// check a foreign pointer. [`Event::wrap_with_owner`] ties that to a
    /// value the borrow keeps.
    pub unsafe fn wrap(device: Option<Device>, native: *mut c_void) -> Result<Event> {
        let mut raw: sys::evx_event_t = ptr::null_mut();
        check(sys::evx_event_wrap_external(
            device_arg(device),
            native,
            &mut raw,
        ))?;
        Ok(Event { raw })
    }

    /// As [`Event::wrap`], keeping `owner` (what keeps the `CUevent` alive:
    /// the framework's event object, an `Arc` of it) until the borrow has
    /// ended: it is dropped when the Event is dropped or destroyed, after
    /// every call racing with that has returned
    /// (`evx_event_wrap_external_with_release`). A failed wrap drops it
    /// before returning.
    ///
    /// # Safety
    /// `native` must be a live `CUevent` of that context for as long as
    /// `owner` lives.
    pub unsafe fn wrap_with_owner<T: Send + 'static>(
        device: Option<Device>,
        native: *mut c_void,
        owner: T,
    ) -> Result<Event> {
        let boxed: Box<Owner> = Box::new(Box::new(owner));
        let user = Box::into_raw(boxed) as *mut c_void;
        let mut raw: sys::evx_event_t = ptr::null_mut();
        let st = sys::evx_event_wrap_external_with_release(
            device_arg(device),
            native,
            Some(drop_owner),
            user,
            &mut raw,
        );
        if st != 0 {
            // The message first: the owner's drop may call evx.
            let err = Status::last(st);
            // Never called for a failed wrap: the owner is still ours.
            drop(Box::from_raw(user as *mut Owner));
            return Err(err);
        }
        Ok(Event { raw })
    }

    /// Whether evx owns the driver event (made by [`Device::create_event`],
    /// a pool, an IPC open) or borrows it ([`Event::wrap`]).
    pub fn is_owned(&self) -> Result<bool> {
        let mut o: c_int = 0;
        check(unsafe { sys::evx_event_is_owned(self.raw, &mut o) })?;
        Ok(o != 0)
    }
}
