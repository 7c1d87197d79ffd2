#!/usr/bin/env bash
# CI check of the Debian package: builds dq (without tests or
# sanitizers) and the .deb with cpack in BUILD_DIR (default build-pkg), installs it with dpkg -i into THIS machine, has
# systemd-analyze verify the unit, runs the installed `dqd --check` on
# the installed config as the dq user (against a redis-server on 6379,
# started here when none answers), then starts the installed dqd as the dq
# user and logs in on its admin page with the password the package wrote.
# Changes the system: run it in CI or a throwaway machine, as root.
#   tests/package/check-deb.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-pkg}
[ "$(id -u)" -eq 0 ] || { echo "check-deb: run as root (it installs the package)"; exit 2; }

rm -f "$build"/dq_*.deb
# The package installs under /usr (and so its config in /etc/dq). Debug
# without -g: this build only checks the packaging, and -O0 without debug
# information compiles in about half the time of -O2.
export CMAKE_GENERATOR=${CMAKE_GENERATOR:-Ninja}  # as tests/run-all.sh
cmake -S . -B "$build" -DCMAKE_INSTALL_PREFIX=/usr -DDQ_BUILD_TESTS=OFF -DDQ_SANITIZE=OFF \
  -DDQ_FUZZ=OFF -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0 >/dev/null
cmake --build "$build" --parallel "$(($(nproc) + 1))"
(cd "$build" && cpack -G DEB >/dev/null)
deb=$(ls "$build"/dq_*.deb)
echo "check-deb: built $deb"
dpkg-deb --info "$deb" | sed -n '/Package:/,/Description:/p'

dpkg -i "$deb"
for path in /usr/bin/dqd /usr/bin/dqctl /etc/dq/dq.ini /usr/lib/systemd/system/dq.service \
            /etc/logrotate.d/dq /usr/share/dq/sql/001_initial.sql /usr/include/dq/client.h \
            /usr/include/dq/counts.h; do
  [ -e "$path" ] || { echo "check-deb: $path not installed"; exit 1; }
done
getent passwd dq >/dev/null || { echo "check-deb: no dq user"; exit 1; }
[ "$(stat -c %U /var/lib/dq)" = dq ] || { echo "check-deb: /var/lib/dq not owned by dq"; exit 1; }

systemd-analyze verify /usr/lib/systemd/system/dq.service
echo "check-deb: systemd-analyze verify accepted dq.service"

started_redis=""
if ! redis-cli -p 6379 ping >/dev/null 2>&1; then
  redis_dir=$(mktemp -d)
  redis-server --port 6379 --bind 127.0.0.1 --dir "$redis_dir" --appendonly yes --daemonize yes \
    --pidfile "$redis_dir/redis.pid" >/dev/null
  started_redis="$redis_dir"
  for _ in $(seq 50); do redis-cli -p 6379 ping >/dev/null 2>&1 && break; sleep 0.1; done
fi
dqd_pid=""
cleanup() {
  if [ -n "$dqd_pid" ]; then
    kill -TERM "$dqd_pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$dqd_pid" 2>/dev/null || break; sleep 0.1; done
  fi
  if [ -n "$started_redis" ]; then
    redis-cli -p 6379 shutdown nosave >/dev/null 2>&1 || true
    rm -rf "$started_redis"
  fi
}
trap cleanup EXIT

/usr/bin/dqd --version
/usr/bin/dqctl --version
runuser -u dq -- /usr/bin/dqd --check -c /etc/dq/dq.ini
echo "check-deb: the installed dqd --check passed on /etc/dq/dq.ini"

# The installed page lets its first user in: the password file the package
# wrote is the one the installed config names. (Without systemd here: the
# unit's RuntimeDirectory is made by hand.)
password_file=$(sed -n 's/^password_file = //p' /etc/dq/dq.ini)
[ "$password_file" = /var/lib/dq/admin-password ] ||
  { echo "check-deb: [admin] password_file is '$password_file'"; exit 1; }
[ "$(stat -c '%U %a' "$password_file")" = "dq 600" ] ||
  { echo "check-deb: $password_file is not dq's alone: $(stat -c '%U %a' "$password_file")"; exit 1; }
install -d -o dq -g dq /run/dq
runuser -u dq -- /usr/bin/dqd -c /etc/dq/dq.ini >/var/log/dq/check-deb.out 2>&1 &
dqd_pid=$!
admin=http://127.0.0.1:8088
for _ in $(seq 100); do curl -sf -o /dev/null "$admin/login" && break; sleep 0.1; done
# The package's passwords are base64url: nothing to escape in JSON.
login=$(printf '{"user":"admin","password":"%s"}' "$(head -n1 "$password_file")")
cookies=$(mktemp)
status=$(curl -s -o /dev/null -w '%{http_code}' -c "$cookies" -H 'Content-Type: application/json' \
  --data "$login" "$admin/api/login")
[ "$status" = 200 ] || { echo "check-deb: login on the installed admin page answered $status"; \
  cat /var/log/dq/check-deb.out; exit 1; }
session=$(curl -s -b "$cookies" "$admin/api/session")
rm -f "$cookies"
case "$session" in
  *'"user":"admin"'*) echo "check-deb: logged in on the installed admin page as admin" ;;
  *) echo "check-deb: no session after the login: $session"; exit 1 ;;
esac
