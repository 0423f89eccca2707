#!/usr/bin/env bash
# Before/after in one run: builds stages_bench and replay_bench at BASE (a git
# revision, in a temporary worktree) and at the working tree, then runs the two
# builds alternately, ROUNDS times, pinned to the same core, so that load drift
# on a shared machine hits both sides alike. Prints medians side by side.
#   bench/compare.sh BASE [--filter REGEX] [--rounds N] [--replay] [--protocol P] [--capture FILE] [--out FILE.md]
# (--protocol P: replay_bench's, for a capture of P's simulator; QFB/1 without)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BASE=${1:?usage: bench/compare.sh BASE [--filter REGEX] [--rounds N] [--replay] [--protocol P] [--capture FILE] [--out FILE.md]}
shift
FILTER='BM_(Pipeline|L2_Level_D|SnapshotApply|L1_SetTop_Q|SequencerVerdict_DQ)'
ROUNDS=5
REPLAY=0
CAPTURE=/tmp/tickgate-bench-10M.pcap
PROTOCOL=()
OUTMD=""
while [ $# -gt 0 ]; do
  case "$1" in
    --filter) FILTER=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --replay) REPLAY=1; shift ;;
    --capture) CAPTURE=$2; shift 2 ;;
    --protocol) PROTOCOL=(--protocol "$2"); shift 2 ;;
    --out) OUTMD=$2; shift 2 ;;
    *) echo "compare.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
SHA=$(git -C "$ROOT" rev-parse --short "$BASE")
WT=/tmp/tickgate-base-$SHA
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

if [ ! -d "$WT" ]; then git -C "$ROOT" worktree add --detach "$WT" "$SHA" >/dev/null; fi
TARGETS=(stages_bench)
[ "$REPLAY" = 1 ] && TARGETS+=(replay_bench)
for side in "$WT" "$ROOT"; do
  cmake -S "$side" -B "$side/build-bench" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$side/build-bench" --target "${TARGETS[@]}" -j2 >/dev/null
done

PIN=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then PIN=(taskset -c 1); fi
echo "base $SHA vs working tree $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet || echo +changes); load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$ROUNDS"); do
  for side in base head; do
    dir=$WT; [ $side = head ] && dir=$ROOT
    "${PIN[@]}" "$dir/build-bench/bench/stages_bench" --benchmark_filter="$FILTER" \
      --benchmark_out="$TMP/$side-stages-$r.json" --benchmark_out_format=json >/dev/null 2>&1
    if [ "$REPLAY" = 1 ]; then
      "${PIN[@]}" "$dir/build-bench/bench/replay_bench" --capture "$CAPTURE" "${PROTOCOL[@]}" --runs 1 \
        --json "$TMP/$side-replay-$r.json" >/dev/null
    fi
  done
  echo "round $r/$ROUNDS done"
done
python3 "$ROOT/bench/compare.py" --tmp "$TMP" --base "$SHA" --rounds "$ROUNDS" \
  --load "$(cut -d' ' -f1-3 /proc/loadavg)" ${OUTMD:+--out "$OUTMD"}
