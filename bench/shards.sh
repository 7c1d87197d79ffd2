# The shards step of bench/run (`bench/run --only shards`): sourced by
# bench/run, whose helpers it uses (start_redis, start_dq, add_topics,
# start_sink_once, add_load, preload, redis_used, redis_cpu_s, arrivals, row).
# The same dqd settings (one API worker, CONSUMERS x CONCURRENCY, one timer)
# on four layouts in turn, each on new redis-servers (AOF everysec, automatic
# rewrites off) and a new dqd:
#   1, 2 and 3 separate Redis instances as `[redis] shards`, and a Redis
#   Cluster of 3 primaries without replicas (`cluster://...`).
# Per layout, each window on emptied Redis (FLUSHALL SYNC):
#   single HTTP adds, 50 connections, ADD_SECONDS after 1 s warm-up;
#   batch adds, 10 connections x 100 jobs per request;
#   memory: SHARDS_MEM_JOBS far-future jobs added, used_memory (summed over
#     every Redis) read at half and at all of them;
#   drain: DRAIN_JOBS jobs due at one instant over four topics, into
#     bench/callback_sink.
# Around each add window and each drain, the CPU seconds of every process
# (Redis: INFO cpu; dq's roles, the generator and the sink: /proc/<pid>/stat)
# give Redis CPU per job and each process's share of a core, so the row can
# say which process is the limit on this machine.

# CPU seconds (user + system) of a process so far (nothing once it is gone:
# its row is then left out, not counted as a drop to 0).
proc_cpu_s() {  # PID
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  # Fields after "pid (comm) ": the comm may hold spaces.
  echo "${stat##*) }" | awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($12 + $13) / hz }'
}

# "who seconds" lines: each Redis, dqd's processes by role, the sink and
# the generator (GEN_PID, or - for none).
cpu_snapshot() {  # DQD_PID GEN_PID PORT...
  local dqd=$1 gen=$2 port pid role
  shift 2
  for port in "$@"; do echo "redis:$port $(redis_cpu_s "$port")"; done
  cpu_line dq-other "$dqd"
  for pid in $(pgrep -P "$dqd"); do
    case "$(head -c 12 "/proc/$pid/cmdline" 2>/dev/null | tr '\0' ' ')" in
      dq-server*) role=dq-server ;;
      dq-timer*) role=dq-timer ;;
      dq-consume*) role=dq-consume ;;
      *) role=dq-other ;;
    esac
    cpu_line "$role" "$pid"
  done
  cpu_line sink "$SINK_PID"
  # The whole machine's busy time (other tenants too): /proc/stat's cpu line
  # less idle and iowait.
  awk -v hz="$(getconf CLK_TCK)" '/^cpu / { printf "machine %.2f\n", ($2 + $3 + $4 + $7 + $8 + $9) / hz; exit }' /proc/stat
  [ "$gen" = - ] || cpu_line generator "$gen"
}
cpu_line() {  # WHO PID: "who seconds", or nothing when the process is gone
  local v
  v=$(proc_cpu_s "$2")
  [ -z "$v" ] || echo "$1 $v"
}

# Two snapshots -> "who=cores ..." over WALL seconds (the roles summed, every
# Redis one by one, redis = their sum, redis_max = the busiest) and
# redis_us = Redis CPU µs per job.
cpu_split() {  # BEFORE_FILE AFTER_FILE WALL_S JOBS
  awk -v wall="$3" -v jobs="$4" '
    BEGIN { if (wall <= 0) wall = 1 }
    NR == FNR { a[$1] += $2; next }
    { b[$1] += $2 }
    END {
      for (k in b) {
        if (!(k in a)) continue
        d = b[k] - a[k]
        printf "%s=%.2f ", k, d / wall
        if (k == "machine") continue
        if (k ~ /^redis:/) { r += d; if (d > rmax) rmax = d }
        all += d
      }
      printf "redis=%.2f redis_max=%.2f all=%.2f redis_us=%.1f\n", r / wall, rmax / wall, all / wall,
        (jobs > 0 ? r * 1e6 / jobs : 0)
    }' "$1" "$2"
}

# Jobs dq holds, summed over topics and states (dq_jobs of /metrics, which
# sums every shard); "" if /metrics did not answer, and always "" with
# SHARDS_ADD_FLOOR (the floor's adds are not counted: the generator's rate
# counts both sides' jobs alike).
held_jobs() {
  [ "${SHARDS_ADD_FLOOR:-}" = 1 ] && return 0
  curl -sf "http://127.0.0.1:$DQ_PORT/metrics" |
    awk '/^dq_jobs\{/ { s += $NF; n++ } END { if (n) printf "%.0f", s }'
}

now_s() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

# One add window of add_load (MODE CONNECTIONS [BATCH]) with CPU snapshots
# inside its measured part: the first 1 s after the 1 s warm-up, the last
# just before it ends. Sets WIN_OUT (add_load's line) and WIN_CPU (cpu_split).
add_window() {  # LABEL MODE CONNECTIONS [BATCH]
  local label=$1 mode=$2 conns=$3 batch=${4:-1} dir=$SHARDS_DIR
  empty_all
  "$ROOT/$BUILD/add_load" "$mode" 127.0.0.1 "$DQ_PORT" "$conns" "$ADD_SECONDS" "$batch" > "$dir/gen.out" &
  local gen=$! t0 t1 j0 j1
  # A snapshot takes a few hundred ms on a loaded machine (a redis-cli per
  # Redis): the second starts 1 s before the generator stops. Each time is
  # taken when its snapshot starts, both snapshots reading in the same order.
  sleep 1.3
  j0=$(held_jobs)
  t0=$(now_s)
  cpu_snapshot "$DQ_PID" "$gen" "${SHARD_PORTS[@]}" > "$dir/cpu.before"
  local until
  until=$(awk -v t="$t0" -v s="$ADD_SECONDS" 'BEGIN { printf "%.3f", t + s - 1.3 }')
  while awk -v t="$(now_s)" -v u="$until" 'BEGIN { exit !(t < u) }'; do sleep 0.05; done
  j1=$(held_jobs)
  t1=$(now_s)
  cpu_snapshot "$DQ_PID" "$gen" "${SHARD_PORTS[@]}" > "$dir/cpu.after"
  wait "$gen" || true
  WIN_OUT=$(cat "$dir/gen.out")
  local wall jobs
  wall=$(elapsed "$t0" "$t1")
  jobs=$((${j1:-0} - ${j0:-0}))
  if [ -z "$j0" ] || [ -z "$j1" ]; then  # no /metrics: the generator's rate
    jobs=$(awk -v r="$(echo "$WIN_OUT" | field rate)" -v w="$wall" 'BEGIN { printf "%.0f", r * w }')
  fi
  WIN_CPU="$(cpu_split "$dir/cpu.before" "$dir/cpu.after" "$wall" "$jobs") jobs=$jobs wall=$wall"
  # A batch answers 200 with a status per job, and the generator counts the
  # request: the rate of jobs stored (dq_jobs) shows a 503 inside a batch.
  WIN_STORED=$(awk -v j="$jobs" -v w="$wall" 'BEGIN { printf "%.0f", j / w }')
  log "  $SHARDS_LABEL $label: $WIN_OUT stored_rate=$WIN_STORED"
  log "    cores: $WIN_CPU"
}

# The reference for "Redis CPU per add, 1 shard against 3 and a cluster":
# step 1's minimal SET+ZADD script, one job per call, each call to one
# Redis (one home), 50 connections in all spread over the layout's Redis
# (one redis-benchmark per plain shard; on the cluster one in --cluster
# mode, each node's keys under its own hash tag). Run after dq stopped, on
# emptied Redis, so its Redis CPU per call is what this machine's layout
# costs with no dq in it: a figure dq's own ratios are read against.
# Sets REF_US (Redis CPU µs per call) and REF_RATE (calls/s).
reference_window() {  # KIND(plain|cluster)
  local kind=$1 calls=${SHARDS_REF_CALLS:-400000} port sha n=${#SHARD_PORTS[@]} pids=() t0 t1
  empty_all
  for port in "${SHARD_PORTS[@]}"; do sha=$(redis-cli -p "$port" script load "$MIN_SCRIPT"); done
  local r0 r1
  r0=$(for port in "${SHARD_PORTS[@]}"; do redis_cpu_s "$port"; echo; done | awk '{ s += $1 } END { printf "%.3f", s }')
  t0=$(now_s)
  if [ "$kind" = cluster ]; then
    redis-benchmark -h 127.0.0.1 -p "${SHARD_PORTS[0]}" --cluster -c 50 -n "$calls" -r 100000000 -q \
      evalsha "$sha" 2 '{tag}min:__rand_int__' '{tag}:due' "$BODY64" 1763800000000 > "$SHARDS_DIR/ref.out" 2>&1
  else
    local i=0 conns
    for port in "${SHARD_PORTS[@]}"; do
      # 50 connections in all: 50 / n each, the remainder to the first ones.
      conns=$((50 / n + (i < 50 % n ? 1 : 0)))
      redis-benchmark -h 127.0.0.1 -p "$port" -c "$conns" -n $((calls / n)) -r 100000000 -q \
        evalsha "$sha" 2 'min:__rand_int__' '{min}:due' "$BODY64" 1763800000000 > "$SHARDS_DIR/ref-$port.out" 2>&1 &
      pids+=($!)
      i=$((i + 1))
    done
    wait "${pids[@]}"
  fi
  t1=$(now_s)
  r1=$(for port in "${SHARD_PORTS[@]}"; do redis_cpu_s "$port"; echo; done | awk '{ s += $1 } END { printf "%.3f", s }')
  local stored=0
  for port in "${SHARD_PORTS[@]}"; do
    stored=$((stored + $(redis-cli -p "$port" dbsize)))
  done
  # Every call stores a new string (random keys may repeat: the strings
  # stored count each key once; the zsets add one key per Redis).
  REF_US=$(awk -v a="$r0" -v b="$r1" -v c="$calls" 'BEGIN { printf "%.1f", (b - a) * 1e6 / c }')
  REF_RATE=$(awk -v c="$calls" -v w="$(elapsed "$t0" "$t1")" 'BEGIN { printf "%.0f", c / w }')
  log "  $SHARDS_LABEL reference: $calls calls, $REF_RATE/s, Redis CPU $REF_US µs per call, keys stored $stored"
}

# FCALLs run so far, summed over the layout's Redis (INFO commandstats).
script_calls_of_layout() {
  local port
  for port in "${SHARD_PORTS[@]}"; do
    redis-cli -p "$port" info commandstats | tr -d '\r' |
      awk -F'[:=,]' '/^cmdstat_fcall:/ { print $3 }'
  done | awk '{ s += $1 } END { printf "%d", s }'
}

empty_all() {
  local port
  for port in "${SHARD_PORTS[@]}"; do redis-cli -p "$port" flushall sync >/dev/null; done
}
used_all() {
  local port total=0
  for port in "${SHARD_PORTS[@]}"; do total=$((total + $(redis_used "$port"))); done
  echo "$total"
}

# Redis used_memory per pending job, from empty: SHARDS_MEM_JOBS far-future
# jobs through the batch API (as step 4's preload), read at half and at all.
# Sets MEM_LINE.
memory_window() {
  empty_all
  local half=$((SHARDS_MEM_JOBS / 2)) u0 u1 u2 n1 n2
  u0=$(used_all)
  preload "$half"
  u1=$(used_all)
  n1=$(held_jobs)
  preload $((SHARDS_MEM_JOBS - half))
  u2=$(used_all)
  n2=$(held_jobs)
  n1=${n1:-$half} n2=${n2:-$SHARDS_MEM_JOBS}
  MEM_LINE=$(awk -v u0="$u0" -v u1="$u1" -v u2="$u2" -v n1="$n1" -v n2="$n2" 'BEGIN {
    per = (u2 - u0) / n2; marginal = (n2 > n1) ? (u2 - u1) / (n2 - n1) : 0
    printf "held=%d grown=%d per_job=%.0f marginal=%.0f per_gib=%.0f marginal_per_gib=%.0f",
      n2, u2 - u0, per, marginal, (per > 0 ? 1073741824 / per : 0), (marginal > 0 ? 1073741824 / marginal : 0) }')
  log "  $SHARDS_LABEL memory: $MEM_LINE"
}

# DRAIN_JOBS due at one instant over four topics into the sink, CPU
# snapshots after the adds and after the last arrival. Sets DRAIN_LINE, WIN_CPU.
drain_window() {
  empty_all
  : > "$SINK_LOG"
  # Due once the adds are in: 3 s + 1.5 x their time at the batch window's
  # stored rate (a cluster on this machine added ~4,000/s).
  local due_s out
  due_s=$(awk -v now="$(date +%s)" -v n="$DRAIN_JOBS" -v r="${SHARDS_BATCH_RATE:-10000}" \
    'BEGIN { if (r < 1000) r = 1000; printf "%d", now + 3 + 1.5 * n / r + 0.999 }')
  out=$(ADD_LOAD_COUNT=$DRAIN_JOBS ADD_LOAD_AT=$due_s add_load http-batch 127.0.0.1 "$DQ_PORT" 8 600 100 4)
  log "  $SHARDS_LABEL drain loaded: $out"
  local late=""
  [ "$(date +%s)" -ge "$due_s" ] && late=" (the adds ran past the due time)"
  while [ "$(date +%s)" -lt "$due_s" ]; do sleep 0.1; done
  local t0 t1
  t0=$(now_s)
  cpu_snapshot "$DQ_PID" - "${SHARD_PORTS[@]}" > "$SHARDS_DIR/cpu.before"
  local deadline=$((due_s + 300))
  while [ "$(date +%s)" -lt "$deadline" ] && [ "$(wc -l < "$SINK_LOG")" -lt "$DRAIN_JOBS" ]; do sleep 0.2; done
  t1=$(now_s)
  cpu_snapshot "$DQ_PID" - "${SHARD_PORTS[@]}" > "$SHARDS_DIR/cpu.after"
  sleep 1.2  # a late duplicate would land now
  DRAIN_LINE="$(arrivals "$SINK_LOG" $((due_s * 1000)) "$DRAIN_JOBS")$late"
  # Cores from the due second (the timer promotes then) until the sink has
  # logged the last arrival (polled every 0.2 s; it writes every 100 ms).
  local wall
  wall=$(elapsed "$t0" "$t1")
  WIN_CPU="$(cpu_split "$SHARDS_DIR/cpu.before" "$SHARDS_DIR/cpu.after" "$wall" "$DRAIN_JOBS") jobs=$DRAIN_JOBS wall=$wall"
  log "  $SHARDS_LABEL drain: $DRAIN_LINE"
  log "    cores: $WIN_CPU"
}

# What the numbers say limits a window: a one-thread process near a full
# core (each Redis, the one dq-server worker), else the machine's cores when
# nearly all are busy, else neither (the processes wait on each other).
limit_of() {  # CPU_SPLIT
  echo "$1" | tr ' ' '\n' | awk -F= -v cores="$(nproc)" -v workers="${SHARDS_WORKERS:-1}" '
    $1 ~ /^redis:/ && $2 > rmax { rmax = $2 }
    $1 == "dq-server" { server = $2 }
    $1 == "all" { all = $2 }
    $1 == "machine" { machine = $2 }
    END {
      if (rmax >= 0.85) { printf "a Redis (%.2f of a core)", rmax; exit }
      if (workers == 1 && server >= 0.85) { printf "dq-server (%.2f of a core, one worker)", server; exit }
      if (all >= 0.85 * cores) { printf "the %d cores (%.2f busy)", cores, all; exit }
      if (machine >= 0.85 * cores) {
        printf "the %d cores, shared: %.2f busy, %.2f of them other processes", cores, machine, machine - all
        exit
      }
      printf "no one process: %.2f of %d cores busy", all, cores }'
}

cores_cells() {  # CPU_SPLIT -> "redis (busiest) | server | timer | consume | other | generator | sink | all | machine"
  local s=$1 g
  g=$(echo "$s" | field generator)
  printf '%s (%s) | %s | %s | %s | %s | %s | %s | **%s**' "$(echo "$s" | field redis)" \
    "$(echo "$s" | field redis_max)" "$(echo "$s" | field dq-server)" "$(echo "$s" | field dq-timer)" \
    "$(echo "$s" | field dq-consume)" "$(echo "$s" | field dq-other)" "${g:--}" \
    "$(echo "$s" | field sink)" "$(echo "$s" | field all)"
  printf ' | %s' "$(echo "$s" | field machine)"
}
# The generator's rate, and the stored rate beside it when it is lower by
# more than 3 % (jobs answered but not stored: a 503 or 504 inside a batch).
rate_cell() {  # ADD_LOAD_LINE STORED_RATE
  local r
  r=$(echo "$1" | field rate)
  awk -v r="$r" -v s="$2" 'BEGIN { if (s < 0.97 * r) printf "**%s** (stored: %s/s)", r, s; else printf "**%s**", r }'
}
per_core() { awk -v us="$1" 'BEGIN { if (us > 0) printf "%.0f", 1e6 / us; else print "n/a" }'; }

# A Redis Cluster of COUNT primaries, no replicas. Sets SHARD_PORTS, CLUSTER_ENTRY.
start_cluster() {  # COUNT
  local i nodes=() entry=""
  SHARD_PORTS=()
  for i in $(seq "$1"); do
    # A node's bus listens on its port + 10000: both free, the port <= 55535.
    REDIS_PORT_WANTED=$(python3 -c '
import random, socket
while True:
    p = random.randint(20000, 45000)
    try:
        for q in (p, p + 10000):
            s = socket.socket(); s.bind(("127.0.0.1", q)); s.close()
        print(p); break
    except OSError:
        pass') \
    start_redis "shards-r$SHARDS_RUN-cluster-$i" --cluster-enabled yes --cluster-config-file nodes.conf \
      --cluster-node-timeout 5000 --auto-aof-rewrite-percentage 0
    SHARD_PORTS+=("$REDIS_PORT")
    nodes+=("127.0.0.1:$REDIS_PORT")
    entry="$entry${entry:+,}127.0.0.1:$REDIS_PORT"
  done
  redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes > "$WORK/cluster-create-$SHARDS_RUN.out" 2>&1 ||
    { cat "$WORK/cluster-create-$SHARDS_RUN.out" >&2; exit 1; }
  local port ok
  for _ in $(seq 300); do
    ok=1
    for port in "${SHARD_PORTS[@]}"; do
      redis-cli -p "$port" cluster info | grep -q '^cluster_state:ok' || ok=""
    done
    [ -n "$ok" ] && break
    sleep 0.1
  done
  [ -n "$ok" ] || { echo "bench/run: the cluster never became ok" >&2; exit 1; }
  CLUSTER_ENTRY="cluster://$entry"
}

# One layout: its Redis, a dqd, the windows; appends to the step's tables.
shards_layout() {  # LABEL KIND(plain|cluster) COUNT
  SHARDS_LABEL=$1
  local kind=$2 count=$3 i list=""
  # Each run of a layout on directories of its own (a layout runs twice with COMPARE_REV).
  SHARDS_RUN=$((${SHARDS_RUN:-0} + 1))
  SHARDS_DIR=$WORK/shards-r$SHARDS_RUN-$count-$kind
  mkdir -p "$SHARDS_DIR"
  log "shards: $SHARDS_LABEL"
  if [ "$kind" = cluster ]; then
    start_cluster "$count"
    list=$CLUSTER_ENTRY
  else
    SHARD_PORTS=()
    for i in $(seq "$count"); do
      start_redis "shards-r$SHARDS_RUN-$count-$i" --auto-aof-rewrite-percentage 0
      SHARD_PORTS+=("$REDIS_PORT")
      list="$list${list:+,}127.0.0.1:$REDIS_PORT"
    done
  fi
  DQ_SHARDS=$list start_dq "shards-r$SHARDS_RUN-$count-$kind" "${SHARD_PORTS[0]}" "$SHARDS_WORKERS" "${CONSUMERS:-2}"
  add_topics 4 "$SINK_PORT"
  if [ "${SHARDS_FLOOR_SIDE:-}" = 1 ]; then
    # The add floor under dqd's own library name, on every Redis of the layout.
    local port
    for port in "${SHARD_PORTS[@]}"; do dq_floor_library_load "$port" "$ROOT" >/dev/null; done
  fi

  # Idle: what the roles' polling of every (virtual) shard costs Redis with
  # no job at all; it is inside every per-job figure below.
  local i0 i1 idle_wall
  sleep 1
  i0=$(now_s)
  cpu_snapshot "$DQ_PID" - "${SHARD_PORTS[@]}" > "$SHARDS_DIR/cpu.before"
  sleep "${SHARDS_IDLE_SECONDS:-3}"
  i1=$(now_s)
  cpu_snapshot "$DQ_PID" - "${SHARD_PORTS[@]}" > "$SHARDS_DIR/cpu.after"
  idle_wall=$(elapsed "$i0" "$i1")
  local idle
  idle=$(cpu_split "$SHARDS_DIR/cpu.before" "$SHARDS_DIR/cpu.after" "$idle_wall" 0)
  log "  $SHARDS_LABEL idle: $idle"

  local f0 f1
  f0=$(script_calls_of_layout)
  add_window "single adds" http 50
  f1=$(script_calls_of_layout)
  local single=$WIN_OUT single_cpu=$WIN_CPU single_cell
  # Jobs per script call over the whole window (warm-up included: the
  # generator's count): nearly every call of the window is an add call.
  local per_call
  per_call=$(awk -v j="$(echo "$single" | field jobs)" -v c="$((f1 - f0))" \
    'BEGIN { if (c > 0) printf "%.1f", j / c; else print "n/a" }')
  log "    jobs per script call: $per_call ($((f1 - f0)) calls)"
  single_cell="**$(echo "$single" | field rate)**"  # a refused single add counts in errors
  local batch="" batch_cpu="" batch_cell=- drain_cpu=""
  if [ "${SHARDS_FLOOR_SIDE:-}" = 1 ]; then
    # Still the floor after the window: nothing reloaded dq's library.
    for i in "${SHARD_PORTS[@]}"; do
      # (grep -c reads it all: grep -q's early exit fails the pipe.)
      [ "$(redis-cli -p "$i" function list withcode | grep -c 'local seq = 0$')" -gt 0 ] ||
        { echo "bench/run: the add floor was replaced on Redis $i during the window" >&2; exit 1; }
    done
  fi
  if [ "${SHARDS_ADD_FLOOR:-}" = 1 ]; then
    # The floor's jobs are never delivered: single adds only, on both sides.
    DRAIN_LINE="" MEM_LINE=""
  else
    add_window "batch adds" http-batch 10 100
    batch=$WIN_OUT batch_cpu=$WIN_CPU
    batch_cell=$(rate_cell "$batch" "$WIN_STORED")
    SHARDS_BATCH_RATE=$WIN_STORED
    memory_window
    drain_window
    drain_cpu=$WIN_CPU
  fi
  # Adds are answered 503/504 while a cluster's virtual shard finds its
  # node; the errors column counts them.
  local add_errors
  add_errors=$(($(echo "$single" | field errors) + $(echo "${batch:-errors=0}" | field errors)))
  local s_us b_us d_us
  s_us=$(echo "$single_cpu" | field redis_us)
  b_us=$(echo "$batch_cpu" | field redis_us)
  d_us=$(echo "$drain_cpu" | field redis_us)
  echo "| $SHARDS_LABEL | $single_cell | $(ms "$(echo "$single" | field p99_us)") ms | $batch_cell | **$(echo "$DRAIN_LINE" | field rate)** | $(echo "$DRAIN_LINE" | field delivered) / $(echo "$DRAIN_LINE" | field lost) / $(echo "$DRAIN_LINE" | field duplicated) / $(echo "$DRAIN_LINE" | field early) | $add_errors |" >> "$WORK/shards_rate.md"
  echo "| $SHARDS_LABEL | $(echo "$idle" | field redis) | $s_us µs | **$(per_core "$s_us")** | $b_us µs | **$(per_core "$b_us")** | $d_us µs | **$(per_core "$d_us")** |" >> "$WORK/shards_redis.md"
  local what split
  for what in idle single batch drain; do
    case $what in
      idle) split=$idle ;;
      single) split=$single_cpu ;;
      batch) split=$batch_cpu ;;
      drain) split=$drain_cpu ;;
    esac
    local limit=-
    [ "$what" = idle ] || limit=$(limit_of "$split")
    echo "| $SHARDS_LABEL | $what | $(cores_cells "$split") | $limit |" >> "$WORK/shards_cores.md"
  done
  [ "${SHARDS_ADD_FLOOR:-}" = 1 ] || echo "| $SHARDS_LABEL | $(echo "$MEM_LINE" | field held) | $(echo "$MEM_LINE" | field grown) | $(echo "$MEM_LINE" | field per_job) | $(echo "$MEM_LINE" | field marginal) | **$(echo "$MEM_LINE" | field per_gib)** | $(echo "$MEM_LINE" | field marginal_per_gib) |" >> "$WORK/shards_memory.md"

  stop_dq
  reference_window "$kind"
  # label, the reference's µs per call and rate, dq's µs per single add:
  # the ratios to 1 Redis are made when the table is written.
  echo "$SHARDS_LABEL	$REF_US	$REF_RATE	$s_us	$per_call" >> "$WORK/shards_reference.tsv"
  for i in "${SHARD_PORTS[@]}"; do redis-cli -p "$i" shutdown nosave >/dev/null 2>&1 || true; done
}

# shards_reference.tsv -> table rows: each layout's Redis CPU per call of the
# reference and per single add of dq, each as a ratio to 1 Redis's of the
# same round and build (a label "<layout>[, round N][, <build>]" is matched
# on the part after the layout).
reference_rows() {
  awk -F'\t' '
    function build(l) {
      if (match(l, /, round [0-9]+(, [^,]* \((before|now|floor)\))?$/)) return substr(l, RSTART + 2)
      return match(l, /, [^,]* \((before|now|floor)\)$/) ? substr(l, RSTART + 2) : ""
    }
    { label[NR] = $1; ref[NR] = $2; rate[NR] = $3; dq[NR] = $4; per_call[NR] = $5
      if ($1 ~ /^1 Redis/) { one_ref[build($1)] = $2; one_dq[build($1)] = $4 } }
    END {
      for (n = 1; n <= NR; n++) {
        b = build(label[n]); r1 = one_ref[b]; d1 = one_dq[b]
        printf "| %s | %s | %s µs | %s | %s µs | %s | %s |\n", label[n], rate[n], ref[n],
          (r1 > 0 ? sprintf("**%.2fx**", ref[n] / r1) : "n/a"), dq[n],
          (d1 > 0 ? sprintf("**%.2fx**", dq[n] / d1) : "n/a"), per_call[n]
      }
    }' "$WORK/shards_reference.tsv"
}

# With SHARDS_ROUNDS > 1: per layout (and build), the median over the rounds
# of the reference's and dq's Redis CPU, their ratios to 1 Redis's medians,
# dq's lowest and highest round, and the median jobs per call. One window
# of this step moves by up to a third from run to run on this machine
# (docs/BENCHMARKS.md §16); the median of rounds run in turn does not.
median_rows() {
  awk -F'\t' '
    function base(l) { sub(/, round [0-9]+/, "", l); return l }
    function build(l) { return match(l, /, [^,]* \((before|now|floor)\)$/) ? substr(l, RSTART + 2) : "" }
    function median(list, k, v, n, i, j, t) {
      n = split(list, v, " ")
      for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
      if (k == "min") return v[1]
      if (k == "max") return v[n]
      return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    }
    { b = base($1)
      if (!(b in refs)) order[++layouts] = b
      refs[b] = refs[b] " " $2; dqs[b] = dqs[b] " " $4; calls[b] = calls[b] " " $5; rounds[b]++ }
    END {
      for (n = 1; n <= layouts; n++) {
        b = order[n]; r[b] = median(refs[b]); d[b] = median(dqs[b])
        if (b ~ /^1 Redis/) { one_ref[build(b)] = r[b]; one_dq[build(b)] = d[b] }
      }
      for (n = 1; n <= layouts; n++) {
        b = order[n]; r1 = one_ref[build(b)]; d1 = one_dq[build(b)]
        printf "| %s | %d | %.1f µs | %s | %.1f µs (%s-%s) | %s | %.1f |\n", b, rounds[b], r[b],
          (r1 > 0 ? sprintf("**%.2fx**", r[b] / r1) : "n/a"), d[b], median(dqs[b], "min"),
          median(dqs[b], "max"), (d1 > 0 ? sprintf("**%.2fx**", d[b] / d1) : "n/a"), median(calls[b])
      }
    }' "$WORK/shards_reference.tsv"
}

step_shards() {
  SHARDS_MEM_JOBS=${SHARDS_MEM_JOBS:-1000000}
  [ "$MODE" = quick ] && SHARDS_MEM_JOBS=${SHARDS_MEM_JOBS_QUICK:-40000}
  SHARDS_WORKERS=${API_WORKERS:-1}
  log "shards: 1, 2, 3 Redis shards and a 3-primary cluster; adds ${ADD_SECONDS} s, drain $DRAIN_JOBS, memory $SHARDS_MEM_JOBS"
  start_sink_once
  : > "$WORK/shards_rate.md"
  : > "$WORK/shards_redis.md"
  : > "$WORK/shards_cores.md"
  : > "$WORK/shards_memory.md"
  : > "$WORK/shards_reference.tsv"
  # With COMPARE_REV, each layout runs twice, with that revision's dqd and
  # with this tree's, in turn (the order swapped from one layout to the
  # next), so the load of the minute falls on both alike.
  # SHARDS_ROUNDS runs the layouts that many times, in reverse order every
  # other round (so a drift of the machine's load falls on each alike), and
  # adds a table of the medians.
  local builds="now" layouts=${SHARDS_LAYOUTS:-"1 2 3 cluster"} l b n=0 label
  local rounds=${SHARDS_ROUNDS:-1} round order
  if [ -n "${COMPARE_REV:-}" ]; then
    build_compare
    builds="before now"
  fi
  if [ "${SHARDS_ADD_FLOOR:-}" = 1 ]; then
    [ -z "${COMPARE_REV:-}" ] || { echo "bench/run: SHARDS_ADD_FLOOR and COMPARE_REV do not go together" >&2; exit 1; }
    builds="now floor"
  fi
  for round in $(seq "$rounds"); do
    order=$layouts
    [ $((round % 2)) = 0 ] && order=$(echo "$layouts" | tr ' ' '\n' | tac | tr '\n' ' ')
    for l in $order; do
      local sides=$builds
      # Every other layout runs the two sides the other way round.
      [ $((n % 2)) = 1 ] && sides=$(echo "$builds" | tr ' ' '\n' | tac | tr '\n' ' ')
      for b in $sides; do
        case $l in
          cluster) label="Redis Cluster, 3 primaries (no replicas)" ;;
          1) label="1 Redis" ;;
          *) label="$l Redis shards" ;;
        esac
        [ "$rounds" -gt 1 ] && label="$label, round $round"
        SHARDS_FLOOR_SIDE=""
        case $builds:$b in
          "before now:before") DQ_BIN_DIR=$COMPARE_DIR label="$label, $COMPARE_NAME (before)" ;;
          "before now:now") DQ_BIN_DIR=$ROOT/$BUILD label="$label, $DQ_COMMIT (now)" ;;
          "now floor:now") label="$label, $DQ_COMMIT (now)" ;;
          "now floor:floor") SHARDS_FLOOR_SIDE=1 label="$label, add floor (floor)" ;;
        esac
        [ "$builds" != "before now" ] || export DQ_BIN_DIR
        case $l in
          cluster) shards_layout "$label" cluster 3 ;;
          *) shards_layout "$label" plain "$l" ;;
        esac
      done
      n=$((n + 1))
    done
  done
  unset DQ_BIN_DIR
  row "### 9. Shards: 1, 2 and 3 Redis primaries, and a 3-primary Redis Cluster"
  row ""
  row "The same dqd settings on each ($SHARDS_WORKERS API worker, ${CONSUMERS:-2} consumers x ${CONCURRENCY:-64}, one timer), new redis-servers (AOF everysec, automatic rewrites off) and a new dqd per layout, every Redis on this one machine. The cluster has no replicas: a replica's copy costs its primary CPU that this step does not measure. Each window starts on emptied Redis."
  row ""
  row "| layout | single adds/s (50 connections, ${ADD_SECONDS} s) | add p99 | batch adds/s (10 connections x 100) | drain jobs/s ($DRAIN_JOBS jobs, 4 topics) | drain delivered / lost / duplicated / early | add errors |"
  row "|---|---:|---:|---:|---:|---|---:|"
  cat "$WORK/shards_rate.md" >> "$ROWS"
  row ""
  row "Redis CPU (INFO cpu, user + system, summed over every Redis of the layout) per job, and what one fully used Redis core does at that cost (10^6 / µs). The per-job figures include the idle polling of the first column (${SHARDS_IDLE_SECONDS:-3} s with no job, before the windows):"
  row ""
  row "| layout | Redis cores busy with no job (roles polling) | per single add | single adds per Redis core | per batch-added job | batch adds per Redis core | per delivered job | deliveries per Redis core |"
  row "|---|---:|---:|---:|---:|---:|---:|---:|"
  cat "$WORK/shards_redis.md" >> "$ROWS"
  row ""
  row "Cores busy in each window ($(nproc) on this machine; CPU seconds / wall seconds from /proc/<pid>/stat and INFO cpu; adds: over the measured window; drain: from the due second until the last arrival is logged). Redis: all instances (the busiest one); other dq: the master and dq-redis-checker; whole machine: /proc/stat, other tenants included:"
  row ""
  row "| layout | window | Redis (busiest) | dq-server | dq-timer | dq-consume | other dq | load generator | callback sink | all of these | whole machine | the limit, from these numbers |"
  row "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
  cat "$WORK/shards_cores.md" >> "$ROWS"
  row ""
  row "The reference: step 1's minimal SET+ZADD script, one job per call to one Redis, 50 connections in all over the layout's Redis (a redis-benchmark per plain shard, one in --cluster mode on the cluster), ${SHARDS_REF_CALLS:-400000} calls, on emptied Redis after the layout's dqd stopped. Its ratio to 1 Redis is what this machine's layout alone costs a call that does the same work on 1 or 3 Redis; dq's single adds beside it (the table above), with the jobs each of dq's script calls carried in the single-add window (all FCALLs of the layout's Redis over the window):"
  row ""
  row "| layout | reference calls/s | reference Redis CPU per call | reference / 1 Redis | dq Redis CPU per single add | dq / 1 Redis | dq's jobs per script call |"
  row "|---|---:|---:|---:|---:|---:|---:|"
  reference_rows >> "$ROWS"
  row ""
  if [ "$rounds" -gt 1 ]; then
    row "The same over the $rounds rounds: medians, dq's lowest and highest round in brackets, ratios of the medians:"
    row ""
    row "| layout | rounds | reference Redis CPU per call | reference / 1 Redis | dq Redis CPU per single add | dq / 1 Redis | dq's jobs per script call |"
    row "|---|---:|---:|---:|---:|---:|---:|"
    median_rows >> "$ROWS"
    row ""
  fi
  row "Redis memory per pending job (64-byte body, 16-byte id, due in 10 days, added through the batch API onto emptied Redis; used_memory summed over every Redis of the layout; step 4 gives the per-structure split for one shard). Average: growth / jobs held at the end; marginal: growth over the second half / its jobs (the buckets' fixed cost paid, what a larger queue costs per job):"
  row ""
  row "| layout | jobs held | used_memory growth | bytes per job | marginal bytes per job | jobs per GiB | marginal jobs per GiB |"
  row "|---|---:|---:|---:|---:|---:|---:|"
  cat "$WORK/shards_memory.md" >> "$ROWS"
  row ""
  row "What limits this: every Redis, dq's processes, the generator and the sink share these $(nproc) cores, so more primaries add Redis threads, not cores; throughput can only grow with shards while one Redis thread is the limit and cores are left. The last column of the cores table names the limit of each window; Redis CPU per job is the figure that carries to a machine with a core per Redis."
  row ""
}
