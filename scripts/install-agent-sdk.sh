#!/usr/bin/env bash
# Installs the pinned Claude Agent SDK (TypeScript) into a version-keyed
# cache outside the repo and prints the node_modules directory that holds
# it, for the Node scripts of integration/sdk. A second run with the cache
# present downloads nothing. The SDK's optional native CLI is skipped: the
# tests point the SDK at flower, with the pinned harness beneath it.
set -euo pipefail

version="${FLOWER_AGENT_SDK_VERSION:-0.3.328}"
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/flower/agent-sdk"
dir="$cache_root/$version"
pkg="$dir/node_modules/@anthropic-ai/claude-agent-sdk/package.json"

installed() {
  [ -f "$1" ] && node -e 'process.exit(require(process.argv[1]).version === process.argv[2] ? 0 : 1)' "$1" "$version"
}

if installed "$pkg"; then
  echo "$dir/node_modules"
  exit 0
fi

command -v npm >/dev/null || { echo "install-agent-sdk: npm is required (Node 20+)" >&2; exit 1; }

tmp="$cache_root/.tmp-$version-$$"
rm -rf "$tmp"
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm install --no-audit --no-fund --loglevel=error --no-save --omit=optional \
  "@anthropic-ai/claude-agent-sdk@$version" >&2)
installed "$tmp/node_modules/@anthropic-ai/claude-agent-sdk/package.json" ||
  { echo "install-agent-sdk: @anthropic-ai/claude-agent-sdk@$version missing after npm install" >&2; exit 1; }
rm -rf "$dir"
mv "$tmp" "$dir"
trap - EXIT
echo "$dir/node_modules"
