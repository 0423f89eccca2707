#!/usr/bin/env bash
# The AF_XDP receive backend end to end, inside two network namespaces this
# test creates and joins with a veth pair (10.213.0.1/30 <-> 10.213.0.2/30):
# every frame stays in them. A simulator capture, its source rewritten to
# the sending namespace's address, is re-published with tcpreplay on the
# sender's veth; `tickgate run` receives it on the peer through AF_XDP.
#  1. QFB/1, XDP generic mode / two-thread pipeline and native mode / inline:
#     the live summary is the replay's of the same capture; every frame was
#     redirected; other traffic (ARP, a UDP socket on another port) still
#     reaches the kernel while the handler runs.
#  2. kill -9 of the handler leaves no XDP program on the interface, and a
#     socket-backend handler started afterwards receives everything.
#  3. zero_copy = "true" on veth (which has no zero-copy): exit 2 with the
#     reason; with fallback = "sockets" it says so once and receives everything.
#  4. MDP3 and ITCH 5.0, both modes, line A losing 5 %: the live summary is
#     a socket-backend run's of the same frames.
# Where AF_XDP cannot start on this machine the test says why and skips (77).
# usage: af_xdp_netns_test.sh TICKGATE_BINARY CONFIG_DIR
set -euo pipefail
bin=$(realpath "$1")
configs=$(realpath "$2")
if [[ $(id -u) -ne 0 ]] || ! command -v ip >/dev/null || ! command -v tcpreplay >/dev/null ||
   ! command -v tcprewrite >/dev/null; then
  echo "SKIP: needs root, iproute2 and tcpreplay/tcprewrite (scripts/setup.sh installs them)"
  exit 77
fi
tx=tgx-tx-$$
rx=tgx-rx-$$
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  ip netns del "$tx" 2>/dev/null || true
  ip netns del "$rx" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
ip netns add "$tx"
ip netns add "$rx"
ip link add vtx netns "$tx" type veth peer name vrx netns "$rx"
ip -n "$tx" addr add 10.213.0.1/30 dev vtx
ip -n "$rx" addr add 10.213.0.2/30 dev vrx
for ns in "$tx" "$rx"; do ip -n "$ns" link set lo up; done
ip -n "$tx" link set vtx up
ip -n "$rx" link set vrx up
# Multicast from the sending namespace leaves through its veth.
ip -n "$tx" route add 224.0.0.0/4 dev vtx

# A config of the demo's, received on the veth (sources: the sender's address).
# usage: make_config SRC DEST BACKEND_LINES...
make_config() {
  local src=$1 dest=$2
  shift 2
  sed -e 's/interface = "127.0.0.1"/interface = "10.213.0.2"/' -e 's/^sources = .*/sources = ["10.213.0.1"]/' \
      -e "s|^sink = .*|sink = \"$work/state.log\"|" "$src" > "$dest"
  printf '%s\n' "$@" >> "$dest"
}
# A simulator capture (loopback, as the simulator only publishes there) with
# its source address rewritten to the sender's.
# usage: make_capture OUT.pcap SIM_ARGS...
make_capture() {
  local out=$1
  shift
  "$bin" sim "$@" --pcap "$work/raw.pcap" > /dev/null 2>&1
  tcprewrite --infile="$work/raw.pcap" --outfile="$out" --srcipmap=127.0.0.0/8:10.213.0.1/32 --fixcsum
}
xdp_attached() { ip -n "$rx" link show vrx | grep -q "prog/xdp"; }
# Starts `tickgate run` in the receiving namespace; waits until it receives
# (AF_XDP: its program attached). usage: start_run CONFIG OUT.json [af_xdp]
start_run() {
  ip netns exec "$rx" "$bin" run --config "$1" --json --quiet > "$2" 2> "$2.err" &
  run_pid=$!
  pids+=("$run_pid")
  for _ in $(seq 100); do
    if ! kill -0 "$run_pid" 2>/dev/null; then
      wait "$run_pid" || true
      if grep -q "AF_XDP" "$2.err"; then
        echo "SKIP: AF_XDP cannot start on this machine: $(head -1 "$2.err")"
        exit 77
      fi
      echo "FAIL: tickgate run exited early:"; cat "$2.err"; exit 1
    fi
    if [[ ${3:-} != af_xdp ]] || xdp_attached; then sleep 0.3; return; fi
    sleep 0.1
  done
  echo "FAIL: no XDP program attached after 10 s"; exit 1
}
stop_run() { kill -INT "$run_pid"; wait "$run_pid"; }
send() { ip netns exec "$tx" tcpreplay -q -i vtx "$1" > /dev/null 2>&1; }

# usage: compare LIVE.json REPLAY.json [IGNORED_FIELD...]: every field but the
# gate (evaluated at different times) and those named
compare() {
  python3 - "$@" <<'PY'
import json, sys
live, replay = (json.load(open(p)) for p in sys.argv[1:3])
ignored = set(sys.argv[3:]) | {"gate", "age_ms"}
errors = []
for k in ("malformed_packets", "unknown_messages", "messages"):
    if k not in ignored and k in live and live.get(k) != replay.get(k):
        errors.append(f"{k}: live {live.get(k)} replay {replay.get(k)}")
# Old-session copies on the slower line that land after the faster line's
# first new-session packet are counted stale (read unread); how many depends
# on receive batching (as in cli_live_test.sh), so compare the packets read.
read = lambda s: s.get("packets", 0) - s.get("stale_session_packets", 0)
if "packets" not in ignored and read(live) != read(replay):
    errors.append(f"packets read: live {read(live)} replay {read(replay)}")
a = {i["id"]: i for i in live["instruments"]}
b = {i["id"]: i for i in replay["instruments"]}
if sorted(a) != sorted(b):
    errors.append(f"instruments: live {sorted(a)} replay {sorted(b)}")
for iid in sorted(set(a) & set(b)):
    for k in a[iid]:
        if k not in ignored and a[iid][k] != b[iid].get(k):
            errors.append(f"instrument {iid} {k}: live {a[iid][k]} replay {b[iid].get(k)}")
if not a:
    errors.append("no instrument received")
print("\n".join(errors) or f"same summary: {len(a)} instruments")
sys.exit(1 if errors else 0)
PY
}
# The backend's own figures in a live summary: backend, mode, and every frame taken redirected.
# usage: check_backend LIVE.json BACKEND [MODE]
check_backend() {
  python3 - "$@" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["live"]["receiver"]
want, mode = sys.argv[2], (sys.argv[3] if len(sys.argv) > 3 else None)
errors = []
if r["backend"] != want:
    errors.append(f"backend {r['backend']}, expected {want}")
if want == "af_xdp":
    x = r["af_xdp"]
    if mode and x["mode"] != mode: errors.append(f"mode {x['mode']}, expected {mode}")
    if x["frames"] == 0 or x["redirected"] != x["frames"]: errors.append(f"frames {x['frames']} redirected {x['redirected']}")
    if x["bad_frames"] or x["rx_ring_full"] or x["rx_dropped"]: errors.append(f"drops or bad frames: {x}")
print("\n".join(errors) or f"backend {want}: {r.get('af_xdp', {}).get('frames', '-')} frames")
sys.exit(1 if errors else 0)
PY
}

make_capture "$work/qfb1.pcap" --duration 1 --rate 20000 --seed 5 --loss-a 0.03 --loss-b 0.03 --restart-at 0.6
make_config "$configs/demo.toml" "$work/sockets.toml"
"$bin" replay --arbitrate --config "$work/sockets.toml" --json "$work/qfb1.pcap" > "$work/qfb1-replay.json"

echo "== 1. QFB/1 through AF_XDP, other traffic untouched"
for combo in generic:two_thread native:inline; do
  mode=${combo%%:*}
  pipeline=${combo##*:}
  make_config "$configs/demo.toml" "$work/xdp.toml" "[receiver]" "backend = \"af_xdp\"" \
    "af_xdp = { interface = \"vrx\", mode = \"$mode\" }" "[threading]" "pipeline = \"$pipeline\""
  start_run "$work/xdp.toml" "$work/live-$mode.json" af_xdp
  # Another UDP port on the receiving host: the program must pass it on.
  ip netns exec "$rx" python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("10.213.0.2", 9999)); s.settimeout(20)
open(sys.argv[1], "wb").write(s.recvfrom(100)[0])' "$work/other-$mode.txt" &
  other_pid=$!
  pids+=("$other_pid")
  sleep 0.3
  send "$work/qfb1.pcap"
  ip netns exec "$tx" python3 -c '
import socket
socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"not a line", ("10.213.0.2", 9999))'
  wait "$other_pid"
  [[ $(cat "$work/other-$mode.txt") == "not a line" ]] || { echo "FAIL: the other UDP port got nothing"; exit 1; }
  ip -n "$tx" neigh show 10.213.0.2 | grep -qv FAILED || { echo "FAIL: ARP did not resolve"; exit 1; }
  stop_run
  echo "-- $mode / $pipeline"
  check_backend "$work/live-$mode.json" af_xdp "$mode"
  compare "$work/live-$mode.json" "$work/qfb1-replay.json"
  python3 -c '
import json, sys
x = json.load(open(sys.argv[1]))["live"]["receiver"]["af_xdp"]
assert x["passed_to_kernel"] >= 1, x
print("passed to the kernel:", x["passed_to_kernel"])' "$work/live-$mode.json"
done

echo "== 2. kill -9 leaves nothing attached; sockets receive everything afterwards"
start_run "$work/xdp.toml" "$work/killed.json" af_xdp
kill -9 "$run_pid"
wait "$run_pid" 2>/dev/null || true
for _ in $(seq 50); do xdp_attached || break; sleep 0.1; done
if xdp_attached; then echo "FAIL: XDP program still attached after kill -9"; exit 1; fi
start_run "$work/sockets.toml" "$work/after-kill.json"
send "$work/qfb1.pcap"
stop_run
check_backend "$work/after-kill.json" sockets
compare "$work/after-kill.json" "$work/qfb1-replay.json"

echo "== 3. zero-copy refused: exit 2 with the reason; fallback = \"sockets\" says so"
make_config "$configs/demo.toml" "$work/zc.toml" "[receiver]" "backend = \"af_xdp\"" \
  "af_xdp = { interface = \"vrx\", zero_copy = \"true\" }"
set +e
ip netns exec "$rx" "$bin" run --config "$work/zc.toml" --json --quiet --duration 1 > /dev/null 2> "$work/zc.err"
rc=$?
set -e
[[ $rc -eq 2 ]] || { echo "FAIL: zero_copy = true on veth exited $rc, expected 2"; cat "$work/zc.err"; exit 1; }
grep -q "zero-copy refused" "$work/zc.err" || { echo "FAIL: no reason given:"; cat "$work/zc.err"; exit 1; }
echo "exit 2: $(head -1 "$work/zc.err")"
make_config "$configs/demo.toml" "$work/fallback.toml" "[receiver]" "backend = \"af_xdp\"" \
  "af_xdp = { interface = \"vrx\", zero_copy = \"true\", fallback = \"sockets\" }"
start_run "$work/fallback.toml" "$work/fallback.json"
send "$work/qfb1.pcap"
stop_run
[[ $(grep -c "receiving on sockets" "$work/fallback.json.err") -eq 1 ]] ||
  { echo "FAIL: the fallback was not said once:"; cat "$work/fallback.json.err"; exit 1; }
check_backend "$work/fallback.json" sockets
compare "$work/fallback.json" "$work/qfb1-replay.json"

echo "== 4. MDP3 and ITCH 5.0 through AF_XDP (line A loses 5 %: B fills it)"
for combo in mdp3:generic mdp3:native itch50:generic itch50:native; do
  proto=${combo%%:*}
  mode=${combo##*:}
  demo=$configs/mdp3-demo.toml
  [[ $proto == itch50 ]] && demo=$configs/itch-demo.toml
  make_config "$demo" "$work/$proto-sockets.toml"
  make_config "$demo" "$work/$proto-xdp.toml" "[receiver]" "backend = \"af_xdp\"" \
    "af_xdp = { interface = \"vrx\", mode = \"$mode\" }"
  make_capture "$work/$proto.pcap" --protocol "$proto" --config "$demo" --duration 1 --seed 7 --loss-a 0.05
  # Live against live: a replay reads MDP3's snapshot lines whole, a live
  # handler only while it wants them (either backend), and when it leaves
  # them depends on the thread timing: the snapshot-line packets and the
  # snapshots they applied are left out, every book and sequence is compared.
  start_run "$work/$proto-sockets.toml" "$work/$proto-sockets.json"
  send "$work/$proto.pcap"
  stop_run
  start_run "$work/$proto-xdp.toml" "$work/$proto-live.json" af_xdp
  send "$work/$proto.pcap"
  stop_run
  echo "-- $proto, $mode mode"
  ignored=()
  [[ $proto == mdp3 ]] && ignored=(packets messages snapshots_applied stale_snapshots)
  compare "$work/$proto-live.json" "$work/$proto-sockets.json" "${ignored[@]}"
done
echo "PASS"
