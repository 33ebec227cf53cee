// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// The Rust examples of docs/*.md (the block after a line
// `<!-- example: NAME.rs -->`, scripts/doc_examples.py) are the programs
// bindings/rust/evx/examples/NAME.rs byte for byte, and each runs to
// success. `cargo test` builds the examples before it runs any test.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::{env, fs};

/// (page, name, code) of every `example: NAME.rs` block of `page`.
fn rust_examples(page: &Path) -> Vec<(String, String, String)> {
    let text = fs::read_to_string(page).unwrap();
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let name = match line.strip_prefix("<!-- example: ").and_then(|r| r.strip_suffix(" -->")) {
            Some(n) if n.ends_with(".rs") => n,
            _ => continue,
        };
        let mut j = i + 1;
        while lines[j].trim().is_empty() {
            j += 1;
        }
        assert!(lines[j].trim_start().starts_with("```"), "{:?}: {} has no block", page, name);
        let is_fence = |l: &&str| l.trim_start().starts_with("```");
        let end = j + 1 + lines[j + 1..].iter().position(is_fence).expect("an unclosed block");
        let code = lines[j + 1..end].iter().map(|l| format!("{}\n", l)).collect();
        out.push((page.display().to_string(), name.to_string(), code));
    }
    out
}

/// Where cargo put the example `name`: target/<profile>/examples/.
fn example_binary(name: &str) -> PathBuf {
    let exe = env::current_exe().unwrap(); // target/<profile>/deps/doc_examples-<hash>
    exe.parent().unwrap().parent().unwrap().join("examples").join(name)
}

#[test]
fn docs_rust_examples_are_the_examples_and_run() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let docs = crate_dir.join("../../../docs");
    let mut pages: Vec<PathBuf> = fs::read_dir(&docs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().map_or(false, |e| e == "md"))
        .collect();
    pages.sort();
    let examples: Vec<_> = pages.iter().flat_map(|p| rust_examples(p)).collect();
    assert!(!examples.is_empty(), "no `example: NAME.rs` block in {:?}", docs);
    for (page, name, code) in examples {
        let file = crate_dir.join("examples").join(&name);
        let want = fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("{}'s {}: {:?} ({})", page, name, file, e));
        assert!(code == want, "{}'s {} differs from {:?}", page, name, file);
        let bin = example_binary(name.trim_end_matches(".rs"));
        let out = Command::new(&bin)
            .output()
            .unwrap_or_else(|e| panic!("{:?} ({}): run `cargo test`, which builds it", bin, e));
        assert!(out.status.success(), "{}'s {} failed: {}{}", page, name,
                String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    }
}
