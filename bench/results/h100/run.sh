#!/usr/bin/env bash
# The H100 run behind the files of this folder, from the repository root:
#   bench/results/h100/run.sh correctness   conformance (both drivers), Python on
#                                           the real driver, compute-sanitizer
#   bench/results/h100/run.sh perf          evx-floor-parts, evx-bench,
#                                           evx-bench-threads, evx-fence-bench
#   bench/results/h100/run.sh frameworks    bench/py_bench.py, bench/py_graph_bench.py
# Logs go to $OUT (default /tmp/evx-out).
set -u
out=${OUT:-/tmp/evx-out}; mkdir -p "$out"; export OUT=$out
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
case ${1:-} in
correctness) timeout 400 scripts/gpu-check.sh conformance interop sanitizer >"$out/correctness.txt" 2>&1
             echo "correctness rc=$? $(el)"
             grep -E '^(FAIL|===)|conformance:|passed|failed|ERROR SUMMARY|sanitizer ' "$out/correctness.txt" | cut -c1-200 ;;
perf)        timeout 300 scripts/gpu-check.sh floorparts bench fencebench >"$out/perf.txt" 2>&1
             echo "perf rc=$? $(el)"
             grep -v '^PARTS' "$out/floor-parts.txt" | sed -n 5,15p
             grep -v '^BENCH' "$out/bench.txt" | sed -n 5,19p
             grep -v '^BENCH' "$out/bench-threads.txt" | tail -6
             grep -v '^BENCH' "$out/fence-bench.txt" | sed -n 3,22p ;;
frameworks)  timeout 280 scripts/gpu-check.sh pybench graphbench >"$out/frameworks.txt" 2>&1
             echo "frameworks rc=$? $(el)"
             tail -24 "$out/pybench.txt"; tail -14 "$out/graph-bench-torch.txt" ;;
*) echo "usage: $0 correctness|perf|frameworks" >&2; exit 2 ;;
esac
