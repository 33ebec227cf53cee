#!/usr/bin/env bash
# The README's first command: install what is missing, build, run the demo.
# The demo runs on the GPU when there is one, else on the host emulation,
# and says which.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
build=${EVX_BUILD_DIR:-build}
[ -f "$build/build.ninja" ] || meson setup "$build" -Dtoolkit_include="${CUDA_INCLUDE:-/usr/local/cuda/include}"
meson compile -C "$build"
exec "$build/examples/evx-demo"
