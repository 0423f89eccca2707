#!/usr/bin/env bash
# The main job, live: the venue simulator publishes QFB/1 with faults on both
# lines of loopback multicast (interface 127.0.0.1, TTL 0) and the handler
# shows its live book and gate states, then the summary.
# usage: scripts/demo.sh [SECONDS]   (default 10)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
seconds=${1:-10}
bin=build/tickgate
cfg=configs/demo.toml
rm -f build/demo-state.log

"$bin" run --config "$cfg" --duration "$((seconds + 2))" &
handler=$!
trap 'kill $handler 2>/dev/null || true' EXIT
sleep 1
"$bin" sim --config "$cfg" --instruments 8 --rate 20000 --duration "$seconds" --seed 7 \
  --loss-a 0.02 --loss-b 0.02 --burst-loss 0.002:3 --dup 0.01 --reorder 0.005 \
  --restart-at 0.6 --lagging-snapshots --quiet 3 --silence 5 > build/demo-truth.json
wait $handler
trap - EXIT
echo "simulator ground truth: build/demo-truth.json"
echo "state changes logged by the handler (last 10 of $(wc -l < build/demo-state.log)), full log in build/demo-state.log:"
tail -n 10 build/demo-state.log
