#!/usr/bin/env bash
# Run on a machine with a GPU (no network needed): build evx with meson, run
# the conformance suite against the real driver and against the host
# emulation with the same number of devices, then the stages asked for.
#
#   scripts/gpu-check.sh [conformance] [sanitizer] [stress] [interop] [docs_examples] [bench] [floorparts] [fencebench] [depotmemory] [pybench] [rustbench] [asyncbench] [graphbench] [transcripts] [pipeline] [benchab]
#
# sanitizer: the conformance suite under compute-sanitizer (memcheck with
# leak checking, then synccheck); the stage fails unless each run exits 0
# and its ERROR SUMMARY says 0 errors. stress: tests/stress on the GPU
# (EVX_STRESS_SECONDS, default 30). See docs/robustness.md. rustbench: the
# Rust crate's hot calls against the raw driver, and the notifier Future's
# latency against a thread blocked in cuEventSynchronize
# (bindings/rust/evx/examples/rustbench.rs; needs cargo, else it says so and
# is skipped, unless EVX_RUSTBENCH_BIN names one built elsewhere).
# depotmemory: evx-depot-memory, the host and device memory of the driver
# events evx keeps for reuse, before and after evx_device_trim, beside the
# raw driver's (bench/depot_memory.c). floorparts: evx-floor-parts, each hot call's evx - raw split
# into the guarantees evx keeps (bench/floor_parts.c). graphbench: timing inside a CUDA graph
# (bench/py_graph_bench.py; docs/graphs.md): PyTorch kernels captured with
# torch.cuda.graph, evx marks in and out of the graph against torch's
# external events, and what the marks add to a replay (needs torch, else it
# says so and that half is skipped); then the same without PyTorch (raw
# driver capture, host functions as the step). docs_examples: the examples of
# README.md and docs/*.md that need PyTorch, CuPy or cuda.core
# (`<!-- example-gpu: NAME.py -->`, scripts/doc_examples.py run-gpu), each
# run as written on the real driver; one whose framework does not import
# fails.
#
# transcripts: records driver transcripts (tests/transcript; docs/host-emulation.md,
# "Transcripts") on the real driver, $EVX_TRANSCRIPT_PROGRAMS random programs
# (default 2000) and the legality programs, seed $EVX_TRANSCRIPT_SEED (default
# 1), in $EVX_TRANSCRIPT_JOBS recorder processes at once (default 12: the
# driver serialises context creation and destruction across processes, so
# more jobs mostly wait on each other; generator 5 makes few contexts, and
# 12 jobs recorded all programs in about 100 s on two H100s), on one device and, with two GPUs,
# on two; prints where the recording's time went (--timing: the costliest
# entry points, per job) and the programs and calls recorded; writes them to $OUT/transcripts, then replays each
# against libevx-host.so and prints the difference count (the stage fails on
# any difference; a program that crashed the recorder, CRASH <signal>, is
# compared up to the crash and counted apart).
# A recording past $EVX_TRANSCRIPT_SECONDS (default 175) is stopped: its
# complete programs are replayed and the stage fails. Commit the transcripts
# under tests/transcript/data/. $EVX_TRANSCRIPT_ARGS: more recorder options.
#
# pipeline: examples/pipeline with PyTorch (needs torch with CUDA; without,
# it says so, and fails when named): a producer process on GPU 0 and a consumer on GPU
# 1 (both on GPU 0 with one GPU), hand-offs by evx fences, IPC events and
# host synchronize, at 64 KiB, 4 MiB and 64 MiB ($EVX_PIPELINE_BUFFERS
# buffers, default 500), then the ordering test (4 producer streams, 4
# consumer processes). Writes $OUT/pipeline/pipeline.{json,md} and the
# traces; examples/pipeline/report.py --write-doc puts the table into
# docs/performance.md. Fails if a consumer read a buffer before its signal.
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
stages=${*:-conformance sanitizer stress interop docs_examples bench floorparts fencebench depotmemory pybench rustbench asyncbench graphbench transcripts pipeline}
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
  sanitizer)
    cs=$(command -v compute-sanitizer || echo "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer")
    if [ ! -x "$cs" ]; then
      echo "=== sanitizer: compute-sanitizer not found (PATH, \$CUDA_HOME/bin)"; status=1; continue
    fi
    for tool in memcheck synccheck; do
      # application-only: the suite's peer processes (fence.fd_namespaces'
      # child in its own namespaces) are not the library's memory, and
      # instrumenting them made that case outlast its limit.
      args=(--tool "$tool" --error-exitcode 99 --target-processes application-only)
      # API errors are the suite's own bad-input cases; leaks are not.
      [ "$tool" = memcheck ] && args+=(--report-api-errors no --leak-check full)
      log="$out/sanitizer-$tool.txt"
      echo "=== conformance under compute-sanitizer ${args[*]}"
      env -u EVX_DRIVER EVX_CONF_CASE_SECONDS=600 "$cs" "${args[@]}" "$conf" >"$log" 2>&1
      rc=$?
      grep -E "^(FAIL|SKIP)|conformance:|ERROR SUMMARY" "$log" | tail -40
      errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9][0-9]*\) error.*/\1/p' "$log" | tail -1)
      # Every error fails the stage, leaks included: a destroyed fence's
      # memory is freed once its queued work ran (docs/fences.md,
      # "Destroying a fence"), and the suite's teardown checks that none is
      # pending or kept.
      if [ -z "$errors" ] || [ "$errors" -ne 0 ] || [ "$rc" -ne 0 ]; then
        echo "sanitizer $tool: FAILED (exit $rc, ERROR SUMMARY ${errors:-missing})"; status=1
      else
        echo "sanitizer $tool: 0 errors"
      fi
    done
    ;;
  stress)
    echo "=== threads stress, real driver"
    env -u EVX_DRIVER EVX_STRESS_SECONDS="${EVX_STRESS_SECONDS:-30}" "$build/tests/evx-stress" \
      >"$out/stress-gpu.txt" 2>&1 || status=1
    tail -8 "$out/stress-gpu.txt"
    ;;
  interop)
    # the package as meson built it (its compiled core links $build/src)
    echo "=== Python bindings on the real driver (unit tests + framework interop)"
    (cd "$build/bindings/python" && PYTHONPATH="$PWD" \
      python3 -m pytest -v -rfEs -p no:cacheprovider "$OLDPWD/bindings/python/tests/gpu" \
        "$OLDPWD/bindings/python/tests") >"$out/interop.txt" 2>&1 || status=1
    tail -12 "$out/interop.txt"
    ;;
  docs_examples)
    echo "=== documentation examples that need PyTorch, CuPy or cuda.core (real driver)"
    (PYTHONPATH="$build/bindings/python" env -u EVX_DRIVER \
      python3 scripts/doc_examples.py run-gpu) >"$out/docs-examples.txt" 2>&1 || status=1
    tail -20 "$out/docs-examples.txt"
    ;;
  bench)
    echo "=== C benchmarks, real driver"
    env -u EVX_DRIVER "$build/bench/evx-bench" >"$out/bench.txt" 2>&1 || status=1
    cat "$out/bench.txt" | grep -v '^BENCH'
    env -u EVX_DRIVER "$build/bench/evx-bench-threads" >"$out/bench-threads.txt" 2>&1 || status=1
    cat "$out/bench-threads.txt"
    ;;
  floorparts)
    echo "=== where evx's nanoseconds over the driver go (evx-floor-parts, C, real driver)"
    env -u EVX_DRIVER "$build/bench/evx-floor-parts" >"$out/floor-parts.txt" 2>&1 || status=1
    grep -v '^PARTS' "$out/floor-parts.txt"
    ;;
  fencebench)
    echo "=== fences against events and raw stream memory operations (C, real driver)"
    env -u EVX_DRIVER "$build/bench/evx-fence-bench" >"$out/fence-bench.txt" 2>&1 || status=1
    grep -v '^BENCH' "$out/fence-bench.txt"
    ;;
  depotmemory)
    echo "=== memory of the driver events evx keeps for reuse (C, real driver)"
    env -u EVX_DRIVER "$build/bench/evx-depot-memory" >"$out/depot-memory.txt" 2>&1 || status=1
    grep -v '^BENCH' "$out/depot-memory.txt"
    ;;
  pybench)
    echo "=== Python benchmark, real driver"
    PYTHONPATH="$build/bindings/python" PYTHONUNBUFFERED=1 python3 bench/py_bench.py \
      >"$out/pybench.txt" 2>&1 || status=1
    tail -22 "$out/pybench.txt"
    ;;
  rustbench)
    if [ -n "${EVX_RUSTBENCH_BIN:-}" ]; then
      # Built on another machine (a GPU image without a Rust toolchain); it
      # loads this build's libevx (same soname) through the library path.
      echo "=== Rust benchmark, real driver ($EVX_RUSTBENCH_BIN, built elsewhere; libevx of $build/src)"
      env -u EVX_DRIVER LD_LIBRARY_PATH="$build/src${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        "$EVX_RUSTBENCH_BIN" >"$out/rustbench.txt" 2>&1 || status=1
      grep -v '^BENCH' "$out/rustbench.txt"
      continue
    fi
    if ! command -v cargo >/dev/null; then
      echo "=== rustbench: cargo is not installed on this machine: the Rust benchmark is not run"
      echo "    (build it elsewhere: cargo build --release --example rustbench in bindings/rust,"
      echo "    and pass the binary as EVX_RUSTBENCH_BIN)"
      continue
    fi
    echo "=== Rust benchmark, real driver (bindings/rust/evx/examples/rustbench.rs)"
    if (cd bindings/rust && EVX_LIB_DIR="$build/src" CARGO_TARGET_DIR="$build/rust-target" \
          cargo build --offline --release --example rustbench) >"$out/rustbench-build.txt" 2>&1; then
      env -u EVX_DRIVER "$build/rust-target/release/examples/rustbench" >"$out/rustbench.txt" 2>&1 \
        || status=1
      grep -v '^BENCH' "$out/rustbench.txt"
    else
      tail -30 "$out/rustbench-build.txt"; status=1
    fi
    ;;
  asyncbench)
    echo "=== where the notifier's latency goes (C, real driver): evx-notify-latency, then --diag, then --interference"
    { env -u EVX_DRIVER "$build/bench/evx-notify-latency" &&
      env -u EVX_DRIVER "$build/bench/evx-notify-latency" --diag &&
      env -u EVX_DRIVER "$build/bench/evx-notify-latency" --interference; } \
      >"$out/notify-latency.txt" 2>&1 || status=1
    grep -v '^DRIVER' "$out/notify-latency.txt"
    for loop in asyncio uvloop; do
      if [ "$loop" = uvloop ] && ! python3 -c 'import uvloop' 2>/dev/null; then
        echo "=== uvloop is not installed for python3: its async benchmark is not run"; continue
      fi
      echo "=== Python async benchmark (evx.aio), real driver, $loop"
      PYTHONPATH="$build/bindings/python" PYTHONUNBUFFERED=1 \
        python3 bench/py_async_bench.py --loop "$loop" --concurrent 1000 10000 \
        >"$out/pyasync-$loop.txt" 2>&1 || status=1
      cat "$out/pyasync-$loop.txt"
    done
    ;;
  graphbench)
    if python3 -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
      echo "=== timing inside a CUDA graph, PyTorch kernels (bench/py_graph_bench.py), real driver"
      env -u EVX_DRIVER PYTHONPATH="$build/bindings/python" PYTHONUNBUFFERED=1 \
        python3 bench/py_graph_bench.py --backend torch >"$out/graph-bench-torch.txt" 2>&1 || status=1
      cat "$out/graph-bench-torch.txt"
    else
      echo "=== graphbench: PyTorch with CUDA is not importable by python3: its torch half is not run"
    fi
    echo "=== timing inside a CUDA graph, no PyTorch (raw driver capture, host functions)"
    env -u EVX_DRIVER PYTHONPATH="$build/bindings/python" PYTHONUNBUFFERED=1 \
      python3 bench/py_graph_bench.py --backend driver >"$out/graph-bench-driver.txt" 2>&1 || status=1
    cat "$out/graph-bench-driver.txt"
    ;;
  transcripts)
    tdir="$out/transcripts"; mkdir -p "$tdir"
    rec="$build/tests/transcript/evx-transcript-record"
    devs=1; [ "$ndev" -ge 2 ] && devs="1 2"
    for d in $devs; do
      tfile="$tdir/gpu-${d}dev.txt"
      echo "=== transcripts: recording on the real driver, $d device(s)"
      t0=$(date +%s)
      rc=0
      env -u EVX_DRIVER timeout "${EVX_TRANSCRIPT_SECONDS:-175}" "$rec" \
        --seed "${EVX_TRANSCRIPT_SEED:-1}" --programs "${EVX_TRANSCRIPT_PROGRAMS:-2000}" \
        --jobs "${EVX_TRANSCRIPT_JOBS:-12}" --timing \
        --devices "$d" --driver libcuda.so.1 ${EVX_TRANSCRIPT_ARGS:-} -o "$tfile" || rc=$?
      echo "recorded in $(( $(date +%s) - t0 )) s (exit $rc): $tfile"
      echo "programs: $(grep -c '^end ' "$tfile"), calls: $(grep -cE '^  (T )?cu|^  child\(' "$tfile")," \
        "crashed: $(grep -c '^  CRASH ' "$tfile")"
      [ "$rc" = 0 ] || { echo "the recorder failed or ran out of time: what it recorded is replayed"; status=1; }
      echo "=== transcripts: replayed against the host emulation"
      python3 tests/transcript/transcript.py replay --recorder "$rec" \
        --driver "$build/src/host/libevx-host.so" "$tfile" | tee "$tdir/replay-${d}dev.txt" | tail -60
      [ "${PIPESTATUS[0]}" = 0 ] || status=1
    done
    python3 tests/transcript/transcript.py table "$tdir/gpu-1dev.txt" >"$tdir/legality-table.md" \
      && echo "legality table: $tdir/legality-table.md"
    ;;
  pipeline)
    if ! python3 -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
      echo "=== pipeline: PyTorch with CUDA is not importable by python3: the pipeline is not run"
      [ -n "$*" ] && status=1   # named on the command line: a failure
      continue
    fi
    echo "=== pipeline across $( [ "$ndev" -ge 2 ] && echo "two GPUs" || echo "one GPU" ): fences, IPC events, host synchronize (examples/pipeline)"
    mkdir -p "$out/pipeline"
    env -u EVX_DRIVER PYTHONPATH="$build/bindings/python" PYTHONUNBUFFERED=1 \
      python3 examples/pipeline/pipeline.py --backend torch --method all --sizes 64K,4M,64M \
        --buffers "${EVX_PIPELINE_BUFFERS:-500}" --slots 4 --order-test --out "$out/pipeline" \
      >"$out/pipeline.txt" 2>&1 || status=1
    tail -25 "$out/pipeline.txt"
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
