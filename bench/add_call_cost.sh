#!/bin/bash
# What a Redis call costs outside the script, and what that does to an add's
# Redis CPU when calls carry fewer jobs. Real Redis CPU (INFO cpu, user +
# system; not callgrind: the cost asked about is the kernel's and the event
# loop's as much as the script's), one Redis, AOF everysec, on an otherwise
# idle machine, no HTTP in front:
#   - the minimal SET+ZADD script (bench/run's reference) per call, on 1 and
#     on 50 connections: what a call costs before dq's work;
#   - dq's add FCALL on one connection (as the API server's batcher sends one
#     call at a time per shard) with JOBS_LIST jobs per call (default
#     "1 2 5 20": a cluster's, three shards' and one Redis's calls in the
#     shards step), and the same with the add floor (bench/dq_library.sh:
#     no per-call bookkeeping, the jobs' own writes kept).
# Each row ROUNDS times (default 2), every call on emptied Redis. Not run in CI.
#   bench/add_call_cost.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${ROUNDS:-2}
JOBS_LIST=${JOBS_LIST:-"1 2 5 20"}
source "$ROOT/bench/dq_library.sh"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
P=$(free_port)
D=$(mktemp -d /tmp/dq-call-cost.XXXXXX)
trap 'redis-cli -p "$P" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$D"' EXIT
redis-server --port "$P" --bind 127.0.0.1 --dir "$D" --appendonly yes --appendfsync everysec \
  --auto-aof-rewrite-percentage 0 --save '' --hash-max-listpack-entries 128 \
  --hash-max-listpack-value 512 --daemonize yes --logfile "$D/log"
for _ in $(seq 50); do redis-cli -p "$P" ping >/dev/null 2>&1 && break; sleep 0.1; done

redis_cpu() { redis-cli -p "$P" info cpu | awk -F: '/used_cpu_(sys|user):/ { s += $2 } END { printf "%.4f", s }'; }
# Runs redis-benchmark with ARGS over CALLS calls on C connections on emptied
# Redis; prints "calls/s µs-per-call".
measure() {  # CALLS C ARGS...
  local calls=$1 conns=$2 a b t0 t1
  shift 2
  redis-cli -p "$P" flushall >/dev/null
  a=$(redis_cpu)
  t0=$(date +%s.%N)
  redis-benchmark -p "$P" -c "$conns" -n "$calls" -r 100000000 "$@" >/dev/null 2>&1
  t1=$(date +%s.%N)
  b=$(redis_cpu)
  awk -v a="$a" -v b="$b" -v n="$calls" -v t0="$t0" -v t1="$t1" \
    'BEGIN { printf "%.0f %.1f\n", n / (t1 - t0), (b - a) * 1e6 / n }'
}

min_sha=$(redis-cli -p "$P" script load \
  "redis.call('SET', KEYS[1], ARGV[1]) redis.call('ZADD', KEYS[2], ARGV[2], KEYS[1]) return 1")
BODY=$(printf 'x%.0s' $(seq 64))
add_args() {  # JOBS
  local _
  for _ in $(seq "$1"); do printf '%s\n' "t0:__rand_int__" t0 "$BODY" delay 3600000 __rand_int__ '' ''; done
}

ROWS=$D/rows
echo "| what | round | calls/s | Redis CPU per call | per job |"
echo "|---|---:|---:|---:|---:|"
for round in $(seq "$ROUNDS"); do
  for conns in 1 50; do
    read -r rate us < <(measure 100000 "$conns" evalsha "$min_sha" 2 'k:__rand_int__' z \
      "${BODY}" 1700000000000)
    echo "| minimal SET+ZADD script, $conns connection(s) | $round | $rate | $us µs | $us µs |" | tee -a "$ROWS"
  done
  for library in dq floor; do
    if [ "$library" = dq ]; then name=$(dq_library_load "$P" "$ROOT"); else name=$(dq_floor_library_load "$P" "$ROOT"); fi
    for jobs in $JOBS_LIST; do
      mapfile -t args < <(add_args "$jobs")
      calls=$((200000 / jobs)); [ "$calls" -gt 40000 ] && calls=40000
      read -r rate us < <(measure "$calls" 1 fcall "${name}_add" 8 '{dq}:jobs:' '{dq}:bodies' '{dq}:due' \
        '{dq}:stats:20261130' '{dq}:wake:timer' '{dq}:counts' '{dq}:seq' '{dq}:fence' '' 30000 "${args[@]}")
      per_job=$(awk -v u="$us" -v j="$jobs" 'BEGIN { printf "%.1f", u / j }')
      label="dq's add"
      [ "$library" = floor ] && label="the add floor (no per-call bookkeeping)"
      echo "| $label, $jobs job(s) a call, 1 connection | $round | $rate | $us µs | $per_job µs |" | tee -a "$ROWS"
    done
  done
done

# Medians over the rounds, and each add row's per-job cost over the same
# script's at the most jobs a call (the shards step's 1-Redis calls).
echo
echo "| what (median of $ROUNDS) | Redis CPU per call | per job | per job / at the most jobs a call |"
echo "|---|---:|---:|---:|"
awk -F' [|] ' -v last="${JOBS_LIST##* }" '
  function median(list, v, n, i, j, t) {
    n = split(list, v, " ")
    for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
  }
  { what = substr($1, 3); call = $4; job = $5; sub(/ µs/, "", call); sub(/ µs.*/, "", job)
    if (!(what in calls)) order[++n] = what
    calls[what] = calls[what] " " call; jobs[what] = jobs[what] " " job }
  END {
    for (i = 1; i <= n; i++) {
      w = order[i]; c[w] = median(calls[w]); p[w] = median(jobs[w])
      script = w; sub(/, [0-9]+ job.*/, "", script)
      if (w ~ ", " last " job") top[script] = p[w]
    }
    for (i = 1; i <= n; i++) {
      w = order[i]; script = w; sub(/, [0-9]+ job.*/, "", script)
      r = (w ~ / job/ && top[script] > 0) ? sprintf("**%.2fx**", p[w] / top[script]) : "-"
      printf "| %s | %.1f µs | %.1f µs | %s |\n", w, c[w], p[w], r
    }
  }' "$ROWS"
