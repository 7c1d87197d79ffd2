#!/bin/bash
# What topic caps cost when they are set but not reached (docs/delivery.md,
# "Caps per topic"): drains of JOBS jobs due at one instant over four topics
# into bench/callback_sink, each on a new Redis and dqd, alternating topics without caps
# and topics with max_in_flight 100000 and max_rate 1000000 (never reached,
# but every call takes and gives back a permit). Prints one row per drain and
# the ratio of the medians (target: within 5 %).
#   bench/caps_drain.sh            JOBS (default 20000), ROUNDS (3), CONSUMERS (2),
#                                  CONCURRENCY (64), BUILD (build-release)
# Needs redis-server, redis-cli, curl, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BUILD:-build-release}
JOBS=${JOBS:-20000}
ROUNDS=${ROUNDS:-3}
if [ "$BUILD" = build-release ]; then
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$BUILD" -j2 --target dqd dqctl add_load callback_sink >/dev/null
WORK=$(mktemp -d /tmp/dq-caps.XXXXXX)
source bench/lib.sh
log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }
field() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p"; }
# CPU seconds so far of a Redis (INFO cpu) and of a dqd's timers and consumers.
redis_cpu_s() {
  redis-cli -p "$1" info cpu | tr -d '\r' |
    awk -F: '/^used_cpu_(user|sys):/ { s += $2 } END { printf "%.3f", s }'
}
dq_cpu_s() {
  local pid total=0
  for pid in $(pgrep -P "$1"); do
    grep -qE '^dq-(timer|consume)' "/proc/$pid/cmdline" 2>/dev/null || continue
    total=$((total + $(awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null || echo 0)))
  done
  awk -v t="$total" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.3f", t / hz }'
}
# Redis commands so far (INFO commandstats): "calls usec" of FCALL/EVALSHA/EVAL
# (each script once), then calls of every command (those scripts run counted too).
redis_commands() {
  redis-cli -p "$1" info commandstats | tr -d '\r' | awk -F'[:=,]' '
    /^cmdstat_/ { all += $3; if ($1 ~ /^cmdstat_(eval|fcall)/) { calls += $3; usec += $5 } }
    END { printf "%d %d %d", calls, usec, all }'
}
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# The callback sink answering 200 and logging each arrival (bench/callback_sink).
SINK_PORT=$(free_port)
SINK_LOG=$WORK/arrivals.log
"$ROOT/$BUILD/callback_sink" "$SINK_PORT" "$SINK_LOG" &
PIDS+=("$!")
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$SINK_PORT/" && break; sleep 0.05; done

drain() {  # RUN CAPS(yes|no) -> prints the drain's jobs/s
  local dir=$WORK/run-$1 port
  mkdir -p "$dir/log" "$dir/redis"
  REDIS_PORT=$(free_port)
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --dir "$dir/redis" --appendonly yes \
    --appendfsync everysec --save '' --daemonize yes --pidfile "$dir/redis/redis.pid" \
    --logfile "$dir/redis/redis.log" --auto-aof-rewrite-percentage 0
  for _ in $(seq 100); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.05; done
  PIDS+=("$(cat "$dir/redis/redis.pid")")
  port=$(free_port)
  cat > "$dir/dq.ini" <<EOT
[server]
listen = 127.0.0.1:$port
workers = 1
legacy_listen =
[redis]
shards = 127.0.0.1:$REDIS_PORT
start_local = no
[sqlite]
path = $dir/dq.db
[log]
dir = $dir/log
[consumer]
processes = ${CONSUMERS:-2}
concurrency = ${CONCURRENCY:-64}
[admin]
listen =
EOT
  "$ROOT/$BUILD/dqd" -c "$dir/dq.ini" > "$dir/dqd.out" 2>&1 &
  local dqd=$!
  PIDS+=("$dqd")
  for _ in $(seq 400); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
  local i caps=()
  [ "$2" = yes ] && caps=(--max-in-flight 100000 --max-rate 1000000)
  for i in 0 1 2 3; do
    "$ROOT/$BUILD/dqctl" -c "$dir/dq.ini" topic add "bench-$i" \
      --callback "http://127.0.0.1:$SINK_PORT/cb/$i" --timeout-ms 5000 "${caps[@]}" >/dev/null
  done
  sleep 2.5  # every role has the topics
  : > "$SINK_LOG"
  local due_s=$(($(date +%s) + 4 + JOBS / 10000))
  ADD_LOAD_COUNT=$JOBS ADD_LOAD_AT=$due_s "$ROOT/$BUILD/add_load" http-batch 127.0.0.1 "$port" 8 600 100 4 >/dev/null
  local redis0 dq0
  redis0=$(redis_cpu_s "$REDIS_PORT")
  dq0=$(dq_cpu_s "$dqd")
  local commands0
  commands0=$(redis_commands "$REDIS_PORT")
  local deadline=$(($(date +%s) + 300))
  while [ "$(date +%s)" -lt "$deadline" ] && [ "$(wc -l < "$SINK_LOG")" -lt "$JOBS" ]; do sleep 0.5; done
  sleep 1.5
  local cpu
  cpu="redis_us=$(awk -v a="$redis0" -v b="$(redis_cpu_s "$REDIS_PORT")" -v n="$JOBS" 'BEGIN { printf "%.1f", (b - a) * 1e6 / n }')"
  cpu="$cpu dq_us=$(awk -v a="$dq0" -v b="$(dq_cpu_s "$dqd")" -v n="$JOBS" 'BEGIN { printf "%.1f", (b - a) * 1e6 / n }')"
  cpu="$cpu $(echo "$commands0 $(redis_commands "$REDIS_PORT")" | awk -v n="$JOBS" '{
    printf "scripts=%.3f script_us=%.1f commands=%.2f", ($4 - $1) / n, ($5 - $2) / n, ($6 - $3) / n }')"
  echo -n "$cpu "
  python3 - "$SINK_LOG" "$JOBS" <<'EOT'
import sys
seen, dup, times = set(), 0, []
for line in open(sys.argv[1]):
    parts = line.split()
    if len(parts) != 3:
        continue
    if parts[2] in seen:
        dup += 1
        continue
    seen.add(parts[2])
    times.append(float(parts[0]))
span = max(times) - min(times) if times else 0
print("delivered=%d lost=%d duplicated=%d rate=%.0f" % (len(times), int(sys.argv[2]) - len(times), dup, len(times) / span if span else 0))
EOT
  kill -TERM "$dqd"; wait "$dqd" 2>/dev/null || true
  redis-cli -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
}

plain="" capped="" plain_cpu="" capped_cpu=""
echo "| run | caps | delivered | lost | duplicated | jobs/s | CPU per delivery: redis-server | dq-timer + dq-consume | per delivery: scripts | script µs | Redis commands |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for round in $(seq "$ROUNDS"); do
  for caps in no yes; do
    out=$(drain "$round-$caps" "$caps")
    log "round $round caps=$caps: $out"
    echo "| $round | $caps | $(echo "$out" | field delivered) | $(echo "$out" | field lost) | $(echo "$out" | field duplicated) | $(echo "$out" | field rate) | $(echo "$out" | field redis_us) µs | $(echo "$out" | field dq_us) µs | $(echo "$out" | field scripts) | $(echo "$out" | field script_us) | $(echo "$out" | field commands) |"
    total=$(awk -v a="$(echo "$out" | field redis_us)" -v b="$(echo "$out" | field dq_us)" 'BEGIN { print a + b }')
    if [ "$caps" = yes ]; then
      capped="$capped $(echo "$out" | field rate)" capped_cpu="$capped_cpu $total"
    else
      plain="$plain $(echo "$out" | field rate)" plain_cpu="$plain_cpu $total"
    fi
  done
done
p=$(median $plain) c=$(median $capped)
pc=$(median $plain_cpu) cc=$(median $capped_cpu)
echo
echo "median CPU per delivery (redis-server + dq-timer + dq-consume): no caps $pc µs, caps set but not reached $cc µs: $(awk -v a="$cc" -v b="$pc" 'BEGIN { printf "%.3f", a / b }')"
echo "median jobs/s: no caps $p, caps set but not reached $c: $(awk -v a="$c" -v b="$p" 'BEGIN { printf "%.3f", a / b }') ($(nproc) cores, $JOBS jobs, ${CONSUMERS:-2} consumers x ${CONCURRENCY:-64}, build $BUILD)"
