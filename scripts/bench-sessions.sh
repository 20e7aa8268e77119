#!/usr/bin/env bash
# The session layer's speed: generate a synthetic set of Claude Code and
# Codex transcripts (scripts/gen_sessions.py), scan it into a new index,
# re-scan it unchanged, append to a tenth of its files and re-scan, then
# search. Prints each figure per run and the medians.
#
#   bash scripts/bench-sessions.sh [MB=200] [RUNS=3]
#
# Uses target/release/memtree (built if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
MB="${1:-200}"
RUNS="${2:-3}"
BIN=target/release/memtree
[ -x "$BIN" ] || cargo build --release --locked -p memtree
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

python3 scripts/gen_sessions.py "$WORK/t" --mb "$MB" --seed 1 --now 2026-11-27T00:00:00Z >/dev/null
BYTES=$(du -sb "$WORK/t" | cut -f1)
echo "transcripts: $((BYTES / 1000000)) MB in $(find "$WORK/t" -name '*.jsonl' | wc -l) files"

scan() { "$BIN" --data-dir "$WORK/store" --json sessions scan --claude "$WORK/t/claude" --codex "$WORK/t/codex"; }
field() { python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }

FIRST=(); AGAIN=(); APPENDED=(); SEARCH=()
for run in $(seq "$RUNS"); do
  rm -rf "$WORK/store"
  [ "$run" = 1 ] || { rm -rf "$WORK/t"; python3 scripts/gen_sessions.py "$WORK/t" --mb "$MB" --seed 1 --now 2026-11-27T00:00:00Z >/dev/null; }
  first=$(scan); FIRST+=("$(echo "$first" | field seconds)")
  again=$(scan); AGAIN+=("$(echo "$again" | field seconds)")
  python3 scripts/gen_sessions.py "$WORK/t" --append 40 --seed "$run" >/dev/null
  appended=$(scan); APPENDED+=("$(echo "$appended" | field seconds)")
  start=$(date +%s.%N)
  for q in "flaky test timezone" "advisory lock job queue" "memory leak websocket" "terraform state drift"; do
    "$BIN" --data-dir "$WORK/store" sessions search "$q" >/dev/null
  done
  SEARCH+=("$(python3 -c "import time; print((time.time() - $start) / 4)")")
  echo "run $run: first scan $(echo "$first" | field seconds) s ($(echo "$first" | field passages) passages," \
    "$(echo "$first" | field sessions) sessions), unchanged re-scan $(echo "$again" | field seconds) s," \
    "re-scan after appending to $(echo "$appended" | field read) files $(echo "$appended" | field seconds) s," \
    "search (a process each) $(printf %.3f "${SEARCH[-1]}") s"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
M=$(median "${FIRST[@]}")
echo "median: first scan $M s ($(python3 -c "print(round($BYTES / 1e6 / $M, 1))") MB/s)," \
  "unchanged re-scan $(median "${AGAIN[@]}") s, after appending $(median "${APPENDED[@]}") s," \
  "search $(median "${SEARCH[@]}") s; index $(du -sh "$WORK/store/.memtree/sessions.sqlite" | cut -f1)"
