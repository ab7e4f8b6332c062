#!/usr/bin/env bash
# Makes sure RabbitMQ (5672) and Redis (6379) answer on localhost, starting
# the local Debian installs when they are present but stopped.
set -euo pipefail

up() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Redis persists with an append-only file fsynced every second, as infra/redis/redis.conf does:
# a restarted Redis must come back with its claims, manifests and leases. A Redis that already
# runs is left as it is (it may be the machine's shared one): only a note if it does not persist.
if ! up 6379; then
  if command -v redis-server >/dev/null 2>&1; then
    echo "starting redis-server (AOF, appendfsync everysec)"
    # The system's dirs when writable, else a per-user state dir: the AOF needs a directory it can write.
    redis_dir=/var/lib/redis
    redis_log=/var/log/redis/ci.log
    if ! { mkdir -p "$redis_dir" 2>/dev/null && [ -w "$redis_dir" ]; }; then
      redis_dir="${XDG_STATE_HOME:-$HOME/.local/state}/ge-mesh/redis"
      mkdir -p "$redis_dir"
    fi
    if ! { mkdir -p "$(dirname "$redis_log")" 2>/dev/null && [ -w "$(dirname "$redis_log")" ]; }; then
      redis_log="$redis_dir/redis.log"
    fi
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" \
      --appendonly yes --appendfsync everysec --dir "$redis_dir" --logfile "$redis_log"
  fi
elif command -v redis-cli >/dev/null 2>&1; then
  if [ "$(redis-cli -h 127.0.0.1 -p 6379 config get appendonly 2>/dev/null | tail -n 1)" = no ]; then
    echo "note: the Redis on 127.0.0.1:6379 runs without AOF; its state is lost when it restarts" \
      "(enable it with: redis-cli config set appendonly yes)" >&2
  fi
fi
if ! up 5672; then
  if command -v rabbitmq-server >/dev/null 2>&1; then
    echo "starting rabbitmq-server"
    rabbitmq-server -detached
  fi
fi
for _ in $(seq 1 120); do
  if up 6379 && up 5672; then exit 0; fi
  sleep 0.5
done
up 6379 || echo "Redis is not reachable on 127.0.0.1:6379: start it (redis-server) or set GEMESH_REDIS_URL." >&2
up 5672 || echo "RabbitMQ is not reachable on 127.0.0.1:5672: start it (rabbitmq-server) or set GEMESH_RABBITMQ_URL." >&2
exit 1
