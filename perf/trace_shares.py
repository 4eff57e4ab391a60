#!/usr/bin/env python3
"""Summarise a PRECCL_TRACE file: per epoch, the share of each NIC's VTs and the slowest VT's elapsed time
of one rank, and how much the shares move from epoch to epoch (the oscillation measure of docs/policy.md).

usage: trace_shares.py TRACE.jsonl [--rank R] [--nics K] [--coll AllReduce]
"""
import argparse
import json


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--nics", type=int, default=2, help="VT v uses NIC v mod K")
    ap.add_argument("--coll", default="AllReduce")
    a = ap.parse_args()
    rows = [json.loads(line) for line in open(a.trace)]
    rows = [r for r in rows if r["rank"] == a.rank and r["coll"] == a.coll]
    if not rows:
        raise SystemExit(f"{a.trace}: no {a.coll} lines of rank {a.rank}")
    rows.sort(key=lambda r: r["epoch"])
    count = max(r["count"] for r in rows)  # the benchmark's size, not its small setup calls
    rows = [r for r in rows if r["count"] == count]
    shares = [[v["share"] for v in r["vts"]] for r in rows]
    print(f"policy {rows[0]['policy']}, {len(rows)} epochs of {a.coll} count {count}, rank {a.rank}")
    print("epoch  " + "  ".join(f"nic{k}" for k in range(a.nics)) + "  slowest-VT ms")
    for r, s in zip(rows, shares):
        per_nic = [sum(x for v, x in enumerate(s) if v % a.nics == k) for k in range(a.nics)]
        slowest = max(v["elapsedNs"] for v in r["vts"]) / 1e6
        print(f"{r['epoch']:5d}  " + "  ".join(f"{x:.3f}" for x in per_nic) + f"  {slowest:10.1f}")
    moves = [max(abs(x - y) for x, y in zip(shares[i], shares[i - 1])) for i in range(1, len(shares))]
    tail = moves[len(moves) // 2:] or [0.0]
    print(f"largest per-VT share change per epoch, second half: mean {100 * sum(tail) / len(tail):.2f}%, "
          f"max {100 * max(tail):.2f}%")


if __name__ == "__main__":
    main()
