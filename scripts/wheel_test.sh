#!/usr/bin/env bash
# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
#
# What a Python user gets from `pip install .`: builds the wheel from this
# clone with pip (pyproject.toml, meson-python, build requirements from PyPI
# in pip's isolated build environment), installs it into a fresh virtual
# environment, and there, from a folder outside the source tree and with no
# EVX_LIBRARY or LD_LIBRARY_PATH:
#   1. python -m evx on the host emulation (EVX_DRIVER=host);
#   2. the Python tests (bindings/python/tests, gpu/ excluded) against the
#      installed package (EVX_TEST_INSTALLED=1: conftest.py then refuses the
#      source tree's package);
#   3. the README's Python example, as written;
#   4. the types: mypy's stubtest of evx/__init__.pyi against the installed
#      package, and mypy --strict on the README's Python examples.
#
# usage: scripts/wheel_test.sh [WORK_DIR]   (default: build-wheel)
# PYTHON: the interpreter to build for and test with (default: python3).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORK="${1:-build-wheel}"
case "$WORK" in /*) ;; *) WORK="$ROOT/$WORK" ;; esac
PY="${PYTHON:-python3}"

rm -rf "$WORK"
mkdir -p "$WORK/dist" "$WORK/run"
"$PY" -m venv "$WORK/venv"
VPY="$WORK/venv/bin/python"

echo "wheel_test: pip wheel $ROOT"
start=$(date +%s)
(cd "$WORK" && "$VPY" -m pip wheel -q --disable-pip-version-check --no-deps \
     -w "$WORK/dist" "$ROOT")
echo "wheel_test: built $(cd "$WORK/dist" && ls) in $(( $(date +%s) - start )) s"
wheel=$(ls "$WORK"/dist/evx_cuda-*.whl)

# uvloop: evx.aio is tested on it too (test_aio.py).
"$VPY" -m pip install -q --disable-pip-version-check "$wheel" pytest mypy uvloop
echo "wheel_test: the wheel holds:"
"$VPY" -m zipfile -l "$wheel" | sed 's/^/  /'

# Nothing from the build tree or the caller's settings may help.
clean_env=(env -u EVX_LIBRARY -u EVX_LIB_DIR -u LD_LIBRARY_PATH
           -u PYTHONPATH -u EVX_HOST_DEVICES)
cd "$WORK/run"

echo
echo "wheel_test: python -m evx (EVX_DRIVER=host)"
"${clean_env[@]}" EVX_DRIVER=host "$VPY" -m evx

echo
echo "wheel_test: the Python tests against the installed package"
"${clean_env[@]}" EVX_DRIVER=host EVX_TEST_INSTALLED=1 \
    "$VPY" -m pytest -p no:cacheprovider -q -rs "$ROOT/bindings/python/tests" \
    --ignore="$ROOT/bindings/python/tests/gpu" --junitxml="$WORK/pytest-wheel.xml"

echo
echo "wheel_test: the README's Python examples"
"$ROOT/scripts/readme_examples.sh" extract readme_example.py "$WORK/run/readme_example.py"
"${clean_env[@]}" EVX_DRIVER=host "$VPY" readme_example.py
"$ROOT/scripts/readme_examples.sh" extract readme_fence.py "$WORK/run/readme_fence.py"
"${clean_env[@]}" EVX_DRIVER=host "$VPY" readme_fence.py

echo
echo "wheel_test: types (stubtest of evx against the installed package; mypy --strict)"
# stubtest imports evx and compares the stub with what it finds. The
# allowlist names the private modules that have no stub.
"${clean_env[@]}" EVX_DRIVER=host "$VPY" -m mypy.stubtest evx \
    --mypy-config-file "$ROOT/pyproject.toml" \
    --allowlist "$ROOT/bindings/python/stubtest-allowlist.txt"
"$VPY" -m mypy --strict --no-incremental --cache-dir=/dev/null readme_example.py readme_fence.py
echo "wheel_test: ok"
