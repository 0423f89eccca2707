#!/usr/bin/env bash
# Soak: the live handler for SECONDS at RATE ticks/s from the simulator (with
# light faults), on loopback multicast (127.0.0.1, TTL 0). Reports the
# handler's RSS at start and end, its counters, and — with --valgrind — the
# leak summary of valgrind memcheck (slow: use a lower rate).
# usage: scripts/soak.sh [SECONDS=600] [RATE=50000] [--valgrind]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
rate=${2:-50000}
valgrind=${3:-}
scripts/setup.sh build >/dev/null
bin=build/tickgate
cfg=configs/demo.toml
out=$(mktemp -d)
echo "soak: ${seconds}s at ${rate} ticks/s, output in $out"

runner=("$bin")
if [[ "$valgrind" == --valgrind ]]; then
  command -v valgrind >/dev/null || apt-get install -y -qq valgrind >/dev/null
  runner=(valgrind --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite
          --error-exitcode=3 --log-file="$out/valgrind.log" "$bin")
fi
"${runner[@]}" run --config "$cfg" --json --quiet > "$out/summary.json" 2> "$out/run.err" &
handler=$!
sleep 2
pid=$(pgrep -n -f "tickgate run --config $cfg" || echo "$handler")
rss() { awk '/VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0; }
rss_start=$(rss)
"$bin" sim --config "$cfg" --instruments 64 --rate "$rate" --duration "$seconds" --seed 42 \
  --loss-a 0.001 --loss-b 0.001 --burst-loss 0.0001:3 --dup 0.001 --reorder 0.001 > "$out/truth.json" &
sim=$!
rss_mid=""
for ((t = 0; t < seconds; t += 60)); do
  sleep $((seconds - t < 60 ? seconds - t : 60))
  rss_mid+=" $(rss)"
done
wait "$sim"
sleep 2
rss_end=$(rss)
kill -INT "$handler"
wait "$handler" || true
python3 - "$out/summary.json" "$out/truth.json" "$rss_start" "$rss_end" "$rss_mid" <<'PY'
import json, sys
s, t = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
ins = s["instruments"]
print(f"RSS: start {sys.argv[3]} kB, end {sys.argv[4]} kB, every 60 s:{sys.argv[5]} kB")
print(f"packets {s['packets']}, messages {s['messages']}, malformed {s['malformed_packets']}")
print(f"simulator: {t['messages']} messages, line A dropped {t['packets']['dropped_a']}, "
      f"B {t['packets']['dropped_b']}, both {t['packets']['dropped_both']}, max late {t['send']['max_late_ns']/1e3:.0f} us")
print(f"instruments {len(ins)}: accepted {sum(i['accepted'] for i in ins)}, lost {sum(i['lost'] for i in ins)} "
      f"(simulator expected {sum(i['expected_lost'] for i in t['instruments'])}), "
      f"suspect at end {sum(i['suspect'] for i in ins)}")
PY
if [[ -f "$out/valgrind.log" ]]; then
  grep -E "definitely lost|indirectly lost|ERROR SUMMARY" "$out/valgrind.log"
fi
