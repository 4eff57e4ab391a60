"""Per-TCP-flow rates on the bed, from the kernel's own counters: which flow of a call got how much of a
link, and whether it was limited by its window or by losses.

`python3 -m perf.testbed tcp-flows sample SECONDS OUT.csv` reads `ss -tin` in every bed namespace every
0.5 s (run it beside `python3 -m perf.testbed run`; it enters the namespaces, so root) and writes one row per
flow per sample: bytes acked, congestion window, retransmissions, smoothed RTT, the receive window
threshold. `python3 -m perf.testbed tcp-flows table OUT.csv FROM TO` prints each flow's Mbit/s per sample
interval between two unix times (a call's start and end, from the leg's iter.csv), named hH nN (host, NIC)
from the bed's addresses, for flows that moved at least 1 MB. Sampling costs a few per cent of a core.
OUT.csv is this command's own file, not one of a leg's.
"""
import argparse
import collections
import csv
import re
import subprocess
import time

from . import bed_names

FIELDS = ["t", "ns", "local", "peer", "bytes_acked", "cwnd", "retrans", "rtt_ms", "rcv_ssthresh"]


def parse_ss(text):
    """Flows of `ss -tinH` output: (local, peer, {field: value}) for each established socket."""
    flows, lines = [], text.splitlines()
    for i, line in enumerate(lines):
        f = line.split()
        if len(f) < 4 or ":" not in f[-1] or i + 1 >= len(lines) or not lines[i + 1][:1].isspace():
            continue
        info = lines[i + 1]

        def num(key, pattern=r"([\d.]+)"):
            m = re.search(rf"\b{key}:{pattern}", info)
            return m.group(1) if m else ""
        retrans = re.search(r"\bretrans:\d+/(\d+)", info)
        flows.append((f[-2], f[-1], {"bytes_acked": num("bytes_acked"), "cwnd": num("cwnd"),
                                     "retrans": retrans.group(1) if retrans else "0",
                                     "rtt_ms": num("rtt", r"([\d.]+)/"), "rcv_ssthresh": num("rcv_ssthresh")}))
    return flows


def sample(seconds, out_path):
    end = time.time() + seconds
    with open(out_path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(FIELDS)
        while time.time() < end:
            t = time.time()
            listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split("\n")
            owned = [bed_names.owned_netns_re(p) for p in bed_names.live_prefixes()]
            for ns in [l.split()[0] for l in listed if l and any(o.match(l.split()[0]) for o in owned)]:
                text = subprocess.run(["ip", "netns", "exec", ns, "ss", "-tinH", "state", "established"],
                                      capture_output=True, text=True).stdout
                for local, peer, v in parse_ss(text):
                    w.writerow([f"{t:.3f}", ns, local, peer] + [v[k] for k in FIELDS[4:]])
            f.flush()
            time.sleep(max(0.0, 0.5 - (time.time() - t)))


def nic_of(addr):
    """'198.18.K.H+1:port' -> 'hHnK' (bed_names.address's layout)."""
    host_nic = bed_names.parse_address(addr.rsplit(":", 1)[0])
    return f"h{host_nic[0]}n{host_nic[1]}" if host_nic else addr


def table(csv_path, t0, t1):
    series = collections.defaultdict(list)
    with open(csv_path) as f:
        for r in csv.DictReader(f):
            t = float(r["t"])
            if r["bytes_acked"] and t0 - 0.6 <= t <= t1 + 0.6:
                series[(r["ns"], r["local"], r["peer"])].append((t, int(r["bytes_acked"]), int(r["retrans"] or 0)))
    times = sorted({t for s in series.values() for t, _, _ in s})
    print("flow          " + " ".join(f"{t - t0:5.1f}" for t in times[1:]) + "  | retransmitted")
    rows = []
    for (ns, local, peer), s in series.items():
        if len(s) < 2 or s[-1][1] - s[0][1] < 1_000_000:
            continue
        at = {t: b for t, b, _ in s}
        cells = [f"{(at[b] - at[a]) * 8 / (b - a) / 1e6:5.1f}" if a in at and b in at else "    ."
                 for a, b in zip(times, times[1:])]
        rows.append((nic_of(local), nic_of(peer), cells, s[-1][2] - s[0][2]))
    for src, dst, cells, rt in sorted(rows):
        print(f"{src}->{dst}  " + " ".join(cells) + f"  | {rt}")


def add_commands(sub):
    p = sub.add_parser("tcp-flows", help="per-TCP-flow rates on the beds that are up, from `ss -tin`",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = p.add_subparsers(dest="verb", required=True)
    q = verbs.add_parser("sample", help="every 0.5 s for SECONDS, into OUT.csv (root)")
    q.add_argument("seconds", type=float)
    q.add_argument("out")
    q.set_defaults(fn=lambda a: sample(a.seconds, a.out))
    q = verbs.add_parser("table", help="each flow's Mbit/s per sample between two unix times")
    q.add_argument("csv")
    q.add_argument("t0", type=float, metavar="FROM")
    q.add_argument("t1", type=float, metavar="TO")
    q.set_defaults(fn=lambda a: table(a.csv, a.t0, a.t1))
