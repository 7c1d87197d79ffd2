#!/usr/bin/env bash
# Where the CPU of an add goes, per process, beside the minimal SET+ZADD
# reference of bench/run's step 1, in alternated windows: for each ROUND,
#   dq:  add_load (HTTP, 50 connections) -> dq-server -> redis-server
#   min: redis-benchmark (EVALSHA of the minimal script, 50 clients) -> redis-server
# and for each, the rate, each process's CPU per add (user + system, from
# /proc/<pid>/stat over the window) and how many of the two cores were busy.
# The two paths cost about the same CPU per add; what separates their rates
# is how much of the machine each keeps busy (bench/README.md, "The held
# call sent first"). Not run in CI.
#   bench/add_cpu_split.sh [ROUNDS] [CONNECTIONS]   (default 3, 50)
# WORKERS sets [server] workers (default 1).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
ROUNDS=${1:-3}
CONNECTIONS=${2:-50}
BUILD=${BUILD:-build-release}
for tool in redis-server redis-cli redis-benchmark python3 curl; do
  command -v "$tool" >/dev/null || { echo "add_cpu_split: $tool is missing" >&2; exit 2; }
done
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j2 --target dqd dqctl add_load >/dev/null

WORK=$(mktemp -d /tmp/dq-add-cpu.XXXXXX)
. bench/lib.sh
start_shard
start_dqd "${WORKERS:-1}"

ticks() {  # PID... -> their user + system clock ticks so far
  local sum=0 pid
  for pid in "$@"; do sum=$((sum + $(awk '{ print $14 + $15 }' "/proc/$pid/stat"))); done
  echo "$sum"
}
evalsha_calls() {
  redis-cli -p "$REDIS_PORT" info commandstats | awk -F'[:=,]' '/^cmdstat_evalsha:/ { print $3 }'
}
MIN_SHA=$(redis-cli -p "$REDIS_PORT" script load \
  "redis.call('SET', KEYS[1], ARGV[1]) redis.call('ZADD', KEYS[2], ARGV[2], KEYS[1]) return 1")
BODY64=\"$(printf 'x%.0s' $(seq 62))\"
HZ=$(getconf CLK_TCK)
WINDOW_S=3

for round in $(seq "$ROUNDS"); do
  # dq: 1.5 s warm-up, then the window.
  redis-cli -p "$REDIS_PORT" flushall sync >/dev/null
  "$ROOT/$BUILD/add_load" http 127.0.0.1 "$DQ_PORT" "$CONNECTIONS" $((WINDOW_S + 3)) >/dev/null &
  load=$!
  sleep 1.5
  l0=$(ticks "$load"); s0=$(ticks $SERVERS); r0=$(ticks "$REDIS_PID"); n0=$(jobs_added)
  sleep "$WINDOW_S"
  l1=$(ticks "$load"); s1=$(ticks $SERVERS); r1=$(ticks "$REDIS_PID"); n1=$(jobs_added)
  wait "$load"
  awk -v n=$((n1 - n0)) -v l=$((l1 - l0)) -v s=$((s1 - s0)) -v r=$((r1 - r0)) -v hz="$HZ" \
    -v w="$WINDOW_S" -v round="$round" 'BEGIN {
      printf "round %d dq:  %6.0f adds/s; us of CPU per add: add_load %5.2f, dq-server %5.2f, redis-server %5.2f, total %5.2f; cores busy %.2f\n",
        round, n / w, l * 1e6 / hz / n, s * 1e6 / hz / n, r * 1e6 / hz / n, (l + s + r) * 1e6 / hz / n, (l + s + r) / hz / w }'
  # The minimal script: redis-benchmark runs long enough to cover the window.
  redis-cli -p "$REDIS_PORT" flushall sync >/dev/null
  redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" -c "$CONNECTIONS" -n 100000000 -r 100000000 -q \
    evalsha "$MIN_SHA" 2 'min:__rand_int__' '{min}:due' "$BODY64" 1763800000000 >/dev/null 2>&1 &
  bench=$!
  sleep 1.5
  l0=$(ticks "$bench"); r0=$(ticks "$REDIS_PID"); c0=$(evalsha_calls)
  sleep "$WINDOW_S"
  l1=$(ticks "$bench"); r1=$(ticks "$REDIS_PID"); c1=$(evalsha_calls)
  kill "$bench" 2>/dev/null || true
  wait "$bench" 2>/dev/null || true
  awk -v n=$((c1 - c0)) -v l=$((l1 - l0)) -v r=$((r1 - r0)) -v hz="$HZ" -v w="$WINDOW_S" \
    -v round="$round" 'BEGIN {
      printf "round %d min: %6.0f adds/s; us of CPU per add: redis-benchmark %5.2f, redis-server %5.2f, total %5.2f; cores busy %.2f\n",
        round, n / w, l * 1e6 / hz / n, r * 1e6 / hz / n, (l + r) * 1e6 / hz / n, (l + r) / hz / w }'
done
