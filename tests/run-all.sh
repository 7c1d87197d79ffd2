#!/usr/bin/env bash
# Builds dq and runs every test suite with ctest.
#   tests/run-all.sh              test build in build-test/ (Debug: -O0 compiles in
#                                 half the time of -O2, and the tests do not need speed)
#   tests/run-all.sh --sanitize   ASan+UBSan build in build-asan/ (clang, with the
#                                 libFuzzer targets), then each fuzz target for
#                                 FUZZ_SECONDS (default 10) on its corpus
# (build/ stays the README's optimized build that runs dq.)
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-test
flags=(-DCMAKE_BUILD_TYPE=Debug)
if [ "${1:-}" = "--sanitize" ]; then
  build=build-asan
  # clang, so the libFuzzer targets come from this same build (fuzz/run).
  export CC=clang CXX=clang++
  flags=(-DDQ_SANITIZE=ON -DDQ_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug)
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  export DQ_SANITIZE=1  # the fault suite runs a shorter load
fi
cmake -S . -B "$build" "${flags[@]}" >/dev/null
cmake --build "$build" -j2
ctest --test-dir "$build" --output-on-failure -j2
# The fault suite's counts, one row per scenario (tests/fault/).
cat "$build/tests/fault/fault_table.txt" 2>/dev/null || true
if [ "${1:-}" = "--sanitize" ]; then
  FUZZ_BUILD_DIR=$build FUZZ_CONFIGURED=1 fuzz/run "${FUZZ_SECONDS:-10}"
fi
