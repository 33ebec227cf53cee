#!/usr/bin/env bash
# conformance on both drivers, the Python suite on the real driver, compute-sanitizer
export EVX_STRESS_SECONDS=10
t0=$(date +%s)
timeout 300 scripts/gpu-check.sh conformance interop > $OUT/final-a.txt 2>&1; echo "a rc=$? $(( $(date +%s)-t0 ))s"
cp /tmp/evx-out/conformance-gpu.txt /tmp/evx-out/conformance-host.txt /tmp/evx-out/interop.txt $OUT/ 2>/dev/null
(cd /tmp/evx-gpu-build/bindings/python && PYTHONPATH=$PWD python3 -m evx | grep -iE 'host func|driver|device' | head -5)
left=$(( 540 - ($(date +%s)-t0) ))
timeout $left scripts/gpu-check.sh sanitizer > $OUT/final-b.txt 2>&1; echo "b rc=$? $(( $(date +%s)-t0 ))s"
cp /tmp/evx-out/sanitizer-*.txt $OUT/ 2>/dev/null
grep -E '^(FAIL|===)|conformance:|passed|failed|ERROR SUMMARY' $OUT/final-a.txt $OUT/final-b.txt | cut -c1-200 | tail -30
