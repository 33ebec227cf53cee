// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0

//! A safe Rust layer over evx, the C ABI for CUDA events and streams.
//!
//! ```no_run
//! use evx::{Device, EventFlags};
//! let dev = Device::new(0)?;
//! let stream = dev.create_stream(0, true)?;
//! let start = dev.create_event(EventFlags::DEFAULT)?;
//! let end = dev.create_event(EventFlags::DEFAULT)?;
//! start.record(&stream)?;
//! // ... GPU work on stream ...
//! end.record(&stream)?;
//! end.synchronize()?;
//! println!("{} ms", end.elapsed_since(&start)?);
//! # Ok::<(), evx::Status>(())
//! ```
//!
//! Every fallible call returns [`Result`], whose error is a [`Status`]: the
//! code (the values of `CUresult`), its name and the library's message
//! (`evx_last_error_message`), read on the failing thread right after the
//! call. Handles are destroyed on drop. The C API is thread-safe throughout,
//! so every handle type is `Send` and `Sync`.

use std::ffi::CStr;
use std::fmt;
use std::os::raw::{c_char, c_int, c_uint, c_void};
use std::ptr;

pub use evx_sys as sys;

/// Send + Sync, Drop (the handle's destroy call) and Debug (`Name(0x...)`)
/// for a type that owns one evx handle in its field `raw`. Every evx call is
/// thread-safe, destroy included while other threads use the handle
/// (include/evx/*.h), so such a type may be sent and shared.
macro_rules! handle_type {
    ($ty:ident, $destroy:path) => {
        // SAFETY: every evx call on this handle kind is thread-safe.
        unsafe impl Send for $ty {}
        unsafe impl Sync for $ty {}

        impl Drop for $ty {
            fn drop(&mut self) {
                // SAFETY: `raw` is a live handle this value owns; its status
                // is of no use in a drop.
                unsafe {
                    $destroy(self.raw);
                }
            }
        }

        impl ::std::fmt::Debug for $ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                write!(f, concat!(stringify!($ty), "({:p})"), self.raw)
            }
        }
    };
}

pub mod notify;
mod borrow;
mod capture;
mod fence;
mod hostfn;
mod ipc;
pub use capture::CaptureStatus;
pub use fence::{Fence, ReclaimCount, WaitFlags, FENCE_IPC_HANDLE_SIZE, FENCE_MAX_VALUE};
pub use ipc::IPC_HANDLE_SIZE;

/// `Result<T, Status>`.
pub type Result<T> = std::result::Result<T, Status>;

fn static_str(p: *const c_char) -> &'static str {
    if p.is_null() {
        return "";
    }
    // SAFETY: evx returns static, NUL-terminated strings for names and
    // descriptions.
    unsafe { CStr::from_ptr(p) }.to_str().unwrap_or("")
}

// --------------------------------------------------------------------------
// Status

/// A failed call: the status code, and what the library said went wrong.
#[derive(Clone, PartialEq, Eq)]
pub struct Status {
    code: i32,
    message: String,
}

impl Status {
    /// The status a call on this thread just returned, with the library's
    /// message (for `EVX_ERROR_NOT_READY`, which the library treats as an
    /// answer and gives no message, the code's description).
    fn last(code: sys::evx_status_t) -> Status {
        let message = if code == sys::EVX_ERROR_NOT_READY as i32 {
            Status::describe(code).to_string()
        } else {
            // SAFETY: never NULL; valid until the next evx call on this
            // thread, and copied at once.
            let m = unsafe { CStr::from_ptr(sys::evx_last_error_message()) };
            let m = m.to_string_lossy().into_owned();
            if m.is_empty() {
                Status::describe(code).to_string()
            } else {
                m
            }
        };
        // The error a Rust host function returned, whose failure this is.
        let message = match hostfn::take_failure() {
            Some(text) => format!("{message}: {text}"),
            None => message,
        };
        Status { code, message }
    }

    /// A status with a message of the caller's own.
    pub fn new(code: sys::evx_status_t, message: impl Into<String>) -> Status {
        Status { code, message: message.into() }
    }

    fn describe(code: i32) -> &'static str {
        // SAFETY: needs no driver; returns a static string.
        static_str(unsafe { sys::evx_status_string(code) })
    }

    /// The numeric code (a `CUresult` value).
    pub fn code(&self) -> i32 {
        self.code
    }

    /// The code's name, such as `"EVX_ERROR_INVALID_HANDLE"`.
    pub fn name(&self) -> &'static str {
        // SAFETY: needs no driver; returns a static string.
        static_str(unsafe { sys::evx_status_name(self.code) })
    }

    /// A one-line description of the code.
    pub fn description(&self) -> &'static str {
        Status::describe(self.code)
    }

    /// What the failing call did wrong, in the library's words.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether this is the given code, e.g. `s.is(sys::EVX_ERROR_NOT_READY)`.
    pub fn is(&self, code: sys::evx_status_code) -> bool {
        self.code as i64 == code as i64
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.name(), self.code, self.message)
    }
}

impl fmt::Debug for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Status")
            .field("code", &self.code)
            .field("name", &self.name())
            .field("message", &self.message)
            .finish()
    }
}

impl std::error::Error for Status {}

#[inline]
fn check(st: sys::evx_status_t) -> Result<()> {
    if st == 0 {
        Ok(())
    } else {
        Err(Status::last(st))
    }
}

const NOT_READY: i32 = sys::EVX_ERROR_NOT_READY as i32;

// --------------------------------------------------------------------------
// Driver and devices

/// Opens the driver now (every call otherwise opens it when first needed).
pub fn driver_open() -> Result<()> {
    check(unsafe { sys::evx_driver_open() })
}

/// The loaded driver's version, as `cuDriverGetVersion` gives it.
pub fn driver_version() -> Result<i32> {
    let mut v: c_int = 0;
    check(unsafe { sys::evx_driver_get_version(&mut v) })?;
    Ok(v)
}

/// The path the driver library was opened by.
pub fn driver_path() -> Result<String> {
    let mut p: *const c_char = ptr::null();
    check(unsafe { sys::evx_driver_get_path(&mut p) })?;
    Ok(static_str(p).to_string())
}

/// Whether the loaded driver is evx's host emulation.
pub fn is_emulation() -> Result<bool> {
    let mut v: c_int = 0;
    check(unsafe { sys::evx_driver_is_emulation(&mut v) })?;
    Ok(v != 0)
}

/// Whether the driver has `cuLaunchHostFunc_v2` (CUDA 13.2), through which
/// [`Stream::launch_host_func_result`] runs with its sync mode; else
/// `cuLaunchHostFunc`, with the same error semantics.
pub fn host_func_sync_mode() -> Result<bool> {
    let mut v: c_int = 0;
    check(unsafe { sys::evx_driver_has_host_func_sync_mode(&mut v) })?;
    Ok(v != 0)
}

/// The version of the loaded libevx, "MAJOR.MINOR.PATCH".
pub fn library_version() -> &'static str {
    static_str(unsafe { sys::evx_version_string() })
}

/// A device, by ordinal.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Device(i32);

impl Device {
    /// The device `ordinal`, checked against [`Device::count`].
    pub fn new(ordinal: i32) -> Result<Device> {
        let count = Device::count()?;
        if ordinal < 0 || ordinal >= count {
            return Err(Status::new(
                sys::EVX_ERROR_INVALID_DEVICE as i32,
                format!(
                    "evx::Device::new({}): the driver sees {} device(s)",
                    ordinal, count
                ),
            ));
        }
        Ok(Device(ordinal))
    }

    /// The number of devices the driver sees.
    pub fn count() -> Result<i32> {
        let mut n: c_int = 0;
        check(unsafe { sys::evx_device_count(&mut n) })?;
        Ok(n)
    }

    /// The ordinal.
    pub fn ordinal(self) -> i32 {
        self.0
    }

    /// `(least, greatest)` stream priorities; greatest <= least.
    pub fn stream_priority_range(self) -> Result<(i32, i32)> {
        let (mut least, mut greatest) = (0, 0);
        check(unsafe { sys::evx_device_stream_priority_range(self.0, &mut least, &mut greatest) })?;
        Ok((least, greatest))
    }

    /// A new event of this device, not yet recorded.
    pub fn create_event(self, flags: EventFlags) -> Result<Event> {
        let mut raw: sys::evx_event_t = ptr::null_mut();
        check(unsafe { sys::evx_device_create_event(self.0, flags.0, &mut raw) })?;
        Ok(Event { raw })
    }

    /// A timer on this device.
    pub fn create_timer(self) -> Result<Timer> {
        let mut raw: sys::evx_timer_t = ptr::null_mut();
        check(unsafe { sys::evx_device_create_timer(self.0, &mut raw) })?;
        Ok(Timer { raw })
    }

    /// A timeline of this device holding up to `capacity` marks (2 or more).
    pub fn create_timeline(self, capacity: u32) -> Result<Timeline> {
        let mut raw: sys::evx_timeline_t = ptr::null_mut();
        check(unsafe { sys::evx_device_create_timeline(self.0, capacity, &mut raw) })?;
        Ok(Timeline { raw })
    }

    /// A pool of up to `capacity` events with `flags`, `prewarm` of them
    /// made now.
    pub fn create_event_pool(self, flags: EventFlags, capacity: u32, prewarm: u32) -> Result<EventPool> {
        let opts = sys::evx_event_pool_options_t {
            struct_size: std::mem::size_of::<sys::evx_event_pool_options_t>() as u32,
            event_flags: flags.0,
            capacity,
            prewarm,
        };
        let mut raw: sys::evx_event_pool_t = ptr::null_mut();
        check(unsafe { sys::evx_device_create_event_pool(self.0, &opts, &mut raw) })?;
        Ok(EventPool { raw })
    }

    /// A new stream that evx owns. `priority` 0 is the default; lower is
    /// higher priority, within [`Device::stream_priority_range`].
    /// `non_blocking` streams do not synchronize with the legacy default
    /// stream.
    pub fn create_stream(self, priority: i32, non_blocking: bool) -> Result<Stream> {
        let flags = if non_blocking { sys::EVX_STREAM_NON_BLOCKING } else { sys::EVX_STREAM_DEFAULT };
        let mut raw: sys::evx_stream_t = ptr::null_mut();
        check(unsafe { sys::evx_device_create_stream(self.0, flags as c_uint, priority, &mut raw) })?;
        Ok(Stream { raw })
    }

    /// Releases the idle driver events evx keeps for reuse on this device,
    /// and the pinned fence memory only a trim frees (`evx_device_trim`):
    /// that may wait for the device's queued work.
    pub fn trim(self) -> Result<()> {
        check(unsafe { sys::evx_device_trim(self.0) })
    }
}

// --------------------------------------------------------------------------
// Events

/// Flags of [`Device::create_event`] (`EVX_EVENT_*`), combined with `|`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct EventFlags(pub c_uint);

impl EventFlags {
    /// Timing on, spin-wait synchronization.
    pub const DEFAULT: EventFlags = EventFlags(sys::EVX_EVENT_DEFAULT as c_uint);
    /// `synchronize` blocks the thread instead of spinning.
    pub const BLOCKING_SYNC: EventFlags = EventFlags(sys::EVX_EVENT_BLOCKING_SYNC as c_uint);
    /// No timing: cheaper; elapsed time is refused.
    pub const DISABLE_TIMING: EventFlags = EventFlags(sys::EVX_EVENT_DISABLE_TIMING as c_uint);
    /// Usable across processes; needs `DISABLE_TIMING` too.
    pub const INTERPROCESS: EventFlags = EventFlags(sys::EVX_EVENT_INTERPROCESS as c_uint);

    /// Whether every bit of `other` is set.
    pub fn contains(self, other: EventFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for EventFlags {
    type Output = EventFlags;
    fn bitor(self, rhs: EventFlags) -> EventFlags {
        EventFlags(self.0 | rhs.0)
    }
}

/// An evx event: recorded on any stream of its device, again and again.
/// Destroyed on drop (an event from a pool goes back to its pool; a
/// borrowed one, [`Event::wrap`], ends only the evx handle).
pub struct Event {
    raw: sys::evx_event_t,
}

handle_type!(Event, sys::evx_event_destroy);

impl Event {
    /// Records the event on `stream` (a stream of the event's device).
    #[inline]
    pub fn record(&self, stream: &Stream) -> Result<()> {
        check(unsafe { sys::evx_event_record(self.raw, stream.raw) })
    }

    /// Records with `EVX_EVENT_RECORD_*` flags.
    pub fn record_with_flags(&self, stream: &Stream, flags: c_uint) -> Result<()> {
        check(unsafe { sys::evx_event_record_with_flags(self.raw, stream.raw, flags) })
    }

    /// `Ok(true)` when the recorded work has completed (or the event was
    /// never recorded), `Ok(false)` while pending; errors are errors.
    #[inline]
    pub fn is_done(&self) -> Result<bool> {
        match unsafe { sys::evx_event_query(self.raw) } {
            0 => Ok(true),
            NOT_READY => Ok(false),
            st => Err(Status::last(st)),
        }
    }

    /// Waits for the recorded work.
    #[inline]
    pub fn synchronize(&self) -> Result<()> {
        check(unsafe { sys::evx_event_synchronize(self.raw) })
    }

    /// Milliseconds from `start` to `self` (both recorded and complete).
    #[inline]
    pub fn elapsed_since(&self, start: &Event) -> Result<f32> {
        let mut ms = 0.0f32;
        check(unsafe { sys::evx_event_elapsed_time(&mut ms, start.raw, self.raw) })?;
        Ok(ms)
    }

    /// The flags the event was created with.
    pub fn flags(&self) -> Result<EventFlags> {
        let mut f: c_uint = 0;
        check(unsafe { sys::evx_event_get_flags(self.raw, &mut f) })?;
        Ok(EventFlags(f))
    }

    /// The device the event belongs to.
    pub fn device(&self) -> Result<Device> {
        let mut d: c_int = 0;
        check(unsafe { sys::evx_event_get_device(self.raw, &mut d) })?;
        Ok(Device(d))
    }

    /// The driver's `CUevent`; evx keeps owning it (a borrowed event's is
    /// the one borrowed, its maker's).
    pub fn native(&self) -> Result<*mut c_void> {
        let mut p: *mut c_void = ptr::null_mut();
        check(unsafe { sys::evx_event_get_native(self.raw, &mut p) })?;
        Ok(p)
    }

    /// The evx handle.
    pub fn as_raw(&self) -> sys::evx_event_t {
        self.raw
    }

    /// Gives up ownership of the handle without destroying it.
    pub fn into_raw(self) -> sys::evx_event_t {
        let raw = self.raw;
        std::mem::forget(self);
        raw
    }

    /// Takes ownership of an evx event handle.
    ///
    /// # Safety
    /// `raw` must be an evx event handle that nothing else destroys. (evx
    /// checks handles, so a dead one gives `EVX_ERROR_INVALID_HANDLE`, not
    /// undefined behaviour; but a live handle owned elsewhere would be
    /// destroyed twice.)
    pub unsafe fn from_raw(raw: sys::evx_event_t) -> Event {
        Event { raw }
    }

    /// Destroys the event now, reporting the status that drop ignores.
    pub fn destroy(self) -> Result<()> {
        let raw = self.into_raw();
        check(unsafe { sys::evx_event_destroy(raw) })
    }
}

// --------------------------------------------------------------------------
// Streams

/// An evx stream: owned (made by [`Device::create_stream`]; drop destroys
/// the driver stream, whose queued work still completes) or borrowed
/// ([`Stream::wrap_raw`]; drop ends only the evx handle).
pub struct Stream {
    raw: sys::evx_stream_t,
}

handle_type!(Stream, sys::evx_stream_destroy);

type HostFn = Box<dyn FnOnce() + Send + 'static>;

extern "C" fn host_trampoline(user: *mut c_void) {
    // SAFETY: `user` is the Box<HostFn> leaked by launch_host_func, and the
    // driver calls each host function exactly once.
    let f: Box<HostFn> = unsafe { Box::from_raw(user as *mut HostFn) };
    // A panic must not unwind into the driver: catch it (the panic hook
    // has already printed it).
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || (*f)()));
}

impl Stream {
    /// Borrows a stream made elsewhere (PyTorch, CuPy, CV-CUDA, cuda.core,
    /// the CUDA runtime, or a default stream: null, `sys::EVX_STREAM_LEGACY`,
    /// `sys::EVX_STREAM_PER_THREAD`). `device`: the stream's device, or None
    /// to read it from the stream (a default stream needs a device).
    ///
    /// # Safety
    /// `native` must be a live `CUstream` (or a default-stream value) and
    /// stay alive for as long as the returned Stream is used: evx cannot
    /// check a foreign pointer, and never destroys a borrowed stream.
    pub unsafe fn wrap_raw(device: Option<Device>, native: *mut c_void) -> Result<Stream> {
        let dev = match device {
            Some(d) => d.0,
            None => sys::EVX_DEVICE_FROM_STREAM,
        };
        let mut raw: sys::evx_stream_t = ptr::null_mut();
        check(sys::evx_stream_wrap_external(dev, native, &mut raw))?;
        Ok(Stream { raw })
    }

    /// Records `event` on this stream.
    #[inline]
    pub fn record(&self, event: &Event) -> Result<()> {
        event.record(self)
    }

    /// Records a new timing event on this stream and returns it.
    pub fn record_new(&self) -> Result<Event> {
        let ev = self.device()?.create_event(EventFlags::DEFAULT)?;
        ev.record(self)?;
        Ok(ev)
    }

    /// Future work on this stream waits for `event`.
    #[inline]
    pub fn wait_event(&self, event: &Event) -> Result<()> {
        check(unsafe { sys::evx_stream_wait_event(self.raw, event.raw, 0) })
    }

    /// Future work on this stream waits for all work queued so far on
    /// `other` (through a temporary event recorded there).
    pub fn wait_stream(&self, other: &Stream) -> Result<()> {
        let ev = other.device()?.create_event(EventFlags::DISABLE_TIMING)?;
        ev.record(other)?;
        self.wait_event(&ev)
    }

    /// `Ok(true)` when all queued work has completed, `Ok(false)` while
    /// busy.
    pub fn is_done(&self) -> Result<bool> {
        match unsafe { sys::evx_stream_query(self.raw) } {
            0 => Ok(true),
            NOT_READY => Ok(false),
            st => Err(Status::last(st)),
        }
    }

    /// Waits for all queued work.
    pub fn synchronize(&self) -> Result<()> {
        check(unsafe { sys::evx_stream_synchronize(self.raw) })
    }

    /// Queues `f` to run on a driver thread once the work queued before it
    /// has completed; work queued after it waits for it. `f` must not call
    /// evx or CUDA. A panic inside `f` is caught (and printed by the panic
    /// hook); it never unwinds into the driver.
    pub fn launch_host_func<F>(&self, f: F) -> Result<()>
    where
        F: FnOnce() + Send + 'static,
    {
        let boxed: Box<HostFn> = Box::new(Box::new(f));
        let user = Box::into_raw(boxed) as *mut c_void;
        let st = unsafe { sys::evx_stream_launch_host_func(self.raw, Some(host_trampoline), user) };
        if st != 0 {
            let err = Status::last(st);
            // Not queued: the driver never calls it, so free it here.
            drop(unsafe { Box::from_raw(user as *mut HostFn) });
            return Err(err);
        }
        Ok(())
    }

    /// Queues `f` as [`launch_host_func`](Self::launch_host_func) does,
    /// but its failure surfaces: an `Err(e)` it returns, or a panic, is
    /// reported (once, as a [`Status`] of `EVX_ERROR_UNKNOWN` whose message
    /// names `name` and ends with `e`'s text) by the next call that waits
    /// for work queued after it: [`synchronize`](Self::synchronize) or
    /// [`is_done`](Self::is_done) finding the stream idle on this stream,
    /// [`Event::synchronize`]/[`Event::is_done`] of an event recorded on it
    /// after this call, [`Timer::synchronize`] and
    /// [`Timeline::synchronize`] whose marks are
    /// (`evx_stream_launch_host_func_status`). A stream being captured
    /// refuses it (`EVX_ERROR_STREAM_CAPTURE_UNSUPPORTED`): a graph runs its
    /// nodes at every launch, and `f` runs once; use
    /// [`launch_host_func_result_mut`](Self::launch_host_func_result_mut).
    pub fn launch_host_func_result<F, E>(&self, name: &str, f: F) -> Result<()>
    where
        F: FnOnce() -> std::result::Result<(), E> + Send + 'static,
        E: fmt::Display,
    {
        hostfn::launch(self.raw, name, false, f)
    }

    /// [`launch_host_func_result`](Self::launch_host_func_result) for a
    /// function that may run many times: on a stream being captured into a
    /// CUDA graph, `f` becomes a host node of the graph and runs at every
    /// launch of it, and is dropped once the graph and its executables are
    /// destroyed. A failure in a launch is reported once, by the next
    /// waiting call on any stream, event, timer or timeline of the device to
    /// end its wait after it (its message says it ran in a launch of its
    /// graph). Outside a capture it runs once, as the FnOnce form.
    pub fn launch_host_func_result_mut<F, E>(&self, name: &str, f: F) -> Result<()>
    where
        F: FnMut() -> std::result::Result<(), E> + Send + 'static,
        E: fmt::Display,
    {
        hostfn::launch_mut(self.raw, name, false, f)
    }

    /// [`launch_host_func_result`](Self::launch_host_func_result) with the
    /// driver's spin-wait sync mode where it has `cuLaunchHostFunc_v2`
    /// ([`host_func_sync_mode`]).
    pub fn launch_host_func_result_spin<F, E>(&self, name: &str, f: F) -> Result<()>
    where
        F: FnOnce() -> std::result::Result<(), E> + Send + 'static,
        E: fmt::Display,
    {
        hostfn::launch(self.raw, name, true, f)
    }

    /// The stream's priority.
    pub fn priority(&self) -> Result<i32> {
        let mut p: c_int = 0;
        check(unsafe { sys::evx_stream_get_priority(self.raw, &mut p) })?;
        Ok(p)
    }

    /// The stream's `EVX_STREAM_*` flags.
    pub fn flags(&self) -> Result<c_uint> {
        let mut f: c_uint = 0;
        check(unsafe { sys::evx_stream_get_flags(self.raw, &mut f) })?;
        Ok(f)
    }

    /// The device the stream belongs to.
    pub fn device(&self) -> Result<Device> {
        let mut d: c_int = 0;
        check(unsafe { sys::evx_stream_get_device(self.raw, &mut d) })?;
        Ok(Device(d))
    }

    /// The driver's `CUstream` (a `cudaStream_t`); ownership does not move.
    pub fn native(&self) -> Result<*mut c_void> {
        let mut p: *mut c_void = ptr::null_mut();
        check(unsafe { sys::evx_stream_get_native(self.raw, &mut p) })?;
        Ok(p)
    }

    /// Whether evx owns the driver stream.
    pub fn is_owned(&self) -> Result<bool> {
        let mut o: c_int = 0;
        check(unsafe { sys::evx_stream_is_owned(self.raw, &mut o) })?;
        Ok(o != 0)
    }

    /// The evx handle.
    pub fn as_raw(&self) -> sys::evx_stream_t {
        self.raw
    }

    /// Ends the handle now, reporting the status that drop ignores.
    pub fn destroy(self) -> Result<()> {
        let raw = self.raw;
        std::mem::forget(self);
        check(unsafe { sys::evx_stream_destroy(raw) })
    }
}

// --------------------------------------------------------------------------
// Timers

/// A start and a stop mark on streams of one device (evx_timer_*).
pub struct Timer {
    raw: sys::evx_timer_t,
}

handle_type!(Timer, sys::evx_timer_destroy);

impl Timer {
    /// A timer on `device`.
    #[deprecated(note = "use Device::create_timer")]
    pub fn new(device: Device) -> Result<Timer> {
        device.create_timer()
    }

    /// Marks the start on `stream`; the returned guard marks the stop on the
    /// same stream when dropped (or on [`TimerGuard::stop`]).
    pub fn start<'a>(&'a mut self, stream: &'a Stream) -> Result<TimerGuard<'a>> {
        check(unsafe { sys::evx_timer_start(self.raw, stream.raw) })?;
        Ok(TimerGuard { timer: self, stream, stopped: false })
    }

    /// Milliseconds from start to stop, or None while the marked work is
    /// pending.
    pub fn elapsed(&self) -> Result<Option<f32>> {
        let mut ms = 0.0f32;
        match unsafe { sys::evx_timer_elapsed(self.raw, &mut ms) } {
            0 => Ok(Some(ms)),
            NOT_READY => Ok(None),
            st => Err(Status::last(st)),
        }
    }

    /// Waits for the stop mark; milliseconds from start to stop.
    pub fn synchronize(&self) -> Result<f32> {
        let mut ms = 0.0f32;
        check(unsafe { sys::evx_timer_synchronize(self.raw, &mut ms) })?;
        Ok(ms)
    }
}

/// Marks the timer's stop when dropped.
pub struct TimerGuard<'a> {
    timer: &'a mut Timer,
    stream: &'a Stream,
    stopped: bool,
}

impl<'a> TimerGuard<'a> {
    /// Marks the stop now, reporting its status.
    pub fn stop(mut self) -> Result<()> {
        self.stopped = true;
        check(unsafe { sys::evx_timer_stop(self.timer.raw, self.stream.raw) })
    }

    /// Marks the stop on another stream of the same device (order the two
    /// streams yourself).
    pub fn stop_on(mut self, stream: &Stream) -> Result<()> {
        self.stopped = true;
        check(unsafe { sys::evx_timer_stop(self.timer.raw, stream.raw) })
    }
}

impl<'a> Drop for TimerGuard<'a> {
    fn drop(&mut self) {
        if !self.stopped {
            unsafe {
                sys::evx_timer_stop(self.timer.raw, self.stream.raw);
            }
        }
    }
}

// --------------------------------------------------------------------------
// Timelines

/// What a labeled mark is (`evx_mark_kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkKind {
    /// A point: names the interval to the next mark.
    Point,
    /// Opens a range on its stream.
    Begin,
    /// Closes the innermost open range of its stream.
    End,
}

impl MarkKind {
    fn raw(self) -> c_uint {
        match self {
            MarkKind::Point => sys::EVX_MARK_POINT,
            MarkKind::Begin => sys::EVX_MARK_BEGIN,
            MarkKind::End => sys::EVX_MARK_END,
        }
    }
}

/// One mark of a timeline ([`Timeline::marks`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Mark {
    /// Its index.
    pub index: u32,
    /// Milliseconds from mark 0.
    pub ms: f32,
    /// Its label ("" if none).
    pub label: String,
    /// Its kind.
    pub kind: MarkKind,
    /// The handle value of the stream it was recorded on.
    pub stream: usize,
}

/// A range of a timeline: its end mark is made when it drops
/// ([`Timeline::range`]).
pub struct RangeGuard<'a> {
    timeline: &'a Timeline,
    stream: &'a Stream,
    label: String,
}

impl Drop for RangeGuard<'_> {
    fn drop(&mut self) {
        // A failing end mark cannot be returned from drop; the trace then
        // refuses the open range, which says so.
        let _ = self.timeline.mark_labeled(self.stream, &self.label, MarkKind::End);
    }
}

/// Many marks recorded in order on streams of one device, read back in one
/// call: interval i is from mark i to mark i + 1 (evx_timeline_*).
pub struct Timeline {
    raw: sys::evx_timeline_t,
}

handle_type!(Timeline, sys::evx_timeline_destroy);

impl Timeline {
    /// A timeline of `device` holding up to `capacity` marks (2 or more).
    #[deprecated(note = "use Device::create_timeline")]
    pub fn new(device: Device, capacity: u32) -> Result<Timeline> {
        device.create_timeline(capacity)
    }

    /// Records the next mark on `stream`; returns its index.
    pub fn mark(&self, stream: &Stream) -> Result<u32> {
        let mut idx = 0u32;
        check(unsafe { sys::evx_timeline_mark(self.raw, stream.raw, &mut idx) })?;
        Ok(idx)
    }

    /// Records the next mark on `stream` with a label (at most 63 bytes)
    /// and a kind; returns its index (evx_timeline_mark_labeled).
    pub fn mark_labeled(&self, stream: &Stream, label: &str, kind: MarkKind) -> Result<u32> {
        let c = std::ffi::CString::new(label).map_err(|_| {
            Status::new(
                sys::EVX_ERROR_INVALID_VALUE as i32,
                format!("Timeline::mark_labeled: label {label:?} holds a NUL byte"),
            )
        })?;
        let mut idx = 0u32;
        check(unsafe {
            sys::evx_timeline_mark_labeled(self.raw, stream.raw, c.as_ptr(), kind.raw(), &mut idx)
        })?;
        Ok(idx)
    }

    /// A begin mark now, and the end mark when the guard drops.
    pub fn range<'a>(&'a self, label: &str, stream: &'a Stream) -> Result<RangeGuard<'a>> {
        self.mark_labeled(stream, label, MarkKind::Begin)?;
        Ok(RangeGuard { timeline: self, stream, label: label.to_string() })
    }

    /// Every mark, in order; waits for the last mark.
    pub fn marks(&self) -> Result<Vec<Mark>> {
        self.synchronize()?;
        let n = self.count()?;
        let mut out = Vec::with_capacity(n as usize);
        for i in 0..n {
            // SAFETY: a plain C struct; zero is a valid value of each field.
            let mut info: sys::evx_timeline_mark_info_t = unsafe { std::mem::zeroed() };
            info.struct_size = std::mem::size_of::<sys::evx_timeline_mark_info_t>() as u32;
            check(unsafe { sys::evx_timeline_get_mark(self.raw, i, &mut info) })?;
            // SAFETY: the library NUL-terminates the label within the array.
            let label = unsafe { CStr::from_ptr(info.label.as_ptr()) };
            out.push(Mark {
                index: info.index,
                ms: info.ms,
                label: label.to_string_lossy().into_owned(),
                kind: match info.kind {
                    sys::EVX_MARK_BEGIN => MarkKind::Begin,
                    sys::EVX_MARK_END => MarkKind::End,
                    _ => MarkKind::Point,
                },
                stream: info.stream as usize,
            });
        }
        Ok(out)
    }

    /// Writes the timeline as a Chrome trace (JSON trace event format, for
    /// Perfetto and chrome://tracing) to `path`: the same bytes as
    /// `evx_timeline_write_trace`, which writes it, and as Python's
    /// `Timeline.to_trace`.
    pub fn write_trace(&self, path: impl AsRef<std::path::Path>, title: Option<&str>) -> Result<()> {
        use std::os::unix::ffi::OsStrExt;
        let bad = |what: &str| {
            Status::new(
                sys::EVX_ERROR_INVALID_VALUE as i32,
                format!("Timeline::write_trace: {what} holds a NUL byte"),
            )
        };
        let p = std::ffi::CString::new(path.as_ref().as_os_str().as_bytes()).map_err(|_| bad("path"))?;
        let t = match title {
            Some(t) => Some(std::ffi::CString::new(t).map_err(|_| bad("title"))?),
            None => None,
        };
        check(unsafe {
            sys::evx_timeline_write_trace(
                self.raw,
                p.as_ptr(),
                t.as_ref().map_or(ptr::null(), |t| t.as_ptr()),
            )
        })
    }

    /// Marks recorded since creation or the last reset.
    pub fn count(&self) -> Result<u32> {
        let mut n = 0u32;
        check(unsafe { sys::evx_timeline_count(self.raw, &mut n) })?;
        Ok(n)
    }

    /// Waits for the last mark's work.
    pub fn synchronize(&self) -> Result<()> {
        check(unsafe { sys::evx_timeline_synchronize(self.raw) })
    }

    /// The intervals, or None while any mark's work is pending.
    pub fn try_intervals(&self) -> Result<Option<Vec<f32>>> {
        let mut n = 0u32;
        check(unsafe { sys::evx_timeline_intervals(self.raw, ptr::null_mut(), 0, &mut n) })?;
        let mut buf = vec![0.0f32; n as usize];
        let mut written = 0u32;
        let st = unsafe {
            sys::evx_timeline_intervals(
                self.raw,
                if n == 0 { ptr::null_mut() } else { buf.as_mut_ptr() },
                n,
                &mut written,
            )
        };
        match st {
            0 => {
                buf.truncate(written as usize);
                Ok(Some(buf))
            }
            NOT_READY => Ok(None),
            st => Err(Status::last(st)),
        }
    }

    /// Waits for the last mark, then returns every interval in
    /// milliseconds.
    pub fn intervals(&self) -> Result<Vec<f32>> {
        self.synchronize()?;
        match self.try_intervals()? {
            Some(v) => Ok(v),
            None => Err(Status::new(
                NOT_READY,
                "evx::Timeline::intervals: marks still pending after synchronize",
            )),
        }
    }

    /// Forgets every mark.
    pub fn reset(&self) -> Result<()> {
        check(unsafe { sys::evx_timeline_reset(self.raw) })
    }
}

// --------------------------------------------------------------------------
// Event pools

/// What a pool holds and has done.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct PoolStats {
    pub capacity: u32,
    pub idle: u32,
    pub in_use: u32,
    pub pending: u32,
    pub created_total: u64,
    pub acquired_total: u64,
    pub exhausted_total: u64,
}

/// A bounded pool of pre-made events of one device and flag set.
pub struct EventPool {
    raw: sys::evx_event_pool_t,
}

handle_type!(EventPool, sys::evx_event_pool_destroy);

impl EventPool {
    /// A pool of up to `capacity` events with `flags`, `prewarm` of them
    /// made now.
    #[deprecated(note = "use Device::create_event_pool")]
    pub fn new(device: Device, flags: EventFlags, capacity: u32, prewarm: u32) -> Result<EventPool> {
        device.create_event_pool(flags, capacity, prewarm)
    }

    /// An event from the pool; `EVX_ERROR_OUT_OF_MEMORY` when exhausted.
    pub fn acquire(&self) -> Result<Event> {
        let mut raw: sys::evx_event_t = ptr::null_mut();
        check(unsafe { sys::evx_event_pool_acquire(self.raw, &mut raw) })?;
        Ok(Event { raw })
    }

    /// Gives an event back to this pool; its handle is dead from now on.
    /// An event of another pool is refused (`EVX_ERROR_INVALID_VALUE`) and
    /// then dropped, which returns it to the pool it came from.
    pub fn release(&self, event: Event) -> Result<()> {
        let st = unsafe { sys::evx_event_pool_release(self.raw, event.raw) };
        if st == 0 {
            std::mem::forget(event);
            Ok(())
        } else {
            let err = Status::last(st);
            drop(event);
            Err(err)
        }
    }

    /// Makes driver events until `count` are idle or the pool is full.
    pub fn prewarm(&self, count: u32) -> Result<()> {
        check(unsafe { sys::evx_event_pool_prewarm(self.raw, count) })
    }

    /// What the pool holds and has done.
    pub fn stats(&self) -> Result<PoolStats> {
        let mut s = sys::evx_event_pool_stats_t {
            struct_size: std::mem::size_of::<sys::evx_event_pool_stats_t>() as u32,
            ..Default::default()
        };
        check(unsafe { sys::evx_event_pool_get_stats(self.raw, &mut s) })?;
        Ok(PoolStats {
            capacity: s.capacity,
            idle: s.idle,
            in_use: s.in_use,
            pending: s.pending,
            created_total: s.created_total,
            acquired_total: s.acquired_total,
            exhausted_total: s.exhausted_total,
        })
    }
}

