#!/usr/bin/env bash
# Installs redis-server from Debian for the Redis-backed response store tests
# (tests/responses_redis_test.ts starts its own server on a free loopback port).
# Idempotent: does nothing when redis-server is on PATH; runs `apt-get update` only when the
# package cannot be found in the current lists. Needs root (or sudo).
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive

if command -v redis-server >/dev/null 2>&1 || [ -x /usr/bin/redis-server ]; then
  echo "install-redis: redis-server already installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo -E"; else
    echo "install-redis: need root to install redis-server" >&2
    exit 1
  fi
fi

need_update=0
apt-cache show redis-server >/dev/null 2>&1 || need_update=1
if [ "$need_update" -eq 1 ]; then
  echo "install-redis: apt-get update"
  $SUDO apt-get update -qq
fi

apt_install() { $SUDO apt-get install -y -qq --no-install-recommends redis-server >/dev/null; }
echo "install-redis: installing redis-server"
if ! apt_install; then
  [ "$need_update" -eq 0 ] || exit 1
  echo "install-redis: install failed; apt-get update and retry"
  $SUDO apt-get update -qq
  apt_install
fi
# The package may start a system service on port 6379; the tests use their own server.
echo "install-redis: $(redis-server --version)"
