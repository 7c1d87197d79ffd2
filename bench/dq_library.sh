# dq's Redis function library for the bench scripts that call dq's Lua
# directly (redis-benchmark, callgrind): sourced, not run. Builds the
# library text as the build does (cmake/embed_lua.cmake), loads it into a
# Redis and prints its name; dq's script S is then the function <name>_S.
dq_library_load() {  # PORT [REPO ROOT] -> the library's name
  local port=$1 root=${2:-$PWD} tmp
  tmp=$(mktemp /tmp/dq-library.XXXXXX)
  cmake -DLUA_DIR="$root/common/store/lua" -DOUTPUT="$tmp.h" -P "$root/cmake/embed_lua.cmake" >/dev/null
  python3 -c 'import sys; s = open(sys.argv[1]).read(); a = s.index("R\"lua(") + 6; sys.stdout.write(s[a:s.index(")lua\"")])' \
    "$tmp.h" > "$tmp"
  redis-cli -p "$port" -x function load replace < "$tmp"
  rm -f "$tmp" "$tmp.h" "$tmp.h.tmp"
}
