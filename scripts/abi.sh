#!/usr/bin/env bash
# The ABI of the release, recorded with libabigail, and the check that a
# build keeps it (Debian package abigail-tools: abidw, abidiff).
#
#   scripts/abi.sh check [BUILD]    abidiff of BUILD's libevx (default: build)
#                                   against the record; fails on any
#                                   incompatible change
#   scripts/abi.sh record [BUILD]   write the record from BUILD (only when a
#                                   release sets a new baseline: a new major)
#
# The record, in abi/$BASELINE/ (the first release of this major version;
# every 1.x is compared with 1.0.0, so what 1.0.0 programs use stays):
#   libevx.abi  abidw of libevx: every exported call, its parameter and
#               return types, and the layout of every struct they reach
#   enums.abi   abidw of abi/enums.c's module: the values of every public
#               enum, which no call of libevx takes (see abi/enums.c)
# abi/suppressions.ini keeps the size-tagged structs from abidiff, which
# would report fields added at their end (1.x allows them); the script
# checks those structs itself. Added calls and
# added enum values (below the _FORCE_32BIT sentinel) are compatible: abidiff
# lists the calls and the check passes.
#
# A failing check means a program built against $BASELINE would break:
# undo the change, or make a new major version (and record its baseline).
# The build needs debug info (buildtype debugoptimized, meson's default
# here, or debug): abidw reads the types from it. The record leaves out
# what depends on the machine (paths, locations, architecture), so any
# machine's build gives the same files.
set -euo pipefail
cd "$(dirname "$0")/.."

BASELINE=1.0.0
mode=${1:-}
build=${2:-build}
record_dir=abi/$BASELINE

usage() {
  sed -n '5,10p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
[ "$mode" = check ] || [ "$mode" = record ] || usage

for tool in abidw abidiff readelf; do
  if ! command -v "$tool" >/dev/null; then
    echo "scripts/abi.sh: $tool is not installed (apt-get install abigail-tools binutils)" >&2
    exit 2
  fi
done

lib=$build/src/libevx.so.0
enums=$build/abi/libevx-abi-enums.so
for f in "$lib" "$enums"; do
  if [ ! -f "$f" ]; then
    echo "scripts/abi.sh: no $f: build first (meson compile -C $build)" >&2
    exit 2
  fi
  if ! readelf -S -W "$f" | grep -q '\.debug_info'; then
    echo "scripts/abi.sh: $f has no debug info, which abidw reads the types from" \
         "(configure $build with -Dbuildtype=debugoptimized or debug)" >&2
    exit 2
  fi
done

# dump FILE OUT: the ABI of FILE, without what depends on the machine: no
# corpus or compilation-folder path, no source locations, no architecture,
# type ids by hash (stable across runs), and each translation unit's path
# as the source tree names it (src/event.cpp, whatever the build folder).
dump() {
  abidw --exported-interfaces-only --no-corpus-path --no-comp-dir-path --no-show-locs \
        --no-architecture --no-elf-needed --type-id-style hash --out-file "$2.tmp" "$1"
  sed -E "s#(<abi-instr [^>]*path=')([^']*/)?((src|abi)/[^']*')#\1\3#" "$2.tmp" >"$2"
  rm -f "$2.tmp"
}

# Every enum the public headers declare is in the enums record.
check_enums_covered() {
  local file=$1 name ok=0
  while read -r name; do
    if ! grep -q "<enum-decl name='$name'" "$file"; then
      echo "scripts/abi.sh: enum $name of include/evx/ is not a parameter of evx_abi_enums" \
           "in abi/enums.c, so no record holds its values" >&2
      ok=1
    fi
  done < <(sed -nE 's/^(typedef )?enum (evx_[a-z0-9_]+) \{.*/\2/p' include/evx/*.h | sort -u)
  return $ok
}

if [ "$mode" = record ]; then
  mkdir -p "$record_dir"
  dump "$lib" "$record_dir/libevx.abi"
  dump "$enums" "$record_dir/enums.abi"
  check_enums_covered "$record_dir/enums.abi"
  echo "recorded $record_dir/libevx.abi and $record_dir/enums.abi from $build"
  exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dump "$lib" "$tmp/libevx.abi"
dump "$enums" "$tmp/enums.abi"
check_enums_covered "$tmp/enums.abi"

# The size-tagged structs, which abi/suppressions.ini keeps from abidiff:
# each recorded one is still there, no smaller, and its recorded fields are
# a prefix of its fields now (same names, types and offsets).
check_sized_structs() {
  python3 - "$1" "$2" <<'PY'
import re, sys
def structs(path):
    text = open(path).read()
    out = {}
    for m in re.finditer(r"<class-decl name='(evx_[a-z0-9_]*_(?:options|stats|info))' size-in-bits='(\d+)'[^>]*>(.*?)</class-decl>", text, re.S):
        fields = re.findall(r"layout-offset-in-bits='(\d+)'>\s*<var-decl name='([^']+)' type-id='([^']+)'", m.group(3))
        out[m.group(1)] = (int(m.group(2)), fields)
    return out
old, new = structs(sys.argv[1]), structs(sys.argv[2])
bad = 0
for name, (size, fields) in sorted(old.items()):
    if name not in new:
        print("abi: struct %s is gone" % name); bad = 1; continue
    nsize, nfields = new[name]
    if nsize < size or nfields[:len(fields)] != fields:
        print("abi: struct %s changed its recorded fields (only fields added at its end are "
              "compatible):\n  recorded %s (%d bits)\n  now      %s (%d bits)" % (
              name, [(f[1], int(f[0])) for f in fields], size,
              [(f[1], int(f[0])) for f in nfields], nsize)); bad = 1
sys.exit(bad)
PY
}

# abidiff's exit status is a bit set: 1 error, 2 usage error, 4 a change
# was found, 8 an incompatible change (a removed call). A change that is
# not an addition (bit 4 without a pure "added" report) breaks the ABI as
# surely as a removal: a changed parameter, struct layout or enum value.
rc=0
for what in libevx enums; do
  out=$tmp/$what.diff
  st=0
  abidiff --suppressions abi/suppressions.ini --no-show-locs \
    "$record_dir/$what.abi" "$tmp/$what.abi" >"$out" 2>&1 || st=$?
  if [ $((st & 3)) -ne 0 ]; then
    cat "$out"
    echo "abi: abidiff could not compare $record_dir/$what.abi with $build (status $st)"
    rc=1
  elif ! check_sized_structs "$record_dir/$what.abi" "$tmp/$what.abi"; then
    echo "abi: INCOMPATIBLE: $build's $what breaks the ABI of $BASELINE ($record_dir/$what.abi)"
    rc=1
  elif [ $((st & 8)) -ne 0 ] ||
       { [ $((st & 4)) -ne 0 ] && ! grep -qE '^Functions changes summary: 0 Removed, 0 Changed' "$out"; } ||
       { [ $((st & 4)) -ne 0 ] && ! grep -qE '^Variables changes summary: 0 Removed, 0 Changed' "$out"; }; then
    cat "$out"
    echo "abi: INCOMPATIBLE: $build's $what breaks the ABI of $BASELINE ($record_dir/$what.abi)"
    rc=1
  elif [ "$st" -ne 0 ]; then
    cat "$out"
    echo "abi: compatible additions to $BASELINE in $build's $what"
  else
    echo "abi: $build's $what has the ABI of $BASELINE ($record_dir/$what.abi)"
  fi
done
exit $rc
