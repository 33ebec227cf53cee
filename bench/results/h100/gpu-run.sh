#!/bin/bash
# The H100 run of bench/results/h100/: benchab against the tree before (7 rounds),
# conformance, threads A/B (+ a retire-batch experiment), the hazard fence's
# cost, rustbench, py_bench.
set -u
cd "$(dirname "$0")"
out=${OUT:-/tmp/evx-out}; mkdir -p "$out"; export OUT=$out
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
echo "cargo: $(command -v cargo || echo none); python3: $(python3 -V 2>&1); $(nproc) cpus"
EVX_BENCH_BASE_SRC=$PWD/../floor-base EVX_BENCH_ROUNDS=7 timeout 200 \
  scripts/gpu-check.sh benchab conformance rustbench >"$out/check.txt" 2>&1; echo "check rc=$? $(el)"
meson compile -C /tmp/evx-gpu-build-base evx-bench-threads >/dev/null 2>&1
meson setup /tmp/evx-batch ../floor-batch --buildtype=release -Ddocs=disabled -Dpython_core=disabled \
  >/dev/null 2>&1 && meson compile -C /tmp/evx-batch evx-bench-threads >/dev/null 2>&1
for b in base branch batch128 base branch batch128; do
  case $b in base) d=/tmp/evx-gpu-build-base;; branch) d=/tmp/evx-gpu-build;; *) d=/tmp/evx-batch;; esac
  echo "== $b"; env -u EVX_DRIVER timeout 30 $d/bench/evx-bench-threads --threads 8,16 --runs 3 | grep '^BENCH'
done >"$out/threads.txt" 2>&1; echo "threads $(el)"
env -u EVX_DRIVER timeout 120 python3 bench/ab_compare.py --rounds 5 --base-src "$PWD/../floor-diag" \
  --base-build /tmp/evx-diag /tmp/evx-gpu-build >"$out/ab-diag.txt" 2>&1; echo "diag rc=$? $(el)"
PYTHONPATH=/tmp/evx-gpu-build/bindings/python PYTHONUNBUFFERED=1 timeout 120 python3 bench/py_bench.py \
  --n 10000 --reps 7 --pairs 301 >"$out/pybench.txt" 2>&1; echo "pybench rc=$? $(el)"
echo "===== SUMMARY"
grep -E "conformance:|^FAIL|rustbench" "$out/check.txt" | head -12
sed -n '/medians over/,$p' "$out/check.txt" | head -14
echo "== fence ablation (before = no hazard fence, diagnostic; after = this branch)"
sed -n '/medians over/,$p' "$out/ab-diag.txt" | head -14
echo "== threads"; cat "$out/threads.txt"
echo "== python"; grep -E "^\| (call|record|query|timed|create|evx)" "$out/pybench.txt" | head -20
