// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// The layout check, Rust side: compiles bindings/layout/evx_layout.c with the
// C compiler (CC, else cc) against include/evx, runs it, and compares every
// line it prints (constants, enumerators, enum sizes, typedef and struct
// sizes and alignments, field offsets and sizes) with the values bindgen's
// output holds (tests/layout/items.rs, generated with it).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

/// `field!(Struct, name)` -> vec![offset, size] of the field, without
/// creating a reference to uninitialized memory.
macro_rules! field {
    ($t:path, $f:ident) => {{
        fn size_of_pointee<T>(_: *const T) -> usize {
            std::mem::size_of::<T>()
        }
        let uninit = std::mem::MaybeUninit::<$t>::uninit();
        let base = uninit.as_ptr();
        // SAFETY: addr_of! computes the address without reading or
        // referencing the uninitialized value.
        let field = unsafe { std::ptr::addr_of!((*base).$f) };
        vec![
            (field as usize - base as usize) as i128,
            size_of_pointee(field) as i128,
        ]
    }};
}

include!("layout/items.rs");

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../..")
}

fn c_layout() -> BTreeMap<String, Vec<i128>> {
    let root = repo_root();
    let src = root.join("bindings/layout/evx_layout.c");
    let exe = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("evx_layout");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let out = Command::new(&cc)
        .arg("-std=c99")
        .arg("-Wall")
        .arg("-Wextra")
        .arg("-Werror")
        .arg("-I")
        .arg(root.join("include"))
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap_or_else(|e| panic!("cannot run the C compiler `{}`: {}", cc, e));
    assert!(
        out.status.success(),
        "compiling {} failed:\n{}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&exe).output().expect("run the layout program");
    assert!(run.status.success(), "the layout program failed");
    let text = String::from_utf8(run.stdout).expect("utf-8 output");
    let mut map = BTreeMap::new();
    for line in text.lines() {
        let parts: Vec<&str> = line.split_whitespace().collect();
        assert!(parts.len() >= 3, "malformed line {:?}", line);
        let key = format!("{} {}", parts[0], parts[1]);
        let values: Vec<i128> = parts[2..]
            .iter()
            .map(|v| v.parse().unwrap_or_else(|_| panic!("bad number in {:?}", line)))
            .collect();
        assert!(map.insert(key.clone(), values).is_none(), "duplicate line {}", key);
    }
    map
}

#[test]
fn every_c_value_matches_the_rust_bindings() {
    let c = c_layout();
    let rust = items();
    assert!(rust.len() > 100, "suspiciously few items: {}", rust.len());
    let mut compared = 0;
    let mut mismatches = Vec::new();
    for (key, values) in &rust {
        match c.get(*key) {
            None => mismatches.push(format!("{}: in the Rust table, not printed by C", key)),
            Some(cv) if cv != values => {
                mismatches.push(format!("{}: C says {:?}, Rust holds {:?}", key, cv, values))
            }
            Some(_) => compared += 1,
        }
    }
    let skipped: BTreeMap<&str, &str> = NOT_COMPARED.iter().cloned().collect();
    for key in c.keys() {
        let in_rust = rust.iter().any(|(k, _)| k == key);
        if !in_rust && !skipped.contains_key(key.as_str()) {
            mismatches.push(format!("{}: printed by C, absent from the Rust bindings", key));
        }
    }
    for key in skipped.keys() {
        assert!(c.contains_key(*key), "NOT_COMPARED names {} which C does not print", key);
    }
    assert!(mismatches.is_empty(), "layout mismatches:\n{}", mismatches.join("\n"));
    assert_eq!(compared + skipped.len(), c.len());
}

#[test]
fn every_function_resolves_in_the_library() {
    let syms = symbols();
    assert!(syms.len() > 40);
    for (name, addr) in syms {
        assert_ne!(addr, 0, "{} resolved to null", name);
    }
}

#[test]
fn status_names_come_from_the_library() {
    // A call through the raw layer: the library names the codes as the
    // header does.
    let name = unsafe { std::ffi::CStr::from_ptr(evx_sys::evx_status_name(evx_sys::EVX_ERROR_NOT_READY as i32)) };
    assert_eq!(name.to_str().unwrap(), "EVX_ERROR_NOT_READY");
    let v = unsafe { evx_sys::evx_version() };
    assert_eq!(v, evx_sys::EVX_VERSION_NUMBER);
}
