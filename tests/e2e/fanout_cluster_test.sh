#!/usr/bin/env bash
# Issue 27 acceptance, end to end on loopback: a 3-node NATS cluster with
# JetStream (client, route and monitoring ports on 127.0.0.1 only, fixed:
# the ctest runs serially), `tickgate run --fanout` fed by `tickgate sim`
# (with loss on both lines), and four subscribers:
#   A, B  from the start, connected to different nodes;
#   C     lossy: a client pending limit of 20 messages and 300 µs per message;
#   D     late: started after the handler has exited.
# Node 1 (the publisher's and A's) is killed with SIGKILL mid-run. The
# handler runs on for 15 s after the feed ends: the stream may need many
# seconds to elect a new leader (11 s seen under the sanitizers), and only
# then does it keep what the publisher sends again.
# Every subscriber's final book (the published depth) and gate verdict of
# every instrument must equal the handler's own summary; C must have
# counted its loss, the publisher its disconnect and resync.
# usage: fanout_cluster_test.sh TICKGATE_BINARY   (exit 77: nats-server missing)
set -euo pipefail
bin=$1
command -v nats-server >/dev/null || { echo "nats-server not installed (scripts/setup.sh installs it)"; exit 77; }
work=$(mktemp -d /tmp/tickgate-fanout.XXXXXX)
pids=()
here=$(cd "$(dirname "$0")" && pwd)
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  "$here/../../scripts/nats_cluster.sh" stop "$work/nats" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# Clients on 127.0.0.1:14301-14303 (routes 14311-14313, monitoring 14321-14323).
"$here/../../scripts/nats_cluster.sh" start "$work/nats" 14300
node1=$(cat "$work/nats/n1.pid")

cat >"$work/cfg.toml" <<EOF
[instruments]
learn = true
[[channel]]
id = 1
a = { group = "239.255.27.1", port = 32701, interface = "127.0.0.1" }
b = { group = "239.255.27.2", port = 32702, interface = "127.0.0.1" }
sources = ["127.0.0.1"]
[gate]
stale_ms = 250
[logging]
sink = "$work/state.log"
[fanout]
servers = ["nats://127.0.0.1:14301", "nats://127.0.0.1:14302", "nats://127.0.0.1:14303"]
prefix = "tgtest"
depth = 4
stream = "TGTEST"
replicas = 3
EOF
sub() {  # sub NAME SERVERS EXTRA...
  local name=$1 servers=$2
  shift 2
  "$bin" subscribe --servers "$servers" --stream TGTEST --json --quiet "$@" 'tgtest.>' \
    >"$work/$name.json" 2>"$work/$name.err" &
  pids+=($!)
  eval "sub_$name=$!"
}

"$bin" run --config "$work/cfg.toml" --fanout --duration 25 --json --quiet >"$work/run.json" 2>"$work/run.err" &
pids+=($!)
run_pid=$!
sleep 1
sub A nats://127.0.0.1:14301,nats://127.0.0.1:14302 --duration 28
sub B nats://127.0.0.1:14302,nats://127.0.0.1:14303 --duration 28
sub C nats://127.0.0.1:14303 --duration 28 --pending-limit 20 --delay-us 300
sleep 1
"$bin" sim --config "$work/cfg.toml" --instruments 40 --rate 20000 --duration 8 --seed 27 \
  --loss-a 0.01 --loss-b 0.01 --burst-loss 0.002:3 >"$work/truth.json" 2>"$work/sim.err" &
pids+=($!)
sim_pid=$!
sleep 3
kill -9 "$node1"  # mid-run: the publisher's node and A's
wait "$node1" 2>/dev/null || true
wait "$sim_pid"
wait "$run_pid" || { echo "handler failed"; cat "$work/run.err"; exit 1; }
sub D nats://127.0.0.1:14302,nats://127.0.0.1:14303 --duration 2
for s in A B C D; do
  eval "wait \$sub_$s" || { echo "subscriber $s failed"; cat "$work/$s.err"; exit 1; }
done

# On a failure, what the subscribers, the handler and the nodes said (a
# JetStream cluster that stops answering shows only as snapshot_errors in the
# counters: its logs say why).
say_why() {
  for s in A B C D; do echo "== subscriber $s stderr"; tail -5 "$work/$s.err"; done
  echo "== handler stderr"; grep -v '^fanout:' "$work/run.err" | tail -10
  for n in 1 2 3; do echo "== nats node $n"; tail -15 "$work/nats/n$n.log"; done
}
python3 - "$work" <<'PY' || { say_why; exit 1; }
import json, sys
work = sys.argv[1]
depth = 4
run = json.load(open(f"{work}/run.json"))
handler = {i["symbol"]: i for i in run["instruments"] if i["symbol"]}
err = open(f"{work}/run.err").read()
fan = [l for l in err.splitlines() if l.startswith("fanout:")]
print(fan[-1] if fan else "no fanout line")
def field(name):
    return int(fan[-1].split(f" {name} ")[1].split()[0])
failures = []
if field("disconnects") < 1: failures.append("the publisher did not see its node go")
if field("resynced") < 1: failures.append("the publisher did not republish after reconnecting")
for name in "ABCD":
    sub = json.load(open(f"{work}/{name}.json"))
    got = {i["symbol"]: i for i in sub["instruments"]}
    c = sub["counters"]
    print(f"subscriber {name}: {len(got)} instruments, counters {c}")
    if set(got) != set(handler):
        failures.append(f"{name}: instruments {sorted(set(handler) ^ set(got))} differ")
    for sym, h in handler.items():
        g = got.get(sym)
        if g is None: continue
        want = (h["bids"][:depth], h["asks"][:depth], h["gate"])
        have = (g["bids"], g["asks"], g["gate"])
        if want != have:
            failures.append(f"{name} {sym}: handler {want}, subscriber {have}")
        if g["consumer_suspect"]:
            failures.append(f"{name} {sym}: still suspect at the end")
    if name == "C" and not (c["slow_consumer"] > 0 and c["dropped"] > 0 and c["gaps"] > 0):
        failures.append(f"C: the loss was not counted: {c}")
    if name == "D" and c["snapshots"] < len(handler):
        failures.append(f"D: converged without reading snapshots: {c}")
    if name == "A" and c["reconnects"] < 1:
        failures.append(f"A: did not reconnect after its node was killed: {c}")
if failures:
    print("FAIL\n" + "\n".join(failures[:30]))
    sys.exit(1)
print(f"PASS: {len(handler)} instruments equal at 4 subscribers")
PY
