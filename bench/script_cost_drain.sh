#!/bin/bash
# Redis-side cost of a delivery (promote, reserve, ack): redis-server under
# callgrind with a real dqd (Release, build-release/) in front, N jobs (4,000)
# due at one second over four topics, callbacks into nginx. Counters are
# zeroed after the adds and dumped once nginx has every callback; prints
# redis-server instructions per delivery. Not run in CI.
#   bench/script_cost_drain.sh
cd "$(dirname "$0")/.."
ROOT=$PWD
B=${B:-$ROOT/build-release}
N=${N:-4000}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
W=$(mktemp -d /tmp/dq-script-cost.XXXXXX)
mkdir -p $W/r $W/log $W/ng
RP=$(free_port); DP=$(free_port); NP=$(free_port)
cat > $W/ng/nginx.conf <<EOT
worker_processes 1;
pid $W/ng/nginx.pid;
error_log $W/ng/error.log;
events { worker_connections 4096; }
http {
  log_format cb '\$msec \$http_x_dq_topic \$http_x_dq_id';
  access_log $W/ng/access.log cb;
  client_body_temp_path $W/ng/body;
  keepalive_requests 1000000;
  server { listen 127.0.0.1:$NP; location / { return 200 "ok\n"; } }
}
EOT
nginx -c $W/ng/nginx.conf -p $W/ng
# Instrumentation off until the adds are in: dqd's start-up scripts (the shard
# mover's scan) run for seconds under callgrind, Redis answers BUSY meanwhile
# and the topics could not be added.
valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=$W/cg.out -q redis-server --port $RP --bind 127.0.0.1 --dir $W/r --appendonly yes --appendfsync everysec --save '' --hash-max-listpack-entries 128 --hash-max-listpack-value 512 --logfile $W/r/log &
VP=$!
for i in $(seq 100); do redis-cli -p $RP ping >/dev/null 2>&1 && break; sleep 0.2; done
cat > $W/dq.ini <<EOT
[server]
listen = 127.0.0.1:$DP
workers = 1
legacy_listen =
[redis]
shards = 127.0.0.1:$RP
start_local = no
[sqlite]
path = $W/dq.db
[log]
dir = $W/log
[consumer]
processes = 1
concurrency = 64
[admin]
listen =
EOT
$B/dqd -c $W/dq.ini > $W/dqd.out 2>&1 &
DQ=$!
for i in $(seq 300); do curl -sf http://127.0.0.1:$DP/healthz >/dev/null && break; sleep 0.1; done
for t in 0 1 2 3; do $B/dqctl -c $W/dq.ini topic add bench-$t --callback http://127.0.0.1:$NP/cb/$t --timeout-ms 5000 >/dev/null; done
sleep 2.5
due=$(( $(date +%s) + ${WAIT_S:-6} ))
ADD_LOAD_COUNT=$N ADD_LOAD_AT=$due $B/add_load http-batch 127.0.0.1 $DP 8 600 100 4
callgrind_control -i on $VP >/dev/null 2>&1
callgrind_control -z $VP >/dev/null 2>&1
for i in $(seq 600); do [ "$(wc -l < $W/ng/access.log)" -ge $N ] && break; sleep 0.5; done
echo "delivered: $(wc -l < $W/ng/access.log) at $(date +%s) (due $due)"
sleep 1
callgrind_control -d $VP >/dev/null 2>&1
sleep 1
f=$(ls -S $W/cg.out* | head -1)
tot=$(grep -a "^summary\|^totals" $f | head -1 | awk '{print $2}')
echo "redis-server instructions per delivery: $((tot / N))"
redis-cli -p $RP info commandstats | grep -E "cmdstat_(fcall|evalsha|brpop|blpop)"
kill $DQ; wait $DQ 2>/dev/null
redis-cli -p $RP shutdown nosave >/dev/null 2>&1; wait $VP
kill $(cat $W/ng/nginx.pid)
rm -rf "$W"
