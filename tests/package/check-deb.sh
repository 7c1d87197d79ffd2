#!/usr/bin/env bash
# CI check of the Debian package: builds dq (without tests or
# sanitizers) and the .deb with cpack in BUILD_DIR (default build-pkg), installs it with dpkg -i into THIS machine, has
# systemd-analyze verify the unit, and runs the installed `dqd --check` on
# the installed config as the dq user (against a redis-server on 6379,
# started here when none answers). Changes the system: run it in CI or a
# throwaway machine, as root.
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
cleanup() {
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
