#!/usr/bin/env bash
# Builds dq and runs every test suite with ctest.
#   tests/run-all.sh              test build in build-test/ (Debug: -O0 compiles in
#                                 half the time of -O2, and the tests do not need speed)
#   tests/run-all.sh --sanitize   ASan+UBSan build in build-asan/
# (build/ stays the README's optimized build that runs dq.)
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-test
flags=(-DCMAKE_BUILD_TYPE=Debug)
if [ "${1:-}" = "--sanitize" ]; then
  build=build-asan
  flags=(-DDQ_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug)
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  export DQ_SANITIZE=1  # the fault suite runs a shorter load
fi
cmake -S . -B "$build" "${flags[@]}" >/dev/null
cmake --build "$build" -j2
ctest --test-dir "$build" --output-on-failure -j2
# The fault suite's counts, one row per scenario (tests/fault/).
cat "$build/tests/fault/fault_table.txt" 2>/dev/null || true
