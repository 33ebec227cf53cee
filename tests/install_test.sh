#!/bin/sh
# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
#
# Installs the build into a temporary folder (meson install --destdir),
# builds tests/install_client.c against it with pkg-config alone, runs it
# on the host emulation with only the installed libdir on the library path,
# and checks that the installed emulation is the one evx found. With PYTHON
# (the build made the package's compiled core evx._core for it), also imports
# the installed Python package and checks that it runs on the installed core
# and that its ctypes layer opened the installed libevx.
#
# usage: install_test.sh BUILD_DIR CLIENT_SOURCE [MESON] [CC] [PYTHON]
set -eu

build=$1
client=$2
meson=${3:-meson}
cc=${4:-${CC:-cc}}
python=${5:-}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/evx-install-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
root=$tmp/root

fail() {
    echo "install_test: FAIL: $*"
    exit 1
}

echo "install_test: installing $build into $root"
"$meson" install -C "$build" --destdir "$root" --no-rebuild >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log"; fail "meson install failed"; }

pc=$(find "$root" -name evx.pc | head -n 1)
[ -n "$pc" ] || fail "no evx.pc was installed"
pcdir=$(dirname "$pc")
[ -f "$root/usr/local/include/evx/evx.h" ] || [ -n "$(find "$root" -path '*/include/evx/evx.h')" ] ||
    fail "evx/evx.h was not installed"

# The .pc file names the final prefix; the sysroot points it into $root.
flags=$(PKG_CONFIG_PATH="$pcdir" PKG_CONFIG_LIBDIR="$pcdir" \
        PKG_CONFIG_SYSROOT_DIR="$root" pkg-config --cflags --libs evx) ||
    fail "pkg-config --cflags --libs evx failed"
echo "install_test: pkg-config gives: $flags"
case "$flags" in
    *"$root"*) ;;
    *) fail "pkg-config flags do not point into the install: $flags" ;;
esac

# shellcheck disable=SC2086 # the flags are words
"$cc" -std=c99 -Wall -Wextra -Werror -o "$tmp/client" "$client" $flags ||
    fail "the client did not build against the installed headers and library"

lib=$(find "$root" -name 'libevx.so.*' -type f | head -n 1)
[ -n "$lib" ] || fail "libevx.so was not installed"
libdir=$(dirname "$lib")
[ -n "$(find "$root" -name 'libevx-host.so*')" ] ||
    fail "the host emulation libevx-host.so was not installed"

# The client must load the installed libevx, not the build tree's.
resolved=$(LD_LIBRARY_PATH="$libdir" ldd "$tmp/client" | grep 'libevx\.so' || true)
echo "install_test: $resolved"
case "$resolved" in
    *"$libdir"*) ;;
    *) fail "the client does not resolve libevx from $libdir" ;;
esac

out=$(env EVX_DRIVER=host LD_LIBRARY_PATH="$libdir" "$tmp/client") ||
    { echo "$out"; fail "the installed client failed"; }
echo "$out" | sed 's/^/install_test: client: /'
echo "$out" | grep -qx 'emulation=1' ||
    fail "evx did not report the host emulation"
driver=$(echo "$out" | sed -n 's/^driver=//p')
case "$driver" in
    "$root"/*) ;;
    *) fail "evx found the emulation at $driver, not in the install ($root)" ;;
esac
if [ -n "$python" ]; then
    ext=$(find "$root" -path '*/evx/_core*.so' | head -n 1)
    [ -n "$ext" ] || fail "evx._core was built but not installed"
    site=$(dirname "$(dirname "$ext")")
    [ -f "$site/evx/__init__.py" ] || fail "the Python package was not installed next to $ext"
    rpath=$(readelf -d "$ext" | sed -n 's/.*R[UN]*PATH.*\[\(.*\)\]/\1/p')
    echo "install_test: $ext rpath: $rpath"
    case "$rpath" in
        '$ORIGIN:'/*) ;;
        *) fail "the installed core's rpath is not \$ORIGIN then the libdir: $rpath" ;;
    esac
    # The rpath names the final prefix, not $root: EVX_LIBRARY points the
    # core at the installed copy (opened first, it stands for libevx.so.0).
    out=$(cd "$tmp" && env EVX_DRIVER=host EVX_LIBRARY="$lib" PYTHONPATH="$site" \
          "$python" -c '
import os, evx
assert evx.__file__.startswith("'"$site"'"), evx.__file__
assert evx._core.__file__.startswith("'"$site"'"), evx._core.__file__
assert os.path.samefile(evx._core.library_path(), "'"$lib"'"), evx._core.library_path()
assert os.path.samefile(evx.library_path, "'"$lib"'"), evx.library_path
d = evx.Device(0); s = d.create_stream()
with evx.timed(s) as t:
    e = s.record()
e.sync(); assert t.elapsed_ms >= 0.0
print("python=%s core=%s library=%s" % (evx.__file__, evx._core.__file__, evx.library_path))') ||
        { echo "$out"; fail "the installed Python package failed"; }
    echo "install_test: $out"
fi
echo "install_test: ok"
