#!/usr/bin/env bash
# Transitions of two commits measured in turns, on this machine's noise alike:
#   bench/transitions_ab.sh <base commit> [runs]
# Each run is bench/transitions.py (6 tickets, worker as its own process) from a
# worktree of <base commit>, then from this checkout; the venv is this one's, and
# PYTHONPATH chooses the code (the worker process inherits it). Prints per run the
# p50 of implement → review (wall, Ballet's own), review → verify and label → merged.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
base="$(git -C "$here" rev-parse --verify "${1:?usage: $0 <base commit> [runs]}^{commit}")"
runs="${2:-5}"
tree="${TMPDIR:-/tmp}/ballet-ab-${base:0:12}"
[ -d "$tree" ] || git -C "$here" worktree add -q --detach "$tree" "$base"
python="$here/.venv/bin/python"
for _ in $(seq "$runs"); do
  for side in base this; do
    dir="$here"; [ "$side" = base ] && dir="$tree"
    out="$(cd "$dir" && PYTHONPATH="$dir/app" "$python" bench/transitions.py \
      --tickets 6 --worker-process --direct-python 2>&1 | grep -E '^(implement|review|label)')"
    ir="$(awk '/^implement/{print $2 " / " $(NF-2)}' <<<"$out")"
    rv="$(awk '/^review/{print $(NF-2)}' <<<"$out")"
    lm="$(awk '/^label/{print $3}' <<<"$out")"
    echo "$side  implement→review wall/own $ir ms  review→verify own $rv ms  label→merged $lm s  load $(cut -d' ' -f1 /proc/loadavg)"
  done
done
