#!/usr/bin/env bash
# Installs prometheus and promtool from Debian for the metrics tests
# (tests/metrics_test.ts runs `promtool check metrics`; tests/metrics_prometheus_test.ts starts
# its own Prometheus on a free loopback port). Idempotent: does nothing when both are on PATH.
# Needs root (or sudo).
set -euo pipefail
source "$(dirname "$0")/apt.sh"

if command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; then
  echo "install-prometheus: prometheus already installed"
  exit 0
fi
apt_install install-prometheus prometheus
# The package may start a system service on port 9090; the tests run their own server.
echo "install-prometheus: $(prometheus --version 2>&1 | head -1)"
