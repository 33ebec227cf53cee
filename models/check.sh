#!/usr/bin/env bash
# Checks the Promela models of models/ exhaustively with SPIN
# (scripts/test.sh spin; docs/design.md, "Models"). Each line below is a
# model, its -D options, and what must come out: "verified" (no error in
# the full state space) or "counterexample" (the variant is broken, so the
# model is not vacuous). Prints the states stored for each; exits nonzero
# when any outcome differs.
#
#   models/check.sh            every configuration
#   models/check.sh -v         also the counterexamples' trails
set -uo pipefail
cd "$(dirname "$0")"
verbose=0
[ "${1:-}" = -v ] && verbose=1
command -v spin >/dev/null || { echo "models/check.sh: spin is not installed (scripts/setup.sh)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

configs=(
  "fence.pml|                                     |verified"
  "fence.pml|-DIPC                                |verified"
  "fence.pml|-DOLD_PROTOCOL -DPROP_MONO            |counterexample"
  "fence.pml|-DOLD_PROTOCOL -DPROP_ILLEGAL         |counterexample"
  "fence.pml|-DOLD_PROTOCOL -DPROP_LOST            |counterexample"
  "fence.pml|-DOLD_PROTOCOL -DIPC -DPROP_MONO      |counterexample"
  "fence.pml|-DNO_BARRIER -DPROP_MONO              |counterexample"
  "hazard.pml|                                    |verified"
  "hazard.pml|-DNO_SCAN_BARRIER -DNO_LEAK_CHECK   |counterexample"
  "hazard.pml|-DNO_DEFER_BARRIER                  |counterexample"
  "hazard.pml|-DLOAD_BEFORE_HALF -DNO_LEAK_CHECK  |counterexample"
  "event_hot.pml|                                 |verified"
  "event_hot.pml|-DNO_RECHECK                      |counterexample"
  "futex_lock.pml|                                |verified"
  "futex_lock.pml|-DRELOCK_1                      |counterexample"
  "futex_lock.pml|-DNO_WAKE                       |counterexample"
  "futex_lock.pml|-DTEST_THEN_SET                 |counterexample"
  "hostfn_home.pml|                               |verified"
  "hostfn_home.pml|-DSPLIT_TAKE                   |counterexample"
  "hostfn_home.pml|-DSPLIT_PUSH                   |counterexample"
)
status=0
for c in "${configs[@]}"; do
  IFS='|' read -r model opts want <<<"$c"
  opts=$(echo $opts); want=$(echo $want)
  dir="$work/$model${opts// /}"
  mkdir -p "$dir" && cp "$model" "$dir/"
  (cd "$dir" && spin -a $opts "$model" >spin.log 2>&1 &&
     cc -O2 -w -DSAFETY -o pan pan.c >cc.log 2>&1 &&
     ./pan -m100000 >pan.log 2>&1) || { echo "FAIL $model $opts: spin, cc or pan failed"; cat "$dir"/*.log | tail -20; status=1; continue; }
  errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$dir/pan.log")
  states=$(sed -n 's/^ *\([0-9]*\) states, stored.*/\1/p' "$dir/pan.log")
  got=verified
  [ "$errors" != 0 ] && got=counterexample
  line="$model ${opts:-(as built)}: $got, $states states stored"
  if [ "$got" = "$want" ]; then
    echo "ok   $line"
  else
    echo "FAIL $line (expected $want)"
    status=1
  fi
  if [ "$got" = counterexample ]; then
    grep -m1 -E "assertion violated|invalid end state" "$dir/pan.log" | sed 's/^/       /'
    if [ "$verbose" = 1 ]; then
      (cd "$dir" && spin -t -p -g $opts "$model" 2>&1 | grep -E '^ +[0-9]+:' | tail -40)
    fi
  fi
done
exit $status
