#!/usr/bin/env bash
# Redis memory of ended records (docs/RELIABILITY.md, "A retried add"): one
# key per job that ended within its topic's dedup_window_s, written by the
# script that ends the job. Writes N records shaped exactly as remember_end
# (common/store/lua/lib/prelude.lua) writes them (topic bench-0, 16-byte ids,
# "a|ended ms|due ms|16 hex digits|dedup until ms|attempts|detail", PX 600000)
# into a Redis configured as dq asks of a shard, and prints the bytes each
# costs and what a window holds at a given delivery rate.
#   bench/ended_memory.sh            N=1000000, RATE=26817 (jobs/s, the drain
#                                    median of docs/BENCHMARKS.md section 2)
#   ANSWER_BYTES=40 bench/ended_memory.sh   with a topic's history
#                                    (keep_done_days): the detail "200|host|"
#                                    and that many bytes of the answer
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-1000000}
RATE=${RATE:-26817}
WINDOW_S=${WINDOW_S:-600}
WORK=$(mktemp -d /tmp/dq-ended.XXXXXX)
ROOT=$PWD
source bench/lib.sh
trap 'bench_cleanup; rm -rf "$WORK"' EXIT
start_shard
used() { redis-cli -p "$REDIS_PORT" info memory | awk -F: '/^used_memory:/ { print $2 + 0 }'; }
before=$(used)
python3 - "$N" "$WINDOW_S" "${ANSWER_BYTES:-}" <<'PY' | redis-cli -p "$REDIS_PORT" --pipe >/dev/null
import sys
n, window_ms = int(sys.argv[1]), int(sys.argv[2]) * 1000
detail = ("200|dq-host-01|" + "x" * int(sys.argv[3])) if sys.argv[3] else ""
out = sys.stdout
def command(*words):
    parts = ["*%d\r\n" % len(words)]
    for word in words:
        parts.append("$%d\r\n%s\r\n" % (len(word.encode()), word))
    return "".join(parts)
for i in range(n):
    key = "{dq}:ended:bench-0:id-%012d" % i  # 16-byte id
    value = "a|%d|%d|%016x|%d|1|%s" % (1795000000000 + i, 1794999990000 + i,
                                     i * 2654435761 % (1 << 64), 1795000600000 + i, detail)
    out.write(command("SET", key, value, "PX", str(window_ms)))
PY
after=$(used)
keys=$(redis-cli -p "$REDIS_PORT" dbsize)
per=$(( (after - before) / keys ))
held=$(( RATE * WINDOW_S ))
echo "ended records: $keys, Redis used_memory +$((after - before)) bytes, $per bytes each"
echo "a ${WINDOW_S} s window at ${RATE} deliveries/s holds $held records: $(( held * per / 1024 / 1024 )) MiB"
