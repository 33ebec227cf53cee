#!/usr/bin/env bash
# The one test entry: the README's second command, and what CI runs
# (.ci/run). Installs what is missing, builds, and runs every test on the
# host emulation (the GPU is never needed; on a machine with one,
# scripts/gpu-check.sh runs the suites on the real driver):
#
#   build_and_test  the build (warnings are errors), then meson test: the
#                   conformance suite (injected driver faults and leak checks
#                   included), the threads stress, the header tests, the ABI check, the
#                   emulation's self-test, the benchmark smoke runs
#   clang_build     the same build with clang (warnings are errors), then its
#                   conformance suite, header tests and ABI checks
#   abi_stable      abidiff of the built libevx against the ABI recorded for
#                   1.0.0 in abi/ (scripts/abi.sh): no incompatible change
#   install_test    meson install into a temporary folder, a client built
#                   with pkg-config alone, the installed Python package
#   docs            the Doxygen reference (zero warnings)
#   links           README.md and docs/*.md cite only files in the repository,
#                   source files cite only scripts that exist, the case
#                   counts and handle kinds in the docs are the code's
#                   (scripts/conformance_cases.py), and every code block of
#                   the docs is an example or marked a fragment
#                   (scripts/doc_examples.py)
#   spin            the Promela models of models/ (fence signals, hazards and
#                   reclaim, an event's hot word, the futex lock, host-function
#                   records) checked exhaustively by SPIN: each verifies, and
#                   each broken variant (the fence protocol before issue 30, a
#                   barrier left out, a hot word stored without its check, a
#                   lock that loses a wakeup or lets two in, a record list
#                   that loses a record) yields a counterexample
#   asan            the conformance suite and the threads stress under AddressSanitizer + UBSan
#   asan_python     the Python tests on the compiled core built with them
#   tsan            the conformance suite and the threads stress under ThreadSanitizer
#   generated       the generated bindings equal a fresh bindings/generate
#   python_tests    pytest on the package as meson built it (its Cython core)
#                   (layout check included)
#   pybench         smoke runs of bench/py_bench.py, py_region_probe.py,
#                   py_async_bench.py and py_graph_bench.py (its driver
#                   backend: no PyTorch here)
#   rust            cargo test of bindings/rust (layout check included)
#   wheel           pip wheel in an isolated env, installed into a fresh venv:
#                   python -m evx, the Python tests on the installed package,
#                   the README's Python example, stubtest and mypy --strict
#   readme_examples the README's C program against a prefix install (pkg-config,
#                   no LD_LIBRARY_PATH) and its Rust program by cargo; the C
#                   examples of docs/*.md the same way, and every code block
#                   of the docs an example or marked a fragment
#   transcripts     the committed GPU driver transcripts replayed against the
#                   emulation, the comparison's self-test, the legality table
#                   of docs/host-emulation.md (tests/transcript)
#   fuzz_c          the C API under libFuzzer with ASan + UBSan, over a copy of
#                   the seed corpus (EVX_FUZZ_SECONDS, default 60; docs/fuzzing.md)
#   fuzz_py         the Python layer under atheris (EVX_PY_FUZZ_SECONDS, default 30)
#   insn_budget     instructions evx executes per hot call, under callgrind in a
#                   release build (build-insn), against scripts/insn_budget.txt
#
#   scripts/test.sh              every step
#   scripts/test.sh tsan rust    only those steps (build_and_test first, if
#                                the build folder is not there yet)
#   scripts/test.sh --list       the steps, one a line
#
# Each step runs even if an earlier one failed; the exit status is nonzero
# if any failed. The log ends with a table of every step and every suite's
# counts, and a last line "N passed, N failed, N skipped" that CI reads.
#
# Adding a step: write a function that runs it and returns nonzero on
# failure, and add one line `step "DESCRIPTION" FUNCTION` to the list at the
# bottom; the function's name is the step's name on the command line. A
# step that runs a suite with its own counts reports them with
# `counts junit FILE LABEL` (pytest --junitxml), `counts cargo LOG LABEL`
# (cargo test's output) or `counts meson BUILD_DIR` (meson test; a test
# printing "NAME: N passed, N failed[, N skipped]" is counted by its cases);
# a step that reports none counts as one test.
set -uo pipefail
cd "$(dirname "$0")/.."

list=0
only=()
for arg in "$@"; do
  case $arg in
    --list) list=1 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) only+=("$arg") ;;
  esac
done

for arg in "${only[@]}"; do
  if ! grep -qE "^step \"[^\"]*\" $arg( |\$)" "$0"; then
    echo "scripts/test.sh: no step named $arg (scripts/test.sh --list names them)" >&2
    exit 2
  fi
done
if [ "$list" = 0 ]; then
  scripts/setup.sh || exit 1
fi
export PATH="$PWD/.venv/bin:$PATH"

root=$PWD
cuda_inc="${CUDA_INCLUDE:-/usr/local/cuda/include}"
jobs=$(nproc 2>/dev/null || echo 2)

# Results: one entry per step ("PASS|FAIL<TAB>name<TAB>description") and one
# per suite row ("step index<TAB>passed<TAB>failed<TAB>skipped<TAB>label").
results=()
rows=()
failed_steps=0
current=0

counts() { # counts meson BUILD_DIR | counts junit FILE LABEL | counts cargo LOG LABEL
  local kind rest p f s label
  while read -r kind rest; do
    case $kind in
      show) echo "$rest" ;;
      row) read -r p f s label <<<"$rest"
           rows+=("$current"$'\t'"$p"$'\t'"$f"$'\t'"$s"$'\t'"$label") ;;
    esac
  done < <(python3 scripts/test_counts.py "$@")
}

step() { # step DESCRIPTION FUNCTION [ARGS...]
  local desc=$1 fn=$2; shift 2
  if [ "${#only[@]}" -gt 0 ] && [[ " ${only[*]} " != *" $fn "* ]]; then
    return 0
  fi
  if [ "$list" = 1 ]; then
    printf '%-16s %s\n' "$fn" "$desc"
    return 0
  fi
  echo
  echo "=== $desc [$fn]"
  current=${#results[@]}
  local before=${#rows[@]} rc=0 i f nf=0
  "$fn" "$@" || rc=$?
  for ((i = before; i < ${#rows[@]}; i++)); do
    IFS=$'\t' read -r _ _ f _ _ <<<"${rows[$i]}"
    nf=$((nf + f))
  done
  if [ "$rc" -ne 0 ] && [ "$nf" -eq 0 ]; then
    rows+=("$current"$'\t'0$'\t'1$'\t'0$'\t'"the step itself (exit status $rc)")
    nf=1
  elif [ "${#rows[@]}" -eq "$before" ]; then
    rows+=("$current"$'\t'1$'\t'0$'\t'0$'\t'"the step itself")
  fi
  if [ "$nf" -eq 0 ]; then
    results+=("PASS"$'\t'"$fn"$'\t'"$desc")
  else
    results+=("FAIL"$'\t'"$fn"$'\t'"$desc")
    failed_steps=$((failed_steps + 1))
  fi
}

summary() {
  local i st fn desc row sidx p f s label tp=0 tf=0 ts=0
  echo
  echo "=== summary"
  printf '%-4s  %7s %7s %7s  %s\n' "" passed failed skipped "step: suite"
  for i in "${!results[@]}"; do
    IFS=$'\t' read -r st fn desc <<<"${results[$i]}"
    printf '%-4s  %s\n' "$st" "$fn: $desc"
    for row in "${rows[@]}"; do
      IFS=$'\t' read -r sidx p f s label <<<"$row"
      [ "$sidx" = "$i" ] || continue
      printf '%-4s  %7d %7d %7d    %s\n' "" "$p" "$f" "$s" "$label"
      tp=$((tp + p)); tf=$((tf + f)); ts=$((ts + s))
    done
  done
  echo "steps: $(( ${#results[@]} - failed_steps )) passed, $failed_steps failed"
  echo "$tp passed, $tf failed, $ts skipped"
}

configure() { # configure DIR [meson options...]
  local dir=$1; shift
  if [ -f "$dir/build.ninja" ]; then
    meson setup --reconfigure "$dir" -Dtoolkit_include="$cuda_inc" "$@" >/dev/null
  else
    meson setup "$dir" -Dtoolkit_include="$cuda_inc" "$@"
  fi && meson compile -C "$dir" -j "$jobs"
}

# meson_test DIR [meson test options...]: meson test, then its counts (the
# testlog is removed first, so a run that did not happen counts nothing).
meson_test() {
  local dir=$1 rc=0; shift
  rm -f "$dir/meson-logs/testlog.json"
  meson test -C "$dir" --print-errorlogs --num-processes 1 "$@" || rc=$?
  counts meson "$dir"
  return $rc
}

build_and_test() {
  configure build && meson_test build --no-suite install
}

install_test() {
  meson_test build --suite install
}

# The exported ABI against the one recorded for the release (abi/).
abi_stable() {
  scripts/abi.sh check build
}

# The second compiler: everything built by clang in build-clang (warnings are
# errors there too), then the conformance suite and the tests of no suite
# (headers, exports, version) on the host emulation, and its ABI against the
# record (made from a gcc build: the two compilers must agree).
clang_build() {
  if [ ! -f build-clang/build.ninja ]; then
    CC=clang CXX=clang++ meson setup build-clang -Dtoolkit_include="$cuda_inc" -Ddocs=disabled \
      || return 1
  fi
  configure build-clang \
    && meson_test build-clang --no-suite install --no-suite stress --no-suite bench-smoke \
    && scripts/abi.sh check build-clang
}

docs() {
  meson compile -C build docs || { cat build/docs/warnings.log 2>/dev/null; return 1; }
}

links() {
  local rc=0
  python3 scripts/check_links.py || rc=1
  python3 scripts/conformance_cases.py docs --check || rc=1
  python3 scripts/doc_examples.py check || rc=1
  return $rc
}

spin() {
  models/check.sh
}

asan() {
  configure build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug \
    && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
       UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
       meson_test build-asan --suite conformance --suite stress
}

# The Python tests on the compiled core, with the extension and libevx built
# with ASan + UBSan (the runtimes preloaded into an uninstrumented python;
# leak detection off, as CPython keeps its own objects until exit).
asan_python() {
  local rt rc=0 xml="$root/build-asan/pytest-asan.xml"
  rt="$(cc -print-file-name=libasan.so) $(cc -print-file-name=libubsan.so)"
  # The package as meson built it there (its core links build-asan's libevx
  # through its rpath), run from its folder so that it is the evx imported.
  (cd build-asan/bindings/python &&
   LD_PRELOAD="$rt" ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
   UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
   EVX_DRIVER=host PYTHONPATH="$PWD" \
   python -m pytest -p no:cacheprovider ../../../bindings/python/tests \
     --ignore=../../../bindings/python/tests/gpu -q --junitxml="$xml") || rc=$?
  counts junit "$xml" "Python, compiled core, ASan + UBSan"
  return $rc
}

tsan() {
  configure build-tsan -Db_sanitize=thread -Db_lundef=false -Dbuildtype=debug \
    && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
       meson_test build-tsan --suite conformance --suite stress
}

# on_build CMD...: CMD on the host emulation with build/'s libevx and the
# Python package as meson built it there (build/bindings/python/evx, whose
# compiled core finds build/src/libevx.so.0 through its rpath; evx-sys links
# from EVX_LIB_DIR).
on_build() {
  local lib=$root/build/src
  if [ ! -e "$lib/libevx.so.0" ]; then
    echo "no libevx in $lib: run the build_and_test step first" >&2
    return 2
  fi
  EVX_DRIVER=host EVX_LIB_DIR="$lib" PYTHONPATH="$root/build/bindings/python" \
    LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"
}

# The generated files are byte-identical to a fresh generation (into a
# temporary folder, so it works before and after they are committed), two
# generations are identical, and the in-tree files are committed.
generated() {
  local tmp f ok=1
  tmp=$(mktemp -d)
  if ! { bindings/generate --out "$tmp/a" >/dev/null && bindings/generate --out "$tmp/b" >/dev/null; }; then
    rm -rf "$tmp"
    return 1
  fi
  while IFS= read -r f; do
    if ! cmp -s "$tmp/a/$f" "$tmp/b/$f"; then
      echo "not deterministic: two generations of $f differ"; ok=0
    fi
    if ! cmp -s "$tmp/a/$f" "$f"; then
      echo "out of date: $f (run bindings/generate)"
      diff -u "$f" "$tmp/a/$f" | head -40
      ok=0
    fi
  done < <(bindings/generate --list)
  rm -rf "$tmp"
  [ "$ok" = 1 ] && echo "generated files are up to date ($(bindings/generate --list | wc -l) files)"
  if git rev-parse --git-dir >/dev/null 2>&1 && git ls-files --error-unmatch bindings/generate >/dev/null 2>&1; then
    # committed: the generated files in the tree must be the committed ones
    git diff --exit-code --stat -- $(bindings/generate --list) || ok=0
  fi
  [ "$ok" = 1 ]
}

# bindings/python/tests (not gpu/) on the package in build/bindings/python,
# run from there so that it is the evx imported (the source tree's
# bindings/python/evx has no compiled core), with its counts.
python_tests() {
  local rc=0 xml="$root/build/pytest.xml" pkg="$root/build/bindings/python"
  rm -f "$xml"
  if ! ls "$pkg"/evx/_core*.so >/dev/null 2>&1; then
    echo "evx._core was not built in $pkg/evx (meson found no Cython or no Python headers?)"
    return 1
  fi
  echo "--- pytest bindings/python/tests on $pkg/evx (layout check included; gpu/ excluded)"
  (cd "$pkg" && on_build python3 -m pytest -p no:cacheprovider "$root/bindings/python/tests" \
     --ignore="$root/bindings/python/tests/gpu" -q -rs --junitxml="$xml") || rc=$?
  counts junit "$xml" "Python, compiled core"
  return $rc
}

# A smoke run of the Python benchmark: it must finish; its figures mean
# nothing on the emulation.
pybench() {
  local log=build/py_bench-smoke.txt
  if on_build python3 bench/py_bench.py --n 80 --reps 1 --pairs 3 >"$log" 2>&1 &&
     grep -q "^| timed region |" "$log"; then
    echo "ok ($log)"
  else
    tail -20 "$log"
    return 1
  fi
  log=build/py_region_probe-smoke.txt
  if on_build python3 bench/py_region_probe.py --pairs 3 --k 5 >"$log" 2>&1 &&
     grep -q "^| records release the GIL" "$log"; then
    echo "ok ($log)"
  else
    tail -20 "$log"
    return 1
  fi
  log=build/py_async_bench-smoke.txt
  if on_build python3 bench/py_async_bench.py --trials 3 \
        --concurrent 300 --hold-ms 5 --latency-at 1 4 --latency-trials 2 --work-us 50 >"$log" 2>&1 &&
     grep -q "^| notifier |" "$log" && grep -q "^| 50 | notifier |" "$log"; then
    echo "ok ($log)"
  else
    tail -20 "$log"
    return 1
  fi
  # PyTorch is not installed here and the emulation runs no kernels: the
  # driver backend (host functions in a raw-driver capture); its torch
  # column says n/a and why.
  log=build/py_graph_bench-smoke.txt
  if on_build python3 bench/py_graph_bench.py --backend driver --replays 5 \
        --sleep-us 500 1000 250 >"$log" 2>&1 &&
     grep -q "^| kernel 3 | [0-9]" "$log" && grep -q "^| 4 evx marks | [0-9]" "$log"; then
    echo "ok ($log)"
  else
    tail -20 "$log"
    return 1
  fi
}

rust() {
  local rc=0 log="$root/build/cargo-test.log"
  if ! command -v cargo >/dev/null; then
    echo "cargo is not installed: the Rust bindings cannot be tested (apt-get install cargo)"
    return 1
  fi
  rm -f "$log"
  (cd bindings/rust && CARGO_TARGET_DIR="$root/build/bindings-rust-target" \
     on_build cargo test --offline -q 2>&1) | tee "$log" || rc=$?
  counts cargo "$log" "Rust (cargo test)"
  return $rc
}

# What a pip user gets (scripts/wheel_test.sh says what it checks).
wheel() {
  local rc=0
  scripts/wheel_test.sh build-wheel || rc=$?
  [ -f build-wheel/pytest-wheel.xml ] && counts junit build-wheel/pytest-wheel.xml "Python, installed wheel"
  return $rc
}

# The README's C and Rust programs, as written (the Python one runs in wheel).
readme_examples() {
  scripts/readme_examples.sh c build-readme && scripts/readme_examples.sh rust build-readme &&
    scripts/readme_examples.sh docs build-readme
}

# Driver transcripts (docs/host-emulation.md, "Transcripts"): the
# comparison's self-test, every GPU transcript committed under
# tests/transcript/data/ replayed against the emulation (any difference
# fails, the shortest differing program is printed), and the legality
# table in docs/host-emulation.md checked against the transcript.
transcripts() {
  local rec=build/tests/transcript/evx-transcript-record lib=build/src/host/libevx-host.so
  local tool=tests/transcript/transcript.py f files=() rc=0
  if [ ! -x "$rec" ] || [ ! -e "$lib" ]; then
    echo "no $rec or $lib: run the build_and_test step first" >&2
    return 2
  fi
  python3 "$tool" selftest --recorder "$rec" --driver "$lib" || rc=1
  for f in tests/transcript/data/*.txt tests/transcript/data/*.txt.gz; do
    [ -e "$f" ] && files+=("$f")
  done
  if [ "${#files[@]}" -eq 0 ]; then
    echo "no GPU transcript committed under tests/transcript/data/: nothing replayed"
  else
    python3 "$tool" replay --recorder "$rec" --driver "$lib" "${files[@]}" || rc=1
  fi
  python3 "$tool" doc --check docs/host-emulation.md || rc=1
  return $rc
}

# The libFuzzer harness over the C API, in a build dir of its own (clang,
# ASan + UBSan), over a copy of the committed seed corpus; a finding (crash,
# sanitizer report, broken contract, leak, hang) fails the step and its
# input is kept in build-fuzz/fuzz-findings/.
fuzz_c() {
  local dir=build-fuzz work rc
  if [ ! -f "$dir/build.ninja" ]; then
    CC=clang CXX=clang++ meson setup "$dir" -Dtoolkit_include="$cuda_inc" -Dfuzz=true \
      -Db_sanitize=address,undefined -Db_lundef=false -Dpython_core=disabled -Ddocs=disabled \
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

# The Python fuzzer (atheris) on the package as meson built it. It fails on
# a crash, a hang, or any violation of its rules (--strict: the rewritten
# Python layer checks every argument; EVX_PY_FUZZ_STRICT=0 allows the
# violations in its KNOWN_TODAY list, for bisecting old trees).
fuzz_py() {
  local strict=--strict secs=${EVX_PY_FUZZ_SECONDS:-30}
  [ "${EVX_PY_FUZZ_STRICT:-1}" = 0 ] && strict=
  on_build python tests/fuzz/py_fuzz.py --seconds "$secs" $strict \
      --artifacts "$PWD/build/py-fuzz-findings" 2>&1 |
    { grep -v -E '^(INFO|WARNING): |^#[0-9]+.*(NEW|REDUCE|pulse) |known today: ' || true; }
  return "${PIPESTATUS[0]}"
}

# Instructions per hot call (C and the Python core) under callgrind, in a
# release build of its own with only what the count runs built, against
# the budgets in scripts/insn_budget.txt (scripts/insn_budget.py).
insn_budget() {
  local dir=build-insn
  if [ ! -f "$dir/build.ninja" ]; then
    meson setup "$dir" -Dtoolkit_include="$cuda_inc" --buildtype=release -Ddocs=disabled \
      -Dpython_core=enabled >/dev/null || return 1
  fi
  ninja -C "$dir" -j "$jobs" $(python3 scripts/insn_budget.py --build "$dir" --targets) >/dev/null \
    || return 1
  python3 scripts/insn_budget.py --build "$dir"
}

step "build (warnings are errors) + meson test on the host emulation" build_and_test
step "ABI: abidiff against the recorded 1.0.0 ABI (scripts/abi.sh)" abi_stable
step "clang build (warnings are errors) + conformance, header and ABI tests" clang_build
step "install test (meson install, pkg-config client, installed Python package)" install_test
step "docs (Doxygen, zero warnings)" docs
step "README.md and docs/*.md cite only files in the repository" links
step "SPIN: the fence, hazard, hot-word, lock and host-function record models verify, their broken variants fail (models/)" spin
step "conformance and stress under ASan + UBSan" asan
step "the compiled Python core's tests under ASan + UBSan" asan_python
step "conformance and stress under TSan" tsan
step "generated bindings up to date (bindings/generate)" generated
step "Python tests on the compiled core" python_tests
step "bench/py_bench.py smoke run (host emulation)" pybench
step "instruction budgets per hot call (callgrind)" insn_budget
step "cargo test (bindings/rust)" rust
step "the wheel: pip wheel, installed in a fresh venv; python -m evx, Python tests, types" wheel
step "README and docs examples: C against a prefix install, Rust by cargo (no LD_LIBRARY_PATH)" readme_examples
step "driver transcripts replayed on the host emulation (tests/transcript)" transcripts
step "fuzz: the C API under libFuzzer, ASan + UBSan (docs/fuzzing.md)" fuzz_c
step "fuzz: the Python layer under atheris (docs/fuzzing.md)" fuzz_py

[ "$list" = 1 ] && exit 0
summary
[ "$failed_steps" -eq 0 ]
