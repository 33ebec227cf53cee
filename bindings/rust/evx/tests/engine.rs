// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Interprocess events and the capture status from Rust, against the host
// emulation (EVX_DRIVER=host) or a GPU. The two-process case is in the C
// conformance suite and the Python tests; here, what one process can check.

use evx::{sys, CaptureStatus, Device, EventFlags, IPC_HANDLE_SIZE};

fn dev() -> Device {
    Device::new(0).expect("device 0")
}

#[test]
fn ipc_handle_of_an_interprocess_event() {
    let ipc = EventFlags::INTERPROCESS | EventFlags::DISABLE_TIMING;
    let a = dev().create_event(ipc).unwrap();
    let b = dev().create_event(ipc).unwrap();
    let ha = a.ipc_handle().unwrap();
    assert_eq!(ha.len(), IPC_HANDLE_SIZE);
    assert_ne!(ha, b.ipc_handle().unwrap());
    // the event still works here
    let s = dev().create_stream(0, true).unwrap();
    a.record(&s).unwrap();
    a.synchronize().unwrap();
    assert!(a.is_done().unwrap());
}

#[test]
fn ipc_handle_refused_without_interprocess() {
    for flags in [EventFlags::DEFAULT, EventFlags::DISABLE_TIMING] {
        let e = dev().create_event(flags).unwrap();
        let err = e.ipc_handle().unwrap_err();
        assert!(err.is(sys::EVX_ERROR_INVALID_HANDLE), "{:?}", err);
        assert!(err.message().contains("EVX_EVENT_INTERPROCESS"), "{}", err.message());
    }
}

#[test]
fn open_in_the_exporting_process_is_refused() {
    let e = dev().create_event(EventFlags::INTERPROCESS | EventFlags::DISABLE_TIMING).unwrap();
    let h = e.ipc_handle().unwrap();
    let err = dev().open_ipc_event(&h).err().expect("the driver refuses it");
    assert!(err.is(sys::EVX_ERROR_INVALID_CONTEXT), "{:?}", err);
    assert!(err.message().contains("cuIpcOpenEventHandle"), "{}", err.message());
}

#[test]
fn external_nodes_outside_capture_are_refused() {
    // The driver makes external event nodes only inside stream capture;
    // outside it, it answers CUDA_ERROR_ILLEGAL_STATE.
    let s = dev().create_stream(0, true).unwrap();
    let e = dev().create_event(EventFlags::DEFAULT).unwrap();
    let err = e.record_external(&s).unwrap_err();
    assert!(err.is(sys::EVX_ERROR_ILLEGAL_STATE), "{:?}", err);
    assert!(err.message().contains("cuEventRecordWithFlags"), "{}", err.message());
    e.record(&s).unwrap();
    let err = s.wait_event_external(&e).unwrap_err();
    assert!(err.is(sys::EVX_ERROR_ILLEGAL_STATE), "{:?}", err);
    assert!(err.message().contains("cuStreamWaitEvent"), "{}", err.message());
    s.wait_event(&e).unwrap();
    s.synchronize().unwrap();
}

#[test]
fn streams_are_not_capturing() {
    let s = dev().create_stream(0, true).unwrap();
    assert_eq!(s.capture_status().unwrap(), CaptureStatus::None);
}
