#!/usr/bin/env bash
# Installs the tools the Kong-related tests use, from Debian packages:
#   deck    - `deck validate` for kong.yml (tests/kong_config_test.ts)
#   nginx   - the Kong-like TLS proxy (tests/proxy_test.ts, tests/proxy/nginx.ts)
#   openssl - the test CA and server certificate
# Idempotent: does nothing when all three are on PATH; runs `apt-get update` only when a
# package cannot be found in the current lists. Needs root (or sudo).
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive

missing=()
command -v deck >/dev/null 2>&1 || missing+=(deck)
# nginx-light is enough (ssl, http2, proxy); any installed nginx will do.
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx-light)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-proxy-tools: deck, nginx, openssl already installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo -E"; else
    echo "install-proxy-tools: need root to install: ${missing[*]}" >&2
    exit 1
  fi
fi

# Refresh the package lists only if one of the packages is unknown (fresh machine, empty lists).
need_update=0
for pkg in "${missing[@]}"; do
  if ! apt-cache show "$pkg" >/dev/null 2>&1; then need_update=1; fi
done
if [ "$need_update" -eq 1 ]; then
  echo "install-proxy-tools: apt-get update"
  $SUDO apt-get update -qq
fi

apt_install() { $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
echo "install-proxy-tools: installing ${missing[*]}"
if ! apt_install; then
  # Stale lists (a package file gone from the mirror): refresh once and retry.
  [ "$need_update" -eq 0 ] || exit 1
  echo "install-proxy-tools: install failed; apt-get update and retry"
  $SUDO apt-get update -qq
  apt_install
fi

# nginx lives in /usr/sbin, which is not always on a non-root PATH.
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || {
  echo "install-proxy-tools: nginx not found after install" >&2
  exit 1
}
echo "install-proxy-tools: $(deck version 2>/dev/null | head -n1); $(/usr/sbin/nginx -v 2>&1);" \
  "$(openssl version)"
