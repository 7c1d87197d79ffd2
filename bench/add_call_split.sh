#!/usr/bin/env bash
# Why single adds cost Redis more per job on several shards: the call size
# and the rest, apart. One dqd (one API worker) over SHARDS plain Redis
# shards, single adds (add_load http, CONNECTIONS connections, 4 topics,
# 4 s after a 1 s warm-up); per shard and in all: user and system CPU per
# job (INFO cpu), add calls (FCALL) and jobs per call, FCALL time per call,
# then every command per job (INFO commandstats; FCALL's time includes the
# commands it runs). Run it with 3 shards at 50 connections and with 1
# shard at the connection count that gives the same jobs per call (about
# 12): what is left between the two is not the call size (docs/scaling.md,
# "Single adds on three shards: call size and the rest"). Not run in CI.
#   bench/add_call_split.sh [SHARDS] [CONNECTIONS]   (default 3, 50)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SHARDS=${1:-3}
CONNECTIONS=${2:-50}
BUILD=${BUILD:-build-release}
for tool in redis-server redis-cli python3 curl; do
  command -v "$tool" >/dev/null || { echo "add_call_split: $tool is missing" >&2; exit 2; }
done
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j2 --target dqd dqctl add_load >/dev/null

WORK=$(mktemp -d /tmp/dq-add-split.XXXXXX)
. bench/lib.sh
PORTS=()
list=""
RUN_DIR=$WORK
for i in $(seq "$SHARDS"); do
  WORK=$RUN_DIR/r$i  # start_shard keeps its files under $WORK/redis
  start_shard
  PORTS+=("$REDIS_PORT")
  list="$list${list:+,}127.0.0.1:$REDIS_PORT"
done
WORK=$RUN_DIR
REDIS_PORT=${PORTS[0]}
start_dqd 1
sed -i "s/^shards = .*/shards = $list/" "$WORK/dq/dq.ini"
kill -USR2 "$DQD"
sleep 4  # the reload, with every shard
for t in 1 2 3; do
  "$ROOT/$BUILD/dqctl" -c "$WORK/dq/dq.ini" topic add "bench-$t" --callback http://127.0.0.1:9/cb \
    --timeout-ms 5000 >/dev/null
done
sleep 3  # the servers have the topics

snapshot() {  # one line per shard: INFO cpu and commandstats
  for port in "${PORTS[@]}"; do
    { redis-cli -p "$port" info cpu; redis-cli -p "$port" info commandstats; } |
      tr -d '\r' | grep -E '^(used_cpu_(user|sys):|cmdstat_)' | tr '\n' ' '
    echo
  done
}
"$ROOT/$BUILD/add_load" http 127.0.0.1 "$DQ_PORT" "$CONNECTIONS" 1 1 4 1000 >/dev/null  # warm
snapshot > "$WORK/before"
"$ROOT/$BUILD/add_load" http 127.0.0.1 "$DQ_PORT" "$CONNECTIONS" 4 1 4 1000
snapshot > "$WORK/after"
python3 - "$WORK/before" "$WORK/after" <<'PY'
import collections, re, sys
def read(path):
    shards = []
    for line in open(path):
        cpu = {k: float(v) for k, v in re.findall(r"used_cpu_(user|sys):([0-9.]+)", line)}
        calls = {m[0]: (int(m[1]), int(m[2]))
                 for m in re.findall(r"cmdstat_([a-z|_]+):calls=(\d+),usec=(\d+)", line)}
        shards.append((cpu, calls))
    return shards
before, after = read(sys.argv[1]), read(sys.argv[2])
total = collections.Counter()
commands = collections.Counter()
usec = collections.Counter()
for n, ((cpu0, calls0), (cpu1, calls1)) in enumerate(zip(before, after), 1):
    delta = lambda cmd, i: calls1.get(cmd, (0, 0))[i] - calls0.get(cmd, (0, 0))[i]
    jobs, fcalls = delta("hsetnx", 0), delta("fcall", 0)
    user, system = cpu1["user"] - cpu0["user"], cpu1["sys"] - cpu0["sys"]
    print(f"shard {n}: jobs={jobs} calls={fcalls} jobs/call={jobs / max(1, fcalls):.1f} "
          f"fcall_us/call={delta('fcall', 1) / max(1, fcalls):.1f} "
          f"user_us/job={user * 1e6 / max(1, jobs):.2f} sys_us/job={system * 1e6 / max(1, jobs):.2f}")
    total.update(jobs=jobs, calls=fcalls, user=user, sys=system)
    for cmd in calls1:
        commands[cmd] += delta(cmd, 0)
        usec[cmd] += delta(cmd, 1)
jobs = max(1, total["jobs"])
print(f"all: jobs={total['jobs']} jobs/call={total['jobs'] / max(1, total['calls']):.1f} "
      f"redis_us/job={(total['user'] + total['sys']) * 1e6 / jobs:.2f} "
      f"(user {total['user'] * 1e6 / jobs:.2f}, system {total['sys'] * 1e6 / jobs:.2f})")
for cmd, n in commands.most_common():
    if n * 1000 >= jobs:
        print(f"  {cmd:16s} {n / jobs:.3f} per job, {usec[cmd] / jobs:.2f} us per job")
PY
