"""Numbers of one leg (one system running one collective on the bed): per size (results.csv's rows),
per iteration and event (timeline.csv), PReCCL's VTs (vt_share.csv); leg_files reads the leg's files and
writes these. Each call also gets the hypervisor's steal over it, from the leg's cpu.csv (cpu_use.Sampler),
and how busy the NICs' transmit sides were, from its nics.csv (nic_use.Sampler; the mean over the NICs and
the least busy one).

busbw is in Mbit/s (1e6 bit/s, the unit of the links' rates), from the slowest rank's time per size
(rank 0's table) and from rank 0's own time per iteration (iter.csv). The per-size figure is the
in-place one (the natural mode of every system here); the out-of-place one is kept as busbw_oop.
"""
from . import cpu_use
from . import leg_files
from . import nic_use
from .capacity import RateTimeline
from .ranks import static_reference

BUS_FACTOR_ONE = ("broadcast", "reduce", "sendrecv")
BUS_FACTOR_HALF = ("allgather", "reducescatter", "alltoall", "gather", "scatter")


def bus_factor(collective, n):
    if collective == "allreduce":
        return 2 * (n - 1) / n
    if collective in BUS_FACTOR_HALF:
        return (n - 1) / n
    return 1.0


def mbit(size, time_us, collective, n):
    return None if not time_us else size / time_us * 8 * bus_factor(collective, n)


def leg_numbers(leg, sc, bed_rates):
    """Fills leg["sizes"], leg["timeline"], leg["vt_share"] from its table, iter.csv and events."""
    coll, n, g = leg["collective"], sc.hosts * sc.ranks_per_host, sc.ranks_per_host
    rt = RateTimeline(sc.hosts, sc.nics, bed_rates, leg.get("events", []), leg.get("flows"))
    iters = leg_files.leg_iters(leg)
    samples = leg_files.leg_cpu_samples(leg)
    labels, nics = leg_files.leg_nic_samples(leg)
    use = lambda spans: nic_use.summarize(nic_use.use_over(labels, nics, rt, leg.get("launch_unix") or 0, spans))
    leg["timeline"], leg["vt_share"], leg["sizes"] = [], [], []
    for r in iters:
        cap = rt.mean_limit_bps(coll, g, r["t_start"], r["t_end"]) / 1e6
        bw = mbit(r["bytes"], r["time_us"], coll, n)
        steal = cpu_use.steal_between(samples, leg["launch_unix"] + r["t_start"], leg["launch_unix"] + r["t_end"])
        nic_mean, nic_min = use([(r["t_start"], r["t_end"])])
        leg["timeline"].append({"t": round(r["t_end"], 4), "kind": "iter", "mode": r["mode"], "bytes": r["bytes"],
                                "iter": r["iter"], "time_us": r["time_us"], "busbw": _r(bw),
                                "capacity_limit": _r(cap), "fraction_of_capacity": _r(bw / cap if cap else None),
                                "steal": None if steal is None else round(steal, 3),
                                "nic_use": _r(nic_mean, 3), "nic_use_min": _r(nic_min, 3), "event": ""})
        for vt in leg_files.iter_vts(r):
            leg["vt_share"].append({"t": round(r["t_end"], 4), "mode": r["mode"], "bytes": r["bytes"], **vt})
    for t, text in rt.marks:
        leg["timeline"].append({"t": round(t, 4), "kind": "event", "event": text})
    leg["timeline"].sort(key=lambda x: x["t"])
    leg["vt_marks"] = vt_state_marks(iters)
    leg["capacity_marks"] = [(round(t, 4), text) for t, text in rt.marks]
    leg["capacity_steps"] = [(round(t, 4), _r(rt.limit_bps(coll, g, t) / 1e6)) for t in [0.0] + rt.breakpoints()
                             if t >= 0]
    for row in (leg.get("perf") or {}).get("rows", []):
        size = row["size"]
        ip, oop = mbit(size, row["ip"]["time_us"], coll, n), mbit(size, row["oop"]["time_us"], coll, n)
        bw, mode = (ip, "ip") if ip is not None else (oop, "oop")
        # The limit over the same calls the figure comes from (an event during the out-of-place block
        # must not lower the limit of the in-place figure).
        mine = [r for r in iters if r["bytes"] == size and r["mode"] == mode]
        cap = (_weighted_cap(rt, coll, g, mine) if mine else rt.limit_bps(coll, g, 0.0)) / 1e6
        # The block's calls run back to back: the steal over the block is that of its calls.
        steal = cpu_use.steal_between(samples, leg["launch_unix"] + min(r["t_start"] for r in mine),
                                      leg["launch_unix"] + max(r["t_end"] for r in mine)) if mine else None
        nic_mean, nic_min = use([(r["t_start"], r["t_end"]) for r in mine]) if mine else (None, None)
        leg["sizes"].append({"size": size, "busbw": _r(bw), "busbw_oop": _r(oop), "capacity_limit": _r(cap),
                             "fraction_of_capacity": _r(bw / cap if bw is not None and cap else None),
                             "steal": _r(steal, 3), "nic_use": _r(nic_mean, 3), "nic_use_min": _r(nic_min, 3)})


def vt_state_marks(iters):
    """(t, "vt1 masked") at the start of the first call that ended with a VT in a new state (the change
    happened during that call, or between it and the one before)."""
    marks, last = [], {}
    for r in iters:
        for vt in leg_files.iter_vts(r):
            if vt["state"] != last.get(vt["vt"], "live"):
                marks.append((round(r["t_start"], 4), f"vt{vt['vt']} {vt['state']}"))
            last[vt["vt"]] = vt["state"]
    return marks


def _weighted_cap(rt, coll, g, rows):
    span = sum(r["t_end"] - r["t_start"] for r in rows)
    if span <= 0:
        return rt.limit_bps(coll, g, rows[0]["t_end"])
    return sum(rt.mean_limit_bps(coll, g, r["t_start"], r["t_end"]) * (r["t_end"] - r["t_start"])
               for r in rows) / span


def _r(x, digits=4):
    return None if x is None else round(x, digits)


def flow_rate_mbit(flow):
    """What a background flow delivered, Mbit/s over its own life (from its receiver), or None."""
    recv = flow.get("recv") or {}
    if not recv.get("seconds"):
        return None
    return recv["bytes"] * 8 / recv["seconds"] / 1e6


def flows_mbit(leg):
    """The leg's background flows together, Mbit/s: the load the other tenant actually put on its rail
    during this leg (TCP flows can lose to the collective's; compare legs before a ratio)."""
    rates = [flow_rate_mbit(f) for f in (leg.get("flows") or {}).values()]
    rates = [x for x in rates if x is not None]
    return _r(sum(rates), 1) if rates else None


def result_rows(legs):
    """One row per (collective, system, size); a failed or skipped leg gets one row saying why."""
    ref = {(l["collective"], l["system"], s["size"]): s["busbw"] for l in legs
           if l["system"].startswith("preccl-static") for s in l.get("sizes", []) if l.get("ok")}
    rows = []
    for l in legs:
        note = l.get("note") or ("; ".join(l.get("errors", [])) or l.get("error") or "")
        if not l.get("sizes"):
            rows.append({"collective": l["collective"], "system": l["system"], "ok": l.get("ok", False),
                         "note": note or "no result"})
            continue
        for s in l["sizes"]:
            r0 = ref.get((l["collective"], static_reference(l["system"]), s["size"]))
            rows.append({"collective": l["collective"], "system": l["system"], "size": s["size"],
                         "busbw": s["busbw"], "ratio_to_preccl_static":
                         _r(s["busbw"] / r0) if r0 and s["busbw"] is not None else None,
                         "capacity_limit": s["capacity_limit"], "fraction_of_capacity": s["fraction_of_capacity"],
                         "busbw_oop": s["busbw_oop"], "steal": s.get("steal"), "nic_use": s.get("nic_use"),
                         "nic_use_min": s.get("nic_use_min"), "flows_mbit": flows_mbit(l),
                         "ok": l.get("ok", False),
                         "note": note})
    return rows
