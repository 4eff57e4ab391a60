"""Checks the capacity-limit arithmetic (docs/testbed.md) and the NICs' use (nic_use) on hand-computed
cases. Needs no root; `selftest` runs it, `selftest-capacity` alone."""
from perf.testbed import capacity
from perf.testbed import nic_use
from perf.testbed.capacity import RateTimeline

M = 10**6


def run():
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)

    rates = {(h, k): 100 * M for h in range(4) for k in range(2)}
    rates[(1, 0)] = 25 * M
    ev = [{"fired": True, "ok": True, "t_s": 10.0, "action": "link_down", "nic": "h2.nic1"},
          {"fired": True, "ok": True, "t_s": 20.0, "action": "link_up", "nic": "h2.nic1"},
          {"fired": True, "ok": True, "t_s": 30.0, "action": "rate", "nic": "h0.nic0", "rate": "10mbit",
           "direction": "egress"},
          {"fired": True, "ok": False, "t_s": 5.0, "action": "rate", "nic": "h3.nic0", "rate": "1mbit",
           "direction": "both"}]  # failed: tc did not take it, the rate stays
    rt = RateTimeline(4, 2, rates, ev)
    lim = lambda c, t, g=1: rt.limit_bps(c, g, t)
    expect(lim("allreduce", 0) == 125 * M, f"h1 at 25+100 bounds the ring: {lim('allreduce', 0)}")
    expect(lim("allreduce", 15) == 100 * M, f"h2 with one NIC down: {lim('allreduce', 15)}")
    expect(lim("allreduce", 25) == 125 * M, f"after link_up: {lim('allreduce', 25)}")
    expect(lim("allgather", 35) == 110 * M, f"h0 egress 10+100 after the egress-only change: {lim('allgather', 35)}")
    expect(lim("broadcast", 15) == 100 * M, "broadcast: the chain bound")
    # g = 2 ranks per host, H = 4: (n-1)/n * H/(H-1) = 7/8 * 4/3; AlltoAll's host sends g ranks' bytes: / 2
    expect(abs(lim("allgather", 0, 2) - 125 * M * 7 / 8 * 4 / 3) < 1, f"allgather g=2: {lim('allgather', 0, 2)}")
    expect(abs(lim("alltoall", 0, 2) - 125 * M * 7 / 8 * 4 / 3 / 2) < 1, f"alltoall g=2: {lim('alltoall', 0, 2)}")
    expect(capacity.factor("broadcast", 4, 2) == 1.0, "broadcast factor 1")
    mean = rt.mean_limit_bps("allreduce", 1, 5, 15)  # half at 125, half at 100
    expect(abs(mean - 112.5 * M) < 1, f"time-weighted mean over a link_down: {mean}")
    expect([m[1] for m in rt.marks][:2] == ["h3.nic0 1mbit (failed)", "link_down h2.nic1"],
           f"event marks in time order: {rt.marks}")
    # A UDP flow takes its measured rate off h2.nic1's egress and h3.nic1's ingress for its life; a TCP
    # flow takes nothing (it competes under TCP's rules).
    rates = {(h, k): 80 * M for h in range(4) for k in range(2)}
    start = lambda fid, t: {"fired": True, "ok": True, "t_s": t, "action": "flow_start", "nic": "h2.nic1",
                            "to": "h3.nic1", "flow": fid}
    flows = {"u": {"proto": "udp", "send": {"bytes": 52 * M // 8 * 100, "seconds": 100.0}},
             "t": {"proto": "tcp", "send": {"bytes": 80 * M // 8 * 100, "seconds": 100.0}}}
    rt = RateTimeline(4, 2, rates, [start("u", 10.0), start("t", 0.0)], flows)
    lim = lambda t: rt.limit_bps("allreduce", 1, t)
    expect(lim(5) == 160 * M and lim(50) == 108 * M and lim(115) == 160 * M,
           f"UDP tenant of 52 Mbit/s from 10 s to 110 s: 160, 108, 160 ({lim(5)}, {lim(50)}, {lim(115)})")
    mean = rt.mean_limit_bps("allreduce", 1, 0, 20)
    expect(abs(mean - 134 * M) < 1, f"time-weighted mean across the UDP flow's start: {mean}")
    # NIC use: h0.nic0 sends 10 MB/s (80 Mbit/s, full) for 4 s then idles; h0.nic1 sends 5 MB/s but is
    # shaped to 40 Mbit/s from t = 2 s (full from then). The tenant's bytes count as use.
    rates = {(0, 0): 80 * M, (0, 1): 80 * M}
    ev = [{"fired": True, "ok": True, "t_s": 2.0, "action": "rate", "nic": "h0.nic1", "rate": "40mbit",
           "direction": "both"}]
    rt = RateTimeline(1, 2, rates, ev)
    launch = 1000.0
    samples = [(launch + t / 10, [int(min(t / 10, 4) * 10 * M), int(t / 10 * 5 * M)]) for t in range(0, 81)]
    labels = ["h0.nic0", "h0.nic1"]
    u = nic_use.call_use(labels, samples, rt, launch, 1.0, 3.0)
    expect(abs(u["h0.nic0"] - 1.0) < 1e-6, f"a full link is used 1.0: {u}")
    expect(abs(u["h0.nic1"] - 80 / 120) < 1e-6, f"80 Mbit sent over 1 s at 80 and 1 s at 40 Mbit/s: 2/3 ({u})")
    u = nic_use.use_over(labels, samples, rt, launch, [(3.0, 5.0), (6.0, 7.0)])
    expect(abs(u["h0.nic0"] - 10 * M * 8 / (3 * 80 * M)) < 1e-6, f"1 s of 3 busy: 1/3 ({u})")
    mean, low = nic_use.summarize({"a": 1.0, "b": 0.5})
    expect(mean == 0.75 and low == 0.5, f"summary mean and least: {mean}, {low}")
    expect(nic_use.call_use(labels, samples, rt, launch, 7.5, 9.0) == {}, "a span the samples do not cover: nothing")
    return failures



def add_commands(sub):
    p = sub.add_parser("selftest-capacity", help="the capacity-limit checks of `selftest` alone (no root)")
    p.set_defaults(fn=main)


def main(a):
    fails = run()
    print("\n".join(fails) or "capacity: ok")
    return 1 if fails else 0
