#!/usr/bin/env bash
# Run on a machine with a GPU (no network needed): build evx with meson, run
# the conformance suite against the real driver and against the host
# emulation with the same number of devices, then the stages asked for.
#
#   scripts/gpu-check.sh [conformance] [interop] [bench] [pybench] [benchab]
#
# No stage named: all of them but benchab. benchab compares this tree's
# evx-bench with that of git revision $EVX_BENCH_BASE (or the source tree
# $EVX_BENCH_BASE_SRC), built beside it, run alternately in one go
# (bench/ab_compare.py; $EVX_BENCH_ROUNDS rounds, default 5). Full logs go to $OUT (or /tmp/evx-out).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/evx-out}
mkdir -p "$out"
build=${EVX_GPU_BUILD:-/tmp/evx-gpu-build}
stages=${*:-conformance interop bench pybench}
status=0

nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader || true
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" --buildtype=release -Ddocs=disabled -Dspeedups=enabled \
    -Dpython="$(command -v python3)" >"$out/setup.log" 2>&1 \
    || { tail -40 "$out/setup.log"; exit 1; }
fi
meson compile -C "$build" >"$out/compile.log" 2>&1 || { tail -60 "$out/compile.log"; exit 1; }
echo "built in $build"

conf="$build/tests/evx-conformance"
ndev=$(python3 -c 'import ctypes,sys
cu=ctypes.CDLL("libcuda.so.1"); n=ctypes.c_int()
sys.exit(1) if cu.cuInit(0) or cu.cuDeviceGetCount(ctypes.byref(n)) else print(n.value)' 2>/dev/null || echo 1)

for stage in $stages; do
  case $stage in
  conformance)
    echo "=== conformance, real driver ($ndev device(s))"
    env -u EVX_DRIVER "$conf" >"$out/conformance-gpu.txt" 2>&1 || status=1
    grep -E "^(FAIL|SKIP)|conformance:" "$out/conformance-gpu.txt" | tail -40
    echo "=== conformance, host emulation with EVX_HOST_DEVICES=$ndev"
    EVX_DRIVER=host EVX_HOST_DEVICES=$ndev "$conf" >"$out/conformance-host.txt" 2>&1 || status=1
    grep -E "^(FAIL|SKIP)|conformance:" "$out/conformance-host.txt" | tail -40
    ;;
  interop)
    # once on each core of the Python layer: compiled, then ctypes
    for core in "$build/bindings/python" 0; do
      name=$([ "$core" = 0 ] && echo ctypes || echo compiled)
      echo "=== Python bindings on the real driver, $name core (unit tests + framework interop)"
      EVX_SPEEDUPS="$core" EVX_LIBRARY="$build/src/libevx.so" PYTHONPATH="$PWD/bindings/python" \
        python3 -m pytest -q -rs -p no:cacheprovider bindings/python/tests/gpu bindings/python/tests \
        >"$out/interop-$name.txt" 2>&1 || status=1
      tail -12 "$out/interop-$name.txt"
    done
    ;;
  bench)
    echo "=== C benchmarks, real driver"
    env -u EVX_DRIVER "$build/bench/evx-bench" >"$out/bench.txt" 2>&1 || status=1
    cat "$out/bench.txt" | grep -v '^BENCH'
    env -u EVX_DRIVER "$build/bench/evx-bench-threads" >"$out/bench-threads.txt" 2>&1 || status=1
    cat "$out/bench-threads.txt"
    ;;
  pybench)
    for core in "$build/bindings/python" 0; do
      name=$([ "$core" = 0 ] && echo ctypes || echo compiled)
      echo "=== Python benchmark, real driver, $name core"
      EVX_SPEEDUPS="$core" EVX_LIBRARY="$build/src/libevx.so" PYTHONPATH="$PWD/bindings/python" \
        PYTHONUNBUFFERED=1 python3 bench/py_bench.py >"$out/pybench-$name.txt" 2>&1 || status=1
      tail -22 "$out/pybench-$name.txt"
    done
    ;;
  benchab)
    if [ -n "${EVX_BENCH_BASE_SRC:-}" ]; then base=(--base-src "$EVX_BENCH_BASE_SRC")
    elif [ -n "${EVX_BENCH_BASE:-}" ]; then base=(--base-rev "$EVX_BENCH_BASE")
    else echo "benchab: set EVX_BENCH_BASE (a git revision) or EVX_BENCH_BASE_SRC"; status=1; continue; fi
    echo "=== C benchmark before/after, real driver: ${base[*]} vs this tree"
    env -u EVX_DRIVER python3 bench/ab_compare.py --rounds "${EVX_BENCH_ROUNDS:-5}" "${base[@]}" \
      --base-build "$build-base" "$build" >"$out/bench-ab.txt" 2>&1 || status=1
    cat "$out/bench-ab.txt"
    ;;
  *) echo "unknown stage $stage"; status=1 ;;
  esac
done
exit $status
