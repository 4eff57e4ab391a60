"""Checks that scenario parsing accepts good files and rejects bad ones with a message naming the file,
the key and the problem; also the small parsers of units, steal, flows and `ss`. Needs no root; `selftest`
runs it first, `selftest-parse` alone."""
import os
import tempfile

from perf import testbed
from perf.testbed import bed_names
from perf.testbed import bytes_where
from perf.testbed import cpu_use
from perf.testbed import leg_files
from perf.testbed import leg_results
from perf.testbed import peers
from perf.testbed import scenario
from perf.testbed import tcp_flows
from perf.testbed import units

GOOD_RUN = '[run]\nbytes = "1M"\n'
FLOW = 'action = "flow_start"\nflow = "a"\nhost = 0\nnic = 0\nto = 1\nbytes = "1M"\nseconds = 2\n'

# (scenario text, substrings the error must contain besides the file name); None = must parse.
CASES = [
    ('[bed]\nhosts = 2\nnics = 2\n', None),
    ('[bed]\nhosts = 3\nrate_of = { "h2.nic1" = "25mbit" }\n' + GOOD_RUN
     + '[[event]]\nat = 1.5\n' + FLOW + '[[event]]\nat = 2\naction = "flow_stop"\nflow = "a"\n', None),
    ('[bed]\nhosts = 2\nbogus = 1\n', ["[bed]", "unknown key 'bogus'"]),
    ('[bogus]\nx = 1\n', ["top level", "unknown key 'bogus'"]),
    ('[bed]\nhosts = "two"\n', ["[bed] key 'hosts'", "want an integer", "'two'"]),
    ('[bed]\nhosts = 0\n', ["[bed] key 'hosts'", "out of range"]),
    ('[bed]\nhosts = 99\n', ["[bed] key 'hosts'", "out of range"]),
    ('[bed]\nnics = true\n', ["[bed] key 'nics'", "want an integer", "boolean"]),
    ('[bed]\nrate = "fast"\n', ["[bed] key 'rate'", "mbit"]),
    ('[bed]\nrate = 100\n', ["[bed] key 'rate'", "want a string"]),
    ('[bed]\nrate_of = { "h5.nic0" = "1mbit" }\n', ["rate_of.h5.nic0", "host 5 out of range"]),
    ('[bed]\nrate_of = { "nic0" = "1mbit" }\n', ["rate_of.nic0", "not a NIC name"]),
    ('[bed]\nprefix = "ThisIsTooLong"\n', ["[bed] key 'prefix'"]),
    ('[bed]\ntcp_congestion_control = "inherit"\n', None),
    ('[bed]\ntcp_congestion_control = "bbr; reboot"\n', ["[bed] key 'tcp_congestion_control'", "want a name"]),
    ('[bed]\ntcp_congestion_control = 1\n', ["[bed] key 'tcp_congestion_control'", "want a string"]),
    ('[run]\ncollective = "allsum"\n', ["[run] key 'collective'", "not one of"]),
    ('[run]\nbytes = "4X"\n', ["[run] key 'bytes'"]),
    ('[run]\nmin_bytes = "8M"\nmax_bytes = "4M"\n', ["[run] key 'min_bytes'", "larger than"]),
    ('[run]\niters = 2.5\n', ["[run] key 'iters'", "want an integer", "float"]),
    ('[run]\nenv = { PRECCL_RANK = "3" }\n', ["env.PRECCL_RANK", "set by the bed"]),
    ('[[event]]\nat = -1\naction = "link_down"\nhost = 0\nnic = 0\n',
     ["[[event]] #1 key 'at'", "negative"]),
    ('[[event]]\naction = "link_down"\nhost = 0\nnic = 0\n', ["[[event]] #1", "missing required key 'at'"]),
    ('[[event]]\nat = 1\naction = "explode"\n', ["[[event]] #1 key 'action'", "not one of"]),
    ('[[event]]\nat = 1\naction = "link_down"\nhost = 2\nnic = 0\n', ["[[event]] #1 key 'host'", "out of range"]),
    ('[[event]]\nat = 1\naction = "link_up"\nhost = 0\nnic = 2\n', ["[[event]] #1 key 'nic'", "out of range"]),
    ('[[event]]\nat = 1\naction = "link_up"\nhost = 0\n', ["[[event]] #1", "missing required key 'nic'"]),
    ('[[event]]\nat = 1\naction = "link_down"\nhost = 0\nnic = 0\nrate = "1mbit"\n',
     ["[[event]] #1", "unknown key 'rate'"]),
    ('[[event]]\nat = 1\naction = "rate"\nhost = 0\nnic = 0\n', ["[[event]] #1", "missing required key 'rate'"]),
    ('[[event]]\nat = 1\naction = "rate"\nhost = 0\nnic = 0\nrate = "1zbit"\n', ["[[event]] #1 key 'rate'"]),
    ('[[event]]\nat = 1\n' + FLOW.replace('seconds = 2\n', ''), ["[[event]] #1", "missing required key 'seconds'"]),
    ('[[event]]\nat = 1\n' + FLOW.replace('bytes = "1M"\n', ''), ["[[event]] #1 key 'bytes'", "bounded"]),
    ('[[event]]\nat = 1\n' + FLOW.replace('to = 1', 'to = 0'), ["[[event]] #1 key 'to'", "itself"]),
    ('[[event]]\nat = 1\n' + FLOW + '[[event]]\nat = 2\n' + FLOW,
     ["[[event]] #2 key 'flow'", "already started"]),
    ('[[event]]\nat = 1\naction = "flow_stop"\nflow = "nope"\n', ["[[event]] #1 key 'flow'", "no flow_start"]),
    ('[[event]]\nat = 1\n' + FLOW + 'proto = "udp"\nrate = "10mbit"\n', None),
    ('[[event]]\nat = 1\n' + FLOW + 'proto = "udp"\n', ["[[event]] #1 key 'rate'", "required with proto"]),
    ('[[event]]\nat = 1\n' + FLOW + 'proto = "sctp"\n', ["[[event]] #1 key 'proto'", "not one of"]),
    ('[[event]]\nat = 1\nafter = "lunch"\naction = "link_down"\nhost = 0\nnic = 0\n',
     ["[[event]] #1 key 'after'", "not one of"]),
    ('[run]\ncollectives = ["allreduce", "alltoall"]\nsystems = ["preccl-static", "gloo", "preccl-aimd"]\n', None),
    ('[run]\ncollectives = ["allreduce", "allsum"]\n', ["[run] key 'collectives'", "'allsum'", "one of"]),
    ('[run]\ncollective = "allreduce"\ncollectives = ["allreduce"]\n', ["[run] key 'collectives'", "not both"]),
    ('[run]\ncollectives = []\n', ["[run] key 'collectives'", "non-empty"]),
    ('[run]\nsystems = "gloo"\n', ["[run] key 'systems'", "want an array"]),
    ('[run]\nsystems = ["nccl"]\n', ["[run] key 'systems'", "'nccl'", "preccl-<policy>"]),
    ('[run]\nsystems = ["gloo", "gloo"]\n', ["[run] key 'systems'", "twice"]),
    ('[run]\nsystems = ["openmpi", "openmpi-ring", "openmpi-pipeline", "gloo-ring_chunked", "gloo-bcube",'
     ' "gloo-concurrent", "gloo-ring_chunked-concurrent"]\n', None),
    ('[run]\nsystems = ["openmpi-best", "gloo-best"]\n', None),
    ('[run]\nsystems = ["torch-preccl", "torch-gloo", "torch-preccl-ddp", "torch-gloo-ddp"]\n', None),
    ('[run]\nsystems = ["torch-nccl"]\n', ["[run] key 'systems'", "'torch-nccl'", "torch-preccl|gloo[-ddp]"]),
    ('[run]\nsystems = ["gloo-best-concurrent"]\n', ["[run] key 'systems'", "'gloo-best-concurrent'"]),
    ('[run]\nsystems = ["openmpi-ring-concurrent"]\n', ["[run] key 'systems'", "'openmpi-ring-concurrent'"]),
    ('[run]\nsystems = ["openmpi-fastest"]\n', ["[run] key 'systems'", "'openmpi-fastest'", "openmpi[-<algorithm>]"]),
    ('[run]\nsystems = ["gloo-pipeline"]\n', ["[run] key 'systems'", "'gloo-pipeline'", "gloo[-<allreduce algorithm>][-concurrent]"]),
    ('event = 3\n', ["key 'event'", "array of tables"]),
    ('[bed\nhosts = 2\n', ["not valid TOML"]),
]


def shipped_scenarios():
    """The bed's own (perf/testbed/scenarios) and the standard scenarios (perf/scenarios)."""
    pkg = os.path.dirname(os.path.abspath(testbed.__file__))
    dirs = [os.path.join(pkg, "scenarios"), os.path.join(os.path.dirname(pkg), "scenarios")]
    return [os.path.join(d, n) for d in dirs if os.path.isdir(d) for n in sorted(os.listdir(d))
            if n.endswith(".toml")]


def run():
    failures = []
    with tempfile.TemporaryDirectory(prefix="testbed-parse-") as d:
        for i, (text, want) in enumerate(CASES):
            path = os.path.join(d, f"case{i}.toml")
            with open(path, "w") as f:
                f.write(text)
            try:
                scenario.load(path)
                if want is not None:
                    failures.append(f"case {i}: accepted, want an error containing {want}:\n{text}")
            except scenario.ScenarioError as e:
                msg = str(e)
                if want is None:
                    failures.append(f"case {i}: rejected a good file: {msg}")
                elif not msg.startswith(path + ":") or not all(w in msg for w in want):
                    failures.append(f"case {i}: message {msg!r} lacks the file name or one of {want}")
        for path in shipped_scenarios():
            try:
                scenario.load(path)
            except scenario.ScenarioError as e:
                failures.append(f"shipped scenario rejected: {e}")
    # `<peer>-best` resolves per collective to a system of the same peer that the collective can run.
    for peer in ("openmpi", "gloo"):
        for coll in peers.PEER_COLLECTIVES:
            got = peers.resolve(f"{peer}-best", coll)
            if peers.kind(got) != peer or got not in peers.candidates(coll) or peers.skip_reason(got, coll):
                failures.append(f"resolve({peer}-best, {coll}) = {got}: not a {peer} system that runs {coll}")
    if peers.resolve("openmpi-ring", "allreduce") != "openmpi-ring":
        failures.append("resolve changed a system that names its algorithm")
    # Units: the arithmetic the bed hands to tc.
    for text, bps in (("100mbit", 10**8), ("25mbit", 25 * 10**6), ("1gbit", 10**9), ("1.5mbit", 1_500_000),
                      ("10mbps", 8 * 10**7)):
        if units.parse_rate(text) != bps:
            failures.append(f"parse_rate({text!r}) = {units.parse_rate(text)}, want {bps}")
    for text, n in (("4M", 4 << 20), ("1K", 1024), (12, 12), ("7", 7)):
        if units.parse_size(text) != n:
            failures.append(f"parse_size({text!r}) = {units.parse_size(text)}, want {n}")
    # Steal over a call: from the samples around it (jiffies of the whole machine).
    samples = [{"unix": t, "total": tot, "idle": 0, "steal": st} for t, tot, st in
               ((0.0, 0, 0), (1.0, 200, 10), (2.0, 400, 90), (3.0, 600, 100))]
    for t0, t1, want in ((1.0, 2.0, 0.4), (0.5, 2.0, 0.225), (0.0, 3.0, 1 / 6), (-1.0, 2.0, None), (1.0, 3.5, None)):
        got = cpu_use.steal_between(samples, t0, t1)
        if (got is None) != (want is None) or (got is not None and abs(got - want) > 1e-9):
            failures.append(f"steal_between(.., {t0}, {t1}) = {got}, want {want}")
    # What the background flows delivered: each from its receiver, summed; a flow that never received
    # (no seconds) counts for nothing, and a leg without flows has no figure.
    leg = {"flows": {"a": {"recv": {"bytes": 6_500_000, "seconds": 2.0}},
                     "b": {"recv": {"bytes": 1_000_000, "seconds": 4.0}}, "c": {"recv": None}}}
    for got, want in ((leg_results.flows_mbit(leg), 28.0), (leg_results.flows_mbit({"flows": {}}), None)):
        if got != want:
            failures.append(f"flows_mbit = {got}, want {want}")
    # VT state marks: one at the start of the first call that ends in a new state; rows from before the
    # state column read as live.
    def row(t0, *states):
        r = {"t_start": t0}
        for v, st in enumerate(states):
            r.update({f"vt{v}_share": "0.5", f"vt{v}_nic": str(v), f"vt{v}_bytes": "1", f"vt{v}_stalls": "0",
                      f"vt{v}_stall_ns": "0", f"vt{v}_state": st})
        return r
    rows = [row(0.0, "live", "live"), row(1.0, "live", "masked"), row(2.0, "live", "masked"),
            row(3.0, "live", "probing"), row(4.0, "live", "live"), row(5.0, "", "")]
    want = [(1.0, "vt1 masked"), (3.0, "vt1 probing"), (4.0, "vt1 live")]
    if leg_results.vt_state_marks(rows) != want:
        failures.append(f"vt_state_marks = {leg_results.vt_state_marks(rows)}, want {want}")
    # The relayed bytes column (absent in older files: 0), and bytes-where's part of rank 0's bytes per NIC.
    relay_row = row(0.0, "live", "live")
    relay_row.update({"vt0_bytes": "400", "vt0_relayed": "100"})
    vts = leg_files.iter_vts(relay_row)
    if [v["relayed"] for v in vts] != [100, 0]:
        failures.append(f"iter_vts relayed = {[v['relayed'] for v in vts]}, want [100, 0]")
    leg = {"vt_share": [dict(v, nic=v["vt"]) for v in vts] * 2,
           "delta_ranks": {"h0.nic0": {"tx_bytes": 300}, "h0.nic1": {"tx_bytes": 100}}}
    if bytes_where.relayed_fraction(leg) != {0: 0.25, 1: 0.0} or bytes_where.leg_bytes(leg) != {(0, 0): 300, (0, 1): 100}:
        failures.append(f"bytes_where = {bytes_where.relayed_fraction(leg)}, {bytes_where.leg_bytes(leg)}")
    # Per-flow counters from ss, and the bed's addresses back to hosts and NICs (tcp_flows).
    ss = ("ESTAB 0 0 198.18.1.3:41119 198.18.1.1:50395\n"
          "\t cubic wscale:10,10 rto:204 rtt:7.555/1.2 mss:1448 cwnd:40 bytes_sent:9 bytes_acked:334488"
          " bytes_received:40 retrans:0/5 rcv_ssthresh:65536\n"
          "ESTAB 0 0 127.0.0.1:1 127.0.0.1:2\n")
    got = tcp_flows.parse_ss(ss)
    want = [("198.18.1.3:41119", "198.18.1.1:50395",
             {"bytes_acked": "334488", "cwnd": "40", "retrans": "5", "rtt_ms": "7.555", "rcv_ssthresh": "65536"})]
    if got != want:
        failures.append(f"tcp_flows.parse_ss = {got}, want {want}")
    for addr, want in (("198.18.1.3", (2, 1)), ("198.18.0.1", (0, 0)), ("10.0.0.1", None), ("198.18.0.0", None)):
        if bed_names.parse_address(addr) != want:
            failures.append(f"parse_address({addr!r}) = {bed_names.parse_address(addr)}, want {want}")
    if tcp_flows.nic_of("198.18.1.3:41119") != "h2n1":
        failures.append(f"tcp_flows.nic_of = {tcp_flows.nic_of('198.18.1.3:41119')}, want h2n1")
    return failures



def add_commands(sub):
    p = sub.add_parser("selftest-parse", help="the scenario parsing checks of `selftest` alone (no root)")
    p.set_defaults(fn=main)


def main(a):
    fails = run()
    print("\n".join(fails) or f"parse: {len(CASES)} cases ok")
    return 1 if fails else 0
