#!/usr/bin/env bash
# Issue 26 findings 2 and 3: each of the demos (scripts/demo.sh,
# scripts/demo.sh mdp3, scripts/demo.sh itch, and with nats-server scripts/demo.sh fanout) runs to its end and ends with
# the summary a newcomer reads: the gate's answers and why, and what
# recovered (MDP3: the snapshot feed joined and left; ITCH: the late join and
# the hole given up, each repaired by a GLIMPSE snapshot). Loopback multicast
# only (interface 127.0.0.1, TTL 0: the demo configs). Runs the given binary
# (TICKGATE_BIN), so it builds nothing.
# usage: tests/tools/demo_test.sh TICKGATE_BINARY
set -euo pipefail
cd "$(dirname "$0")/../.."
export TICKGATE_BIN=$1
seconds=4
fail() { echo "demo_test: $*" >&2; exit 1; }

out=$(scripts/demo.sh "$seconds" 2>/dev/null) || fail "scripts/demo.sh exited $?"
grep -q 'instruments; gate at the end:' <<<"$out" || fail "QFB/1 demo: no gate summary: $out"
grep -q 'messages lost on both lines and counted: [1-9]' <<<"$out" || fail "QFB/1 demo: no loss counted: $out"
grep -q "'stale' is the gate doing its job" <<<"$out" || fail "QFB/1 demo: the end's stale rows are not explained: $out"

out=$(scripts/demo.sh mdp3 "$seconds" 2>/dev/null) || fail "scripts/demo.sh mdp3 exited $?"
grep -Eq 'snapshot feed: [1-9][0-9]* joins, [1-9][0-9]* leaves' <<<"$out" || fail "MDP3 demo: the snapshot feed was not joined and left: $out"
grep -q 'instruments; gate at the end:' <<<"$out" || fail "MDP3 demo: no gate summary: $out"

out=$(scripts/demo.sh itch "$seconds" 2>/dev/null) || fail "scripts/demo.sh itch exited $?"
grep -q 'GLIMPSE snapshots: 2 requested, 2 applied, 0 failed' <<<"$out" || fail "ITCH demo: not two snapshots applied: $out"
grep -q 'snapshot asked for (late join' <<<"$out" || fail "ITCH demo: the late join is not explained: $out"
grep -q 'the re-request server did not send them' <<<"$out" || fail "ITCH demo: the given-up hole is not explained: $out"
[[ $(grep -c 'repaired: the snapshot replaced the books' <<<"$out") -eq 2 ]] || fail "ITCH demo: not two repairs: $out"
grep -Eq 'gate at the end: [0-9]+ ok$' <<<"$out" || fail "ITCH demo: not every instrument ok at the end: $out"
if command -v nats-server >/dev/null; then
  out=$(scripts/demo.sh fanout "$seconds" 2>/dev/null) || fail "scripts/demo.sh fanout exited $?"
  grep -q 'subscriber 2 (started after the handler stopped' <<<"$out" || fail "fan-out demo: no late subscriber: $out"
  grep -Eq '^records 8  duplicates 0  gaps 0  lost 0  snapshots 8 ' <<<"$out" ||
    fail "fan-out demo: the late subscriber did not read 8 snapshots: $out"
  # Its cluster is stopped when it ends (a step's exit trap once replaced the cluster's).
  for _ in $(seq 50); do
    pgrep -f 'demo-nats/n[123]\.conf' >/dev/null || break
    sleep 0.1
  done
  if pgrep -f 'demo-nats/n[123]\.conf' >/dev/null; then
    pkill -f 'demo-nats/n[123]\.conf' || true
    fail "fan-out demo: its NATS nodes still run after it ended"
  fi
fi
echo "demo_test: the demos ran and explained themselves"
