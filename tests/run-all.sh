#!/usr/bin/env bash
# Builds dq and runs every test suite with ctest.
#   tests/run-all.sh              normal build in build/
#   tests/run-all.sh --sanitize   ASan+UBSan build in build-asan/
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
flags=()
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
