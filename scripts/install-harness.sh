#!/usr/bin/env bash
# Installs the pinned Claude Code harness into a version-keyed cache outside
# the repo and prints the path of the executable. A second run with the cache
# present downloads nothing.
set -euo pipefail

version="${FLOWER_HARNESS_VERSION:-2.1.328}"
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/flower/harness"
dir="$cache_root/$version"
bin="$dir/node_modules/@anthropic-ai/claude-code-linux-x64/claude"

if [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -q "^$version "; then
  echo "$bin"
  exit 0
fi

command -v npm >/dev/null || { echo "install-harness: npm is required (Node 20+)" >&2; exit 1; }

tmp="$cache_root/.tmp-$version-$$"
rm -rf "$tmp"
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
# Only the platform package: it holds the native binary. The engine warning
# (the package asks for Node 22) is harmless; the binary does not use Node.
(cd "$tmp" && npm install --no-audit --no-fund --loglevel=error --no-save \
  "@anthropic-ai/claude-code-linux-x64@$version" >&2)
got="$tmp/node_modules/@anthropic-ai/claude-code-linux-x64/claude"
[ -x "$got" ] || { echo "install-harness: $got missing after npm install" >&2; exit 1; }
"$got" --version | grep -q "^$version " || { echo "install-harness: wrong version: $("$got" --version)" >&2; exit 1; }
rm -rf "$dir"
mv "$tmp" "$dir"
trap - EXIT
echo "$bin"
