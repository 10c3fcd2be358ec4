#!/usr/bin/env bash
# Installs the pinned aimock, a scripted model server flower did not write
# (npm's @copilotkit/aimock, MIT, no runtime dependencies, Node 20.15+),
# into a version-keyed cache outside the repo and prints the path of its
# CLI (an executable Node script: -h HOST -p PORT -f FIXTURES). A second
# run with the cache present downloads nothing.
set -euo pipefail
. "$(dirname "$0")/npm-cache.sh"

version="${FLOWER_AIMOCK_VERSION:-1.43.0}"
is_version() {
  [ -x "$1" ] && node -e 'process.exit(require(process.argv[1]).version === process.argv[2] ? 0 : 1)' \
    "$(dirname "$1")/../package.json" "$version"
}
npm_cache aimock "$version" node_modules/@copilotkit/aimock/dist/cli.js is_version \
  "@copilotkit/aimock@$version"
