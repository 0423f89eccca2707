#!/usr/bin/env bash
# End-to-end through the CLI, inside a network namespace this test creates
# (only its own loopback exists there):
#  1. `tickgate run` and `tickgate capture` on the live lines while `tickgate
#     sim` publishes; `tickgate replay --arbitrate` of the capture must give
#     the live run's summary.
#  2. a simulator capture re-published with tcpreplay (Debian's tcpreplay)
#     into the live handler gives the same summary as replaying the file.
#  3. MDP3 (configs/mdp3-demo.toml): `tickgate run` and `tickgate capture`
#     while `tickgate sim --protocol mdp3` publishes with loss: the live
#     handler and the replay of the capture (snapshot feed included) both end
#     with the simulator's ground truth, the handler having joined the
#     snapshot feed and left it once clean.
#  4. the certification capture cert_two_channels (tests/data/cert) sent
#     with `tickgate send` into `tickgate run --config cert_two_channels.toml`
#     (each channel on its own lines): the live summary is the replay's with
#     the config, which is the venue reference's (issue 21 item 1: channel
#     8's instruments stayed suspect live too).
# usage: cli_live_test.sh TICKGATE_BINARY CONFIG
set -euo pipefail
bin=$(realpath "$1")
cfg=$(realpath "$2")
cfg_dir=$(dirname "$cfg")
if [[ $(id -u) -ne 0 ]] || ! command -v ip >/dev/null || ! command -v tcpreplay >/dev/null; then
  echo "SKIP: needs root, iproute2 and tcpreplay (scripts/setup.sh installs them)"
  exit 77
fi
ns=tickgate-test-$$
work=$(mktemp -d)
cleanup() { ip netns del "$ns" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
# The demo config, with its state log in the scratch directory.
sed "s|^sink = .*|sink = \"$work/state.log\"|" "$cfg" > "$work/config.toml"
sed "s|^sink = .*|sink = \"$work/mdp3-state.log\"|" "$(dirname "$cfg")/mdp3-demo.toml" > "$work/mdp3-demo.toml"
cfg=$work/config.toml
ip netns add "$ns"
inns() { ip netns exec "$ns" "$@"; }
inns ip link set lo up
# Frames injected by tcpreplay arrive on lo from 127.0.0.1: let the
# namespace's kernel accept a local source on input.
inns sysctl -qw net.ipv4.conf.all.route_localnet=1 net.ipv4.conf.lo.route_localnet=1 \
  net.ipv4.conf.all.accept_local=1 net.ipv4.conf.lo.accept_local=1 \
  net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.lo.rp_filter=0

compare() {  # compare LIVE.json REPLAY.json [MIN_PACKETS]: every field but the gate (evaluated at different times)
  python3 - "$@" <<'PY'
import json, sys
live, replay = (json.load(open(p)) for p in sys.argv[1:3])
errors = []
for k in ("malformed_packets", "unknown_messages", "messages", "session_changes"):
    if live[k] != replay[k]:
        errors.append(f"{k}: live {live[k]} replay {replay[k]}")
# Old-session copies on the slower line that land after the faster line's
# first new-session packet are counted stale (read unread); how many depends
# on receive batching, so compare the packets that were read.
read = lambda s: s["packets"] - s["stale_session_packets"]
if read(live) != read(replay):
    errors.append(f"packets read: live {read(live)} replay {read(replay)}")
a = {i["id"]: i for i in live["instruments"]}
b = {i["id"]: i for i in replay["instruments"]}
if sorted(a) != sorted(b):
    errors.append(f"instruments: live {sorted(a)} replay {sorted(b)}")
for iid in sorted(set(a) & set(b)):
    for k in a[iid]:
        if k != "gate" and a[iid][k] != b[iid][k]:
            errors.append(f"instrument {iid} {k}: live {a[iid][k]} replay {b[iid][k]}")
if live["packets"] < int(sys.argv[3] if len(sys.argv) > 3 else 1000):
    errors.append(f"too few packets received: {live['packets']}")
print("\n".join(errors) or f"same summary: {live['packets']} packets, {len(a)} instruments")
sys.exit(1 if errors else 0)
PY
}

# The handler and the recorder run until told to stop (SIGINT), after the
# traffic is over: no fixed duration, so a loaded machine cannot cut a run short.
# They are started with `ip netns exec` directly (not through a shell
# function) so that $! is their own pid and gets the signal.
stop() { sleep 1; kill -INT "$@"; wait "$@"; }

echo "== 1. live run + capture vs replay of the capture"
ip netns exec "$ns" "$bin" run --config "$cfg" --json --quiet > "$work/live.json" &
run_pid=$!
ip netns exec "$ns" "$bin" capture --config "$cfg" --out "$work/live.pcap" &
cap_pid=$!
sleep 1
inns "$bin" sim --config "$cfg" --duration 2 --rate 20000 --seed 11 --loss-a 0.05 --dup 0.01 --reorder 0.01 \
  --restart-at 0.5 --lagging-snapshots > "$work/truth.json"
stop "$run_pid" "$cap_pid"
"$bin" replay --arbitrate --config "$cfg" --json "$work/live.pcap" > "$work/replay.json"
compare "$work/live.json" "$work/replay.json"

echo "== 2. tcpreplay of a simulator capture into the live handler"
"$bin" sim --config "$cfg" --duration 2 --rate 20000 --seed 3 --loss-a 0.03 --loss-b 0.03 --restart-at 0.6 \
  --pcap "$work/sim.pcap" > /dev/null
ip netns exec "$ns" "$bin" run --config "$cfg" --json --quiet > "$work/live2.json" &
run_pid=$!
sleep 1
inns tcpreplay -q -i lo "$work/sim.pcap" > /dev/null 2>&1
stop "$run_pid"
"$bin" replay --arbitrate --config "$cfg" --json "$work/sim.pcap" > "$work/replay2.json"
compare "$work/live2.json" "$work/replay2.json"

echo "== 3. MDP3: live run + capture vs the simulator's ground truth"
mcfg=$work/mdp3-demo.toml
ip netns exec "$ns" "$bin" run --config "$mcfg" --json --quiet > "$work/mlive.json" &
run_pid=$!
ip netns exec "$ns" "$bin" capture --config "$mcfg" --out "$work/mlive.pcap" &
cap_pid=$!
sleep 1
inns "$bin" sim --protocol mdp3 --config "$mcfg" --duration 1 --seed 5 --loss-a 0.05 --loss-b 0.05 \
  --burst-loss 0.01:3 > "$work/mtruth.json"
stop "$run_pid" "$cap_pid"
"$bin" replay --arbitrate --config "$mcfg" --json "$work/mlive.pcap" > "$work/mreplay.json"
python3 - "$work/mtruth.json" "$work/mlive.json" "$work/mreplay.json" <<'PY'
import json, sys
truth, live, replay = (json.load(open(p)) for p in sys.argv[1:4])
errors = []
for name, summary in (("live", live), ("replay of the capture", replay)):
    got = {i["symbol"]: i for i in summary["instruments"]}
    for t in truth["instruments"]:
        g = got.get(t["symbol"])
        if g is None:
            errors.append(f"{name}: {t['symbol']} missing")
            continue
        want = {"lost": t["expected_lost"], "last_seq": t["last_seq"], "suspect": False, "bids": t["bids"], "asks": t["asks"]}
        for k, v in want.items():
            if g[k] != v:
                errors.append(f"{name}: {t['symbol']} {k}: {g[k]} (simulator: {v})")
snapshot = [l for c in live["live"]["channels"] for l in c["lines"] if l["line"].startswith("snapshot")]
if len(snapshot) != 2:
    errors.append(f"snapshot lines: {snapshot}")
for l in snapshot:
    if l["snapshot_joins"] < 1 or l["snapshot_leaves"] != l["snapshot_joins"]:
        errors.append(f"line {l['line']}: joins {l['snapshot_joins']} leaves {l['snapshot_leaves']} (left once clean?)")
print("\n".join(errors) or f"MDP3: {len(truth['instruments'])} instruments as the simulator's, snapshot feed left once clean")
sys.exit(1 if errors else 0)
PY

echo "== 4. cert_two_channels sent into the live handler with its config"
cert=$(dirname "$cfg_dir")/tests/data/cert
sed "s|^level = .*|level = \"off\"|" "$cert/cert_two_channels.toml" > "$work/two.toml"
ip netns exec "$ns" "$bin" run --config "$work/two.toml" --json --quiet > "$work/two-live.json" &
run_pid=$!
sleep 1
# At a fifth of the capture's pace (2.5 s): its two channels' packets are
# often microseconds apart. A receive pass merges its sockets by kernel
# timestamp, but a packet reaching a socket the pass has read already waits
# for the next pass while a later one on a socket read after it goes first;
# out of order, a lagging cross-channel snapshot (stale in capture order)
# would be one ahead of its instrument (foreign).
inns "$bin" send --speed 0.2 "$cert/cert_two_channels.pcap" > /dev/null 2>&1
stop "$run_pid"
"$bin" replay --config "$work/two.toml" --json "$cert/cert_two_channels.pcap" > "$work/two-replay.json"
compare "$work/two-live.json" "$work/two-replay.json" 1800
python3 - "$work/two-live.json" "$cert/cert_two_channels.expected.json" <<'PY'
import json, sys
live, want = (json.load(open(p)) for p in sys.argv[1:3])
got = {i["id"]: i for i in live["instruments"]}
errors = [f"instrument {w['id']} {k}: live {got.get(w['id'], {}).get(k)} reference {w[k]}"
          for w in want["instruments"]
          for k in ("last_seq", "lost", "suspect", "snapshots_applied", "stale_snapshots")
          if got.get(w["id"], {}).get(k) != w[k]]
print("\n".join(errors) or "live cert_two_channels: every instrument as the reference's (gate aside)")
sys.exit(1 if errors else 0)
PY
