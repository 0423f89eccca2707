#!/usr/bin/env bash
# Instructions and simulated branch mispredicts per QFB/1 message, from
# callgrind: counts only inside the QFB/1 decoder's calls (decode, and all
# it calls: sequencer, book, memmove), divided by the messages decoded (one
# indirect branch, the type switch, per message, counted in the decoder's
# own code; --skip-plt=no keeps memmove's PLT jump out of it). Deterministic
# where timings are not, and this VM has no hardware counters for `perf
# stat`. The mispredicts are valgrind's simple predictor's, not the CPU's:
# compare them between builds, not with cycles.
#   bench/instructions.sh [STAGES_BENCH] [FILTER]
#   (default: build-bench/bench/stages_bench, BM_Pipeline/mix; needs valgrind)
set -euo pipefail
BIN=${1:-build-bench/bench/stages_bench}
FILTER=${2:-BM_Pipeline/mix}
command -v valgrind >/dev/null || { echo "instructions.sh: valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }
OUT=$(mktemp)
trap 'rm -f "$OUT" "$OUT.log"' EXIT
valgrind --tool=callgrind --branch-sim=yes --skip-plt=no --toggle-collect='*qfb1::PacketDecoder::decode*' \
  --callgrind-out-file="$OUT" "$BIN" --benchmark_filter="$FILTER" --benchmark_min_time=0.2 >"$OUT.log" 2>&1
# "Collected : Ir Bc Bcm Bi Bim"
read -r ir _ bcm _ bim < <(sed -n 's/.*Collected : //p' "$OUT.log")
# Messages: the indirect branches of the decoder's own code (the type switch,
# with what is inlined into it), not of what it calls (memmove's dispatch);
# the 4th count of callgrind_annotate's "Ir Bc Bcm Bi Bim" is Bi.
msgs=$(callgrind_annotate --inclusive=no --threshold=100 "$OUT" | awk '/qfb1::PacketDecoder::decode</ {
  gsub(/\([^)]*\)/, ""); v = $4; gsub(",", "", v); if (v != ".") n += v } END { print n + 0 }') ||
  { echo "instructions.sh: callgrind_annotate could not read $OUT" >&2; exit 1; }
[ "${msgs:-0}" -gt 0 ] || { echo "instructions.sh: no QFB/1 message decoded under '$FILTER'" >&2; exit 1; }
awk -v ir="$ir" -v bcm="$bcm" -v bim="$bim" -v m="$msgs" -v f="$FILTER" 'BEGIN {
  printf "%s: %d messages, %.1f instructions, %.2f conditional + %.2f indirect mispredicts (simulated) a message\n", f, m, ir / m, bcm / m, bim / m }'
