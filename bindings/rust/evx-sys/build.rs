// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Finds libevx and links it, looking in this order:
//   1. EVX_LIB_DIR: the folder that holds libevx.so;
//   2. pkg-config's `evx` package (the pkg-config program, run directly: no
//      crates), with PKG_CONFIG_PATH naming an install's pkgconfig folder;
//   3. this repository's build tree, ../../../build/src from this crate
//      (after `meson setup build && meson compile -C build`);
//   4. else the linker's default search path, with a warning naming what was
//      tried.
// The folder found gets an rpath (-Wl,-rpath), so that `cargo run` and
// `cargo test` start without LD_LIBRARY_PATH. Cargo gives a build script's
// rustc-link-arg to this package's own targets only, so the folders also go
// out as the `links` metadata `rpath` (DEP_EVX_RPATH, ':'-separated): the
// build script of a crate that depends on evx-sys directly (the evx crate's
// does) adds the same rpath to its own binaries, tests and examples.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn link(search: &[String], rpath: &[String], how: &str) {
    for dir in search {
        println!("cargo:rustc-link-search=native={}", dir);
    }
    println!("cargo:rustc-link-lib=dylib=evx");
    for dir in rpath {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir);
    }
    if let Some(first) = search.first() {
        println!("cargo:lib_dir={}", first);
    }
    println!("cargo:rpath={}", rpath.join(":"));
    println!("cargo:found_by={}", how);
}

/// `pkg-config --libs evx`: Ok((-L folders, rpath folders)) or Err(why).
fn from_pkg_config() -> Result<(Vec<String>, Vec<String>), String> {
    let pkg_config = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_string());
    let out = Command::new(&pkg_config)
        .args(["--libs", "evx"])
        .output()
        .map_err(|e| format!("`{}` cannot run ({})", pkg_config, e))?;
    if !out.status.success() {
        return Err(format!(
            "`{} --libs evx` failed ({})",
            pkg_config,
            String::from_utf8_lossy(&out.stderr).lines().next().unwrap_or("").trim()
        ));
    }
    let flags = String::from_utf8_lossy(&out.stdout).to_string();
    let (mut search, mut rpath) = (Vec::new(), Vec::new());
    for flag in flags.split_whitespace() {
        if let Some(dir) = flag.strip_prefix("-L") {
            search.push(dir.to_string());
        } else if let Some(dir) = flag.strip_prefix("-Wl,-rpath,") {
            rpath.push(dir.to_string());
        }
    }
    // Folders pkg-config names are outside the loader's default path (it
    // leaves the system's out): each needs an rpath, evx.pc's own or not.
    for dir in &search {
        if !rpath.contains(dir) {
            rpath.push(dir.clone());
        }
    }
    Ok((search, rpath))
}

fn has_libevx(dir: &Path) -> bool {
    dir.join("libevx.so").exists() || dir.join("libevx.so.0").exists()
}

fn main() {
    for var in ["EVX_LIB_DIR", "PKG_CONFIG", "PKG_CONFIG_PATH", "PKG_CONFIG_LIBDIR",
                "PKG_CONFIG_SYSROOT_DIR"] {
        println!("cargo:rerun-if-env-changed={}", var);
    }
    println!("cargo:rerun-if-changed=build.rs");
    let mut tried = Vec::new();

    if let Ok(dir) = env::var("EVX_LIB_DIR") {
        if !dir.is_empty() {
            let abs = Path::new(&dir).canonicalize().map(|p| p.display().to_string())
                .unwrap_or(dir);
            link(&[abs.clone()], &[abs], "EVX_LIB_DIR");
            return;
        }
    }
    tried.push("EVX_LIB_DIR (not set)".to_string());

    match from_pkg_config() {
        Ok((search, rpath)) => {
            link(&search, &rpath, "pkg-config");
            return;
        }
        Err(why) => tried.push(format!("pkg-config: {}", why)),
    }

    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let tree = manifest.join("../../../build/src");
    if has_libevx(&tree) {
        let dir = tree.canonicalize().unwrap_or(tree).display().to_string();
        println!("cargo:rerun-if-changed={}/libevx.so", dir);
        link(&[dir.clone()], &[dir], "build tree");
        return;
    }
    tried.push(format!("the build tree {} (no libevx.so)", tree.display()));
    // a missing path makes cargo run this script again on the next build
    println!("cargo:rerun-if-changed={}/libevx.so", tree.display());

    println!(
        "cargo:warning=evx-sys: libevx not found ({}); linking -levx from the linker's \
         default search path",
        tried.join("; ")
    );
    link(&[], &[], "default search path");
}
