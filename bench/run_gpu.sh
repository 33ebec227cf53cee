#!/usr/bin/env bash
# Runs the C benchmarks (evx-bench, evx-bench-threads) against the real CUDA
# driver. Run from the repository root on the GPU machine:
#
#     bench/run_gpu.sh              # output on the terminal
#     OUT=/some/dir bench/run_gpu.sh   # also kept in $OUT/bench.txt
#
# It makes a release build in /tmp/evx-build (EVX_BENCH_BUILD overrides),
# building only the two benchmark programs and libevx. Warnings are not
# errors in this build: it measures, it does not lint, and the GPU machine's
# compiler may differ from the development one. MESON names the meson to
# use (default: meson on PATH). Budget: well under 4 minutes (the programs'
# own run time is about 5 s and 25 s with the defaults).
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD=${EVX_BENCH_BUILD:-/tmp/evx-build}
MESON=${MESON:-meson}

main() {
    echo "== evx C benchmarks: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), $(uname -n)"
    if command -v nvidia-smi >/dev/null 2>&1; then
        nvidia-smi --query-gpu=name,driver_version --format=csv
    else
        echo "nvidia-smi: not found"
    fi
    echo "CPU cores: $(nproc)"

    if ! command -v "$MESON" >/dev/null 2>&1; then
        echo "run_gpu.sh: '$MESON' not found; set MESON to a meson executable" >&2
        return 1
    fi
    rm -rf "$BUILD"
    echo "== meson setup (release) in $BUILD"
    "$MESON" setup "$BUILD" --buildtype=release -Dwerror=false -Ddocs=disabled \
        >"$BUILD.setup.log" 2>&1 || { tail -n 40 "$BUILD.setup.log"; return 1; }
    echo "== compile"
    "$MESON" compile -C "$BUILD" evx-bench evx-bench-threads \
        >"$BUILD.compile.log" 2>&1 || { tail -n 40 "$BUILD.compile.log"; return 1; }

    # The real driver: libcuda.so.1.
    unset EVX_DRIVER

    # A failure of one program does not stop the other; the script's exit
    # status is the first nonzero one (124: a program ran out of time).
    local rc=0 r
    echo
    echo "== evx-bench (single thread, ns per call)"
    r=0; timeout 120 "$BUILD/bench/evx-bench" || r=$?
    [ "$r" -eq 0 ] || { echo "== evx-bench failed: exit status $r"; [ "$rc" -ne 0 ] || rc=$r; }
    echo
    echo "== evx-bench-threads (iterations per second, all threads)"
    r=0; timeout 150 "$BUILD/bench/evx-bench-threads" || r=$?
    [ "$r" -eq 0 ] || { echo "== evx-bench-threads failed: exit status $r"; [ "$rc" -ne 0 ] || rc=$r; }
    echo
    echo "== done: $(date -u '+%H:%M:%S UTC'), exit status $rc"
    return "$rc"
}

if [ -n "${OUT:-}" ]; then
    mkdir -p "$OUT"
    main 2>&1 | tee "$OUT/bench.txt"
else
    main 2>&1
fi
