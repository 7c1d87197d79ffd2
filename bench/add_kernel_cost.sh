#!/usr/bin/env bash
# Where dq-server's time goes per single HTTP add, user vs kernel: the
# adds step of bench/run at one connection count (Redis with AOF everysec,
# one dqd, one API worker, bench/add_load), and while it runs
#   perf stat   task-clock and context switches of dq-server -> CPU us per add
#   strace -c   dq-server's syscalls -> syscalls per add (strace slows the
#               server down: only the counts per add mean anything)
#   perf record dq-server's samples (cpu-clock, call graphs) -> the split
#               between user space, libraries and kernel functions
# Adds in each window: dq_jobs_added_total of /metrics before and after.
# Not run in CI; needs perf and strace, and root (or perf_event_paranoid -1)
# for kernel symbols.
#   bench/add_kernel_cost.sh [CONNECTIONS] [SECONDS]   (default 50, 5)
# PERF_RECORD=0 skips the recording; STRACE=0 skips strace; PERF_EVENTS adds
# events to perf stat (e.g. a uprobe: `perf probe -x .../libc.so.6 --add
# clock_gettime`, PERF_EVENTS=probe_libc:clock_gettime; uprobes slow it down). Report in $OUT
# (default /tmp/dq-add-kernel-cost.txt), perf.data kept in $WORK (printed).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CONNECTIONS=${1:-50}
SECONDS_EACH=${2:-5}
BUILD=${BUILD:-build-release}
OUT=${OUT:-/tmp/dq-add-kernel-cost.txt}
for tool in redis-server redis-cli perf strace python3 curl; do
  command -v "$tool" >/dev/null || { echo "add_kernel_cost: $tool is missing" >&2; exit 2; }
done
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j2 --target dqd dqctl add_load >/dev/null

WORK=$(mktemp -d /tmp/dq-add-kernel.XXXXXX)
. bench/lib.sh
start_shard
start_dqd 1
SERVER=$SERVERS

# One load run per measurement: 1 s warm-up, then the tool for SECONDS_EACH.
measure() {  # NAME COMMAND... (the tool, attached to $SERVER)
  local name=$1
  shift
  "$ROOT/$BUILD/add_load" http 127.0.0.1 "$DQ_PORT" "$CONNECTIONS" $((SECONDS_EACH + 2)) \
    > "$WORK/load-$name.txt" &
  local load=$!
  sleep 1.5
  local before redis_before
  before=$(jobs_added)
  redis_before=$(redis_counts)
  "$@" 2> "$WORK/$name.txt" > "$WORK/$name.out" || true
  local after redis_after
  after=$(jobs_added)
  redis_after=$(redis_counts)
  wait "$load"
  echo $((after - before)) > "$WORK/$name.adds"
  echo "$redis_before $redis_after" > "$WORK/$name.redis"
}
# Redis's CPU seconds (user + sys) and its FCALL calls (dq's functions) so far.
redis_counts() {
  local info
  info=$(redis-cli -p "$REDIS_PORT" info all | tr -d '\r')
  echo "$info" | awk -F: '/^used_cpu_(user|sys):/ { s += $2 } END { printf "%.3f ", s }'
  echo "$info" | awk -F'[:=,]' '/^cmdstat_fcall:/ { printf "%d", $3 }'
}

measure stat timeout -s INT "$SECONDS_EACH" perf stat -e task-clock,context-switches,cpu-migrations${PERF_EVENTS:+,$PERF_EVENTS} \
  -p "$SERVER"
if [ "${STRACE:-1}" = 1 ]; then
  measure strace timeout -s INT "$SECONDS_EACH" strace -c -f -p "$SERVER"
fi
if [ "${PERF_RECORD:-1}" = 1 ]; then
  measure record timeout -s INT "$SECONDS_EACH" perf record -e cpu-clock -g -o "$WORK/perf.data" \
    -p "$SERVER"
fi

{
  echo "add_kernel_cost: $CONNECTIONS connections, ${SECONDS_EACH} s windows, $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "load run during perf stat: $(cat "$WORK/load-stat.txt")"
  n=$(cat "$WORK/stat.adds")
  read -r cpu0 calls0 cpu1 calls1 < "$WORK/stat.redis"
  awk -v n="$n" -v c0="$cpu0" -v c1="$cpu1" -v k0="${calls0:-0}" -v k1="${calls1:-0}" 'BEGIN {
    printf "redis-server in the same window: %.2f us CPU per add, %.1f adds per add.lua call\n",
      (c1 - c0) * 1e6 / n, (k1 > k0) ? n / (k1 - k0) : 0 }'
  awk -v n="$n" '/task-clock/ { gsub(",", "", $1); ms = $1 }
    /context-switches/ { gsub(",", "", $1); cs = $1 }
    END { printf "perf stat: %d adds, task-clock %.0f ms, %.2f us CPU per add, %.3f context switches per add\n", n, ms, ms * 1000 / n, cs / n }' \
    "$WORK/stat.txt"
  if [ -f "$WORK/strace.adds" ]; then
    n=$(cat "$WORK/strace.adds")
    echo "strace -c: $n adds (slowed down); syscalls per add:"
    awk -v n="$n" '$1 ~ /^[0-9.]+$/ && NF >= 5 { calls = $4; name = $NF; if (NF == 6) name = $6;
        if (name != "total") printf "  %-16s %8.3f\n", name, calls / n }' "$WORK/strace.txt" | sort -k2 -nr
  fi
  if [ -f "$WORK/perf.data" ]; then
    echo "perf record: $(cat "$WORK/record.adds") adds; samples by where they ran:"
    perf report -i "$WORK/perf.data" --no-children --sort dso --stdio -g none 2>/dev/null |
      grep -v '^#' | grep -v '^$' | head -12
    echo "system calls (inclusive, kernel side):"
    perf report -i "$WORK/perf.data" --children --sort sym --stdio -g none 2>/dev/null |
      grep -E '__x64_sys_|net_rx_action' | head -12
    echo "top symbols (self):"
    perf report -i "$WORK/perf.data" --no-children --sort sym --stdio -g none 2>/dev/null |
      grep -v '^#' | grep -v '^$' | head -40
  fi
  echo "work dir: $WORK"
} | tee "$OUT"
