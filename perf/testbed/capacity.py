"""The capacity limit of a run: the best busbw the shaped links allow, over time (docs/testbed.md).

Per host h: E_h = sum of its NICs' egress rates, I_h = sum of their ingress rates (a NIC that is down
counts 0), B_h = min(E_h, I_h). With H hosts, g ranks per host, n = g*H ranks:
  AllReduce, AllGather, ReduceScatter: busbw_limit = min_h B_h * (n-1)/n * H/(H-1)
  AlltoAll:                            busbw_limit = min_h B_h * (n-1)/n * H/(H-1) / g
  Broadcast (a chain through every host): busbw_limit = min_h B_h
(with g = 1 the factor is 1). AlltoAll's bytes to another host are distinct for every rank there, so a
host's g ranks send g times what one would: nothing is shared through the host's memory. Shared memory inside a host is taken as free. Another tenant's TCP flows
are not subtracted (they compete under TCP's rules, not for a fixed share); its UDP flows, which take
their rate whatever the queue does, are: their measured sending rate comes off the sender's egress and
the receiver's ingress for the flow's life.
"""

from . import bed_names as names

FACTOR_ONE = ("broadcast", "reduce", "sendrecv")


class RateTimeline:
    """Per NIC and direction, piecewise-constant rates in bits/s from the events a leg fired."""

    def __init__(self, hosts, nics, initial_rates, events, flows=None):
        """flows: the leg's flow summaries (flows.Flows.summary()), for the UDP loads; None: no loads."""
        self.hosts, self.nics = hosts, nics
        self.changes = {}   # (h, k, dir) -> [(t, bps)], sorted
        for (h, k), bps in initial_rates.items():
            for d in ("egress", "ingress"):
                self.changes[(h, k, d)] = [(float("-inf"), bps)]
        self.up = {(h, k): [(float("-inf"), True)] for (h, k) in initial_rates}
        self.marks = []     # (t, label) of every fired event, for the plots
        for e in sorted((e for e in events if e.get("fired")), key=lambda e: e["t_s"]):
            t = e["t_s"]
            self.marks.append((t, label(e) + ("" if e.get("ok", False) else " (failed)")))
            if "nic" not in e or not e.get("ok", False):
                continue
            h, k = names.parse_nic_label(e["nic"])
            if e["action"] == "rate":
                bps = parse_bps(e["rate"])
                for d in ("egress", "ingress"):
                    if e.get("direction", "both") in ("both", d):
                        self.changes[(h, k, d)].append((t, bps))
            elif e["action"] in ("link_down", "link_up"):
                self.up[(h, k)].append((t, e["action"] == "link_up"))
        self.loads = []     # (t0, t1, {(h, k, dir)}, bps): fixed-rate flows on the links
        for e in events:
            f = (flows or {}).get(e.get("flow"))
            sent = (f or {}).get("send") or {}
            if e["action"] != "flow_start" or not e.get("fired") or not e.get("ok") or not f \
                    or f.get("proto") != "udp" or not sent.get("seconds"):
                continue
            (hs, k), (hd, _) = names.parse_nic_label(e["nic"]), names.parse_nic_label(e["to"])
            self.loads.append((e["t_s"], e["t_s"] + sent["seconds"], {(hs, k, "egress"), (hd, k, "ingress")},
                               sent["bytes"] * 8 / sent["seconds"]))

    @staticmethod
    def _at(series, t):
        v = series[0][1]
        for ts, x in series:
            if ts <= t:
                v = x
        return v

    def shaped_bps(self, h, k, d, t):
        """The link's own rate (tbf's, 0 while down), before any other tenant's load."""
        return self._at(self.changes[(h, k, d)], t) if self._at(self.up[(h, k)], t) else 0

    def rate(self, h, k, d, t):
        """What is left for the collective: the shaped rate less the fixed-rate flows on the link."""
        load = sum(bps for t0, t1, links, bps in self.loads if t0 <= t < t1 and (h, k, d) in links)
        return max(0, self.shaped_bps(h, k, d, t) - load)

    def host_bound(self, h, t):
        e = sum(self.rate(h, k, "egress", t) for k in range(self.nics))
        i = sum(self.rate(h, k, "ingress", t) for k in range(self.nics))
        return min(e, i)

    def limit_bps(self, collective, ranks_per_host, t):
        b = min(self.host_bound(h, t) for h in range(self.hosts))
        return b * factor(collective, self.hosts, ranks_per_host)

    def breakpoints(self):
        ts = {t for s in self.changes.values() for t, _ in s} | {t for s in self.up.values() for t, _ in s}
        ts |= {t for t0, t1, _, _ in self.loads for t in (t0, t1)}
        return sorted(t for t in ts if t != float("-inf"))

    def integral(self, f, t0, t1):
        """The integral of f(t), constant between breakpoints (every rate here is), over [t0, t1]."""
        cuts = [t0] + [t for t in self.breakpoints() if t0 < t < t1] + [t1]
        return sum((b - a) * f((a + b) / 2) for a, b in zip(cuts, cuts[1:]))

    def mean_limit_bps(self, collective, ranks_per_host, t0, t1):
        """Time-weighted mean of the limit over [t0, t1] (the best busbw of a transfer in that window)."""
        if t1 <= t0:
            return self.limit_bps(collective, ranks_per_host, t1)
        return self.integral(lambda t: self.limit_bps(collective, ranks_per_host, t), t0, t1) / (t1 - t0)

    def shaped_bits(self, h, k, d, t0, t1):
        """The bits the link's own rate lets through over [t0, t1]."""
        return self.integral(lambda t: self.shaped_bps(h, k, d, t), t0, t1)


def factor(collective, hosts, ranks_per_host):
    if collective in FACTOR_ONE or hosts < 2:
        return 1.0
    n = hosts * ranks_per_host
    f = (n - 1) / n * hosts / (hosts - 1)
    return f / ranks_per_host if collective == "alltoall" else f


def parse_bps(text):
    from . import units
    return units.parse_rate(text)


def bed_rates(bed):
    """{(host, nic): bit/s} from result.json's "bed" section (its "rates" by NIC label)."""
    return {names.parse_nic_label(label): parse_bps(v) for label, v in bed["rates"].items()}


def label(e):
    what = e["action"]
    if what == "rate":
        return f"{e.get('nic')} {e.get('rate')}"
    if what in ("flow_start", "flow_stop"):
        return f"{what} {e.get('flow')}" + (f" {e.get('nic')}" if "nic" in e else "")
    return f"{what} {e.get('nic', '')}".strip()
