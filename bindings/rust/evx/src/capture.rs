// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0

//! Whether a stream is being captured into a CUDA graph
//! (`include/evx/capture.h`): [`Stream::capture_status`].

use crate::{check, sys, Result, Status, Stream};

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
