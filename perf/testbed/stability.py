"""Reads a finished test-bed run and prints, per PReCCL leg, the two dynamic properties of issue 4:

- steady state: how much the per-VT shares move from one timed iteration to the next (after the first
  `--skip` iterations, the learning), both in points of the total (|s_i - s_{i-1}|) and relative to the
  VT's own share (|s_i - s_{i-1}| / s_{i-1}); mean and max over the iterations and VTs;
- reaction: for every event the leg fired (a rate change, a flow starting or stopping, a link going down
  or up), the busbw of the timed iterations around it, the new steady state (the median of the last 3
  iterations before the next event or the end), and how many iterations after the change it took to be,
  and stay, within 10% of it. Iteration k "follows" the event when it started after it; the call in flight
  at the event is iteration 0. Only timed iterations count; the benchmark's small syncs and check calls in
  between are CCTs too, so a count in timed iterations is an upper bound on the count in CCTs.

usage: python3 -m perf.testbed stability OUT_DIR [--skip N] [--collective C] [--system S]
"""
import argparse
import statistics

from . import leg_files


def load(out_dir):
    result = leg_files.load_result(out_dir)
    timeline = [r for r in leg_files.read_timeline(out_dir) if r["kind"] == "iter" and r["busbw"]]
    return result, timeline, leg_files.read_vt_shares(out_dir)


def share_moves(rows, skip):
    """rows: vt_share rows of one leg. Returns (abs moves, relative moves) between consecutive iterations."""
    by_t = {}
    for r in rows:
        by_t.setdefault(float(r["t"]), {})[int(r["vt"])] = float(r["share"])
    seq = [by_t[t] for t in sorted(by_t)][skip:]
    absm, relm = [], []
    for a, b in zip(seq, seq[1:]):
        for v in b:
            if v in a:
                absm.append(abs(b[v] - a[v]))
                if a[v] > 0:
                    relm.append(abs(b[v] - a[v]) / a[v])
    return absm, relm


def pct(xs, f):
    return f"{100 * f(xs):.2f}%" if xs else "-"


def reaction(iters, t_event, t_next):
    """iters: [(t_start, t_end, busbw)] sorted. Returns (steady, [busbw of iterations 0..], settle index)."""
    after = [x for x in iters if x[1] > t_event and x[0] < t_next]
    if not after:
        return None, [], None
    tail = [b for s, e, b in after if e <= t_next][-3:] or [after[-1][2]]
    steady = statistics.median(tail)
    settle = None
    for k in range(len(after)):
        if all(abs(b - steady) <= 0.1 * steady for _, _, b in after[k:]):
            settle = k
            break
    return steady, [b for _, _, b in after], settle


def add_commands(sub):
    p = sub.add_parser("stability", help="per PReCCL leg: share change per iteration, reaction to events",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out_dir")
    p.add_argument("--skip", type=int, default=3, help="iterations to skip as learning (default 3)")
    p.add_argument("--collective")
    p.add_argument("--system")
    p.set_defaults(fn=main)


def main(a):
    result, timeline, shares = load(a.out_dir)
    for leg in leg_files.select_legs(result, a.collective, a.system):
        coll, system = leg["collective"], leg["system"]
        if not system.startswith("preccl-"):
            mine_rows = []
        else:
            mine_rows = [r for r in shares if r["collective"] == coll and r["system"] == system]
        rows = sorted((r for r in timeline if r["collective"] == coll and r["system"] == system),
                      key=lambda r: float(r["t"]))
        iters = [(float(r["t"]) - float(r["time_us"]) / 1e6, float(r["t"]), float(r["busbw"])) for r in rows]
        print(f"== {coll} / {system}: {len(iters)} timed iterations")
        steal = [r.get("steal") for r in rows]
        if any(steal):  # runs from before the bed sampled it have none
            print("   hypervisor steal per iteration, % of the CPU: "
                  + " ".join("-" if x in (None, "") else f"{float(x) * 100:.0f}" for x in steal))
        if mine_rows:
            absm, relm = share_moves(mine_rows, a.skip)
            print(f"   share change per iteration after the first {a.skip}: points of the total mean "
                  f"{pct(absm, statistics.mean)} max {pct(absm, max)}; relative to the VT's share mean "
                  f"{pct(relm, statistics.mean)} max {pct(relm, max)}")
        marks = []  # events less than 1 s apart (several flows started together) count as one
        for t, label in sorted(leg.get("capacity_marks", [])):
            if marks and t - marks[-1][0] < 1.0:
                marks[-1] = (marks[-1][0], marks[-1][1] + ", " + label)
            else:
                marks.append((t, label))
        for i, (t, label) in enumerate(marks):
            t_next = marks[i + 1][0] if i + 1 < len(marks) else float("inf")
            steady, seq, settle = reaction(iters, t, t_next)
            if steady is None:
                print(f"   event at {t:.1f} s ({label}): no iteration after it")
                continue
            within = "never" if settle is None else f"from iteration {settle}"
            print(f"   event at {t:.1f} s ({label}): new steady state {steady:.1f} Mbit/s (median of the last 3); "
                  f"within 10% and staying {within}; iterations 0..: " + " ".join(f"{b:.1f}" for b in seq))
