#!/usr/bin/env python3
"""Merges the outputs of stages_bench (Google Benchmark JSON), ring_bench and
replay_bench into one JSON and a Markdown table of the key figures (run.sh)."""
import argparse
import datetime
import json

ap = argparse.ArgumentParser()
for a in ("stages", "ring", "replay", "json", "md", "host", "load"):
    ap.add_argument("--" + a, required=a != "load", default="")
args = ap.parse_args()

stages = json.load(open(args.stages))
ring = json.load(open(args.ring))
replay = json.load(open(args.replay))

# Median aggregate of each benchmark: ns/message on CPU time (the counter) and
# on wall time (scaled by real/cpu), items/s.
med = {}
for b in stages["benchmarks"]:
    if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
        continue
    name = b.get("run_name", b["name"])
    cpu, real = b["cpu_time"], b["real_time"]
    ns = b.get("ns_per_msg", 0.0)
    med[name] = {"ns_per_msg": ns, "ns_per_msg_wall": ns * real / cpu if cpu else ns,
                 "items_per_second": b.get("items_per_second", 0.0),
                 "extra": {k: v for k, v in b.items() if k.startswith("pct_") or k in ("levels", "bytes_per_msg", "ok_pct")}}

tp = {(t["mode"], t["capacity"]): t for t in ring["throughput"]}
ring_main = tp[("single", 4096)]


def ns(name):
    return med.get(name, {}).get("ns_per_msg", float("nan"))


goals = [
    ("pipeline only-Q, ns/msg", ns("BM_Pipeline/only_Q"), "<=", 20.0),
    ("pipeline only-D 20 levels, ns/msg", ns("BM_Pipeline/only_D_20lvl"), "<=", 30.0),
    ("Gate::check, ns", ns("BM_GateCheck"), "<=", 5.0),
    ("ring throughput tickgate/boost (single, 4096)", ring_main["ratio"], ">=", 1.5),
    ("replay, M messages/s", replay["replay_msgs_per_s"] / 1e6, ">=", 20.0),
]
goal_rows = [{"goal": g, "value": v, "op": op, "target": t, "met": (v <= t if op == "<=" else v >= t)}
             for g, v, op, t in goals]

machine = ring["machine"]
merged = {"date": datetime.date.today().isoformat(), "host": args.host, "machine": machine, "load_avg": args.load,
          "stages_median": med, "goals": goal_rows, "stages": stages, "ring": ring, "replay": replay}
with open(args.json, "w") as f:
    json.dump(merged, f, indent=1)

L = []
L.append(f"# tickgate benchmarks — {merged['date']} — {args.host}\n")
L.append(f"CPU: {machine['cpu']}, {machine['cores']} cores; kernel {machine['kernel']}; governor {machine['governor']}; "
         f"load average before/after: {args.load}. Release build, g++ -O3; stages pinned to CPU 1; "
         f"medians of {stages['benchmarks'][0].get('repetitions', '?')} repetitions.\n")
L.append("## Goals\n")
L.append("| goal | median | target | met |\n|---|---:|---:|:-:|")
for g in goal_rows:
    L.append(f"| {g['goal']} | {g['value']:.2f} | {g['op']} {g['target']:g} | {'yes' if g['met'] else '**no**'} |")
L.append("\n## Stages (per message, median; CPU time, wall time in parentheses)\n")
L.append("| benchmark | ns/msg | (wall) | M msgs/s | notes |\n|---|---:|---:|---:|---|")
for name, m in med.items():
    extra = ", ".join(f"{k}={v:.3g}" for k, v in m["extra"].items())
    L.append(f"| {name} | {m['ns_per_msg']:.2f} | ({m['ns_per_msg_wall']:.2f}) | {m['items_per_second'] / 1e6:.1f} | {extra} |")
for v in ("mix", "only_Q", "only_D_20lvl"):
    p, c = ns(f"BM_Pipeline/{v}"), ns(f"BM_Memcpy/{v}")
    if p == p and c == c and c:
        L.append(f"\npipeline/{v}: {p:.1f} ns/msg = {p / c:.1f}x a memcpy of the same bytes ({c:.2f} ns/msg)")
L.append("\n## SPSC ring, producer core 0 -> consumer core 1 (64-byte Event)\n")
L.append("| mode | capacity | tickgate M ev/s | boost M ev/s | ratio | worst CPU share |\n|---|---:|---:|---:|---:|---:|")
for t in ring["throughput"]:
    L.append(f"| {t['mode']} | {t['capacity']} | {t['tickgate_median'] / 1e6:.1f} | {t['boost_median'] / 1e6:.1f} | "
             f"{t['ratio']:.2f} | {t.get('cpu_share', float('nan')):.2f} |")
L.append("\n(CPU share = thread CPU time / wall time; well below 1 means a spinning thread was descheduled by other load.)")
rt = ring["roundtrip_ns"]
L.append(f"\nRound trip through two rings, {rt['trips']} trips, ns:\n")
L.append("| ring | p50 | p90 | p99 | p99.9 | max |\n|---|---:|---:|---:|---:|---:|")
for k in ("tickgate", "boost"):
    r = rt[k]
    L.append(f"| {k} | {r['p50']:.0f} | {r['p90']:.0f} | {r['p99']:.0f} | {r['p99_9']:.0f} | {r['max']:.0f} |")
L.append("\n## Offline replay\n")
L.append(f"Capture {replay['capture']}: {replay['records']} datagrams, {replay['messages']} messages, "
         f"{replay['frame_bytes'] / 1e6:.0f} MB of frames; all accepted: {str(replay['clean']).lower()}.\n")
L.append("| reader | M msgs/s |\n|---|---:|")
L.append(f"| bare pcap_next_ex loop | {replay['bare_msgs_per_s'] / 1e6:.1f} |")
L.append(f"| replay_capture + Handler | {replay['replay_msgs_per_s'] / 1e6:.1f} |")
L.append(f"\nratio replay/bare: {replay['ratio']:.2f}")
with open(args.md, "w") as f:
    f.write("\n".join(L) + "\n")
