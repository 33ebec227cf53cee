// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Fence::export_fd and Device::import_fence_fd. evx opens a fence's page
// only in a process that did not make the fence (as the driver opens IPC
// handles), so this test binary runs itself again as the peer (the ignored
// test `fd_peer_child`), handing it the exported descriptor as its stdin:
// the peer imports it, sees the value the parent's stream signalled, and
// signals one the parent's stream waits for.

use std::io::{self, BufRead, BufReader};
use std::os::unix::io::AsFd;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use std::{env, fs};

use evx::{sys, Device};

const CHILD_VAR: &str = "EVX_RUST_FENCE_FD_CHILD";
const TAG: &str = "EVXPEER ";

#[test]
fn import_in_the_exporting_process_refused() {
    let dev = Device::new(0).unwrap();
    let fence = dev.create_fence(4, true).unwrap();
    let fd = fence.export_fd().unwrap();
    let e = dev.import_fence_fd(fd.as_fd()).unwrap_err();
    assert!(e.is(sys::EVX_ERROR_INVALID_CONTEXT), "{}", e);
    assert!(e.message().contains("evx_device_import_fence_fd"), "{}", e);
    // a plain fence has no page to export
    let plain = dev.create_fence(0, false).unwrap();
    assert!(plain.export_fd().unwrap_err().is(sys::EVX_ERROR_INVALID_HANDLE));
    // a regular file is not a fence's page
    let path = env::temp_dir().join(format!("evx-rust-fence-fd-{}", std::process::id()));
    let file = fs::File::create(&path).unwrap();
    fs::remove_file(&path).unwrap();
    let e = dev.import_fence_fd(file.as_fd()).unwrap_err();
    assert!(e.is(sys::EVX_ERROR_INVALID_VALUE), "{}", e);
    assert!(e.message().contains("not a fence's page"), "{}", e);
    fence.destroy().unwrap();
}

#[test]
fn peer_process_imports_the_descriptor() {
    let dev = Device::new(0).unwrap();
    let (a, b) = (dev.create_stream(0, true).unwrap(), dev.create_stream(0, true).unwrap());
    let fence = dev.create_fence(0, true).unwrap();
    let passed = Arc::new(AtomicBool::new(false));
    b.wait_fence(&fence, 3).unwrap(); // the peer signals 3
    let p = passed.clone();
    b.launch_host_func(move || p.store(true, Ordering::SeqCst)).unwrap();
    fence.signal(&a, 2).unwrap();

    let fd = fence.export_fd().unwrap();
    let mut child = Command::new(env::current_exe().unwrap())
        .args(["--exact", "fd_peer_child", "--ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD_VAR, "1")
        .stdin(Stdio::from(fd)) // the peer's fd 0; closed here once spawned
        .stdout(Stdio::piped())
        .spawn()
        .expect("run the peer");
    let lines: Vec<String> = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map_while(|l| l.ok())
        .filter_map(|l| l.find(TAG).map(|at| l[at + TAG.len()..].to_string()))
        .collect();
    let ok = child.wait().unwrap().success();
    if !fence.wait(3, Some(Duration::ZERO)).unwrap() {
        fence.signal_host(100).unwrap(); // frees b's wait whatever the peer did
    }
    assert!(ok, "the peer failed: {:?}", lines);
    assert_eq!(lines, ["seen 2", "signalled 3"]);
    b.synchronize().unwrap();
    assert!(passed.load(Ordering::SeqCst));
    assert_eq!(fence.value().unwrap(), 3);
}

/// The peer: run only by `peer_process_imports_the_descriptor`, with the
/// fence's descriptor as its stdin.
#[test]
#[ignore]
fn fd_peer_child() {
    assert!(env::var(CHILD_VAR).is_ok(), "run by peer_process_imports_the_descriptor");
    let stdin = io::stdin();
    let g = Device::new(0).unwrap().import_fence_fd(stdin.as_fd()).unwrap();
    assert!(g.wait(2, Some(Duration::from_secs(30))).unwrap(), "the parent's 2 never came");
    println!("{}seen {}", TAG, g.value().unwrap());
    g.signal_host(3).unwrap();
    println!("{}signalled 3", TAG);
}
