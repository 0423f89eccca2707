#!/usr/bin/env bash
# Issue 27, every venue: `tickgate run --fanout` on an MDP3 and on an ITCH
# 5.0 config (the shared pipelines, so the same publisher as QFB/1's, which
# fanout_cluster_test.sh covers with a cluster and node failures), fed by
# `tickgate sim` with loss on both lines, and one subscriber from the
# start. One nats-server with JetStream on 127.0.0.1 (client 14401,
# monitoring 14421; the ctest runs serially). Every instrument's book at
# the subscriber (the published depth) and gate verdict must equal the
# handler's own summary, none still suspect. On the MDP3 run,
# `example_engine --fanout` (a host with only the fan-out) trades two of
# the instruments and one that never exists: it must price off both and
# find the third undefined. The subscriber outlives the handler by 2 s: the
# publisher's heartbeats (every 200 ms) stop with it, so at the end every
# instrument must be publisher_silent (not tradeable), the silence counted.
# usage: fanout_venues_test.sh TICKGATE_BINARY EXAMPLE_ENGINE_BINARY   (exit 77: nats-server missing)
set -euo pipefail
bin=$1
engine=$2
command -v nats-server >/dev/null || { echo "nats-server not installed (scripts/setup.sh installs it)"; exit 77; }
work=$(mktemp -d /tmp/tickgate-fanout-venues.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [[ -n ${KEEP:-} ]] || rm -rf "$work"
}
trap cleanup EXIT

cat >"$work/nats.conf" <<EOF
listen: 127.0.0.1:14401
http: 127.0.0.1:14421
jetstream { store_dir: "$work/js", max_memory_store: 64MB, max_file_store: 64MB }
EOF
nats-server -c "$work/nats.conf" >"$work/nats.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  curl -fs "http://127.0.0.1:14421/healthz?js-enabled-only=true" >/dev/null 2>&1 && break
  sleep 0.1
done

fanout_table() {  # fanout_table STREAM (also the subjects' prefix, lower case: one stream per venue)
  cat <<EOF
[fanout]
servers = ["nats://127.0.0.1:14401"]
prefix = "${1,,}"
depth = 4
stream = "$1"
replicas = 1
heartbeat_ms = 200
EOF
}

cat >"$work/mdp3.toml" <<EOF
[[channel]]
id = 311
protocol = "mdp3"
a = { group = "239.255.27.11", port = 32711, interface = "127.0.0.1" }
b = { group = "239.255.27.12", port = 32712, interface = "127.0.0.1" }
snapshot_a = { group = "239.255.27.13", port = 32713, interface = "127.0.0.1" }
snapshot_b = { group = "239.255.27.14", port = 32714, interface = "127.0.0.1" }
definition_a = { group = "239.255.27.15", port = 32715, interface = "127.0.0.1" }
definition_b = { group = "239.255.27.16", port = 32716, interface = "127.0.0.1" }
sources = ["127.0.0.1"]
[gate]
stale_ms = 250
[logging]
sink = "$work/mdp3-state.log"
$(fanout_table TGVMDP3)
EOF

cat >"$work/itch50.toml" <<EOF
[[channel]]
id = 31
protocol = "itch50"
a = { group = "239.255.27.21", port = 32721, interface = "127.0.0.1" }
b = { group = "239.255.27.22", port = 32722, interface = "127.0.0.1" }
sources = ["127.0.0.1"]
rerequest = "127.0.0.1:32720"
[moldudp64]
recover_from_start = true
[itch]
max_orders = 65536
max_levels = 16384
[gate]
stale_ms = 250
[logging]
sink = "$work/itch50-state.log"
$(fanout_table TGVITCH)
EOF

venue() {  # venue PROTOCOL STREAM SIM_ARGS...
  local p=$1 stream=$2
  shift 2
  "$bin" run --config "$work/$p.toml" --fanout --duration 6 --json --quiet >"$work/$p-run.json" 2>"$work/$p-run.err" &
  local run_pid=$!
  pids+=($run_pid)
  sleep 1
  "$bin" subscribe --servers nats://127.0.0.1:14401 --stream "$stream" --json --quiet --duration 8 "${stream,,}.>" \
    >"$work/$p-sub.json" 2>"$work/$p-sub.err" &
  local sub_pid=$!
  pids+=($sub_pid)
  local engine_pid=
  if [[ $p == mdp3 ]]; then
    "$engine" --fanout "$work/$p.toml" 7 SIM001 SIM002 NOSUCH >"$work/$p-engine.txt" 2>"$work/$p-engine.err" &
    engine_pid=$!
    pids+=($engine_pid)
  fi
  sleep 1
  "$bin" sim --protocol "$p" --config "$work/$p.toml" --seed 27 --loss-a 0.02 --loss-b 0.02 "$@" \
    >"$work/$p-truth.json" 2>"$work/$p-sim.err" || { echo "$p: sim failed"; cat "$work/$p-sim.err"; exit 1; }
  wait "$run_pid" || { echo "$p: handler failed"; cat "$work/$p-run.err"; exit 1; }
  wait "$sub_pid" || { echo "$p: subscriber failed"; cat "$work/$p-sub.err"; exit 1; }
  if [[ -n $engine_pid ]]; then
    wait "$engine_pid" || { echo "$p: example_engine --fanout failed"; cat "$work/$p-engine.err"; exit 1; }
    cat "$work/$p-engine.txt"
    [[ $(grep -c "defined    orders priced [1-9]" "$work/$p-engine.txt") == 2 ]] &&
      grep -q "^NOSUCH  *undefined" "$work/$p-engine.txt" ||
      { echo "FAIL $p: example_engine --fanout did not price off SIM001 and SIM002 only"; exit 1; }
  fi
  python3 - "$work" "$p" <<'PY'
import json, sys
work, p = sys.argv[1], sys.argv[2]
depth = 4
run = json.load(open(f"{work}/{p}-run.json"))
handler = {i["symbol"]: i for i in run["instruments"] if i["symbol"]}
sub = json.load(open(f"{work}/{p}-sub.json"))
got = {i["symbol"]: i for i in sub["instruments"]}
failures = []
if not handler:
    failures.append("the handler booked no instrument")
if set(got) != set(handler):
    failures.append(f"instruments {sorted(set(handler) ^ set(got))[:10]} differ")
for sym, h in handler.items():
    g = got.get(sym)
    if g is None:
        continue
    want = ([l[:2] for l in h["bids"][:depth]], [l[:2] for l in h["asks"][:depth]], h["gate"])
    have = ([l[:2] for l in g["bids"]], [l[:2] for l in g["asks"]], g["gate"])
    if want != have:
        failures.append(f"{sym}: handler {want}, subscriber {have}")
    if g["consumer_suspect"]:
        failures.append(f"{sym}: still suspect at the subscriber")
    if h["suspect"]:
        failures.append(f"{sym}: suspect at the handler (the scenario repairs every loss)")
    if not g["publisher_silent"]:
        failures.append(f"{sym}: not publisher_silent after the handler stopped")
c = sub["counters"]
if c["heartbeats"] < 10 or c["publisher_silences"] != 1:
    failures.append(f"heartbeats {c['heartbeats']} (want >= 10), publisher silences {c['publisher_silences']} (want 1)")
if failures:
    print(f"FAIL {p}\n" + "\n".join(failures[:20]))
    sys.exit(1)
print(f"{p}: {len(handler)} instruments equal at the subscriber, counters {sub['counters']}")
PY
}

venue mdp3 TGVMDP3 --instruments 20 --rate 5000 --duration 2
venue itch50 TGVITCH --stocks 20 --messages 6000 --server-linger-ms 300
echo "fanout_venues: MDP3 and ITCH 5.0 fan out like QFB/1"
