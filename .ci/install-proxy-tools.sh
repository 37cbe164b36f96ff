#!/usr/bin/env bash
# Installs the tools the Kong-related tests use, from Debian packages:
#   deck    - `deck validate` for kong.yml (tests/kong_config_test.ts)
#   nginx   - the Kong-like TLS proxy (tests/proxy_test.ts, tests/proxy/nginx.ts)
#   openssl - the test CA and server certificate
# Idempotent: does nothing when all three are on PATH (.ci/apt.sh: how it installs). Needs root
# (or sudo).
set -euo pipefail
source "$(dirname "$0")/apt.sh"

missing=()
command -v deck >/dev/null 2>&1 || missing+=(deck)
# nginx-light is enough (ssl, http2, proxy); any installed nginx will do.
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx-light)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-proxy-tools: deck, nginx, openssl already installed"
  exit 0
fi

apt_install install-proxy-tools "${missing[@]}"

# nginx lives in /usr/sbin, which is not always on a non-root PATH.
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || {
  echo "install-proxy-tools: nginx not found after install" >&2
  exit 1
}
echo "install-proxy-tools: $(deck version 2>/dev/null | head -n1); $(/usr/sbin/nginx -v 2>&1);" \
  "$(openssl version)"
