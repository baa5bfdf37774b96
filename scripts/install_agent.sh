#!/usr/bin/env bash
# Install the pinned Claude Code CLI (tests/agent-version.txt) into .tools/agent, for the
# tests that run the real agent. Idempotent: does nothing when that version is there.
# Installs node and npm from Debian's packages only when either is missing.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
version="$(tr -d '[:space:]' < "$root/tests/agent-version.txt")"
prefix="$root/.tools/agent"
package="@anthropic-ai/claude-code"
manifest="$prefix/node_modules/$package/package.json"

installed_version() {
  [ -f "$manifest" ] || return 0
  sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$manifest" | head -n 1
}

binary_runs() {
  local binary
  for binary in "$prefix"/node_modules/@anthropic-ai/claude-code-linux-*/claude \
    "$prefix/node_modules/.bin/claude"; do
    if [ -x "$binary" ] && "$binary" --version 2>/dev/null | grep -q "^$version "; then
      return 0
    fi
  done
  return 1
}

if [ "$(installed_version)" = "$version" ] && binary_runs; then
  echo "install_agent: Claude Code $version already in $prefix"
  exit 0
fi

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
  installed_node=" (and node $(node --version) with npm $(npm --version) from apt)"
else
  installed_node=""
fi

mkdir -p "$prefix"
log="$prefix/install.log"
# --prefix keeps it out of any global node_modules; the package's postinstall puts the
# native binary of this platform in place of its stub.
if ! npm install --prefix "$prefix" --no-audit --no-fund --no-save \
  "$package@$version" >"$log" 2>&1; then
  cat "$log" >&2
  echo "install_agent: npm install of $package@$version failed" >&2
  exit 1
fi
if ! binary_runs; then
  cat "$log" >&2
  echo "install_agent: $package@$version installed, but no claude binary of that version runs" >&2
  exit 1
fi
echo "install_agent: installed Claude Code $version into $prefix$installed_node"
