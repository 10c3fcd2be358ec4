#!/usr/bin/env bash
# Installs the pinned Gemini CLI into a version-keyed cache outside the repo
# and prints the path of the executable. A second run with the cache present
# downloads nothing.
set -euo pipefail
. "$(dirname "$0")/npm-cache.sh"

version="${FLOWER_GEMINI_VERSION:-0.61.0}"
is_version() { [ -x "$1" ] && [ "$("$1" --version 2>/dev/null)" = "$version" ]; }
# The package's bin, a Node script: it runs with the node on PATH.
npm_cache gemini "$version" node_modules/@google/gemini-cli/bundle/gemini.js is_version \
  "@google/gemini-cli@$version"
