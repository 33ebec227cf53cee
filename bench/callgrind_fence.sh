#!/usr/bin/env bash
# Instructions per call of evx_fence_signal and evx_stream_wait_fence next
# to the raw cuStreamWriteValue64 and cuStreamWaitValue64 they wrap (and,
# for comparison, evx_event_record, evx_stream_wait_event and
# evx_event_query), on the host
# emulation under valgrind --tool=callgrind: "evx" counts what libevx
# executes per call (evx's own cost), "driver" what the emulation's
# library executes (the driver call itself; the emulation's figure, not a
# GPU driver's).
#
#   bench/callgrind_fence.sh [BUILD_DIR] [COUNT]   (default build, 20000;
#                                                   use a release build)
set -euo pipefail
build=${1:-build}
n=${2:-20000}
prog=$build/bench/evx-fence-count
lib=$build/src/libevx.so
[ -x "$prog" ] || { echo "no $prog: build first (meson compile -C $build)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# count CALL -> "evx driver" instructions per call
count() {
  EVX_DRIVER=host valgrind --tool=callgrind --instr-atstart=no \
    --callgrind-out-file="$tmp/out" "$prog" "$1" "$n" >/dev/null 2>&1
  callgrind_annotate --inclusive=no --threshold=100 "$tmp/out" |
    awk -v lib="$(basename "$(readlink -f "$lib")")" -v n="$n" '
      index($0, lib) { gsub(",", "", $1); e += $1 }
      index($0, "libevx-host") { gsub(",", "", $1); d += $1 }
      END { printf "%-10.1f %.1f", e / n, d / n }'
}

printf '%-12s %-10s %s\n' call evx driver
for c in write signal signal-ipc waitvalue wait record waitevent query; do
  printf '%-12s %s\n' "$c" "$(count "$c")"
done
