#!/usr/bin/env python3
"""Merges the outputs of stages_bench (Google Benchmark JSON), ring_bench,
replay_bench and mdp3_bench into one JSON and a Markdown table of the key
figures (run.sh); with --flows, the ns-per-message table bench/plot_flows.gp
draws (alone: --stages, --mdp3 and --flows only)."""
import argparse
import datetime
import json
import os
import sys

ap = argparse.ArgumentParser()
for a in ("stages", "ring", "replay", "json", "md", "host", "load", "mdp3", "flows"):
    ap.add_argument("--" + a, required=a == "stages", default="")
args = ap.parse_args()

stages = json.load(open(args.stages))

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
                 "p50_ns_per_msg": b.get("p50_ns_per_msg"), "p99_ns_per_msg": b.get("p99_ns_per_msg"),
                 "extra": {k: v for k, v in b.items() if k.startswith("pct_") or k in ("levels", "bytes_per_msg", "ok_pct")}}
mdp3 = json.load(open(args.mdp3)) if args.mdp3 else None

# ns per message per flow and protocol (bench/plot_flows.gp): mean, and p50 / p99
# over datagrams of each datagram's time over its messages, where measured ("?").
flows = []


def cell(v, missing, digits):
    return missing if v is None else f"{v:.{digits}f}"


for name, label in (("BM_Pipeline/mix", "QFB/1 mix"), ("BM_Pipeline/only_Q", "QFB/1 Q only"),
                    ("BM_Pipeline/only_D_20lvl", "QFB/1 D only, 20 levels")):
    if name in med:
        flows.append((label, med[name]["ns_per_msg"], None, None))
if mdp3:
    # Named by the capture mdp3_bench read (its file name without the extension).
    capture = os.path.splitext(os.path.basename(mdp3["capture"]))[0]
    for st in mdp3["streams"]:
        label = {"mdp3": f"MDP3 {capture}", "mdp3_repaired_first": f"MDP3 {capture}, instruments repaired",
                 "qfb1_mix": "QFB/1 mix, per datagram"}.get(st["stream"])
        if label:
            flows.append((label, st["mean_ns_per_msg"], st["p50_ns_per_msg"], st["p99_ns_per_msg"]))
itch_labels = {"uniform_5000_stocks": "ITCH uniform, 5,000 stocks", "half_on_100_stocks": "ITCH half on 100 stocks",
               "day_like_8000_stocks": "ITCH day-like, 8,000 stocks",
               "uniform_5000_stocks_5_subscribed": "ITCH 5 of 5,000 booked",
               "uniform_5000_stocks_500_subscribed": "ITCH 500 of 5,000 booked"}
for name, m in med.items():
    if name.startswith("BM_Itch_Pipeline/"):
        flow = name.split("/", 1)[1]
        flows.append((itch_labels.get(flow, "ITCH " + flow), m["ns_per_msg"], m["p50_ns_per_msg"], m["p99_ns_per_msg"]))
if args.flows:
    with open(args.flows, "w") as f:
        f.write("# flow\tmean\tp50\tp99 (ns per message; ? = not measured per datagram)\n")
        for label, mean, p50, p99 in flows:
            f.write(f"\"{label}\"\t" + "\t".join(cell(v, "?", 2) for v in (mean, p50, p99)) + "\n")
if not (args.ring and args.replay and args.json and args.md):
    if not args.flows:
        ap.error("--ring, --replay, --json and --md, or --flows alone (with --stages and --mdp3)")
    sys.exit(0)

ring = json.load(open(args.ring))
replay = json.load(open(args.replay))
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
          "stages_median": med, "goals": goal_rows, "stages": stages, "ring": ring, "replay": replay, "mdp3": mdp3}

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
if flows:
    L.append("\n## ns per message per flow and protocol (mean; p50 / p99 of each datagram's time over its messages)\n")
    L.append("| flow | mean | p50 | p99 |\n|---|---:|---:|---:|")
    for label, mean, p50, p99 in flows:
        L.append(f"| {label} | " + " | ".join(cell(v, "—", 1) for v in (mean, p50, p99)) + " |")
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
L.append(f"| tickgate replay (BasicReplay) | {replay['replay_msgs_per_s'] / 1e6:.1f} |")
L.append(f"\nratio replay/bare: {replay['ratio']:.2f}")
with open(args.md, "w") as f:
    f.write("\n".join(L) + "\n")
