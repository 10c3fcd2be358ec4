#!/usr/bin/env bash
# Installs the pinned Codex CLI into a version-keyed cache outside the repo
# and prints the path of the executable. A second run with the cache present
# downloads nothing.
set -euo pipefail

version="${FLOWER_CODEX_VERSION:-0.171.0}"
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/flower/codex"
dir="$cache_root/$version"
rel="node_modules/@openai/codex/vendor/x86_64-unknown-linux-musl/bin/codex"
bin="$dir/$rel"

if [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -q "^codex-cli $version\$"; then
  echo "$bin"
  exit 0
fi

command -v npm >/dev/null || { echo "install-codex: npm is required" >&2; exit 1; }

tmp="$cache_root/.tmp-$version-$$"
rm -rf "$tmp"
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
# Only the platform build: it holds the static binary (with bwrap and rg
# beside it), published under the main package's name with a
# "-linux-x64" version suffix.
(cd "$tmp" && npm install --no-audit --no-fund --loglevel=error --no-save \
  "@openai/codex@$version-linux-x64" >&2)
got="$tmp/$rel"
[ -x "$got" ] || { echo "install-codex: $got missing after npm install" >&2; exit 1; }
"$got" --version | grep -q "^codex-cli $version\$" || { echo "install-codex: wrong version: $("$got" --version)" >&2; exit 1; }
rm -rf "$dir"
mv "$tmp" "$dir"
trap - EXIT
echo "$bin"
