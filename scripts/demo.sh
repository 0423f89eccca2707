#!/usr/bin/env bash
# The main job, live: the venue simulator publishes QFB/1 with faults on both
# lines of loopback multicast (interface 127.0.0.1, TTL 0) and the handler
# shows its live book and gate states, then the summary.
# usage: scripts/demo.sh [SECONDS]   (default 10)
#        scripts/demo.sh mdp3 [SECONDS]: the same for CME MDP 3.0 (configs/mdp3-demo.toml):
#        the simulator's channel with loss, bursts, an outage and a restart, and
#        the handler recovering through the snapshot feed, which it joins only
#        while an instrument is suspect or unconfirmed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
bin=build/tickgate

if [[ ${1:-} == mdp3 ]]; then
  seconds=${2:-10}
  cfg=configs/mdp3-demo.toml
  log=build/demo-mdp3-state.log
  rm -f "$log"
  "$bin" run --config "$cfg" --duration "$((seconds + 2))" &
  handler=$!
  trap 'kill $handler 2>/dev/null || true' EXIT
  sleep 1
  "$bin" sim --protocol mdp3 --config "$cfg" --duration "$seconds" --seed 7 \
    --loss-a 0.02 --loss-b 0.02 --burst-loss 0.002:5 --outage-a 0.3:0.5 --outage-b 0.4:0.42 \
    --restart-at 0.7 > build/demo-mdp3-truth.json
  wait $handler
  trap - EXIT
  echo "simulator ground truth: build/demo-mdp3-truth.json"
  echo "snapshot feed joins and leaves ($(grep -c 'snapshot join' "$log") joins, $(grep -c 'snapshot leave' "$log") leaves;" \
       "$(grep -c 'recovered' "$log") recoveries), full log in $log:"
  grep -E 'snapshot (join|leave)' "$log" | tail -n 10
  exit 0
fi

seconds=${1:-10}
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
