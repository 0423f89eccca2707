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


def stages(side):
    per = {}
    for f in sorted(glob.glob(os.path.join(args.tmp, f"{side}-stages-*.json"))):
        for b in json.load(open(f))["benchmarks"]:
            per.setdefault(b["name"], []).append(b.get("ns_per_msg", b["cpu_time"]))
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
    lines.append(f"| replay_capture, M messages/s | {b:.1f} | {h:.1f} | {h / b:.2f} |")
text = "\n".join(lines)
print(text)
if args.out:
    open(args.out, "w").write(text + "\n")
