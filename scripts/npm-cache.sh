# Sourced by the install-*.sh scripts: one way to install a pinned npm
# package into a version-keyed cache outside the repo.
#
# npm_cache NAME VERSION REL CHECK NPM_ARGS...
# prints the path of REL inside ${XDG_CACHE_HOME:-~/.cache}/flower/NAME/VERSION,
# installing it first (npm install NPM_ARGS, in a temp dir renamed into
# place) unless CHECK, a command given that path, already accepts it. A
# second run with the cache present downloads nothing.
npm_cache() {
  local name=$1 version=$2 rel=$3 check=$4
  shift 4
  local cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/flower/$name"
  local dir="$cache_root/$version"
  if "$check" "$dir/$rel"; then
    echo "$dir/$rel"
    return 0
  fi
  command -v npm >/dev/null || { echo "install-$name: npm is required (Node 20+)" >&2; exit 1; }
  npm_cache_tmp="$cache_root/.tmp-$version-$$"
  rm -rf "$npm_cache_tmp"
  mkdir -p "$npm_cache_tmp"
  trap 'rm -rf "$npm_cache_tmp"' EXIT
  (cd "$npm_cache_tmp" && npm install --no-audit --no-fund --loglevel=error --no-save "$@" >&2)
  "$check" "$npm_cache_tmp/$rel" ||
    { echo "install-$name: $rel missing, or not version $version, after npm install $*" >&2; exit 1; }
  rm -rf "$dir"
  mv "$npm_cache_tmp" "$dir"
  trap - EXIT
  echo "$dir/$rel"
}
