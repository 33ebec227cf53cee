// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0

//! Fences (`include/evx/fence.h`): a counter of a device that only grows,
//! signalled and waited for on streams, on the host, between processes and
//! from any executor.
//!
//! ```no_run
//! # fn block_on<F: std::future::Future>(f: F) -> F::Output { unimplemented!() }
//! use evx::Device;
//! let dev = Device::new(0)?;
//! let (a, b) = (dev.create_stream(0, true)?, dev.create_stream(0, true)?);
//! let fence = dev.create_fence(0, false)?;
//! b.wait_fence(&fence, 1)?;        // queued before the signal it waits for
//! // ... queue work on a ...
//! fence.signal(&a, 1)?;
//! block_on(fence.wait_async(1)?)?; // or fence.wait(1, None)
//! # Ok::<(), evx::Status>(())
//! ```

use std::os::raw::{c_int, c_uint};
use std::os::unix::io::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::ptr;
use std::time::Duration;

use crate::notify::{callback_future, default_raw, EventFuture, Notifier};
use crate::{check, sys, Device, Result, Status, Stream};

/// Bytes in a fence's IPC handle (`EVX_IPC_FENCE_HANDLE_SIZE`).
pub const FENCE_IPC_HANDLE_SIZE: usize = sys::EVX_IPC_FENCE_HANDLE_SIZE as usize;

/// The largest value a fence holds (`EVX_FENCE_MAX_VALUE`, 2^63 - 1).
pub const FENCE_MAX_VALUE: u64 = sys::EVX_FENCE_MAX_VALUE;

/// A fence: a 64-bit counter of a device that only grows. Every signal must
/// be above the last value signalled or queued. Destroyed on drop; work
/// already queued on it still runs (see `evx/fence.h`).
pub struct Fence {
    raw: sys::evx_fence_t,
}

handle_type!(Fence, sys::evx_fence_destroy);

fn check_value(call: &str, value: u64) -> Result<()> {
    if value > FENCE_MAX_VALUE {
        return Err(Status::new(
            sys::EVX_ERROR_INVALID_VALUE as i32,
            format!("{}: value {} is above FENCE_MAX_VALUE (2^63 - 1)", call, value),
        ));
    }
    Ok(())
}

impl Device {
    /// A new fence of this device holding `initial`; `interprocess`: it may
    /// be exported to other processes ([`Fence::ipc_handle`]).
    pub fn create_fence(self, initial: u64, interprocess: bool) -> Result<Fence> {
        check_value("evx::Device::create_fence", initial)?;
        let flags = if interprocess { sys::EVX_FENCE_INTERPROCESS } else { sys::EVX_FENCE_DEFAULT };
        let mut raw: sys::evx_fence_t = ptr::null_mut();
        check(unsafe { sys::evx_device_create_fence(self.ordinal(), initial, flags, &mut raw) })?;
        Ok(Fence { raw })
    }

    /// Opens the fence of another process from its IPC handle, as a fence
    /// of this device. A handle exported by this same process is refused
    /// (`EVX_ERROR_INVALID_CONTEXT`).
    pub fn open_ipc_fence(self, handle: &[u8; FENCE_IPC_HANDLE_SIZE]) -> Result<Fence> {
        let h = sys::evx_ipc_fence_handle_t { reserved: *handle };
        let mut raw: sys::evx_fence_t = ptr::null_mut();
        check(unsafe { sys::evx_device_open_ipc_fence(self.ordinal(), &h, &mut raw) })?;
        Ok(Fence { raw })
    }

    /// Opens, as a fence of this device, the fence whose descriptor
    /// [`Fence::export_fd`] gave in another process (received over a Unix
    /// socket, or inherited). Borrowed: evx keeps a duplicate of its own,
    /// so the caller may close `fd` at once. A descriptor that is not a
    /// fence's page is refused (`EVX_ERROR_INVALID_VALUE`, with the reason),
    /// and so is a fence made by this same process
    /// (`EVX_ERROR_INVALID_CONTEXT`).
    pub fn import_fence_fd(self, fd: BorrowedFd<'_>) -> Result<Fence> {
        let mut raw: sys::evx_fence_t = ptr::null_mut();
        // SAFETY: evx only reads the descriptor and duplicates it (fence.h);
        // the borrow keeps it open for the call.
        let (dev, raw_fd) = (self.ordinal(), fd.as_raw_fd());
        check(unsafe { sys::evx_device_import_fence_fd(dev, raw_fd, &mut raw) })?;
        Ok(Fence { raw })
    }
}

/// Flags of [`Stream::wait_fence_with`] (`EVX_FENCE_WAIT_*`), combined with
/// `|`. Only the flags evx knows can be made.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct WaitFlags(c_uint);

impl WaitFlags {
    /// None: the wait of [`Stream::wait_fence`].
    pub const DEFAULT: WaitFlags = WaitFlags(sys::EVX_FENCE_WAIT_DEFAULT as c_uint);
    /// Before the wait, flush the writes that remote peers (GPUDirect RDMA)
    /// made to the device (`CU_STREAM_WAIT_VALUE_FLUSH`). A stream of a
    /// device that reports `CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES` = 0
    /// refuses it with `EVX_ERROR_NOT_SUPPORTED`.
    pub const FLUSH: WaitFlags = WaitFlags(sys::EVX_FENCE_WAIT_FLUSH as c_uint);

    /// The `EVX_FENCE_WAIT_*` bits.
    pub fn bits(self) -> c_uint {
        self.0
    }

    /// Whether every bit of `other` is set.
    pub fn contains(self, other: WaitFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for WaitFlags {
    type Output = WaitFlags;
    fn bitor(self, rhs: WaitFlags) -> WaitFlags {
        WaitFlags(self.0 | rhs.0)
    }
}

/// What [`Fence::reclaim`] found left of destroyed fences' memory.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct ReclaimCount {
    /// Fences whose memory still waits for operations queued on it, or
    /// for a capture on one of its streams to end (a queued wait for a
    /// value that never comes keeps it for good).
    pub pending: u64,
    /// Fences whose memory is kept for the life of the process: evx could
    /// not follow the operations queued on them (a per-thread default
    /// stream, a stream whose event the driver refused, or no memory to
    /// remember the streams; see docs/fences.md).
    pub kept: u64,
}

impl Fence {
    /// Queues on `stream` a signal: once the stream's earlier work is done,
    /// the counter becomes `value`.
    #[inline]
    pub fn signal(&self, stream: &Stream, value: u64) -> Result<()> {
        check(unsafe { sys::evx_fence_signal(self.raw, stream.as_raw(), value) })
    }

    /// Sets the counter to `value` now, from the host.
    pub fn signal_host(&self, value: u64) -> Result<()> {
        check(unsafe { sys::evx_fence_signal_host(self.raw, value) })
    }

    /// The counter now (a load; no driver call).
    #[inline]
    pub fn value(&self) -> Result<u64> {
        let mut v = 0u64;
        check(unsafe { sys::evx_fence_get_value(self.raw, &mut v) })?;
        Ok(v)
    }

    /// Waits on this thread until the counter is at least `value`:
    /// `Ok(true)` when it is, `Ok(false)` when `timeout` passed first
    /// (`Some(Duration::ZERO)` only looks; `None` waits without limit).
    pub fn wait(&self, value: u64, timeout: Option<Duration>) -> Result<bool> {
        const CALL: &str = "evx::Fence::wait";
        check_value(CALL, value)?;
        let ns = match timeout {
            None => u64::MAX,
            Some(d) => match u64::try_from(d.as_nanos()) {
                Ok(ns) if ns < u64::MAX => ns,
                _ => {
                    return Err(Status::new(
                        sys::EVX_ERROR_INVALID_VALUE as i32,
                        format!(
                            "{}: timeout {:?} does not fit in u64 nanoseconds (give None to \
                             wait without limit)",
                            CALL, d
                        ),
                    ))
                }
            },
        };
        match unsafe { sys::evx_fence_wait_host(self.raw, value, ns) } {
            0 => Ok(true),
            st if st == sys::EVX_ERROR_TIMEOUT as i32 => Ok(false),
            st => Err(Status::last(st)),
        }
    }

    /// A future that completes once the counter is at least `value`, from
    /// a process-wide notifier (no thread polls or blocks for it).
    pub fn wait_async(&self, value: u64) -> Result<EventFuture> {
        check_value("evx::Fence::wait_async", value)?;
        let n = default_raw()?;
        callback_future(|cb, user| unsafe {
            sys::evx_notifier_watch_fence_callback(n, self.raw, value, cb, user)
        })
    }

    /// The fence's IPC handle, for [`Device::open_ipc_fence`] in another
    /// process. Only a fence made with `interprocess` has one. Keep this
    /// fence alive until every peer has opened it.
    pub fn ipc_handle(&self) -> Result<[u8; FENCE_IPC_HANDLE_SIZE]> {
        let mut h = sys::evx_ipc_fence_handle_t { reserved: [0; FENCE_IPC_HANDLE_SIZE] };
        check(unsafe { sys::evx_fence_get_ipc_handle(self.raw, &mut h) })?;
        Ok(h.reserved)
    }

    /// A new descriptor (close-on-exec) of this interprocess fence's page
    /// of shared memory, for a process that shares neither `/dev/shm` nor
    /// the PID namespace with this one: send it over a Unix socket
    /// (`SCM_RIGHTS`); the peer opens it with [`Device::import_fence_fd`].
    /// It keeps the page alive while open; dropping it closes it. A fence
    /// made without `interprocess` is refused (`EVX_ERROR_INVALID_HANDLE`).
    pub fn export_fd(&self) -> Result<OwnedFd> {
        let mut fd: c_int = -1;
        check(unsafe { sys::evx_fence_export_fd(self.raw, &mut fd) })?;
        // SAFETY: on success `fd` is a new open descriptor that the caller
        // owns (fence.h); nothing else closes it.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// Frees the memory of destroyed fences whose queued operations have
    /// all run, and counts what is left (`evx_fence_reclaim`). Fence calls
    /// do the same on the way; this lets a program or a leak check see it.
    pub fn reclaim() -> Result<ReclaimCount> {
        let mut c = ReclaimCount::default();
        check(unsafe { sys::evx_fence_reclaim(&mut c.pending, &mut c.kept) })?;
        Ok(c)
    }

    /// The evx handle.
    pub fn as_raw(&self) -> sys::evx_fence_t {
        self.raw
    }

    /// Destroys the fence now, reporting the status that drop ignores.
    pub fn destroy(self) -> Result<()> {
        let raw = self.raw;
        std::mem::forget(self);
        check(unsafe { sys::evx_fence_destroy(raw) })
    }
}

impl Stream {
    /// Queues a wait until `fence` is at least `value` (the signal may be
    /// queued later, on any stream, in any process sharing the fence).
    #[inline]
    pub fn wait_fence(&self, fence: &Fence, value: u64) -> Result<()> {
        check(unsafe { sys::evx_stream_wait_fence(self.as_raw(), fence.raw, value) })
    }

    /// [`Stream::wait_fence`] with flags: `WaitFlags::FLUSH` first flushes
    /// remote (GPUDirect RDMA) writes to the device, and is refused with
    /// `EVX_ERROR_NOT_SUPPORTED`, naming the device, where the stream's
    /// device cannot. Nothing is queued on failure.
    pub fn wait_fence_with(&self, fence: &Fence, value: u64, flags: WaitFlags) -> Result<()> {
        check_value("evx::Stream::wait_fence_with", value)?;
        check(unsafe {
            sys::evx_stream_wait_fence_with_flags(self.as_raw(), fence.raw, value, flags.0)
        })
    }
}

impl Notifier {
    /// Watches `fence` under `token`: the token is queued once the counter
    /// is at least `value`.
    pub fn watch_fence(&self, fence: &Fence, value: u64, token: u64) -> Result<()> {
        check(unsafe { sys::evx_notifier_watch_fence(self.as_raw(), fence.raw, value, token) })
    }

    /// A future that completes once `fence` is at least `value`.
    pub fn wait_fence(&self, fence: &Fence, value: u64) -> Result<EventFuture> {
        let n = self.as_raw();
        callback_future(|cb, user| unsafe {
            sys::evx_notifier_watch_fence_callback(n, fence.raw, value, cb, user)
        })
    }
}
