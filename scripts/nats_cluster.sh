#!/usr/bin/env bash
# A 3-node NATS cluster with JetStream on loopback (the fan-out's demo and
# its end-to-end test): every port on 127.0.0.1 — clients BASE+1..3, routes
# BASE+11..13, monitoring BASE+21..23 — state under DIR.
# usage: scripts/nats_cluster.sh start DIR BASE   starts it, returns once JetStream is healthy
#                                                 on every node (node N's pid in DIR/nN.pid)
#        scripts/nats_cluster.sh stop DIR         stops the nodes still running
set -euo pipefail
cmd=${1:?start or stop}
dir=${2:?DIR}
case $cmd in
  start)
    base=${3:?BASE}
    command -v nats-server >/dev/null || { echo "nats_cluster: nats-server not installed (scripts/setup.sh)" >&2; exit 77; }
    mkdir -p "$dir"
    routes="nats-route://127.0.0.1:$((base + 11)), nats-route://127.0.0.1:$((base + 12)), nats-route://127.0.0.1:$((base + 13))"
    for n in 1 2 3; do
      mkdir -p "$dir/n$n"
      cat >"$dir/n$n.conf" <<CONF
server_name: n$n
listen: 127.0.0.1:$((base + n))
http: 127.0.0.1:$((base + 20 + n))
jetstream { store_dir: "$dir/n$n", max_memory_store: 64MB, max_file_store: 64MB }
cluster { name: tickgate, listen: 127.0.0.1:$((base + 10 + n)), routes: [$routes] }
CONF
      nats-server -c "$dir/n$n.conf" >"$dir/n$n.log" 2>&1 &
      echo $! >"$dir/n$n.pid"
    done
    # JetStream is usable once every node's health check passes (a meta leader elected).
    for n in 1 2 3; do
      for _ in $(seq 150); do
        curl -sf "http://127.0.0.1:$((base + 20 + n))/healthz" >/dev/null 2>&1 && continue 2
        sleep 0.1
      done
      echo "nats_cluster: node $n not healthy; its log:" >&2
      tail -20 "$dir/n$n.log" >&2
      exit 1
    done
    ;;
  stop)
    for f in "$dir"/n*.pid; do
      [[ -e $f ]] || continue
      kill "$(cat "$f")" 2>/dev/null || true
      rm -f "$f"
    done
    ;;
  *) echo "nats_cluster: start or stop" >&2; exit 2 ;;
esac
