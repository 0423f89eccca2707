#!/usr/bin/env bash
# The main job, live: a venue simulator publishes with faults on both lines
# of loopback multicast (interface 127.0.0.1, TTL 0) and the handler shows
# its live book and gate states, then the summary and what it means.
# usage: scripts/demo.sh [SECONDS]         QFB/1 (configs/demo.toml; default 10 s)
#        scripts/demo.sh mdp3 [SECONDS]    CME MDP 3.0 (configs/mdp3-demo.toml): loss, bursts, an
#                                          outage and a restart, recovered through the snapshot feed,
#                                          which the handler joins only while an instrument needs it
#        scripts/demo.sh itch [SECONDS]    Nasdaq ITCH 5.0 over MoldUDP64 (configs/itch-glimpse-demo.toml):
#                                          a late join and a hole given up (both lines out, the
#                                          re-request server silent), each repaired by a GLIMPSE
#                                          5.0 snapshot the simulator serves on 127.0.0.1
#        scripts/demo.sh fanout [SECONDS]  the fan-out (configs/fanout-demo.toml): a 3-node NATS
#                                          JetStream cluster on 127.0.0.1 ports 14201-14223, the QFB/1
#                                          handler publishing to it, two subscribers (one from the start,
#                                          one started after the handler stopped: from the snapshots)
# Builds only the tickgate CLI (not the tests or benchmarks); with
# TICKGATE_BIN=PATH it runs that binary and builds nothing (tests/tools/demo_test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
protocol=qfb1
case ${1:-} in
  mdp3 | itch | fanout) protocol=$1; shift ;;
esac
seconds=${1:-10}
if [[ -n ${TICKGATE_BIN:-} ]]; then
  bin=$TICKGATE_BIN
  mkdir -p build  # the summaries and the configs' state logs
else
  SETUP_TARGETS=tickgate scripts/setup.sh build
  bin=build/tickgate
fi

# What to undo at exit, last first (the handler, the fan-out's cluster): one
# EXIT trap for all, so that no step's cleanup replaces another's.
cleanup=()
on_exit() {
  local i
  for ((i = ${#cleanup[@]} - 1; i >= 0; i--)); do eval "${cleanup[i]}" || true; done
}
trap on_exit EXIT

# run_demo CONFIG LOG SIM_ARGS...: the handler for SECONDS + 2 s (its live
# view on the terminal's stderr, its JSON summary kept), the simulator meanwhile.
run_demo() {
  local cfg=$1 log=$2
  shift 2
  rm -f "$log"
  "$bin" run --config "$cfg" --duration "$((seconds + 2))" --json ${fanout_flag:-} \
    > "build/demo-$protocol-summary.json" 2> >(tee "build/demo-$protocol-run.err" >&2) &
  handler=$!
  cleanup+=("kill $handler 2>/dev/null")
  sleep 1
  "$bin" sim "$@" --config "$cfg" --duration "$seconds" --seed 7 > "build/demo-$protocol-truth.json"
  wait $handler
  unset 'cleanup[-1]'
}

# What happened, in words: the gate's answers at the end and why.
explain() {
  python3 - "build/demo-$protocol-summary.json" "$1" <<'PY'
import collections, json, sys
summary, log = json.load(open(sys.argv[1])), sys.argv[2]
inst = summary["instruments"]
gates = collections.Counter(i["gate"].split(":")[0] for i in inst)
# Per instrument (QFB/1, MDP3), or per stream where loss belongs to it (ITCH).
lost = sum(i.get("lost", 0) for i in inst) + sum(c.get("lost_messages", 0) for c in summary.get("channels", []))
print(f"\n{len(inst)} instruments; gate at the end: " + ", ".join(f"{n} {g}" for g, n in gates.most_common()))
print(f"messages lost on both lines and counted: {lost}" if lost else "no message was lost on both lines")
why = collections.Counter(i.get("suspect_reason", "") for i in inst if i.get("suspect"))
if why:
    print("suspect books, and why: " + ", ".join(f"{n} {w}" for w, n in why.most_common()))
if gates.get("stale"):
    print("'stale' is the gate doing its job: the simulator stopped 2 s before the handler,"
          " so every price has been silent longer than gate.stale_ms.")
print(f"state changes (gaps, suspect, recovered, session changes) are in {log}")
PY
}

case $protocol in
  fanout)
    log=build/demo-fanout-state.log
    cluster=build/demo-nats
    scripts/nats_cluster.sh stop "$cluster"
    rm -rf "$cluster"
    scripts/nats_cluster.sh start "$cluster" 14200
    cleanup+=("scripts/nats_cluster.sh stop $cluster")
    # The first subscriber listens from the start (its node is the second), printing its final table.
    "$bin" subscribe --config configs/fanout-demo.toml --servers nats://127.0.0.1:14202 --quiet \
      --duration "$((seconds + 4))" 'tickgate.>' >build/demo-fanout-sub1.txt 2>&1 &
    sub1=$!
    # run_demo's handler gets --fanout through the variable below.
    fanout_flag=--fanout
    run_demo configs/fanout-demo.toml "$log" --instruments 8 --rate 20000 \
      --loss-a 0.02 --loss-b 0.02 --burst-loss 0.002:3 --dup 0.01
    wait "$sub1"
    # The second starts after the handler has gone: everything it knows comes from the stream.
    "$bin" subscribe --config configs/fanout-demo.toml --servers nats://127.0.0.1:14203 --quiet --duration 1 \
      'tickgate.>' >build/demo-fanout-sub2.txt 2>&1
    echo "subscriber 1 (live from the start, node 2):"
    cat build/demo-fanout-sub1.txt
    echo "subscriber 2 (started after the handler stopped, node 3: read from the stream's snapshots):"
    cat build/demo-fanout-sub2.txt
    grep '^fanout:' "build/demo-fanout-run.err" || true
    ;;
  mdp3)
    log=build/demo-mdp3-state.log
    run_demo configs/mdp3-demo.toml "$log" --protocol mdp3 \
      --loss-a 0.02 --loss-b 0.02 --burst-loss 0.002:5 --outage-a 0.3:0.5 --outage-b 0.4:0.42 --restart-at 0.7
    echo "snapshot feed: $(grep -c 'snapshot_join' "$log" || true) joins, $(grep -c 'snapshot_leave' "$log" || true) leaves," \
         "$(grep -c 'recovered' "$log" || true) recoveries; the last of them:"
    grep -E 'snapshot_(join|leave)' "$log" | tail -n 6 || true
    ;;
  itch)
    log=build/itch-demo-state.log
    # The simulator accepts any GLIMPSE login; the handler reads its password from this variable.
    export TICKGATE_DEMO_GLIMPSE_PASSWORD=demo
    # Both lines carry nothing for the first 10 % of the flow (the handler joins
    # late) and again for 2 % at the middle, when the re-request server is
    # silent too (the hole is given up); line A loses 3 % besides, B fills it.
    run_demo configs/itch-glimpse-demo.toml "$log" --protocol itch50 --stocks 50 --rate 20000 \
      --loss-a 0.03 --outage-a 0:0.1 --outage-b 0:0.1 --outage-a 0.5:0.52 --outage-b 0.5:0.52 --server-silent
    python3 - "build/demo-itch-summary.json" "$log" <<'PY'
import json, re, sys
s, log = json.load(open(sys.argv[1])), open(sys.argv[2]).read()
for c in s.get("channels", []):
    ch, g = c["channel"], c.get("glimpse", {})
    print(f"\nchannel {ch}: {c.get('late_join_messages', 0):,} messages were sent before the handler's first"
          f" packet (a late join); {c.get('lost_messages', 0):,} were lost on both lines and given up"
          f" (the re-request server was silent); line A's own losses were carried by line B")
    failed = sum(g.get("snapshot_failures", {}).values())
    print(f"GLIMPSE snapshots: {g.get('snapshots_requested', 0)} requested, {g.get('snapshots_applied', 0)} applied,"
          f" {failed} failed")
    # The state log says why each was asked for and what it did, in order.
    events = re.findall(rf"snapshot_(requested|applied|failed): channel {ch}: ([^\n]*)", log)
    for kind, text in events:
        if kind == "requested":
            why = ("the handler joined the session late: orders added before it are unknown, so every book"
                   " of the channel was suspect" if text.startswith("late join") else
                   "messages were lost on both lines and the re-request server did not send them: the books"
                   " missed them and were suspect")
            print(f"  - snapshot asked for ({text}): {why}")
        elif kind == "applied":
            print(f"    repaired: the snapshot replaced the books ({text}); they were clean again")
        else:
            print(f"    failed: {text}")
    if not events:
        print("  (no snapshot was needed)")
PY
    ;;
  *)
    log=build/demo-state.log
    run_demo configs/demo.toml "$log" --instruments 8 --rate 20000 \
      --loss-a 0.02 --loss-b 0.02 --burst-loss 0.002:3 --dup 0.01 --reorder 0.005 \
      --restart-at 0.6 --lagging-snapshots --quiet 3 --silence 5
    ;;
esac
explain "$log"
echo "simulator ground truth: build/demo-$protocol-truth.json"
