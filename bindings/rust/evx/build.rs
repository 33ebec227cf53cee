// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Gives this crate's tests and examples the rpath to libevx that evx-sys
// found (its `links` metadata, DEP_EVX_RPATH), so that `cargo test` and
// `cargo run --example` start without LD_LIBRARY_PATH. Cargo passes a build
// script's rustc-link-arg to its own package only, hence this second script.

fn main() {
    println!("cargo:rerun-if-env-changed=DEP_EVX_RPATH");
    let dirs = std::env::var("DEP_EVX_RPATH").unwrap_or_default();
    for dir in dirs.split(':').filter(|d| !d.is_empty()) {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir);
    }
}
