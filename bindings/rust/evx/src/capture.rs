// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0

//! Whether a stream is being captured into a CUDA graph
//! (`include/evx/capture.h`): [`Stream::capture_status`]; and records and
//! waits that become external event nodes of the captured graph:
//! [`Event::record_external`], [`Stream::wait_event_external`].

use crate::{check, sys, Event, Result, Status, Stream};

impl Event {
    /// Records the event on `stream` as an external event node of the graph
    /// being captured there (`EVX_EVENT_RECORD_EXTERNAL`): each launch of the
    /// graph records the event. Outside a capture the driver refuses it
    /// (`EVX_ERROR_ILLEGAL_STATE`). Python: `Event.record(stream, external=True)`.
    pub fn record_external(&self, stream: &Stream) -> Result<()> {
        check(unsafe {
            sys::evx_event_record_with_flags(self.raw, stream.raw, sys::EVX_EVENT_RECORD_EXTERNAL)
        })
    }
}

/// The capture status of a stream (`evx_capture_status_t`, the values of
/// `CUstreamCaptureStatus`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum CaptureStatus {
    /// Not capturing.
    None,
    /// Capturing: work queued now goes into a graph.
    Active,
    /// The capture was invalidated by an error and must be ended.
    Invalidated,
}

impl Stream {
    /// Makes the graph being captured on this stream wait for `event` as an
    /// external event node (`EVX_EVENT_WAIT_EXTERNAL`): each launch waits for
    /// the event's latest record made outside the graph. Outside a capture
    /// the driver refuses it (`EVX_ERROR_ILLEGAL_STATE`). Python:
    /// `Stream.wait(event, external=True)`.
    pub fn wait_event_external(&self, event: &Event) -> Result<()> {
        check(unsafe {
            sys::evx_stream_wait_event(self.raw, event.raw, sys::EVX_EVENT_WAIT_EXTERNAL)
        })
    }

    /// Whether the stream is being captured (`cuStreamIsCapturing`).
    pub fn capture_status(&self) -> Result<CaptureStatus> {
        let mut c: sys::evx_capture_status_t = sys::EVX_CAPTURE_STATUS_NONE;
        check(unsafe { sys::evx_stream_get_capture_status(self.raw, &mut c) })?;
        match c {
            sys::EVX_CAPTURE_STATUS_NONE => Ok(CaptureStatus::None),
            sys::EVX_CAPTURE_STATUS_ACTIVE => Ok(CaptureStatus::Active),
            sys::EVX_CAPTURE_STATUS_INVALIDATED => Ok(CaptureStatus::Invalidated),
            other => Err(Status::new(
                sys::EVX_ERROR_UNKNOWN as i32,
                format!("Stream::capture_status: the library answered {}, which this version does not know", other),
            )),
        }
    }
}
