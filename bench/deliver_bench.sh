#!/bin/sh
# Builds (Release, in build-release/) and runs the delivery benchmark.
#   bench/deliver_bench.sh                        every case, each in its own process, then
#                                                 one summary table
#   bench/deliver_bench.sh -tc="drain: one topic" one case (doctest arguments)
# Knobs (environment): JOBS (drain size, default 50000), CONSUMERS (2),
# CONCURRENCY (64), REPEAT (times the one-topic / four-topic pair runs,
# alternating; default 2), HANG_JOBS (2000), STALL_MS (10000), STALL_AT
# (% of jobs arrived before the stall, 5), RATE (1000), SECONDS (10).
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-release}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j2 --target deliver_bench
if [ $# -gt 0 ]; then
  exec "$BUILD/deliver_bench" "$@"
fi

# Each case in its own process: run right after a 50,000-job drain in the same
# process, the steady-rate case showed one ~190 ms stall on its first due
# second (not seen when it runs alone).
BENCH_RESULTS=$(mktemp /tmp/dq-bench.XXXXXX)
export BENCH_RESULTS
trap 'rm -f "$BENCH_RESULTS"' EXIT
started=$(date +%s)
run() {
  echo "== $1"
  "$BUILD/deliver_bench" -tc="$1" || echo "!! case failed: $1" | tee -a "$BENCH_RESULTS.failed"
}
run "reference: plain POSTs"
i=0
while [ "$i" -lt "${REPEAT:-2}" ]; do
  run "drain: one topic"
  run "drain: four topics with one backlog"
  i=$((i + 1))
done
run "drain: healthy topic beside a hanging one"
run "drain: one shard of two stalled"
run "lateness at a steady rate"

echo
echo "Summary ($(nproc) cores, JOBS=${JOBS:-50000}, ${CONSUMERS:-2} consumers x ${CONCURRENCY:-64};" \
  "whole run $(($(date +%s) - started)) s):"
awk -F '\t' '
  { printf "| %-52s | %6d | %7d | %6d | %6d | %6d | %s |\n", $1, $2, $3, $4, $5, $6, $7 }
  $1 ~ /^reference/ { ref = $3 }
  $1 == "drain: one topic online" { one += $3; n1++ }
  $1 == "drain: four topics online, backlog on one" { four += $3; n4++ }
  BEGIN {
    printf "| %-52s | %6s | %7s | %6s | %6s | %6s | %s |\n", "case", "jobs", "jobs/s", "p50 ms", "p99 ms", "max ms", "note"
    printf "|%s|%s|%s|%s|%s|%s|%s|\n", "---", "---:", "---:", "---:", "---:", "---:", "---"
  }
  END {
    if (n1 && n4) {
      printf "\nfour topics / one topic (mean of %d runs each): %.0f / %.0f jobs/s = %.2f\n",
             n1, four / n4, one / n1, (four / n4) / (one / n1)
    }
    if (ref && n1) printf "one topic / reference: %.2f\n", (one / n1) / ref
  }' "$BENCH_RESULTS"
if [ -f "$BENCH_RESULTS.failed" ]; then
  cat "$BENCH_RESULTS.failed"
  rm -f "$BENCH_RESULTS.failed"
  exit 1
fi
