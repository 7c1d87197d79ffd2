#!/bin/bash
# Redis CPU per job of a pull topic's workers against a push delivery of the
# same jobs (docs/BENCHMARKS.md, "Pull workers"): one Redis, one dqd (one
# timer, one consumer, one API server); JOBS jobs due at one instant go to a
# push topic's callback (bench/callback_sink, answering 200), then JOBS jobs
# of a pull topic are reserved COUNT at a time by THREADS workers and acked
# one call per job, then JOBS more acked one call per reserve (POST
# /v1/topics/{t}/ack) (bench/pull_worker, libdqclient). Redis's CPU (INFO cpu) is read
# after the adds and once every job is delivered or acked, so the adds are
# not counted in either. Prints both, per job, and pull / push (target <= 1).
#   bench/pull.sh    JOBS (default 20000), COUNT (50), THREADS (2), BUILD (build-release)
# Needs redis-server, redis-cli, curl.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BUILD:-build-release}
JOBS=${JOBS:-20000}
COUNT=${COUNT:-50}
THREADS=${THREADS:-2}
if [ "$BUILD" = build-release ]; then
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$BUILD" -j2 --target dqd dqctl callback_sink pull_worker >/dev/null
WORK=$(mktemp -d /tmp/dq-pull.XXXXXX)
source bench/lib.sh
log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }
redis_cpu_s() {
  redis-cli -p "$REDIS_PORT" info cpu | tr -d '\r' |
    awk -F: '/^used_cpu_(user|sys):/ { s += $2 } END { printf "%.3f", s }'
}
# FCALL/EVALSHA/EVAL calls so far, and every command's calls.
redis_calls() {
  redis-cli -p "$REDIS_PORT" info commandstats | tr -d '\r' | awk -F'[:=,]' '
    /^cmdstat_/ { all += $3; if ($1 ~ /^cmdstat_(eval|fcall)/) { calls += $3 } } END { printf "%d %d", calls, all }'
}
per_job() { awk -v a="$1" -v b="$2" -v n="$JOBS" 'BEGIN { printf "%.1f", (b - a) * 1e6 / n }'; }

start_shard
SINK_PORT=$(free_port)
SINK_LOG=$WORK/arrivals.log
"$ROOT/$BUILD/callback_sink" "$SINK_PORT" "$SINK_LOG" &
PIDS+=("$!")
start_dqd 1
"$ROOT/$BUILD/dqctl" -c "$WORK/dq/dq.ini" topic add bench-push \
  --callback "http://127.0.0.1:$SINK_PORT/cb" --timeout-ms 5000 >/dev/null
sleep 2.5  # every role has the topics
SERVER=127.0.0.1:$DQ_PORT
DELAY=$((3 + JOBS / 10000))

log "push: $JOBS jobs due in $DELAY s to the callback sink"
"$ROOT/$BUILD/pull_worker" add "$SERVER" bench-push "$JOBS" "$DELAY"
: > "$SINK_LOG"
push0=$(redis_cpu_s) calls0=$(redis_calls)
start=$(date +%s.%N)
deadline=$(($(date +%s) + 600))
while [ "$(date +%s)" -lt "$deadline" ] && [ "$(wc -l < "$SINK_LOG")" -lt "$JOBS" ]; do sleep 0.2; done
sleep 0.3  # the last acks
push1=$(redis_cpu_s) calls1=$(redis_calls)
push_s=$(awk -v a="$start" -v b="$(date +%s.%N)" -v d="$DELAY" 'BEGIN { printf "%.2f", b - a - d }')
push_delivered=$(awk '{ print $3 }' "$SINK_LOG" | sort -u | wc -l)

# One pull run on its own topic: ACKS "single" (a call per job) or "batch"
# (a reserve's jobs in one POST /v1/topics/{t}/ack). Prints a table row.
pull_run() {
  local topic=bench-pull-$1 worked cpu0 cpu1 c0 c1 done_jobs seconds
  "$ROOT/$BUILD/dqctl" -c "$WORK/dq/dq.ini" topic add "$topic" --mode pull >/dev/null
  sleep 2.5
  log "pull ($1 acks): $JOBS jobs due in $DELAY s, $THREADS workers reserving $COUNT at a time"
  "$ROOT/$BUILD/pull_worker" add "$SERVER" "$topic" "$JOBS" "$DELAY"
  cpu0=$(redis_cpu_s) c0=$(redis_calls)
  worked=$("$ROOT/$BUILD/pull_worker" work "$SERVER" "$topic" "$JOBS" "$THREADS" "$COUNT" "$1")
  cpu1=$(redis_cpu_s) c1=$(redis_calls)
  log "pull ($1 acks): $worked"
  seconds=$(echo "$worked" | sed -n 's/.*seconds=\([^ ]*\).*/\1/p')
  done_jobs=$(echo "$worked" | sed -n 's/.*acked=\([0-9]*\).*/\1/p')
  PULL_US=$(per_job "$cpu0" "$cpu1")
  echo "| pull (reserve count=$COUNT, $1 acks) | $JOBS | $done_jobs | $PULL_US µs | $(scripts "$c0" "$c1") | ${seconds} s from the workers' start (${DELAY} s before due) |"
}

push_us=$(per_job "$push0" "$push1")
scripts() { echo "$1 $2" | awk -v n="$JOBS" '{ printf "%.2f scripts, %.2f commands", ($3 - $1) / n, ($4 - $2) / n }'; }
echo "| mode | jobs | done | Redis CPU per job | Redis calls per job | drain |"
echo "|---|---:|---:|---:|---|---:|"
echo "| push (callback sink) | $JOBS | $push_delivered | $push_us µs | $(scripts "$calls0" "$calls1") | ${push_s} s after due |"
pull_run single
single_us=$PULL_US
pull_run batch
batch_us=$PULL_US
awk -v a="$single_us" -v c="$batch_us" -v b="$push_us" \
  'BEGIN { printf "pull / push Redis CPU per job: %.2f with an ack call per job, %.2f with batch acks\n", a / b, c / b }'
