#!/usr/bin/env bash
t0=$(date +%s)
el() { echo "$(( $(date +%s)-t0 ))s"; }
timeout 300 scripts/gpu-check.sh conformance interop sanitizer > $OUT/final-a.txt 2>&1; echo "a rc=$? $(el)"
cp /tmp/evx-out/conformance-gpu.txt /tmp/evx-out/conformance-host.txt /tmp/evx-out/interop.txt /tmp/evx-out/sanitizer-*.txt $OUT/ 2>/dev/null
timeout 90 scripts/gpu-check.sh fencebench > $OUT/final-fence.txt 2>&1; echo "fence rc=$? $(el)"
cp /tmp/evx-out/fence-bench.txt $OUT/fence-bench.txt
timeout 60 /tmp/evx-gpu-build/bench/evx-fence-bench > $OUT/fence-bench-2.txt 2>&1
timeout 90 scripts/gpu-check.sh pybench > $OUT/final-py.txt 2>&1; echo "py rc=$? $(el)"
cp /tmp/evx-out/pybench.txt $OUT/
grep -E '^(FAIL|===)|conformance:|passed|failed|ERROR SUMMARY' $OUT/final-a.txt | cut -c1-160
grep -E 'evx_fence_signal -|hand-off /|wake' $OUT/fence-bench.txt $OUT/fence-bench-2.txt | cut -c1-160
grep -E 'evx.timed / cuda.core|evx / cuda.core' $OUT/pybench.txt
