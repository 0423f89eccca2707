#!/usr/bin/env python3
"""Side-by-side medians of the base and head runs written by compare.sh."""
import argparse
import glob
import json
import os
import statistics

ap = argparse.ArgumentParser()
ap.add_argument("--tmp", required=True)
ap.add_argument("--base", required=True)
ap.add_argument("--rounds", required=True)
ap.add_argument("--load", default="")
ap.add_argument("--out", default="")
args = ap.parse_args()


def stages(side, counter="ns_per_msg", fallback="cpu_time"):
    per = {}
    for f in sorted(glob.glob(os.path.join(args.tmp, f"{side}-stages-*.json"))):
        for b in json.load(open(f))["benchmarks"]:
            v = b.get(counter, b.get(fallback) if fallback else None)
            if v is not None:
                per.setdefault(b["name"], []).append(v)
    return per


def replay(side):
    return [json.load(open(f))["replay_msgs_per_s"] / 1e6
            for f in sorted(glob.glob(os.path.join(args.tmp, f"{side}-replay-*.json")))]


base, head = stages("base"), stages("head")
lines = [f"Before/after, one run, {args.rounds} alternating rounds (base {args.base}); load at end {args.load}", "",
         "| benchmark | before ns/msg (median) | after ns/msg (median) | after/before |",
         "|---|---:|---:|---:|"]
for name in base:
    if name not in head:
        continue
    b, h = statistics.median(base[name]), statistics.median(head[name])
    lines.append(f"| {name} | {b:.1f} | {h:.1f} | {h / b:.2f} |")
rb, rh = replay("base"), replay("head")
if rb and rh:
    b, h = statistics.median(rb), statistics.median(rh)
    lines.append(f"| replay (`tickgate replay`), M messages/s | {b:.1f} | {h:.1f} | {h / b:.2f} |")
# Benchmarks that time each datagram (counters p50/p99_ns_per_msg): their percentiles, medians over the rounds.
pb, ph = stages("base", "p99_ns_per_msg", None), stages("head", "p99_ns_per_msg", None)
qb, qh = stages("base", "p50_ns_per_msg", None), stages("head", "p50_ns_per_msg", None)
if ph:
    lines += ["", "Per datagram, ns per message (median over the rounds of each round's percentile):", "",
              "| benchmark | before p50 | after p50 | before p99 | after p99 |", "|---|---:|---:|---:|---:|"]
    for name in ph:
        med = lambda d: f"{statistics.median(d[name]):.1f}" if name in d else "—"
        lines.append(f"| {name} | {med(qb)} | {med(qh)} | {med(pb)} | {med(ph)} |")
text = "\n".join(lines)
print(text)
if args.out:
    open(args.out, "w").write(text + "\n")
