#!/usr/bin/env bash
# Installs prometheus and promtool from Debian for the metrics tests
# (tests/metrics_test.ts runs `promtool check metrics`; tests/metrics_prometheus_test.ts starts
# its own Prometheus on a free loopback port). Idempotent: does nothing when both are on PATH;
# runs `apt-get update` only when the package cannot be found in the current lists. Needs root
# (or sudo).
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive

if command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; then
  echo "install-prometheus: prometheus already installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo -E"; else
    echo "install-prometheus: need root to install prometheus" >&2
    exit 1
  fi
fi

need_update=0
apt-cache show prometheus >/dev/null 2>&1 || need_update=1
if [ "$need_update" -eq 1 ]; then
  echo "install-prometheus: apt-get update"
  $SUDO apt-get update -qq
fi

apt_install() { $SUDO apt-get install -y -qq --no-install-recommends prometheus >/dev/null; }
echo "install-prometheus: installing prometheus"
if ! apt_install; then
  [ "$need_update" -eq 0 ] || exit 1
  echo "install-prometheus: install failed; apt-get update and retry"
  $SUDO apt-get update -qq
  apt_install
fi
# The package may start a system service on port 9090; the tests run their own server.
echo "install-prometheus: $(prometheus --version 2>&1 | head -1)"
