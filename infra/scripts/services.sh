#!/usr/bin/env bash
# Makes sure RabbitMQ (5672) and Redis (6379) answer on localhost, starting
# the local Debian installs when they are present but stopped.
set -euo pipefail

up() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

if ! up 6379; then
  if command -v redis-server >/dev/null 2>&1; then
    echo "starting redis-server"
    mkdir -p /var/lib/redis /var/log/redis 2>/dev/null || true
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
      --dir /var/lib/redis --logfile /var/log/redis/ci.log
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
