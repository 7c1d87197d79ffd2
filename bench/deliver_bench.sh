#!/bin/sh
# Builds and runs bench/deliver_bench.cc against an existing build dir's
# libraries (Release recommended):
#   cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release
#   cmake --build build-release -j2 --target dqtimer dqconsumer dqtestsupport
#   BUILD=build-release bench/deliver_bench.sh
# Knobs (environment): JOBS, CONSUMERS, CONCURRENCY (throughput), RATE, SECONDS (lateness).
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
OUT="$BUILD/deliver_bench"
# shellcheck disable=SC2046
g++ -std=c++17 -O2 -I. -I"$BUILD/generated" \
  -DDQ_BUILD_DIR="\"$PWD/$BUILD\"" -DDQ_SOURCE_DIR="\"$PWD\"" \
  bench/deliver_bench.cc -o "$OUT" \
  "$BUILD/tests/libdqtestsupport.a" "$BUILD/libdqconsumer.a" "$BUILD/libdqtimer.a" "$BUILD/libdqcommon.a" \
  $(pkg-config --libs hiredis libevent libevent_pthreads libcurl sqlite3 inih) -lspdlog -lfmt -lpthread
exec "$OUT" "$@"
