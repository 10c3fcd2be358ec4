#!/usr/bin/env bash
# Builds the pinned Temporal CLI (its dev server is what the Temporal tests
# start) into a version-keyed cache outside the repo and prints the path of
# the executable. A second run with the cache present builds nothing.
set -euo pipefail

version="${FLOWER_TEMPORAL_VERSION:-1.5.1}"
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/flower/temporal"
dir="$cache_root/$version"
bin="$dir/temporal"
# A CLI built with go install reports version 0.0.0-DEV, so the version
# is in a stamp written after a build that worked.
stamp="$dir/VERSION"

if [ -x "$bin" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$version" ] && "$bin" --version >/dev/null 2>&1; then
  echo "$bin"
  exit 0
fi

command -v go >/dev/null || { echo "install-temporal: go is required" >&2; exit 1; }

tmp="$cache_root/.tmp-$version-$$"
rm -rf "$tmp"
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
# Built from the CLI's Go module: the SDK's dev-server helper downloads a
# release binary instead, which needs more network than the module proxy.
# GOFLAGS is cleared so a -mod setting meant for flower does not reach it.
echo "install-temporal: building temporal CLI v$version (takes minutes the first time)" >&2
GOFLAGS= GOBIN="$tmp" go install "github.com/temporalio/cli/cmd/temporal@v$version" >&2
got="$tmp/temporal"
[ -x "$got" ] || { echo "install-temporal: $got missing after go install" >&2; exit 1; }
"$got" --version >/dev/null || { echo "install-temporal: $got does not run" >&2; exit 1; }
echo "$version" >"$tmp/VERSION"
rm -rf "$dir"
mv "$tmp" "$dir"
trap - EXIT
echo "$bin"
