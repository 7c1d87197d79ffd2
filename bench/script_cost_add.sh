#!/bin/bash
# Redis-side cost of add.lua: instructions of redis-server per job, for calls
# of JOBS jobs (default 16; TOPICS topics, default 2, random ids, 64-byte bodies, AOF
# everysec), counted by callgrind, so the figure holds on a busy machine.
# Run with JOBS=1 and JOBS=16 to split a call's fixed cost from a job's.
# Not run in CI.
#   bench/script_cost_add.sh   (N=calls)
cd "$(dirname "$0")/.."
ROOT=$PWD
N=${N:-1000}
JOBS=${JOBS:-16}
TOPICS=${TOPICS:-2}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
P=$(free_port); D=$(mktemp -d /tmp/dq-script-cost.XXXXXX); trap 'rm -rf "$D"' EXIT
valgrind --tool=callgrind --callgrind-out-file=$D/cg.out -q redis-server --port $P --bind 127.0.0.1 --dir $D --appendonly yes --appendfsync everysec --save '' --hash-max-listpack-entries 128 --hash-max-listpack-value 512 --logfile $D/log &
VP=$!
for i in $(seq 100); do redis-cli -p $P ping >/dev/null 2>&1 && break; sleep 0.2; done
source "$ROOT/bench/dq_library.sh"
library=$(dq_library_load $P "$ROOT")
BODY='"'$(printf 'x%.0s' $(seq 62))'"'
args=()
# The bucket argument is random too (up to 10^8 bucket names instead of
# 49,157): each job then creates its bucket, a little more than the real case.
for i in $(seq "$JOBS"); do args+=("t$((i%TOPICS)):__rand_int__" "t$((i%TOPICS))" "$BODY" delay 3600000 __rand_int__ '' ''); done
bench() { redis-benchmark -p $P -c 4 -n $1 -r 100000000 -q fcall ${library}_add 8 '{dq}:jobs:' '{dq}:bodies' '{dq}:due' '{dq}:stats:20261122' '{dq}:wake:timer' '{dq}:counts' '{dq}:seq' '{dq}:fence' '' 30000 "${args[@]}" >/dev/null 2>&1; }
bench 200
callgrind_control -z $VP >/dev/null 2>&1
bench $N
callgrind_control -d $VP >/dev/null 2>&1
sleep 1
f=$(ls -S $D/cg.out* | head -1)
tot=$(grep -a "^summary\|^totals" $f | head -1 | awk '{print $2}')
echo "redis-server instructions per job: $((tot / (N * JOBS))) (calls of $JOBS jobs; per call $((tot / N)))"
redis-cli -p $P shutdown nosave >/dev/null 2>&1; wait $VP
