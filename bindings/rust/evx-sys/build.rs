// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Links libevx: from EVX_LIB_DIR when it is set, else as pkg-config describes
// the `evx` package (the pkg-config program is run directly: no crates), else
// from the linker's default search path (with a warning).

use std::env;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=EVX_LIB_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG");
    println!("cargo:rerun-if-changed=build.rs");

    if let Ok(dir) = env::var("EVX_LIB_DIR") {
        if !dir.is_empty() {
            println!("cargo:rustc-link-search=native={}", dir);
            println!("cargo:rustc-link-lib=dylib=evx");
            println!("cargo:lib_dir={}", dir);
            return;
        }
    }

    let pkg_config = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_string());
    match Command::new(&pkg_config).args(["--libs", "evx"]).output() {
        Ok(out) if out.status.success() => {
            let flags = String::from_utf8_lossy(&out.stdout).to_string();
            let mut linked = false;
            for flag in flags.split_whitespace() {
                if let Some(dir) = flag.strip_prefix("-L") {
                    println!("cargo:rustc-link-search=native={}", dir);
                    println!("cargo:lib_dir={}", dir);
                } else if let Some(lib) = flag.strip_prefix("-l") {
                    println!("cargo:rustc-link-lib=dylib={}", lib);
                    linked |= lib == "evx";
                }
            }
            if !linked {
                println!("cargo:rustc-link-lib=dylib=evx");
            }
        }
        Ok(out) => {
            println!(
                "cargo:warning=evx-sys: EVX_LIB_DIR is not set and `{} --libs evx` failed ({}); \
                 linking -levx from the default search path",
                pkg_config,
                String::from_utf8_lossy(&out.stderr).lines().next().unwrap_or("").trim()
            );
            println!("cargo:rustc-link-lib=dylib=evx");
        }
        Err(e) => {
            println!(
                "cargo:warning=evx-sys: EVX_LIB_DIR is not set and `{}` cannot run ({}); \
                 linking -levx from the default search path",
                pkg_config, e
            );
            println!("cargo:rustc-link-lib=dylib=evx");
        }
    }
}
