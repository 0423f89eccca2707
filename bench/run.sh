#!/usr/bin/env bash
# Builds and runs every benchmark (Release), then writes
#   bench/results/<YYYY-MM-DD>-<host>.json  (stages = Google Benchmark JSON, ring, replay)
#   bench/results/<YYYY-MM-DD>-<host>.md    (key figures, goals, ns per message per flow and protocol)
#   bench/results/flows.png and latency.png (gnuplot)
# Env: BUILD (default build-bench), CAPTURE (default /tmp/tickgate-bench-10M.pcap),
#      STAGES_FILTER (a --benchmark_filter regex), REPS (default 5).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build-bench}
CAPTURE=${CAPTURE:-/tmp/tickgate-bench-10M.pcap}
REPS=${REPS:-5}
OUT=$ROOT/bench/results
STAMP=$(date +%F)-$(hostname -s)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# Debian packages (idempotent, gnuplot-nox for the plot) and a Release build of every benchmark.
SETUP_EXTRA_PACKAGES=gnuplot-nox "$ROOT/scripts/setup.sh" "$BUILD"
mkdir -p "$OUT"

PIN=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then PIN=(taskset -c 1); fi

echo "== machine"
grep -m1 'model name' /proc/cpuinfo || true
echo "cores: $(nproc)  kernel: $(uname -sr)  governor: $(cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null || echo n/a)"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

echo "== stages_bench"
"${PIN[@]}" "$BUILD/bench/stages_bench" \
  --benchmark_repetitions="$REPS" --benchmark_report_aggregates_only=true \
  ${STAGES_FILTER:+--benchmark_filter="$STAGES_FILTER"} \
  --benchmark_out="$TMP/stages.json" --benchmark_out_format=json

echo "== ring_bench"
"$BUILD/bench/ring_bench" --json "$TMP/ring.json"

echo "== replay_bench"
"${PIN[@]}" "$BUILD/bench/replay_bench" --capture "$CAPTURE" --json "$TMP/replay.json"

echo "== mdp3_bench (the v6.1 capture's packets to the book, beside the QFB/1 mix)"
"${PIN[@]}" "$BUILD/bench/mdp3_bench" "$ROOT/tests/data/captures/cme-mdp3-v6.1-ab.pcapng" 20 --json "$TMP/mdp3.json"

echo "== latency_bench (tick-to-book over loopback multicast, CO-corrected histograms)"
cmake --build "$BUILD" --target latency_bench rx_bench -j2
# Sender alone on core 0; network and engine threads share core 1, the engine
# yielding when idle (measured best placement on 2 cores: bench/README.md).
# Inline (run to completion): the one handler thread spins on core 1.
# --mode all: blocking, busy-poll and inline one after the other, side by side.
LAT_PLACE=(--net-cpu 1 --engine-cpu 1 --engine-idle yield --spin-us 200)
"$BUILD/bench/latency_bench" --rates 10000,100000 --mode all --seconds 5 "${LAT_PLACE[@]}" ${LAT_NICE:+--nice $LAT_NICE} \
  --json "$TMP/latency.json" --hist-out "$TMP/lat"
"$BUILD/bench/latency_bench" --rate 1000000 --batch 16 --mode all --seconds 5 "${LAT_PLACE[@]}" ${LAT_NICE:+--nice $LAT_NICE} \
  --json "$TMP/latency-1M.json" --hist-out "$TMP/lat"
echo "== latency_bench --stages (inline, 100k msg/s: where each microsecond goes)"
"$BUILD/bench/latency_bench" --rate 100000 --mode inline --stages --seconds 5 --engine-cpu 1 --spin-us 200 \
  ${LAT_NICE:+--nice $LAT_NICE} --json "$TMP/latency-stages.json"
echo "== rx_bench (recvmmsg vs one datagram per Boost.Asio call)"
"$BUILD/bench/rx_bench" --rates 50k,100k,150k,200k,flat ${LAT_NICE:+--nice $LAT_NICE} --json "$TMP/rx.json"
cp "$TMP"/latency*.json "$TMP/rx.json" "$OUT/" 2>/dev/null || true
if command -v gnuplot >/dev/null; then
  gnuplot -e "files='$(ls "$TMP"/lat-*.dat | grep -v -- -own | tr '\n' ' ')'; out='$OUT/latency.png'; strip='lat-'" \
    "$ROOT/bench/plot_latency.gp"
fi
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

python3 "$ROOT/bench/report.py" --stages "$TMP/stages.json" --ring "$TMP/ring.json" --replay "$TMP/replay.json" \
  --mdp3 "$TMP/mdp3.json" --flows "$TMP/flows.dat" --host "$(hostname -s)" --load "$LOAD_BEFORE / $LOAD_AFTER" \
  --json "$OUT/$STAMP.json" --md "$OUT/$STAMP.md"
if command -v gnuplot >/dev/null; then
  cp "$TMP/flows.dat" "$OUT/$STAMP-flows.dat"
  gnuplot -e "data='$TMP/flows.dat'; out='$OUT/flows.png'" "$ROOT/bench/plot_flows.gp"
fi
echo "== wrote $OUT/$STAMP.json and $OUT/$STAMP.md"
cat "$OUT/$STAMP.md"
