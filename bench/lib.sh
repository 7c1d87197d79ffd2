# Shared by the bench scripts that measure one dqd on one Redis
# (add_cpu_split.sh, add_kernel_cost.sh): sourced, not run. The caller sets
# ROOT, BUILD and WORK (a scratch dir), and sources this after building.
# Every process it starts is stopped on exit (TERM, then KILL a second later).

PIDS=()
bench_cleanup() {
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  sleep 1
  for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
}
trap bench_cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# A Redis as dq asks of a shard (AOF everysec, its listpack limits), with
# automatic AOF rewrites off so no fork lands in a window.
start_shard() {  # -> REDIS_PORT, REDIS_PID
  REDIS_PORT=$(free_port)
  mkdir -p "$WORK/redis"
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --dir "$WORK/redis" --appendonly yes \
    --appendfsync everysec --save '' --daemonize yes --pidfile "$WORK/redis/redis.pid" \
    --logfile "$WORK/redis/redis.log" --hash-max-listpack-entries 128 \
    --hash-max-listpack-value 512 --zset-max-listpack-entries 256 --auto-aof-rewrite-percentage 0
  for _ in $(seq 100); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.05; done
  REDIS_PID=$(cat "$WORK/redis/redis.pid")
  PIDS+=("$REDIS_PID")
}

# dqd on REDIS_PORT with one consumer, the topic bench-0 registered (its
# callback goes nowhere: the jobs are due far later), waited for until the
# API servers know the topic.
start_dqd() {  # WORKERS -> DQ_PORT, DQD, SERVERS (the dq-server pids)
  DQ_PORT=$(free_port)
  mkdir -p "$WORK/dq/log"
  cat > "$WORK/dq/dq.ini" <<EOT
[server]
listen = 127.0.0.1:$DQ_PORT
workers = $1
legacy_listen =
[redis]
shards = 127.0.0.1:$REDIS_PORT
start_local = no
[sqlite]
path = $WORK/dq/dq.db
[log]
dir = $WORK/dq/log
[consumer]
processes = 1
concurrency = 64
[admin]
listen =
EOT
  "$ROOT/$BUILD/dqd" -c "$WORK/dq/dq.ini" > "$WORK/dq/dqd.out" 2>&1 &
  DQD=$!
  PIDS+=("$DQD")
  for _ in $(seq 400); do
    curl -sf "http://127.0.0.1:$DQ_PORT/healthz" >/dev/null 2>&1 && break
    sleep 0.1
  done
  "$ROOT/$BUILD/dqctl" -c "$WORK/dq/dq.ini" topic add bench-0 --callback http://127.0.0.1:9/cb \
    --timeout-ms 5000 >/dev/null
  sleep 2.5  # [master] registry_refresh_ms: the servers have the topic
  SERVERS=$(for pid in $(pgrep -P "$DQD"); do
    grep -q '^dq-server' "/proc/$pid/cmdline" 2>/dev/null && echo "$pid"
  done; true)
  [ -n "$SERVERS" ] || { echo "bench: no dq-server process (see $WORK/dq)" >&2; exit 1; }
}

# jobs added so far: dq_jobs_added_total of /metrics (Redis's counters)
jobs_added() {
  curl -sf "http://127.0.0.1:$DQ_PORT/metrics" |
    awk '/^dq_jobs_added_total/ { s += $NF } END { printf "%.0f", s }'
}
