// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0

//! Interprocess events (`include/evx/ipc.h`): [`Event::ipc_handle`] and
//! [`Device::open_ipc_event`].

use std::ptr;

use crate::{check, sys, Device, Event, Result};

/// Bytes in an IPC event handle (`EVX_IPC_HANDLE_SIZE`).
pub const IPC_HANDLE_SIZE: usize = sys::EVX_IPC_HANDLE_SIZE as usize;

impl Event {
    /// The event's IPC handle, to send to another process, which opens it
    /// with [`Device::open_ipc_event`]. The event must have been made with
    /// `EventFlags::INTERPROCESS | EventFlags::DISABLE_TIMING`; any other is
    /// refused with `EVX_ERROR_INVALID_HANDLE`.
    pub fn ipc_handle(&self) -> Result<[u8; IPC_HANDLE_SIZE]> {
        let mut h = sys::evx_ipc_event_handle_t { reserved: [0; IPC_HANDLE_SIZE] };
        check(unsafe { sys::evx_event_get_ipc_handle(self.raw, &mut h) })?;
        Ok(h.reserved)
    }
}

impl Device {
    /// A new event of this device for the IPC handle of an event of another
    /// process. It has no timing; dropping it closes it. The driver refuses
    /// a handle exported by this same process (`EVX_ERROR_INVALID_CONTEXT`).
    pub fn open_ipc_event(self, handle: &[u8; IPC_HANDLE_SIZE]) -> Result<Event> {
        let h = sys::evx_ipc_event_handle_t { reserved: *handle };
        let mut raw: sys::evx_event_t = ptr::null_mut();
        check(unsafe { sys::evx_device_open_ipc_event(self.0, &h, &mut raw) })?;
        Ok(Event { raw })
    }
}
