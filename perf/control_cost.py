#!/usr/bin/env python3
"""The control path's own cost, from PRECCL_TRACE files: per (collective, algorithm, policy) at the largest
size traced, the mean time a rank spent deciding the allocation (model update and policy step: `decideNs`)
against the mean time it spent executing the call (`execNs`). This is what the adaptive policy adds on the
critical path of every call; unlike a busbw ratio of two runs it does not drown in the machine's noise.
The telemetry itself rides under every policy (docs/telemetry.md, Cost).

usage: control_cost.py TRACE.jsonl [TRACE.jsonl ...] [--skip N] [--all-sizes]
"""
import argparse
import json


def row(a, coll, algo, policy, count, calls):
    """One table row: the calls of one size, each rank's first a.skip left out."""
    rows = sorted(calls, key=lambda x: (x[0], x[1]))
    kept, seen = [], {}
    for rank, epoch, dec, ex in rows:
        seen[rank] = seen.get(rank, 0) + 1
        if seen[rank] > a.skip:
            kept.append((dec, ex))
    if not kept:
        return
    dec = sorted(d for d, _ in kept)
    ex = [e for _, e in kept]
    mean_dec, mean_ex = sum(dec) / len(dec), sum(ex) / len(ex)
    print(f"| {coll} | {algo} | {policy} | {count} | {len(kept)} | {dec[(len(dec) - 1) // 2] / 1e3:.2f} / "
          f"{mean_dec / 1e3:.2f} / {max(dec) / 1e3:.1f} | {mean_ex / 1e6:.3f} | {100 * mean_dec / mean_ex:.4f} % |")



def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--skip", type=int, default=1, help="calls per rank left out first (warm-up), default 1")
    ap.add_argument("--all-sizes", action="store_true", help="a row per size, not only the largest")
    a = ap.parse_args()
    groups = {}   # (coll, algo, policy) -> {count: [(rank, epoch, decideNs, execNs)]}
    for path in a.traces:
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                if "decideNs" not in r:
                    raise SystemExit(f"{path}: a trace without decideNs (written before the library timed it)")
                key = (r["coll"], r["algo"], r["policy"])
                groups.setdefault(key, {}).setdefault(r["count"], []).append(
                    (r["rank"], r["epoch"], r["decideNs"], r["execNs"]))
    print("| collective | algorithm | policy | count | calls | decide, us (median / mean / max) | call, ms (mean) "
          "| decide / call |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for (coll, algo, policy), by_count in sorted(groups.items()):
        # The benchmark's size, not its small setup calls; or every size of a sweep.
        for count in sorted(by_count) if a.all_sizes else [max(by_count)]:
            row(a, coll, algo, policy, count, by_count[count])

if __name__ == "__main__":
    main()
