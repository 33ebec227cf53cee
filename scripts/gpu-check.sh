#!/usr/bin/env bash
# Run on a machine with a GPU (no network needed): build evx with meson, run
# the conformance suite against the real driver and against the host
# emulation with the same number of devices, then the stages asked for.
#
#   scripts/gpu-check.sh [conformance] [interop] [bench] [pybench]
#
# No stage named: all of them. Full logs go to $OUT (or /tmp/evx-out).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/evx-out}
mkdir -p "$out"
build=${EVX_GPU_BUILD:-/tmp/evx-gpu-build}
stages=${*:-conformance interop bench pybench}
status=0

nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader || true
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" --buildtype=release -Ddocs=disabled -Dpython_core=enabled \
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
    # the package as meson built it (its compiled core links $build/src)
    echo "=== Python bindings on the real driver (unit tests + framework interop)"
    (cd "$build/bindings/python" && PYTHONPATH="$PWD" \
      python3 -m pytest -q -rs -p no:cacheprovider "$OLDPWD/bindings/python/tests/gpu" \
        "$OLDPWD/bindings/python/tests") >"$out/interop.txt" 2>&1 || status=1
    tail -12 "$out/interop.txt"
    ;;
  bench)
    echo "=== C benchmarks, real driver"
    env -u EVX_DRIVER "$build/bench/evx-bench" >"$out/bench.txt" 2>&1 || status=1
    cat "$out/bench.txt" | grep -v '^BENCH'
    env -u EVX_DRIVER "$build/bench/evx-bench-threads" >"$out/bench-threads.txt" 2>&1 || status=1
    cat "$out/bench-threads.txt"
    ;;
  pybench)
    echo "=== Python benchmark, real driver"
    PYTHONPATH="$build/bindings/python" PYTHONUNBUFFERED=1 python3 bench/py_bench.py \
      >"$out/pybench.txt" 2>&1 || status=1
    tail -22 "$out/pybench.txt"
    ;;
  *) echo "unknown stage $stage"; status=1 ;;
  esac
done
exit $status
