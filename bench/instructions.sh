#!/usr/bin/env bash
# Instructions, simulated cache misses and simulated branch mispredicts per
# message, from callgrind, counting only the timed code of one stages_bench
# benchmark (this VM has no hardware counters for `perf stat`; callgrind is
# deterministic where timings are not):
#   QFB/1, BM_Pipeline/*: inside the QFB/1 decoder's calls (decode, and all it
#     calls: sequencer, book, memmove); messages = the decoder's own indirect
#     branches (the type switch, one a message; --skip-plt=no keeps memmove's
#     PLT jump out of them).
#   ITCH, BM_Itch_Pipeline/*: inside itch_timed_datagram (one timed datagram,
#     out of line for this); messages = its calls x the benchmark's
#     messages_per_datagram counter (every timed datagram but a stream's
#     last is full).
# The caches are valgrind's model, not the CPU's: D1 is this machine's L1d,
# LL the machine's last level (sysfs) unless --ll SIZE,WAYS,LINE names
# another (--ll 2097152,16,64 counts misses of a 2 MiB L2 instead). Ways are
# lowered where valgrind needs a power-of-two set count (480 MiB, 16-way:
# 15). The mispredicts are valgrind's simple predictor's: compare them
# between builds, not with cycles.
#   bench/instructions.sh [STAGES_BENCH] [FILTER] [--ll SIZE,WAYS,LINE]
#   (default: build-bench/bench/stages_bench, BM_Pipeline/mix; needs valgrind)
set -euo pipefail
BIN=build-bench/bench/stages_bench
FILTER=BM_Pipeline/mix
LL=
positional=0
while [ $# -gt 0 ]; do
  case $1 in
    --ll) LL=$2; shift 2 ;;
    *) if [ $positional -eq 0 ]; then BIN=$1; else FILTER=$1; fi; positional=$((positional + 1)); shift ;;
  esac
done
command -v valgrind >/dev/null || { echo "instructions.sh: valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }

# A cache as SIZE,WAYS,LINE from sysfs index N, its ways lowered until the set
# count is a power of two; nothing (valgrind's own default then) if sysfs
# does not say, or no such count exists.
cache_spec() {
  local dir=/sys/devices/system/cpu/cpu0/cache/index$1 size ways line sets
  [ -r "$dir/size" ] && [ -r "$dir/ways_of_associativity" ] && [ -r "$dir/coherency_line_size" ] || return 0
  size=$(cat "$dir/size")
  case $size in
    *K) size=$((${size%K} * 1024)) ;;
    *M) size=$((${size%M} * 1048576)) ;;
    *[!0-9]*) return 0 ;;
  esac
  ways=$(cat "$dir/ways_of_associativity")
  line=$(cat "$dir/coherency_line_size")
  [ "$ways" -ge 1 ] 2>/dev/null && [ "$line" -ge 1 ] 2>/dev/null || return 0
  for ((; ways >= 1; ways--)); do
    sets=$((size / (ways * line)))
    if [ "$sets" -ge 1 ] && [ $((sets & (sets - 1))) -eq 0 ] && [ $((sets * ways * line)) -eq "$size" ]; then
      echo "$size,$ways,$line"
      return 0
    fi
  done
}
# The first data cache (L1d) and the highest-numbered data or unified one.
data_caches() {
  local i type
  for i in 0 1 2 3 4 5; do
    [ -r /sys/devices/system/cpu/cpu0/cache/index$i/type ] || continue
    type=$(cat /sys/devices/system/cpu/cpu0/cache/index$i/type)
    [ "$type" = Data ] || [ "$type" = Unified ] && echo "$i"
  done
}
levels=$(data_caches)
D1=
if [ -n "$levels" ]; then
  D1=$(cache_spec "$(echo "$levels" | head -1)")
  [ -n "$LL" ] || LL=$(cache_spec "$(echo "$levels" | tail -1)")
fi
CACHE=(--cache-sim=yes)
[ -n "$D1" ] && CACHE+=(--D1="$D1")
[ -n "$LL" ] && CACHE+=(--LL="$LL")

case $FILTER in
  BM_Itch_Pipeline/*)
    MODE=itch TOGGLE='*itch_timed_datagram*' ;;
  BM_Pipeline/*) MODE=qfb1 TOGGLE='*qfb1::PacketDecoder::decode*' ;;
  *) echo "instructions.sh: FILTER must name a BM_Pipeline/ or BM_Itch_Pipeline/ benchmark" >&2; exit 2 ;;
esac

OUT=$(mktemp)
trap 'rm -f "$OUT" "$OUT.log"' EXIT
valgrind --tool=callgrind --branch-sim=yes "${CACHE[@]}" --skip-plt=no --toggle-collect="$TOGGLE" \
  --callgrind-out-file="$OUT" "$BIN" --benchmark_filter="$FILTER" --benchmark_min_time=0.05 >"$OUT.log" 2>&1 ||
  { echo "instructions.sh: valgrind failed, see its output:" >&2; tail -5 "$OUT.log" >&2; exit 1; }
# One benchmark: an unanchored filter (uniform_5000_stocks) would blend its
# _subscribed variants into one figure.
runs=$(grep -c '^BM_' "$OUT.log" || true)
[ "$runs" -eq 1 ] || { echo "instructions.sh: '$FILTER' ran $runs benchmarks, not one (anchor it with \$)" >&2; exit 2; }
# The run's totals by event name (callgrind's "events:" and "summary:" lines).
declare -A total
read -r -a names < <(sed -n 's/^events: //p' "$OUT")
read -r -a values < <(sed -n 's/^summary: //p' "$OUT")
[ "${#names[@]}" -gt 0 ] && [ "${#names[@]}" -eq "${#values[@]}" ] ||
  { echo "instructions.sh: no event totals in $OUT" >&2; exit 1; }
for i in "${!names[@]}"; do total[${names[$i]}]=${values[$i]}; done
ir=${total[Ir]} d1mr=${total[D1mr]:-0} d1mw=${total[D1mw]:-0} dlmr=${total[DLmr]:-0} dlmw=${total[DLmw]:-0}
bcm=${total[Bcm]:-0} bim=${total[Bim]:-0}
if [ "$MODE" = itch ]; then
  # Messages a timed datagram: the benchmark's messages_per_datagram counter.
  per_datagram=$(grep '^BM_' "$OUT.log" | sed -n 's/.*messages_per_datagram=\([0-9.]*\).*/\1/p')
  [ -n "$per_datagram" ] || { echo "instructions.sh: '$FILTER' reports no messages_per_datagram" >&2; exit 1; }
  per_datagram=${per_datagram%.*}
  # The calls of itch_timed_datagram: callgrind names a function once, then by its number.
  msgs=$(awk -v k="$per_datagram" '
    /^c?fn=\([0-9]+\) .*itch_timed_datagram/ { match($0, /\([0-9]+\)/); id[substr($0, RSTART, RLENGTH)] = 1 }
    /^cfn=\(/ { match($0, /\([0-9]+\)/); want = (substr($0, RSTART, RLENGTH) in id); next }
    /^calls=/ { if (want) { split($1, c, "="); n += c[2] } want = 0; next }
    { want = 0 }
    END { print n * k }' "$OUT")
else
  # Messages: the indirect branches of the decoder's own code (the type switch,
  # with what is inlined into it), not of what it calls (memmove's dispatch);
  # its column is Bi's among callgrind's events.
  col=0
  for i in "${!names[@]}"; do [ "${names[$i]}" = Bi ] && col=$((i + 1)); done
  msgs=$(callgrind_annotate --inclusive=no --threshold=100 "$OUT" | awk -v c="$col" '/qfb1::PacketDecoder::decode</ {
    gsub(/\([^)]*\)/, ""); v = $c; gsub(",", "", v); if (v != ".") n += v } END { print n + 0 }') ||
    { echo "instructions.sh: callgrind_annotate could not read $OUT" >&2; exit 1; }
fi
[ "${msgs:-0}" -gt 0 ] || { echo "instructions.sh: no message counted under '$FILTER'" >&2; exit 1; }
awk -v ir="$ir" -v d1="$((d1mr + d1mw))" -v ll="$((dlmr + dlmw))" -v bcm="$bcm" -v bim="$bim" -v m="$msgs" \
    -v f="$FILTER" -v d1s="${D1:-valgrind default}" -v lls="${LL:-valgrind default}" 'BEGIN {
  printf "%s: %d messages; a message: %.1f instructions, %.2f D1 misses (%s), %.2f LL misses (%s), %.2f conditional + %.2f indirect mispredicts (simulated)\n",
    f, m, ir / m, d1 / m, d1s, ll / m, lls, bcm / m, bim / m }'
