// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// An interprocess event between two processes, from Rust: this test binary
// runs itself again as the peer (the ignored test `ipc_peer_child`, with the
// handle and a file path in the environment). The parent records its event
// behind a gate and a host function that writes the file; the peer opens
// the event, waits for it on a stream and reads the file from a host
// function queued behind the wait: it must see the parent's write.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;
use std::{env, fs};

use evx::{sys, Device, EventFlags, IPC_HANDLE_SIZE};

const HANDLE_VAR: &str = "EVX_RUST_IPC_HANDLE";
const FILE_VAR: &str = "EVX_RUST_IPC_FILE";
const TAG: &str = "EVXPEER ";

fn to_hex(h: &[u8; IPC_HANDLE_SIZE]) -> String {
    h.iter().map(|b| format!("{:02x}", b)).collect()
}

fn from_hex(s: &str) -> [u8; IPC_HANDLE_SIZE] {
    let mut h = [0u8; IPC_HANDLE_SIZE];
    assert_eq!(s.len(), 2 * IPC_HANDLE_SIZE, "handle hex: {}", s);
    for (i, b) in h.iter_mut().enumerate() {
        *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex");
    }
    h
}

#[test]
fn peer_process_waits_for_the_event() {
    let dev = Device::new(0).unwrap();
    let s = dev.create_stream(0, true).unwrap();
    let ev = dev.create_event(EventFlags::INTERPROCESS | EventFlags::DISABLE_TIMING).unwrap();
    let path = env::temp_dir().join(format!("evx-rust-ipc-{}", std::process::id()));
    fs::write(&path, "").unwrap();

    let (open_gate, gate_rx) = mpsc::channel::<()>();
    s.launch_host_func(move || {
        let _ = gate_rx.recv();
    })
    .unwrap();
    let p = path.clone();
    s.launch_host_func(move || fs::write(&p, "parent").expect("write the file"))
        .unwrap();
    ev.record(&s).unwrap();

    let mut child = Command::new(env::current_exe().unwrap())
        .args(["--exact", "ipc_peer_child", "--ignored", "--nocapture", "--test-threads=1"])
        .env(HANDLE_VAR, to_hex(&ev.ipc_handle().unwrap()))
        .env(FILE_VAR, &path)
        .stdout(Stdio::piped())
        .spawn()
        .expect("run the peer");
    let out = child.stdout.take().unwrap();
    let (tx, lines) = mpsc::channel::<String>();
    let reader = thread::spawn(move || {
        for line in BufReader::new(out).lines().flatten() {
            // libtest may print "test ipc_peer_child ... " before it
            if let Some(at) = line.find(TAG) {
                let _ = tx.send(line[at + TAG.len()..].to_string());
            }
        }
    });
    let next = |what: &str| {
        lines
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("no '{}' line from the peer", what))
    };

    assert_eq!(next("waiting"), "waiting done=false");
    // the peer's synchronize does not return while the gate is closed
    assert!(lines.recv_timeout(Duration::from_millis(150)).is_err(),
            "the peer went on while the parent's record was held");
    assert_eq!(fs::read_to_string(&path).unwrap(), "");
    open_gate.send(()).unwrap();
    assert_eq!(next("seen"), "seen parent");
    assert_eq!(next("done"), "done");
    assert!(child.wait().unwrap().success());
    reader.join().unwrap();
    s.synchronize().unwrap();
    let _ = fs::remove_file(&path);
}

/// The peer: run only by `peer_process_waits_for_the_event`.
#[test]
#[ignore]
fn ipc_peer_child() {
    let handle = from_hex(&env::var(HANDLE_VAR).expect("run by peer_process_waits_for_the_event"));
    let path = env::var(FILE_VAR).unwrap();
    let dev = Device::new(0).unwrap();
    let ev = dev.open_ipc_event(&handle).unwrap();
    let s = dev.create_stream(0, true).unwrap();
    s.wait_event(&ev).unwrap();
    let seen = Arc::new(Mutex::new(String::new()));
    let keep = seen.clone();
    s.launch_host_func(move || {
        *keep.lock().unwrap() = fs::read_to_string(&path).unwrap_or_default();
    })
    .unwrap();
    println!("{}waiting done={}", TAG, ev.is_done().unwrap());
    s.synchronize().unwrap();
    println!("{}seen {}", TAG, seen.lock().unwrap());
    // an opened event has no timing
    let err = ev.elapsed_since(&ev).unwrap_err();
    assert!(err.is(sys::EVX_ERROR_INVALID_HANDLE), "{:?}", err);
    ev.synchronize().unwrap();
    drop(ev);
    println!("{}done", TAG);
}
