#!/usr/bin/env bash
# Installs the pinned Codex CLI into a version-keyed cache outside the repo
# and prints the path of the executable. A second run with the cache present
# downloads nothing.
set -euo pipefail
. "$(dirname "$0")/npm-cache.sh"

version="${FLOWER_CODEX_VERSION:-0.171.0}"
is_version() { [ -x "$1" ] && "$1" --version 2>/dev/null | grep -q "^codex-cli $version\$"; }
# Only the platform build: it holds the static binary (with bwrap and rg
# beside it), published under the main package's name with a
# "-linux-x64" version suffix.
npm_cache codex "$version" node_modules/@openai/codex/vendor/x86_64-unknown-linux-musl/bin/codex is_version \
  "@openai/codex@$version-linux-x64"
