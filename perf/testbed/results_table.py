"""Merges the results.csv of several finished test-bed runs into one markdown table (docs/results.md).

The default table has one row per (scenario, collective, algorithm): PReCCL's `preccl` and `static`
policies, the best OpenMPI leg and the best Gloo leg of the runs (saying which system that was), the
capacity limit (and the flat ring's, where several ranks share a host), preccl's fraction of it, the
ratios preccl / static and preccl / best peer (saying which), and where each figure comes from: the
commit each run was measured at and the run's label (the commands are listed under the table in
docs/results.md, and result.json keeps each run's own).

`--detail` gives the lab notebook's columns instead: every system, the fraction of what TCP can carry
through a shaped NIC (`--tcp-ceiling`), and, where the runs recorded them, the hypervisor's steal, how
busy the NICs were during `preccl`'s calls (nic-use) and what the background flows delivered.

usage: python3 -m perf.testbed results-table [--detail [--tcp-ceiling 0.951]] LABEL=OUT_DIR [LABEL=OUT_DIR ...]
A label may be given several directories (e.g. static and preccl legs from different runs); for a
(collective, system) present in more than one, the last directory wins.
"""
import argparse

from . import capacity
from . import leg_files
from . import peers


def rows_of(out_dir):
    return [r for r in leg_files.read_results(out_dir) if r.get("busbw")]


def split_system(system):
    """preccl-<policy>[-tree|-ring] -> (policy or system, algorithm)."""
    if not system.startswith("preccl-"):
        return system, "ring"
    rest = system[len("preccl-"):]
    for algo in ("tree", "ring"):
        if rest.endswith("-" + algo):
            return rest[:-len(algo) - 1], algo
    return rest, "ring"


def add_commands(sub):
    p = sub.add_parser("results-table", help="several runs' results.csv -> one markdown table",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", metavar="LABEL=OUT_DIR")
    p.add_argument("--detail", action="store_true", help="the lab notebook's columns")
    p.add_argument("--tcp-ceiling", type=float, default=0.951)
    p.set_defaults(fn=main)


def collect(specs):
    """(scenario label, collective, algorithm) -> {system: row}, in first-seen order; each row also gets
    "_commit" and "_label" (its run's), "_flat_limit" (the flat ring's limit, or None)."""
    table, order = {}, []
    for spec in specs:
        if "=" not in spec:
            raise SystemExit(f"results-table: {spec!r}: want LABEL=OUT_DIR")
        label, out_dir = spec.split("=", 1)
        try:
            result = leg_files.load_result(out_dir)
        except FileNotFoundError:
            raise SystemExit(f"results-table: {out_dir}: no result.json (not a finished test-bed run)")
        bed = result["bed"]
        for r in rows_of(out_dir):
            system, algo = split_system(r["system"])
            key = (label, r["collective"], algo)
            if key not in table:
                table[key] = {}
                order.append(key)
            r["_commit"] = result.get("origin", {}).get("commit", "?")
            r["_label"] = label
            # A flat ring (or chain) of g ranks per host sends every byte it moves through the NICs: its
            # limit is the hosts' bound itself, where a hierarchical algorithm's is that x factor().
            f = capacity.factor(r["collective"], bed["hosts"], bed["ranks_per_host"])
            limit = r.get("capacity_limit")
            r["_flat_limit"] = float(limit) / f if limit and f != 1.0 and r["collective"] != "alltoall" else None
            table[key][system] = r
    return table, order


def best_of(v, kind):
    """The fastest leg among the systems of one peer kind ("openmpi", "gloo"): (system, row) or None."""
    legs = [(s, r) for s, r in v.items() if peers.is_peer(s) and peers.kind(s) == kind]
    return max(legs, key=lambda sr: float(sr[1]["busbw"]), default=None)


def current_table(table, order):
    head = ["scenario", "collective", "preccl", "static", "preccl / static", "best OpenMPI", "best Gloo",
            "preccl / best peer", "limit (flat ring)", "preccl of limit", "commit"]
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    mbit = lambda r: f"{float(r['busbw']):.1f}" if r else "-"
    for key in order:
        v = table[key]
        st, pr = v.get("static"), v.get("preccl")
        mpi, gloo = best_of(v, "openmpi"), best_of(v, "gloo")
        peer = max((p for p in (mpi, gloo) if p), key=lambda sr: float(sr[1]["busbw"]), default=None)
        named = lambda p: f"{mbit(p[1])} ({p[0]})" if p else "-"
        ratio = lambda a, b: f"{float(a['busbw']) / float(b['busbw']):.2f}x" if a and b else "-"
        any_row = pr or st or next(iter(v.values()))
        limit = any_row.get("capacity_limit")
        limit_cell = f"{float(limit):.1f}" if limit else "-"
        if any_row.get("_flat_limit"):
            limit_cell += f" ({any_row['_flat_limit']:.1f})"
        frac = f"{float(pr['fraction_of_capacity']):.2f}" if pr and pr.get("fraction_of_capacity") else "-"
        versus = f"{ratio(pr, peer[1])} ({peer[0]})" if peer and pr else "-"
        commits = sorted({r["_commit"] for r in v.values()})
        collective = key[1] + (" (tree)" if key[2] == "tree" else "")
        cells = [key[0], collective, mbit(pr), mbit(st), ratio(pr, st), named(mpi), named(gloo), versus,
                 limit_cell, frac, ", ".join(commits)]
        print("| " + " | ".join(cells) + " |")


def detail_table(table, order, tcp_ceiling):
    others = sorted({s for v in table.values() for s in v} - {"static", "preccl"})
    # The hypervisor's steal during each figure's calls (runs since the bed sampled it; docs/testbed.md).
    has_steal = any(r.get("steal") for v in table.values() for r in v.values())
    has_flows = any(r.get("flows_mbit") for v in table.values() for r in v.values())
    has_use = any(r.get("nic_use") for v in table.values() for r in v.values())
    head = ["scenario", "collective", "algorithm", "static", "preccl", "preccl / static", "limit",
            "preccl of limit", "of TCP ceiling"] + others + (["steal static / preccl"] if has_steal else []) \
        + (["preccl NIC use, mean / least"] if has_use else []) \
        + (["background flows static / preccl, Mbit/s"] if has_flows else [])
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    for key in order:
        v = table[key]
        st, pr = v.get("static"), v.get("preccl")
        f = lambda r: f"{float(r['busbw']):.1f}" if r else "-"
        ratio = f"{float(pr['busbw']) / float(st['busbw']):.2f}x" if st and pr else "-"
        limit = (pr or st or {}).get("capacity_limit")
        limit = f"{float(limit):.1f}" if limit else "-"
        frac = f"{float(pr['fraction_of_capacity']):.2f}" if pr and pr.get("fraction_of_capacity") else "-"
        tcp = f"{float(pr['fraction_of_capacity']) / tcp_ceiling:.2f}" if frac != "-" else "-"
        cells = [key[0], key[1], key[2], f(st), f(pr), ratio, limit, frac, tcp] + [f(v.get(o)) for o in others]
        if has_steal:
            pc = lambda r: f"{float(r['steal']) * 100:.0f} %" if r and r.get("steal") else "-"
            cells.append(f"{pc(st)} / {pc(pr)}")
        if has_use:
            cells.append(f"{float(pr['nic_use']):.3f} / {float(pr['nic_use_min']):.3f}"
                         if pr and pr.get("nic_use") and pr.get("nic_use_min") else "-")
        if has_flows:
            fl = lambda r: f"{float(r['flows_mbit']):.1f}" if r and r.get("flows_mbit") else "-"
            cells.append(f"{fl(st)} / {fl(pr)}")
        print("| " + " | ".join(str(c) for c in cells) + " |")


def main(a):
    table, order = collect(a.runs)
    if a.detail:
        detail_table(table, order, a.tcp_ceiling)
    else:
        current_table(table, order)
