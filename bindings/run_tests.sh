#!/usr/bin/env bash
# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
#
# Tests of the bindings against the host emulation:
#   1. the generated files are byte-identical to a fresh generation (into a
#      temporary folder, so it works before and after they are committed);
#   2. the layout check (C program vs ctypes, inside pytest; vs Rust, inside
#      cargo test);
#   3. pytest on bindings/python/tests (not gpu/) against the package as
#      meson built it: BUILD/bindings/python/evx, with its compiled core
#      evx._core, which finds BUILD/src/libevx.so.0 through its rpath;
#   4. a smoke run of bench/py_bench.py;
#   5. cargo test --offline in bindings/rust.
#
# Usage: bindings/run_tests.sh [BUILD_DIR]   (default: build; the library must
# be built there: BUILD_DIR/src/libevx.so and BUILD_DIR/src/host/).
# Exits nonzero if any step fails; runs every step either way.

set -u

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-build}"
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
PY="${PYTHON:-python3}"
failed=()

step() { printf '\n=== %s\n' "$*"; }

LIBDIR="$BUILD/src"
if [ ! -e "$LIBDIR/libevx.so" ] && [ ! -e "$LIBDIR/libevx.so.0" ]; then
    echo "run_tests.sh: no libevx in $LIBDIR: build first (meson setup $BUILD && meson compile -C $BUILD)" >&2
    exit 2
fi

export EVX_DRIVER=host
export EVX_LIB_DIR="$LIBDIR"
export LD_LIBRARY_PATH="$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# 1. Generated files are up to date and the generation is deterministic.
step "generated files vs a fresh generation"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
if "$ROOT/bindings/generate" --out "$TMP/a" >/dev/null &&
   "$ROOT/bindings/generate" --out "$TMP/b" >/dev/null; then
    ok=1
    while IFS= read -r f; do
        if ! cmp -s "$TMP/a/$f" "$TMP/b/$f"; then
            echo "not deterministic: two generations of $f differ"; ok=0
        fi
        if ! cmp -s "$TMP/a/$f" "$ROOT/$f"; then
            echo "out of date: $f (run bindings/generate)"
            diff -u "$ROOT/$f" "$TMP/a/$f" | head -40
            ok=0
        fi
    done < <("$ROOT/bindings/generate" --list)
    if [ "$ok" = 1 ]; then
        echo "generated files are up to date ($("$ROOT/bindings/generate" --list | wc -l) files)"
    else
        failed+=("generated files")
    fi
    if command -v git >/dev/null && git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1 &&
       git -C "$ROOT" ls-files --error-unmatch bindings/generate >/dev/null 2>&1; then
        # committed: regenerating in place must leave the tree unchanged
        if ! git -C "$ROOT" diff --exit-code --stat -- $("$ROOT/bindings/generate" --list); then
            failed+=("git diff of generated files")
        fi
    fi
else
    failed+=("bindings/generate")
fi

# 2 + 3. Layout check and the Python tests, on the package in the build tree
# (run from there, so that it is the evx imported, not bindings/python/evx,
# which has no compiled core). EVX_LIBRARY is left unset: the core's own
# search finds the build's libevx (the tests check that the ctypes layer
# opens the same file).
PKGDIR="$BUILD/bindings/python"
if "$PY" -m pytest --version >/dev/null 2>&1; then
    step "pytest bindings/python/tests on $PKGDIR/evx (layout check included; gpu/ excluded)"
    if ! ls "$PKGDIR"/evx/_core*.so >/dev/null 2>&1; then
        echo "evx._core was not built in $PKGDIR/evx (meson found no Cython or no Python headers?)"
        failed+=("evx._core not built")
    elif ! (cd "$PKGDIR" && env -u EVX_LIBRARY PYTHONPATH="$PKGDIR" \
            "$PY" -m pytest -p no:cacheprovider "$ROOT/bindings/python/tests" \
            --ignore="$ROOT/bindings/python/tests/gpu" -q -rs); then
        failed+=("pytest")
    fi
else
    echo "pytest is not installed (pip install pytest)"
    failed+=("pytest missing")
fi

# The Python benchmark runs (a smoke run: it must finish, its figures mean
# nothing on the emulation).
step "bench/py_bench.py smoke run (host emulation)"
if ! PYTHONPATH="$PKGDIR" "$PY" "$ROOT/bench/py_bench.py" --n 80 --reps 1 --pairs 3 \
        >"$BUILD/py_bench-smoke.txt" 2>&1 ||
   ! grep -q "^| timed region |" "$BUILD/py_bench-smoke.txt"; then
    tail -20 "$BUILD/py_bench-smoke.txt"
    failed+=("py_bench smoke run")
else
    echo "ok ($BUILD/py_bench-smoke.txt)"
fi

# 4. Rust.
step "cargo test --offline (bindings/rust)"
if command -v cargo >/dev/null; then
    if ! (cd "$ROOT/bindings/rust" &&
          CARGO_TARGET_DIR="$BUILD/bindings-rust-target" cargo test --offline -q 2>&1); then
        failed+=("cargo test")
    fi
else
    echo "cargo is not installed: the Rust bindings cannot be tested (apt-get install cargo)"
    failed+=("cargo missing")
fi

echo
if [ ${#failed[@]} -ne 0 ]; then
    echo "bindings/run_tests.sh: FAILED: ${failed[*]}"
    exit 1
fi
echo "bindings/run_tests.sh: all steps passed"
