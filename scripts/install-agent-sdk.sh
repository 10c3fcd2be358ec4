#!/usr/bin/env bash
# Installs the pinned Claude Agent SDK (TypeScript) into a version-keyed
# cache outside the repo and prints the node_modules directory that holds
# it, for the Node scripts of integration/sdk. A second run with the cache
# present downloads nothing. The SDK's optional native CLI is skipped: the
# tests point the SDK at flower, with the pinned harness beneath it.
set -euo pipefail
. "$(dirname "$0")/npm-cache.sh"

version="${FLOWER_AGENT_SDK_VERSION:-0.3.328}"
is_version() {
  [ -f "$1" ] && node -e 'process.exit(require(process.argv[1]).version === process.argv[2] ? 0 : 1)' "$1" "$version"
}
pkg=$(npm_cache agent-sdk "$version" node_modules/@anthropic-ai/claude-agent-sdk/package.json is_version \
  --omit=optional "@anthropic-ai/claude-agent-sdk@$version")
echo "${pkg%/@anthropic-ai/claude-agent-sdk/package.json}"
