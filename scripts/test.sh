#!/usr/bin/env bash
# The README's second command, and what CI runs (.ci/run): install what is
# missing, build, and run every test on the host emulation:
#   1. the build (warnings are errors), the conformance suite, the header
#      tests, the ABI checks, the install test, the emulation's self-test and
#      the benchmark smoke runs (meson test);
#   2. the Doxygen reference (zero warnings);
#   3. the conformance suite again under AddressSanitizer + UBSan, and the
#      Python tests on the compiled core built with them;
#   4. the conformance suite again under ThreadSanitizer;
#   5. the bindings: generated files up to date, layout check, pytest, cargo.
# Each step runs even if an earlier one failed; the exit code is nonzero if
# any failed. The GPU is never needed: the suite runs on the real driver with
# scripts/gpu-conformance.sh on a machine that has one.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh || exit 1
export PATH="$PWD/.venv/bin:$PATH"

cuda_inc="${CUDA_INCLUDE:-/usr/local/cuda/include}"
jobs=$(nproc 2>/dev/null || echo 2)
results=()
failed=0

step() { # step NAME CMD...
  local name=$1; shift
  echo
  echo "=== $name"
  if "$@"; then
    results+=("PASS  $name")
  else
    results+=("FAIL  $name")
    failed=$((failed + 1))
  fi
}

configure() { # configure DIR [meson options...]
  local dir=$1; shift
  if [ -f "$dir/build.ninja" ]; then
    meson setup --reconfigure "$dir" -Dtoolkit_include="$cuda_inc" "$@" >/dev/null
  else
    meson setup "$dir" -Dtoolkit_include="$cuda_inc" "$@"
  fi && meson compile -C "$dir" -j "$jobs"
}

build_and_test() {
  configure build && meson test -C build --print-errorlogs --num-processes 1
}

docs() {
  meson compile -C build docs || { cat build/docs/warnings.log 2>/dev/null; return 1; }
}

asan() {
  configure build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug \
    && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
       UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
       meson test -C build-asan --print-errorlogs --num-processes 1 --suite conformance \
    && asan_python
}

# The Python tests on the compiled core, with the extension and libevx built
# with ASan + UBSan (the runtimes preloaded into an uninstrumented python;
# leak detection off, as CPython keeps its own objects until exit).
asan_python() {
  local rt
  rt="$(cc -print-file-name=libasan.so) $(cc -print-file-name=libubsan.so)"
  (cd bindings/python &&
   LD_PRELOAD="$rt" ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
   UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
   EVX_DRIVER=host EVX_LIBRARY="$PWD/../../build-asan/src/libevx.so.0" \
   EVX_SPEEDUPS="$PWD/../../build-asan/bindings/python" \
   python -m pytest -p no:cacheprovider tests --ignore=tests/gpu -q)
}

tsan() {
  configure build-tsan -Db_sanitize=thread -Db_lundef=false -Dbuildtype=debug \
    && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
       meson test -C build-tsan --print-errorlogs --num-processes 1 --suite conformance
}

bindings() {
  bindings/run_tests.sh build
}

# What a pip user gets (scripts/wheel_test.sh says what it checks).
wheel() {
  scripts/wheel_test.sh build-wheel
}

# The README's C and Rust programs, as written (the Python one runs in wheel).
readme_examples() {
  scripts/readme_examples.sh c build-readme && scripts/readme_examples.sh rust build-readme
}

step "build + meson test (conformance on the host emulation, ABI, headers, install)" build_and_test
step "docs (Doxygen, zero warnings)" docs
step "conformance and the compiled Python core under ASan + UBSan" asan
step "conformance under TSan" tsan
step "bindings (generated files, layout, pytest, cargo test)" bindings
step "the wheel: pip wheel, installed in a fresh venv; python -m evx, Python tests, types" wheel
step "README examples: C against a prefix install, Rust by cargo (no LD_LIBRARY_PATH)" readme_examples

echo
echo "=== summary"
printf '%s\n' "${results[@]}"
echo "steps: $(( ${#results[@]} - failed )) passed, $failed failed"
[ "$failed" -eq 0 ]
