#!/usr/bin/env bash
# Installs the pinned Claude Code harness into a version-keyed cache outside
# the repo and prints the path of the executable. A second run with the cache
# present downloads nothing.
set -euo pipefail
. "$(dirname "$0")/npm-cache.sh"

version="${FLOWER_HARNESS_VERSION:-2.1.328}"
is_version() { [ -x "$1" ] && "$1" --version 2>/dev/null | grep -q "^$version "; }
# Only the platform package: it holds the native binary. The engine warning
# (the package asks for Node 22) is harmless; the binary does not use Node.
npm_cache harness "$version" node_modules/@anthropic-ai/claude-code-linux-x64/claude is_version \
  "@anthropic-ai/claude-code-linux-x64@$version"
