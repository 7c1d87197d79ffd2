#!/bin/sh
# Builds (Release, in build-release/) and runs the delivery benchmark.
#   bench/deliver_bench.sh                      throughput and lateness
#   bench/deliver_bench.sh -tc="throughput*"    one of them
# Knobs (environment): JOBS, CONSUMERS, CONCURRENCY (throughput), RATE, SECONDS (lateness).
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-release}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j2 --target deliver_bench
exec "$BUILD/deliver_bench" "$@"
