"""Merges the results.csv of several finished test-bed runs into one markdown table (docs/results.md):
one row per (scenario, collective, algorithm), PReCCL static vs preccl (and any other system present),
the ratio preccl / static, and preccl's fraction of the capacity limit, also relative to what TCP can
carry through a shaped NIC (`--tcp-ceiling`, the fraction of the link rate one TCP flow reaches on the
bed; docs/results.md says how it was measured), and, where the runs recorded them, the hypervisor's steal
during the calls behind each figure, how busy the NICs' transmit sides were during `preccl`'s calls (the
mean over the NICs and the least busy NIC; nic-use), and what the background flows (the other tenant)
delivered during each leg.

usage: python3 perf/testbed results-table [--tcp-ceiling 0.951] SCENARIO=OUT_DIR [SCENARIO=OUT_DIR ...]
A scenario may be given several directories (e.g. static and preccl legs from different runs); for a
(collective, system) present in more than one, the last directory wins.
"""
import argparse

import leg_files


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
    p.add_argument("runs", nargs="+")
    p.add_argument("--tcp-ceiling", type=float, default=0.951)
    p.set_defaults(fn=main)


def main(a):
    table = {}      # (scenario, collective, algo) -> {system: row}
    order = []
    for spec in a.runs:
        scenario, out_dir = spec.split("=", 1)
        for r in rows_of(out_dir):
            system, algo = split_system(r["system"])
            key = (scenario, r["collective"], algo)
            if key not in table:
                table[key] = {}
                order.append(key)
            table[key][system] = r
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
        tcp = f"{float(pr['fraction_of_capacity']) / a.tcp_ceiling:.2f}" if frac != "-" else "-"
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
