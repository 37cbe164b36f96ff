#!/usr/bin/env bash
# Installs redis-server from Debian for the Redis-backed response store tests
# (tests/responses_redis_test.ts starts its own server on a free loopback port).
# Idempotent: does nothing when redis-server is on PATH. Needs root (or sudo).
set -euo pipefail
source "$(dirname "$0")/apt.sh"

if command -v redis-server >/dev/null 2>&1 || [ -x /usr/bin/redis-server ]; then
  echo "install-redis: redis-server already installed"
  exit 0
fi
apt_install install-redis redis-server
# The package may start a system service on port 6379; the tests use their own server.
echo "install-redis: $(redis-server --version)"
