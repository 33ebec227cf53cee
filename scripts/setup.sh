#!/usr/bin/env bash
# Installs what building and testing evx needs, by package name only:
# Debian packages (meson, ninja, doxygen, bindgen, rustfmt, python3-dev, clang, abigail-tools,
# valgrind, spin, ...) and, into
# a virtual environment at .venv, PyPI packages (pytest, libclang, cython, uvloop, matplotlib, atheris). Safe to run again:
# it installs only what is missing. The CUDA toolkit (for cuda.h) is expected
# at /usr/local/cuda, or wherever CUDA_INCLUDE points.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

cuda_inc="${CUDA_INCLUDE:-/usr/local/cuda/include}"
if [ ! -f "$cuda_inc/cuda.h" ]; then
  echo "setup: cuda.h not found in $cuda_inc; install the CUDA toolkit or set CUDA_INCLUDE" >&2
  exit 1
fi

# command -> Debian package that provides it
missing=()
for pair in meson:meson ninja:ninja-build doxygen:doxygen pkg-config:pkg-config \
            valgrind:valgrind \
            bindgen:bindgen cc:gcc c++:g++ readelf:binutils nm:binutils \
            python3:python3 cargo:cargo rustfmt:rustfmt clang:clang \
            abidw:abigail-tools abidiff:abigail-tools spin:spin; do
  cmd=${pair%%:*}; pkg=${pair#*:}
  command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg")
done
if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then missing+=(python3-venv); fi
# Python's headers, for the compiled core of the Python bindings (evx._core)
if ! python3 -c 'import os, sysconfig, sys
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
     >/dev/null 2>&1; then
  missing+=(python3-dev)
fi
# libFuzzer (clang's -fsanitize=fuzzer, for tests/fuzz) is in compiler-rt
# (installed with clang on a machine that has neither: clang does not pull it in)
if ! command -v clang >/dev/null 2>&1 ||
   [ ! -f "$(clang -print-file-name=libclang_rt.fuzzer-x86_64.a)" ]; then
  missing+=(libclang-rt-dev)
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    $(printf '%s\n' "${missing[@]}" | sort -u)
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
if ! .venv/bin/python -c 'import pytest, clang.cindex, uvloop' >/dev/null 2>&1; then
  echo "setup: installing PyPI packages into .venv: pytest libclang uvloop"
  .venv/bin/python -m pip install -q --disable-pip-version-check pytest libclang uvloop
fi
# Cython 3, which compiles the Python package's core (evx/_core.pyx); meson
# finds .venv/bin/cython when .venv/bin is on PATH (scripts/test.sh puts it
# there).
if ! .venv/bin/python -c 'import Cython, sys; sys.exit(int(Cython.__version__.split(".")[0]) < 3)' \
     >/dev/null 2>&1; then
  echo "setup: installing PyPI packages into .venv: cython"
  .venv/bin/python -m pip install -q --disable-pip-version-check 'cython>=3'
fi
# matplotlib: Timeline.plot() and its test (bindings/python/tests/test_trace.py)
if ! .venv/bin/python -c 'import matplotlib' >/dev/null 2>&1; then
  echo "setup: installing PyPI packages into .venv: matplotlib"
  .venv/bin/python -m pip install -q --disable-pip-version-check matplotlib ||
    echo "setup: matplotlib did not install; the test of Timeline.plot() is skipped"
fi
# atheris: libFuzzer for Python, for tests/fuzz/py_fuzz.py
if ! .venv/bin/python -c 'import atheris' >/dev/null 2>&1; then
  echo "setup: installing PyPI packages into .venv: atheris"
  .venv/bin/python -m pip install -q --disable-pip-version-check atheris ||
    echo "setup: atheris did not install; tests/fuzz/py_fuzz.py falls back to its seeded random driver"
fi
