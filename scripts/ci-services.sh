#!/usr/bin/env bash
# Starts, if they do not answer, the local services the test suites use: PostgreSQL
# (127.0.0.1:5432), MariaDB (127.0.0.1:3306) and Redis (127.0.0.1:6379), with the machine's own
# packages and their usual commands. A service that cannot be started is left to the suites, which
# then fail with what they could not reach.
set -uo pipefail
up() { timeout 3 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }
if ! up 5432 && command -v pg_ctlcluster >/dev/null; then
  for v in /etc/postgresql/*; do pg_ctlcluster --skip-systemctl-redirect "$(basename "$v")" main start || true; done
fi
if ! up 3306 && [ -x /usr/sbin/mariadbd ]; then
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd || true
fi
if ! up 6379 && command -v redis-server >/dev/null; then
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log || true
fi
for port in 5432 3306 6379; do
  for _ in $(seq 1 30); do up "$port" && break; sleep 1; done
  up "$port" || echo "ci-services: nothing answers on 127.0.0.1:$port" >&2
done
exit 0
