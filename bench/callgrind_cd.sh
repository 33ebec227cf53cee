#!/usr/bin/env bash
# Instructions libevx executes per evx_device_create_event +
# evx_event_destroy pair, on the host emulation under
# valgrind --tool=callgrind, with 1, 4 and 16 registered threads: pairs
# served by the cache, and 20,000 creates followed by 20,000 destroys.
#
#   bench/callgrind_cd.sh [BUILD_DIR]    (default build; a release build
#                                         gives the figures of docs/design.md)
set -euo pipefail
build=${1:-build}
prog=$build/bench/evx-cd-count
lib=$build/src/libevx.so
[ -x "$prog" ] || { echo "no $prog: build first (meson compile -C $build)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# count THREADS PAIRS BULK -> instructions inside libevx per pair
count() {
  EVX_DRIVER=host valgrind --tool=callgrind --instr-atstart=no \
    --callgrind-out-file="$tmp/out" "$prog" "$1" "$2" "$3" >/dev/null 2>&1
  local calls=$2
  [ "$3" != 0 ] && calls=$(( $2 * $3 ))
  callgrind_annotate --inclusive=no --threshold=100 "$tmp/out" |
    awk -v lib="$(basename "$(readlink -f "$lib")")" -v n="$calls" '
      index($0, lib) { gsub(",", "", $1); s += $1 }
      END { printf "%.1f", s / n }'
}

printf '%-8s %-24s %s\n' threads "pairs (6,400)" "bulk (20,000 + 20,000)"
for t in 1 4 16; do
  printf '%-8s %-24s %s\n' "$t" "$(count "$t" 6400 0)" "$(count "$t" 1 20000)"
done
