#!/usr/bin/env bash
t0=$(date +%s)
el() { echo "$(( $(date +%s)-t0 ))s"; }
O=/tmp/evx-out; mkdir -p $O; FINAL=$OUT; export OUT=$O
timeout 300 scripts/gpu-check.sh conformance interop sanitizer > $O/final-a.txt 2>&1; echo "a rc=$? $(el)"
timeout 200 scripts/gpu-check.sh graphbench > $O/final-g.txt 2>&1; echo "graph rc=$? $(el)"
cp $O/conformance-gpu.txt $O/conformance-host.txt $O/interop.txt $O/sanitizer-memcheck.txt $O/sanitizer-synccheck.txt $O/graph-bench-torch.txt $O/graph-bench-driver.txt $FINAL/
grep -E '^(FAIL|===)|conformance:|passed|failed|ERROR SUMMARY' $O/final-a.txt | cut -c1-160
tail -22 $O/graph-bench-torch.txt
