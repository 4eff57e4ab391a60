"""Where a run's bytes went: per leg, what each NIC sent while the ranks ran (the root-side veth
counters, delta_ranks), each NIC's part of its host's, and for PReCCL how many of rank 0's bytes on each
NIC it forwarded for the other rank of its host (the relay of PRECCL_NIC_AFFINITY=rail: iter.csv's
vt<k>_relayed over vt<k>_bytes, every timed call). Prints a markdown table and writes bytes.svg into the
run's directory: one bar per NIC and leg, the relayed part of rank 0's NICs hatched.

  python3 -m perf.testbed bytes-where OUT_DIR [--collective C]
"""
import os
import sys
from xml.sax.saxutils import escape

from . import leg_files
from .bed_names import parse_nic_label

COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"]


def leg_bytes(leg):
    """{(host, nic): tx bytes} while the ranks ran."""
    out = {}
    for label, d in (leg.get("delta_ranks") or {}).items():
        h, k = parse_nic_label(label)
        out[(h, k)] = d.get("tx_bytes", 0)
    return out


def relayed_fraction(leg):
    """{nic: fraction of rank 0's bytes on that NIC it forwarded for another rank}, over the timed calls."""
    sent, relayed = {}, {}
    for row in leg.get("vt_share") or []:
        k = row.get("nic", -1)
        sent[k] = sent.get(k, 0) + row.get("vt_bytes", 0)
        relayed[k] = relayed.get(k, 0) + row.get("relayed", 0)
    return {k: relayed[k] / sent[k] for k in sent if sent[k] > 0}


def table(legs):
    lines = ["| leg | NIC | sent (MB) | part of its host's | rank 0: relayed part |", "| --- | --- | --- | --- | --- |"]
    for leg in legs:
        b = leg_bytes(leg)
        rel = relayed_fraction(leg)
        for (h, k) in sorted(b):
            host = sum(v for (hh, _), v in b.items() if hh == h)
            r = f"{rel[k]:.2f}" if h == 0 and k in rel else ""
            lines.append(f"| {leg['system']} | h{h}.nic{k} | {b[(h, k)] / 1e6:.1f} | {b[(h, k)] / host if host else 0:.2f} | {r} |")
    return "\n".join(lines)


def svg(legs, title):
    bars = [(leg, hk, v) for leg in legs for hk, v in sorted(leg_bytes(leg).items())]
    if not bars:
        return None
    vmax = max(v for _, _, v in bars) or 1
    left, top, bar_h, gap, width = 260, 40, 14, 10, 560
    rows, y = [], top
    for i, leg in enumerate(legs):
        rel = relayed_fraction(leg)
        rows.append(f'<text x="10" y="{y + 11}" font-size="12" font-weight="bold">{escape(leg["system"])}</text>')
        y += bar_h + 2
        for (h, k), v in sorted(leg_bytes(leg).items()):
            w = width * v / vmax
            rows.append(f'<text x="{left - 6}" y="{y + 11}" font-size="11" text-anchor="end">h{h}.nic{k}</text>')
            rows.append(f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="{COLORS[k % len(COLORS)]}"/>')
            if h == 0 and rel.get(k, 0) > 0:
                rw = w * rel[k]
                rows.append(f'<rect x="{left + w - rw:.1f}" y="{y}" width="{rw:.1f}" height="{bar_h}" fill="url(#hatch)"/>')
            rows.append(f'<text x="{left + w + 4:.1f}" y="{y + 11}" font-size="10">{v / 1e6:.0f} MB</text>')
            y += bar_h + 2
        y += gap
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 120}" height="{y + 30}" font-family="sans-serif">'
            '<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
            '<rect width="6" height="6" fill="#fff" fill-opacity="0.3"/><line x1="0" y1="0" x2="0" y2="6" stroke="#000" '
            'stroke-width="2"/></pattern></defs>'
            f'<text x="10" y="20" font-size="14" font-weight="bold">{escape(title)}</text>'
            f'<text x="{left}" y="{y + 20}" font-size="11">bytes each NIC sent while the ranks ran; hatched: the part '
            "of rank 0's bytes it forwarded for its host's other rank</text>")
    return head + "".join(rows) + "</svg>"


def add_commands(sub):
    p = sub.add_parser("bytes-where", help="what each NIC sent per leg, and the relayed part (bytes.svg)",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("out_dir")
    p.add_argument("--collective")
    p.set_defaults(fn=main)


def main(a):
    try:
        res = leg_files.load_result(a.out_dir)
    except (OSError, ValueError) as e:
        sys.exit(f"bytes-where: {e}")
    legs = [leg for leg in leg_files.select_legs(res, a.collective) if leg.get("ok")]
    print(table(legs))
    picture = svg(legs, f"{os.path.basename(os.path.normpath(a.out_dir))}: where the bytes went")
    if picture:
        path = os.path.join(a.out_dir, "bytes.svg")
        with open(path, "w") as f:
            f.write(picture)
        print(f"\n{path}")
    return 0
