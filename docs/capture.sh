#!/usr/bin/env bash
# Prints what a real terminal shows for one kdump command: runs it in a detached tmux
# session of the given width, from the checkout with its venv active, and prints the pane
# (trailing blanks trimmed). The README's captures are made with it, e.g.
#   docs/capture.sh 120 kdump info fixtures/broker/all-shapes
set -euo pipefail
width=$1; shift
root="$(cd "$(dirname "$0")/.." && pwd)"
session="kdump-capture-$$"
done_file="$(mktemp)"
trap 'tmux kill-session -t "$session" 2>/dev/null || true; rm -f "$done_file"' EXIT
tmux new-session -d -s "$session" -x "$width" -y 50 -c "$root" \
    "bash --norc -c '. .venv/bin/activate && clear && $(printf '%q ' "$@"); echo done > $done_file; sleep 600'"
tmux set-option -t "$session" history-limit 10000 >/dev/null
for _ in $(seq 600); do [ -s "$done_file" ] && break; sleep 0.1; done
tmux capture-pane -p -t "$session" -S - | sed 's/[[:space:]]*$//' | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}'
