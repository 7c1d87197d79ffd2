# dq's Redis function library for the bench scripts that call dq's Lua
# directly (redis-benchmark, callgrind): sourced, not run. Builds the
# library text as the build does (cmake/embed_lua.cmake), loads it into a
# Redis and prints its name; dq's script S is then the function <name>_S.
dq_library_load() {  # PORT [REPO ROOT] -> the library's name
  local port=$1 root=${2:-$PWD} tmp
  tmp=$(mktemp /tmp/dq-library.XXXXXX)
  dq_library_text "$root" > "$tmp"
  redis-cli -p "$port" -x function load replace < "$tmp"
  rm -f "$tmp"
}

# The library's text, as the build embeds it.
dq_library_text() {  # ROOT [LUA DIR]
  local root=$1 lua=${2:-$1/common/store/lua} tmp
  tmp=$(mktemp /tmp/dq-library.XXXXXX)
  cmake -DLUA_DIR="$lua" -DOUTPUT="$tmp.h" -P "$root/cmake/embed_lua.cmake" >/dev/null
  python3 -c 'import sys; s = open(sys.argv[1]).read(); a = s.index("R\"lua(") + 6; sys.stdout.write(s[a:s.index(")lua\"")])' \
    "$tmp.h"
  rm -f "$tmp" "$tmp.h" "$tmp.h.tmp"
}

# The add floor: dq's library with the add's per-call bookkeeping taken out
# (the seq read and write, the timer wake check, the due index's ZADD LT,
# the per-topic counts and the day's, total's and minute's stats), the
# jobs' own work kept (TIME, the flat hash's HMGET, and per job the ended
# record's GET, the bucket's HSETNX and the due zset's ZADD). It answers
# adds as dq does but its jobs are never delivered (no index entry) and
# /metrics does not count them: it measures what any store doing a job's
# own writes per call would cost, never a dq to run. Loaded under the name
# of the tree's own library (REPLACE), so a running dqd calls it.
# Fails, naming the line, when the prelude no longer has a line it edits.
dq_floor_library_load() {  # PORT ROOT
  local port=$1 root=$2 lua name tmp
  lua=$(mktemp -d /tmp/dq-floor-lua.XXXXXX)
  cp -r "$root/common/store/lua/." "$lua/"
  python3 - "$lua/lib/prelude.lua" <<'PY' || { rm -rf "$lua"; return 1; }
import sys
path = sys.argv[1]
text = open(path).read()
# (line of add_jobs, what the floor has instead)
edits = [
    ("  local seq = tonumber(redis.call('GET', K[7]) or '0')\n", "  local seq = 0\n"),
    ("    redis.call('INCRBY', K[7], int_text(stored))\n", ""),
    ("    wake_timer_if_first(K[3], K[5], earliest_text)  -- before lowering: compares with the old first\n", ""),
    ("    for first = 1, #lower, kBulkChunk do\n"
     "      redis.call('ZADD', K[3], 'LT', unpack(lower, first, math.min(#lower, first + kBulkChunk - 1)))\n"
     "    end\n", ""),
    ("  for counted, n in pairs(counted_d) do redis.call('HINCRBY', K[6], counted, int_text(n)) end\n"
     "  for topic, n in pairs(added) do stat(K[4], topic, 'added', n, now) end\n", ""),
]
for line, floor in edits:
    if text.count(line) != 1:
        sys.exit("dq_floor_library_load: the prelude no longer has: " + line.splitlines()[0].strip())
    text = text.replace(line, floor)
open(path, "w").write(text)
PY
  name=$(dq_library_text "$root" | head -1 | sed 's/^#!lua name=//')
  tmp=$(mktemp /tmp/dq-floor.XXXXXX)
  dq_library_text "$root" "$lua" > "$tmp.floor"
  # The floor's own name (a hash of its text) -> the tree's, everywhere.
  local floor_name
  floor_name=$(head -1 "$tmp.floor" | sed 's/^#!lua name=//')
  sed "s/$floor_name/$name/g" "$tmp.floor" > "$tmp"
  redis-cli -p "$port" -x function load replace < "$tmp" >/dev/null
  rm -rf "$lua" "$tmp" "$tmp.floor"
  echo "$name"
}
