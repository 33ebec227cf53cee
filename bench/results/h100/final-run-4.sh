#!/usr/bin/env bash
t0=$(date +%s)
el() { echo "$(( $(date +%s)-t0 ))s"; }
O=/tmp/evx-out; mkdir -p $O; FINAL=$OUT; export OUT=$O
timeout 300 scripts/gpu-check.sh conformance interop sanitizer > $O/final-a.txt 2>&1; echo "a rc=$? $(el)"
timeout 150 scripts/gpu-check.sh graphbench > $O/final-g.txt 2>&1; echo "graph rc=$? $(el)"
timeout 60 env -u EVX_DRIVER /tmp/evx-gpu-build/bench/evx-bench > $O/bench.txt 2>&1; echo "bench rc=$? $(el)"
timeout 90 scripts/gpu-check.sh pybench > $O/final-py.txt 2>&1; echo "py rc=$? $(el)"
cp $O/conformance-gpu.txt $O/conformance-host.txt $O/interop.txt $O/sanitizer-memcheck.txt $O/graph-bench-torch.txt $O/graph-bench-driver.txt $O/bench.txt $O/pybench.txt $FINAL/
grep -E '^(FAIL|===)|conformance:|passed|failed|ERROR SUMMARY' $O/final-a.txt | cut -c1-160
grep -E 'host_func' $O/bench.txt | grep -v BENCH
grep -E 'evx.timed / cuda.core|evx / cuda.core' $O/pybench.txt
tail -30 $O/graph-bench-torch.txt
