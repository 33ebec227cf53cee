#!/usr/bin/env bash
# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
#
# The README's examples, cut out of README.md and run as a user runs them,
# on the host emulation. An example is the fenced block right after a line
# `<!-- example: NAME -->`.
#
#   readme_examples.sh list                 the names of the examples
#   readme_examples.sh extract NAME [FILE]  one example, to stdout or FILE
#   readme_examples.sh c [WORK_DIR]         hello.c: installs evx to a private
#       prefix as the README says (--prefix P --libdir=lib), builds hello.c with
#       `pkg-config --cflags --libs evx` alone, and runs it with no
#       LD_LIBRARY_PATH (evx.pc's rpath must do)
#   readme_examples.sh rust [WORK_DIR]      hello.rs: checks that it is
#       bindings/rust/evx/examples/hello.rs, then `cargo run --example hello`
#       with no EVX_LIB_DIR, PKG_CONFIG_PATH or LD_LIBRARY_PATH (the build
#       tree, ./build), `cargo test` the same way, and the example again
#       against WORK_DIR's install by PKG_CONFIG_PATH (run `c` first)
#   readme_examples.sh docs [WORK_DIR]     the C examples of docs/*.md
#       (`<!-- example: NAME.c -->`, cut out by scripts/doc_examples.py, which
#       also fails on a block marked neither example nor fragment): each built
#       with pkg-config against WORK_DIR's install (run `c` first) and run on
#       the emulation with no LD_LIBRARY_PATH; it must exit 0
# WORK_DIR defaults to build-readme. The Python examples run against the
# installed wheel in scripts/wheel_test.sh (the README's) and in the Python
# tests (docs/*.md's: bindings/python/tests/test_docs_examples.py).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
README="$ROOT/README.md"

extract() { # extract NAME: the block, or an error
    local text
    text=$(awk -v marker="<!-- example: $1 -->" '
        $0 == marker { state = 1; next }
        state == 1 && /^```/ { state = 2; next }
        state == 1 && !/^[[:space:]]*$/ { exit }
        state == 2 && /^```/ { exit }
        state == 2 { print }' "$README")
    if [ -z "$text" ]; then
        echo "readme_examples: no example '$1' in $README" >&2
        return 1
    fi
    printf '%s\n' "$text"
}

work_dir() {
    local w="${1:-build-readme}"
    case "$w" in /*) ;; *) w="$ROOT/$w" ;; esac
    mkdir -p "$w"
    echo "$w"
}

# Nothing from the caller's environment may help find libevx.
clean() { env -u LD_LIBRARY_PATH -u EVX_LIB_DIR -u EVX_LIBRARY -u PKG_CONFIG_PATH \
              -u PKG_CONFIG_LIBDIR -u PKG_CONFIG_SYSROOT_DIR "$@"; }

run_c() {
    local work prefix
    work=$(work_dir "${1:-}")
    prefix="$work/prefix"
    # The README's commands, with the prefix in WORK_DIR.
    if [ -f "$work/build/build.ninja" ]; then
        meson setup --reconfigure "$work/build" "$ROOT" --prefix="$prefix" --libdir=lib \
            -Ddocs=disabled -Dpython_core=disabled \
            -Dtoolkit_include="${CUDA_INCLUDE:-/usr/local/cuda/include}" >/dev/null
    else
        meson setup "$work/build" "$ROOT" --prefix="$prefix" --libdir=lib \
            -Ddocs=disabled -Dpython_core=disabled \
            -Dtoolkit_include="${CUDA_INCLUDE:-/usr/local/cuda/include}" >/dev/null
    fi
    rm -rf "$prefix"
    meson compile -C "$work/build" -j "$(nproc 2>/dev/null || echo 2)" >/dev/null
    meson install -C "$work/build" >/dev/null
    extract hello.c >"$work/hello.c"
    local flags
    flags=$(clean PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs evx)
    echo "readme_examples: pkg-config --cflags --libs evx: $flags"
    # shellcheck disable=SC2086 # the flags are words
    (cd "$work" && cc -std=c99 -Wall -Wextra -Werror hello.c -o hello $flags)
    local out
    out=$(cd / && clean EVX_DRIVER=host "$work/hello")
    echo "readme_examples: ./hello: $out"
    case "$out" in
        *" ms on $prefix/lib/libevx-host.so") ;;
        *) echo "readme_examples: FAIL: hello.c did not run on the installed emulation ($prefix/lib)"
           return 1 ;;
    esac
    echo "readme_examples: C ok"
}

run_rust() {
    local work out
    work=$(work_dir "${1:-}")
    extract hello.rs >"$work/hello.rs"
    if ! cmp -s "$work/hello.rs" "$ROOT/bindings/rust/evx/examples/hello.rs"; then
        echo "readme_examples: FAIL: the README's hello.rs differs from bindings/rust/evx/examples/hello.rs:"
        diff -u "$ROOT/bindings/rust/evx/examples/hello.rs" "$work/hello.rs" || true
        return 1
    fi
    # The build tree (./build/src), found by evx-sys with nothing set.
    out=$(cd "$ROOT/bindings/rust" && clean EVX_DRIVER=host CARGO_TARGET_DIR="$work/rust-target" \
          cargo run --offline -q --example hello)
    echo "readme_examples: cargo run --example hello (build tree): $out"
    case "$out" in
        *" ms on $ROOT/build/src/host/libevx-host.so") ;;
        *) echo "readme_examples: FAIL: not run on the build tree's emulation"; return 1 ;;
    esac
    # cargo test, the same way: the tests start without LD_LIBRARY_PATH too.
    (cd "$ROOT/bindings/rust" && clean EVX_DRIVER=host CARGO_TARGET_DIR="$work/rust-target" \
         cargo test --offline -q 2>&1 | grep -E '^test result|FAILED|^error' || true
     exit "${PIPESTATUS[0]}") ||
        { echo "readme_examples: FAIL: cargo test without LD_LIBRARY_PATH"; return 1; }
    # An install, named by PKG_CONFIG_PATH (from `readme_examples.sh c`).
    if [ ! -f "$work/prefix/lib/pkgconfig/evx.pc" ]; then
        echo "readme_examples: FAIL: no install in $work/prefix (run '$0 c' first)"
        return 1
    fi
    out=$(cd "$ROOT/bindings/rust" && clean EVX_DRIVER=host CARGO_TARGET_DIR="$work/rust-target" \
          PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" cargo run --offline -q --example hello)
    echo "readme_examples: cargo run --example hello (PKG_CONFIG_PATH): $out"
    case "$out" in
        *" ms on $work/prefix/lib/libevx-host.so") ;;
        *) echo "readme_examples: FAIL: not run on the installed emulation"; return 1 ;;
    esac
    echo "readme_examples: Rust ok"
}

run_docs() {
    local work prefix flags name page n=0
    work=$(work_dir "${1:-}")
    prefix="$work/prefix"
    python3 "$ROOT/scripts/doc_examples.py" check || return 1
    if [ ! -f "$prefix/lib/pkgconfig/evx.pc" ]; then
        echo "readme_examples: FAIL: no install in $prefix (run '$0 c' first)"
        return 1
    fi
    flags=$(clean PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs evx)
    mkdir -p "$work/docs"
    while read -r name page; do
        case "$name" in *.c) ;; *) continue ;; esac
        case "$page" in docs/*) ;; *) continue ;; esac
        python3 "$ROOT/scripts/doc_examples.py" extract "$name" "$work/docs/$name"
        # shellcheck disable=SC2086 # the flags are words
        (cd "$work/docs" && cc -std=c99 -Wall -Wextra -Werror "$name" -o "${name%.c}" $flags) ||
            { echo "readme_examples: FAIL: $page's $name does not build"; return 1; }
        if ! (cd / && clean EVX_DRIVER=host EVX_HOST_DEVICES=2 "$work/docs/${name%.c}"); then
            echo "readme_examples: FAIL: $page's $name exited nonzero"
            return 1
        fi
        echo "readme_examples: $page: $name ok"
        n=$((n + 1))
    done < <(python3 "$ROOT/scripts/doc_examples.py" list)
    [ "$n" -gt 0 ] || { echo "readme_examples: FAIL: no C example in docs/*.md"; return 1; }
    echo "readme_examples: $n C examples of docs/*.md ok"
}

case "${1:-}" in
    list) sed -n 's/^<!-- example: \(.*\) -->$/\1/p' "$README" ;;
    extract)
        [ $# -ge 2 ] || { echo "usage: $0 extract NAME [FILE]" >&2; exit 2; }
        if [ $# -ge 3 ]; then extract "$2" >"$3"; else extract "$2"; fi ;;
    c) run_c "${2:-}" ;;
    rust) run_rust "${2:-}" ;;
    docs) run_docs "${2:-}" ;;
    *) echo "usage: $0 list | extract NAME [FILE] | c [WORK_DIR] | rust [WORK_DIR] | docs [WORK_DIR]" >&2
       exit 2 ;;
esac
