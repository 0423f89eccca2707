#!/usr/bin/env python3
"""Compares a `tickgate replay --json` summary with a certification
expected summary, by the rules of shared/cert/README.md. Exit 0 if equal.
usage: cert_compare.py ACTUAL.json EXPECTED.json [--two-line]"""
import json
import sys

EXACT_GLOBAL = ["malformed_packets", "unknown_messages", "stale_session_packets"]
EXACT_INSTR = ["last_seq", "accepted", "lost", "suspect", "gate"]
PER_MESSAGE = ["duplicates", "heartbeats", "snapshots_applied", "stale_snapshots"]


def main():
    actual, expected = (json.load(open(p)) for p in sys.argv[1:3])
    two_line = "--two-line" in sys.argv
    errors = []
    for k in EXACT_GLOBAL:
        if actual.get(k) != expected[k]:
            errors.append(f"{k}: got {actual.get(k)}, expected {expected[k]}")
    got = {i["id"]: i for i in actual["instruments"]}
    want = {i["id"]: i for i in expected["instruments"]}
    if sorted(got) != sorted(want):
        errors.append(f"instrument ids: got {sorted(got)}, expected {sorted(want)}")
    for iid, w in want.items():
        g = got.get(iid)
        if g is None:
            continue
        keys = EXACT_INSTR + ([] if two_line else PER_MESSAGE) + ["symbol"]
        if not w["suspect"]:
            keys += ["bids", "asks"]
        for k in keys:
            if g.get(k) != w[k]:
                errors.append(f"instrument {iid} {k}: got {g.get(k)}, expected {w[k]}")
        if two_line:
            for k in PER_MESSAGE:  # a handler may count fewer copies, never more
                if g.get(k, 0) > w[k]:
                    errors.append(f"instrument {iid} {k}: got {g.get(k)} > reference {w[k]}")
    for e in errors:
        print(e)
    print("MATCH" if not errors else f"{len(errors)} differences")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
