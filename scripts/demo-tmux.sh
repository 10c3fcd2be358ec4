#!/usr/bin/env bash
# Runs `flower demo` under a real terminal: a detached tmux session of fixed
# size on a tmux server of its own. Once the demo exits, prints the captured
# screen (scrollback included) and checks that it holds each status line of
# SPEC R40 at least twice, in the labels' language, and that the demo exited 0.
#
#   scripts/demo-tmux.sh [DEMO FLAGS]      e.g. scripts/demo-tmux.sh --pace 0
#
# FLOWER_BIN is the flower executable (default bin/flower; `make build`);
# DEMO_TMUX_TIMEOUT bounds the wait in seconds (default 120). Exit status:
# 0 all checks passed, 1 a check failed, 2 the demo could not be run.
set -euo pipefail
cd "$(dirname "$0")/.."

flower="${FLOWER_BIN:-bin/flower}"
timeout="${DEMO_TMUX_TIMEOUT:-120}"
command -v tmux >/dev/null || { echo "demo-tmux: tmux is required (apt-get install tmux)" >&2; exit 2; }
[ -x "$flower" ] || { echo "demo-tmux: $flower is not an executable: run make build, or set FLOWER_BIN" >&2; exit 2; }
flower="$(cd "$(dirname "$flower")" && pwd)/$(basename "$flower")"

work="$(mktemp -d)"
sock="$work/tmux.sock"
tm() { tmux -S "$sock" "$@"; }
cleanup() {
  tm kill-server 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# Our own server and config: the person's tmux and ~/.tmux.conf stay out.
# remain-on-exit keeps the pane, and its screen, after the demo exits.
cat >"$work/tmux.conf" <<'EOF'
set -g history-limit 50000
set -g remain-on-exit on
EOF
# The demo's exit status goes to a file: the pane's own is harder to read
# portably across tmux versions.
printf -v cmd '%q demo' "$flower"
for a in "$@"; do printf -v cmd '%s %q' "$cmd" "$a"; done
cmd="$cmd; echo \$? > $(printf '%q' "$work/rc")"
tm -f "$work/tmux.conf" new-session -d -s demo -x 200 -y 60 "$cmd"

start=$SECONDS
while [ ! -s "$work/rc" ]; do
  if (( SECONDS - start > timeout )); then
    echo "demo-tmux: the demo did not exit within ${timeout}s; the screen so far:" >&2
    tm capture-pane -p -J -S - -E - -t demo >&2 || true
    exit 1
  fi
  sleep 0.2
done
elapsed=$(( SECONDS - start ))
rc="$(cat "$work/rc")"
# -J joins lines the terminal wrapped, so each printed line is checked whole.
tm capture-pane -p -J -S - -E - -t demo >"$work/screen"
# Trailing blank rows of the 60-row screen say nothing.
sed -e :a -e '/^[[:space:]]*$/{$d;N;ba' -e '}' "$work/screen"

echo "-----"
fail=0
check() { # PATTERN (grep -E): must match at least twice
  local n
  n="$(grep -cE -- "$1" "$work/screen" || true)"
  if (( n >= 2 )); then
    printf 'ok   %dx %s\n' "$n" "$1"
  else
    printf 'FAIL %dx %s (want at least 2)\n' "$n" "$1"
    fail=1
  fi
}
# The labels follow --lang, else the locale, as flower's do: LC_ALL, else
# LC_MESSAGES, else LANG; zh_* is Chinese, anything else English.
lang=en
locale="${LC_ALL:-${LC_MESSAGES:-${LANG:-}}}"
case "$locale" in zh|zh_*|zh.*|zh@*) lang=zh ;; esac
prev=
for a in "$@"; do
  case "$a" in --lang=*) lang="${a#--lang=}" ;; esac
  [ "$prev" = --lang ] && lang="$a"
  prev="$a"
done
echo "labels: $lang"
if [ "$lang" = zh ]; then
  check '^# 上下文 .*K/200K · 还有约 .*K 到换代'
  check '^# 上下文 .*K/200K —— 写交接准备换代'
  check '^  - 现在在做  '
  check '^  - 已定的事  '
  check '^  - 走不通的  '
  check '^  - 下一步    '
  check '^<- 交接写在 .*交接-.*\.md'
  check '^<- 新会话接手,上下文从 .*K 重新开始'
else
  check '^# context .*K/200K · about .*K to handoff'
  check '^# context .*K/200K —— writing the handoff'
  check '^  - doing       '
  check '^  - decided     '
  check '^  - dead ends   '
  check '^  - next        '
  check '^<- handoff written to .*交接-.*\.md'
  check '^<- new session takes over; context restarts from .*K'
fi
if [ "$rc" = 0 ]; then
  echo "ok   flower demo exited 0 after ${elapsed}s"
else
  echo "FAIL flower demo exited $rc after ${elapsed}s"
  fail=1
fi
exit "$fail"
