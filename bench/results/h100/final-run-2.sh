#!/usr/bin/env bash
t0=$(date +%s)
el() { echo "$(( $(date +%s)-t0 ))s"; }
EVX_BENCH_BASE_SRC=$PWD/.gpu/base EVX_BENCH_ROUNDS=5 timeout 300 scripts/gpu-check.sh benchab > $OUT/final-ab.txt 2>&1; echo "ab rc=$? $(el)"
timeout 90 scripts/gpu-check.sh fencebench > $OUT/final-fence.txt 2>&1; echo "fence rc=$? $(el)"
timeout 90 scripts/gpu-check.sh pybench > $OUT/final-py.txt 2>&1; echo "py rc=$? $(el)"
EVX_STRESS_SECONDS=10 timeout 60 scripts/gpu-check.sh stress > $OUT/final-stress.txt 2>&1; echo "stress rc=$? $(el)"
cp /tmp/evx-out/bench-ab.txt /tmp/evx-out/fence*.txt /tmp/evx-out/pybench*.txt $OUT/ 2>/dev/null
sed -n '/===/,$p' $OUT/final-ab.txt | tail -40
