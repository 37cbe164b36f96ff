#!/usr/bin/env bash
# Installs the real coding CLIs that tests/clients/cli_test.ts drives (Claude Code, Gemini CLI,
# Codex CLI), pinned by tests/clients/package-lock.json, from the npm registry.
# Idempotent: skips `npm ci` when node_modules already matches the lock file (a stamp holds the
# lock's SHA-256) and all three CLIs answer `--version`.
set -euo pipefail
cd "$(dirname "$0")/../tests/clients"

stamp=node_modules/.install-clients.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)

versions() {
  local home
  home=$(mktemp -d)
  for cli in claude gemini codex; do
    HOME="$home" timeout 60 "node_modules/.bin/$cli" --version </dev/null 2>/dev/null | tail -n1 ||
      { rm -rf "$home"; return 1; }
  done
  rm -rf "$home"
}

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && versions >/dev/null; then
  echo "install-clients: up to date ($(versions | paste -sd ';' -))"
  exit 0
fi

echo "install-clients: npm ci"
npm ci --no-audit --no-fund --loglevel=error >/tmp/install-clients.log 2>&1 ||
  { tail -20 /tmp/install-clients.log >&2; exit 1; }

# Claude Code ships a placeholder bin/claude.exe that its postinstall replaces with the native
# binary; run that step ourselves if the npm in use skipped install scripts.
claude_bin=node_modules/@anthropic-ai/claude-code/bin/claude.exe
if [ "$(stat -c %s "$claude_bin")" -lt 1000000 ]; then
  (cd node_modules/@anthropic-ai/claude-code && node install.cjs)
fi

versions >/dev/null || { echo "install-clients: a CLI does not start" >&2; exit 1; }
echo "$want" >"$stamp"
echo "install-clients: installed ($(versions | paste -sd ';' -))"
