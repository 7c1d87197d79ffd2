#!/bin/bash
# What [server] require_token costs an add: a fresh redis-server and dqd (one
# API server, no timers or consumers), 21 tokens in the table, then
# bench/http_add_load.py (50 keep-alive connections) adds TOTAL jobs, with or
# without a token; prints adds/s (bound by the Python client) and the CPU
# time dq-server_0 spent per add (the number to compare).
#   bench/token_overhead.sh yes|no TOTAL [BUILD_DIR]   (default build-rel)
set -euo pipefail
mode=$1
total=$2
here=$(cd "$(dirname "$0")" && pwd)
build=${3:-$here/../build-rel}
dir=$(mktemp -d /tmp/dq-token-bench-XXXXXX)
redis_port=$((20000 + RANDOM % 10000))
redis-server --port $redis_port --dir "$dir" --appendonly yes --save "" --daemonize yes \
  --pidfile "$dir/redis.pid" > /dev/null
printf '[server]\nlisten=127.0.0.1:%d\nlegacy_listen=127.0.0.1:%d\nrequire_token=%s\n[redis]\nshards=127.0.0.1:%d\nstart_local=no\n[sqlite]\npath=dq.db\n[log]\ndir=log\n[timer]\nprocesses=0\n[consumer]\nprocesses=0\n[admin]\nlisten=\n' \
  $((redis_port + 1)) $((redis_port + 2)) "$mode" $redis_port > "$dir/dq.ini"
"$build/dqctl" -c "$dir/dq.ini" topic add bench --callback http://example.com/x > /dev/null
for i in $(seq 1 20); do "$build/dqctl" -c "$dir/dq.ini" token add "other$i" --topics "t$i" > /dev/null 2>&1; done
token=$("$build/dqctl" -c "$dir/dq.ini" token add producer --topics bench 2> /dev/null)
"$build/dqd" -c "$dir/dq.ini" > "$dir/out.log" 2>&1 &
master=$!
sleep 1.5
server=$(ps -o pid=,args= --ppid $master | awk '/dq-server_0/{print $1}')
before=$(awk '{print $14 + $15}' /proc/$server/stat)
python3 "$here/http_add_load.py" $((redis_port + 1)) "$total" "$([ "$mode" = yes ] && echo "$token")"
after=$(awk '{print $14 + $15}' /proc/$server/stat)
echo "require_token=$mode: dq-server_0 CPU $(((after - before) * 10)) ms for $total adds =" \
  "$(python3 -c "print(round(($after - $before) * 10000 / $total, 1))") us/add"
kill $master
wait $master 2> /dev/null || true
kill "$(cat "$dir/redis.pid")"
rm -rf "$dir"
