// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Helpers shared by the integration tests.

use std::sync::mpsc;

use evx::{Device, Stream};

pub fn dev() -> Device {
    Device::new(0).expect("device 0")
}

/// Blocks `stream` (a host function) until the returned sender is used (or
/// dropped), so that work queued behind it is pending for as long as a test
/// needs.
pub fn gate(stream: &Stream) -> mpsc::Sender<()> {
    let (tx, rx) = mpsc::channel::<()>();
    stream
        .launch_host_func(move || {
            let _ = rx.recv();
        })
        .expect("launch the gate");
    tx
}
