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
#   5. the bindings: generated files up to date, layout check, pytest, cargo;
#   6. the fuzzers (docs/fuzzing.md) for a bounded time: the C API under
#      libFuzzer with ASan + UBSan (EVX_FUZZ_SECONDS, default 60), and the
#      Python layer under atheris (EVX_PY_FUZZ_SECONDS, default 30, split
#      over its two cores).
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

# The libFuzzer harness over the C API, in a build dir of its own (clang,
# ASan + UBSan), over a copy of the committed seed corpus; a finding (crash,
# sanitizer report, broken contract, leak, hang) fails the step and its
# input is kept in build-fuzz/fuzz-findings/.
fuzz_c() {
  local dir=build-fuzz work rc
  if [ ! -f "$dir/build.ninja" ]; then
    CC=clang CXX=clang++ meson setup "$dir" -Dtoolkit_include="$cuda_inc" -Dfuzz=true \
      -Db_sanitize=address,undefined -Db_lundef=false -Dspeedups=disabled -Ddocs=disabled \
      || return 1
  fi
  meson compile -C "$dir" -j "$jobs" tests/fuzz/evx-fuzz-api src/host/evx-host || return 1
  work=$(mktemp -d) && cp tests/fuzz/corpus/* "$work"/ && mkdir -p "$dir/fuzz-findings" || return 1
  "$dir/tests/fuzz/evx-fuzz-api" -max_total_time="${EVX_FUZZ_SECONDS:-60}" -max_len=512 \
    -timeout=10 -print_final_stats=1 -artifact_prefix="$dir/fuzz-findings/" "$work" 2>&1 |
    { grep -v -E '^#[0-9]+.*(NEW|REDUCE|pulse) ' || true; }
  rc=${PIPESTATUS[0]}
  rm -rf "$work"
  return "$rc"
}

# The Python fuzzer (atheris) on both cores of the Python layer. It fails on
# a crash, a hang, or a violation not in its KNOWN_TODAY list (what the layer
# does today). Once the Python layer's rewrite has landed, make every
# violation fail: set py_fuzz_strict=--strict (or EVX_PY_FUZZ_STRICT=1).
py_fuzz_strict=""
fuzz_py() {
  local strict=$py_fuzz_strict secs=${EVX_PY_FUZZ_SECONDS:-30} ok=0
  [ "${EVX_PY_FUZZ_STRICT:-0}" = 1 ] && strict=--strict
  for core in "$PWD/build/bindings/python" 0; do
    EVX_DRIVER=host EVX_LIBRARY="$PWD/build/src/libevx.so.0" EVX_SPEEDUPS="$core" \
      python tests/fuzz/py_fuzz.py --seconds $((secs / 2)) $strict \
        --artifacts "$PWD/build/py-fuzz-findings" 2>&1 |
      { grep -v -E '^(INFO|WARNING): |^#[0-9]+.*(NEW|REDUCE|pulse) |known today: ' || true; }
    [ "${PIPESTATUS[0]}" -eq 0 ] || ok=1
  done
  return $ok
}

step "build + meson test (conformance on the host emulation, ABI, headers, install)" build_and_test
step "docs (Doxygen, zero warnings)" docs
step "conformance and the compiled Python core under ASan + UBSan" asan
step "conformance under TSan" tsan
step "bindings (generated files, layout, pytest, cargo test)" bindings
step "fuzz: the C API under libFuzzer, ASan + UBSan (docs/fuzzing.md)" fuzz_c
step "fuzz: the Python layer under atheris, both cores (docs/fuzzing.md)" fuzz_py

echo
echo "=== summary"
printf '%s\n' "${results[@]}"
echo "steps: $(( ${#results[@]} - failed )) passed, $failed failed"
[ "$failed" -eq 0 ]
