#!/usr/bin/env python3
"""The control path's own cost, from PRECCL_TRACE files: per (collective, algorithm, policy) at the largest
size traced, the mean time a rank spent deciding the allocation (model update and policy step: `decideNs`)
and building the plan from it (`planNs`: under rail affinity every sender's split and the relay's choice)
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
    for rank, epoch, dec, plan, ex in rows:
        seen[rank] = seen.get(rank, 0) + 1
        if seen[rank] > a.skip:
            kept.append((dec, plan, ex))
    if not kept:
        return

    def stats(xs):
        xs = sorted(xs)
        return f"{xs[(len(xs) - 1) // 2] / 1e3:.2f} / {sum(xs) / len(xs) / 1e3:.2f} / {xs[-1] / 1e3:.1f}"

    plans = [k[1] for k in kept if k[1] is not None]   # none in traces from before planNs
    mean_dec = sum(k[0] for k in kept) / len(kept)
    mean_plan = sum(plans) / len(plans) if plans else 0
    mean_ex = sum(k[2] for k in kept) / len(kept)
    print(f"| {coll} | {algo} | {policy} | {count} | {len(kept)} | {stats([k[0] for k in kept])} | "
          f"{stats(plans) if plans else 'n/a'} | {mean_ex / 1e6:.3f} | {100 * mean_dec / mean_ex:.4f} % | "
          f"{100 * (mean_dec + mean_plan) / mean_ex:.4f} % |")



def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--skip", type=int, default=1, help="calls per rank left out first (warm-up), default 1")
    ap.add_argument("--all-sizes", action="store_true", help="a row per size, not only the largest")
    a = ap.parse_args()
    groups = {}   # (coll, algo, policy) -> {count: [(rank, epoch, decideNs, planNs or None, execNs)]}
    for path in a.traces:
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                if "decideNs" not in r:
                    raise SystemExit(f"{path}: a trace without decideNs (written before the library timed it)")
                key = (r["coll"], r["algo"], r["policy"])
                groups.setdefault(key, {}).setdefault(r["count"], []).append(
                    (r["rank"], r["epoch"], r["decideNs"], r.get("planNs"), r["execNs"]))
    print("| collective | algorithm | policy | count | calls | decide, us (median / mean / max) "
          "| plan, us (median / mean / max) | call, ms (mean) | decide / call | (decide + plan) / call |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for (coll, algo, policy), by_count in sorted(groups.items()):
        # The benchmark's size, not its small setup calls; or every size of a sweep.
        for count in sorted(by_count) if a.all_sizes else [max(by_count)]:
            row(a, coll, algo, policy, count, by_count[count])

if __name__ == "__main__":
    main()
