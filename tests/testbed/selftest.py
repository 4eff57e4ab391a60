"""The test bed's CI test (ctest `testbed`): the package perf.testbed, as a user runs it.

1. Scenario parsing (no root needed): good files pass, bad ones fail naming file, key and problem; every
   shipped scenario (perf/testbed/scenarios, perf/scenarios) parses; the capacity-limit arithmetic.
2. As root, with network namespaces available (else: "skipped: <reason>", exit 0):
   - `up` twice with one prefix: the second refuses; `down` removes everything.
   - `run` of scenarios/selftest_2x2.toml: 2 hosts x 2 NICs, checked AllReduce passes, every NIC of every
     host sent and received at least one full buffer during the ranks (both rails carried it), the rate
     change shows in tc, the bounded flow moved its bytes, the downed NIC is reported (event operstate
     DOWN and result.json nics_down).
   - Ctrl-C (SIGINT to the process group) in the middle of a run: the bed is removed all the same.
   - after each: no namespace, veth or bridge with the run's prefix is left (`ip netns list`, `ip link`).

  python3 -m tests.testbed selftest --perf BUILD/perf/preccl-perf [--keep-out DIR]   (repository root)
"""
import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

from perf import testbed
from perf.testbed import bed_names as names
from perf.testbed import leg_files
from perf.testbed.bed_net import ALLOWED_CC_PATH, CC_PATH, owned

from . import selftest_capacity
from . import selftest_parse

SCENARIOS = os.path.join(os.path.dirname(os.path.abspath(testbed.__file__)), "scenarios")  # perf/testbed/scenarios
TESTBED = [sys.executable, "-m", "perf.testbed"]   # the entry point, as a user runs it
MiB = 1 << 20


class Checks:
    def __init__(self):
        self.failed = []

    def expect(self, cond, what):
        print(f"  {'ok  ' if cond else 'FAIL'} {what}", flush=True)
        if not cond:
            self.failed.append(what)
        return cond


def netns_possible():
    if os.geteuid() != 0:
        return "not root"
    probe = names.new_prefix() + "probe"
    p = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if p.returncode != 0:
        return f"`ip netns add` is not possible here: {p.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def nothing_left(c, prefix):
    nss, links = owned(prefix)
    c.expect(not nss and not links, f"{prefix}: nothing left in `ip netns list` / `ip link` "
             f"(found {nss + links})")
    c.expect(not os.path.exists(names.state_path(prefix)), f"{prefix}: state file removed")


def test_refuse_and_down(c):
    prefix = names.new_prefix()
    print(f"up/down with prefix {prefix}")
    up = lambda: subprocess.run(TESTBED + ["up", "--hosts", "2", "--nics", "1", "--prefix", prefix],
                                capture_output=True, text=True, timeout=60)
    first = up()
    c.expect(first.returncode == 0, f"up succeeds ({first.stderr.strip()})")
    second = up()
    c.expect(second.returncode != 0 and "refusing" in second.stderr and prefix + "h0" in second.stderr,
             f"second up with the same prefix refuses, naming what exists ({second.stderr.strip()[:120]})")
    nss, _ = owned(prefix)
    c.expect(len(nss) == 2, "the refused up left the first bed intact")
    down = subprocess.run(TESTBED + ["down", "--prefix", prefix], capture_output=True, text=True, timeout=60)
    c.expect(down.returncode == 0, f"down succeeds ({down.stdout.strip()}{down.stderr.strip()})")
    nothing_left(c, prefix)


def test_run(c, perf, out):
    prefix = names.new_prefix()
    machine_cc, machine_allowed = open(CC_PATH).read().strip(), open(ALLOWED_CC_PATH).read().strip()
    print(f"run scenarios/selftest_2x2.toml with prefix {prefix}, output {out}")
    p = subprocess.run(TESTBED + ["run", "--scenario", os.path.join(SCENARIOS, "selftest_2x2.toml"),
                                  "--perf", perf, "--out", out, "--prefix", prefix],
                       capture_output=True, text=True, timeout=240)
    print(p.stdout + p.stderr)
    c.expect(p.returncode == 0, f"testbed run exits 0 (rc {p.returncode})")
    try:
        r = leg_files.load_result(out)
    except (OSError, ValueError) as e:
        c.expect(False, f"result.json readable ({e})")
        return
    c.expect(r["ok"] and all(x["exit"] == 0 for x in r["ranks"]) and len(r["ranks"]) == 2,
             "both ranks exited 0")
    c.expect(r["perf"]["status"] == "OK" and r["perf"]["wrong"] == 0 and len(r["perf"]["rows"]) == 1
             and r["perf"]["rows"][0]["size"] == 4 * MiB
             and r["perf"]["rows"][0]["oop"]["wrong"] == "0" and r["perf"]["rows"][0]["ip"]["wrong"] == "0",
             "AllReduce 4 MiB checked element by element: 0 wrong, OK")
    d = r.get("delta_ranks", {})
    for h in range(2):
        for k in range(2):
            label = f"h{h}.nic{k}"
            got = d.get(label, {"tx_bytes": 0, "rx_bytes": 0})
            c.expect(got["tx_bytes"] >= 4 * MiB and got["rx_bytes"] >= 4 * MiB,
                     f"{label} carried the AllReduce: tx {got['tx_bytes']} rx {got['rx_bytes']} (>= 4 MiB each)")
    ev = {e["action"]: e for e in r["events"]}
    rate = ev.get("rate", {})
    c.expect(rate.get("ok") and rate.get("tc_rate_bps") == {"egress": 50_000_000, "ingress": 50_000_000},
             f"rate event: tc reports 50mbit both ways ({rate.get('tc_rate_bps')})")
    f1 = r["flows"].get("f1", {})
    sent, recvd = (f1.get("send") or {}).get("bytes"), (f1.get("recv") or {}).get("bytes")
    c.expect(sent == 2 * MiB and recvd == 2 * MiB, f"flow f1 moved its bounded 2 MiB (sent {sent}, received {recvd})")
    u1 = r["flows"].get("u1", {})
    sent, recvd = (u1.get("send") or {}).get("bytes"), (u1.get("recv") or {}).get("bytes") or 0
    # At 40 of 100 Mbit/s the queue drops nothing; a receiver the loaded machine delays may overflow
    # its socket buffer, so a few datagrams may go.
    c.expect(u1.get("proto") == "udp" and sent == 1 * MiB and 0.9 * MiB <= recvd <= sent,
             f"UDP flow u1 sent its bounded 1 MiB and it arrived (sent {sent}, received {recvd})")
    c0, c1 = r["counters"].get("ranks_done", {}), r["counters"].get("end", {})
    if c0 and c1:
        moved = c1["h0.nic1"]["tx_bytes"] - c0["h0.nic1"]["tx_bytes"]
        c.expect(moved >= 2 * MiB, f"flow f1 shows in h0.nic1's tx counter ({moved} B)")
    down = ev.get("link_down", {})
    c.expect(down.get("fired") and down.get("ok") and down.get("operstate") == "DOWN" and down.get("nic") == "h1.nic1",
             f"link_down h1.nic1 reported in events with operstate {down.get('operstate')}")
    c.expect(r["nics_down"] == ["h1.nic1"], f"result.json nics_down == ['h1.nic1'] ({r['nics_down']})")
    c.expect(r["left_behind"] == [] and r["passed"], "the run reports nothing left behind and passed")
    c.expect("busy" in r["cpu"] and "steal" in r["cpu"], f"CPU use and the hypervisor's steal recorded ({r['cpu']})")
    iters = [t for t in r["legs"][0].get("timeline", []) if t["kind"] == "iter"]
    c.expect(iters and all(t["steal"] is not None and 0 <= t["steal"] <= 1 for t in iters),
             f"every call has its steal in the timeline ({[t['steal'] for t in iters]})")
    # The NICs' transmit counters, sampled from the root namespace, saw what the NICs' own counters saw.
    labels, samples = leg_files.leg_nic_samples(r["legs"][0])
    i = labels.index("h0.nic0") if "h0.nic0" in labels else None
    sampled = samples[-1][1][i] - samples[0][1][i] if i is not None and samples else 0
    c.expect(sorted(labels) == ["h0.nic0", "h0.nic1", "h1.nic0", "h1.nic1"] and sampled >= d.get("h0.nic0", {}).get("tx_bytes", 1 << 62),
             f"nics.csv sampled every NIC over the leg (h0.nic0 {sampled} B, its own counter {d.get('h0.nic0')})")
    c.expect(iters and all(t.get("nic_use") is not None and 0 < t["nic_use_min"] <= t["nic_use"] <= 1.2 for t in iters),
             f"every call has its NICs' use in the timeline ({[(t.get('nic_use'), t.get('nic_use_min')) for t in iters]})")
    cc = r["bed"].get("tcp_congestion_control")
    allowed = open(ALLOWED_CC_PATH).read().strip()
    c.expect(cc == "cubic" and open(CC_PATH).read().strip() == machine_cc and allowed == machine_allowed,
             f"the hosts ran the scenario's TCP congestion control (cubic: {cc}); the machine's own "
             f"({machine_cc}) is untouched and its allowed list is as before ({allowed})")
    nothing_left(c, prefix)


def test_interrupt(c, perf, out):
    prefix = names.new_prefix()
    print(f"Ctrl-C in the middle of a run, prefix {prefix}")
    os.makedirs(out, exist_ok=True)
    scen = os.path.join(out, "interrupt.toml")
    with open(scen, "w") as f:  # long enough to be interrupted: ~100 s of AllReduce and a 30 s flow
        f.write('[bed]\nhosts = 2\nnics = 1\nrate = "10mbit"\n[run]\nbytes = "4M"\niters = 100\nsystems = [\"preccl-static\"]\n'
                '[[event]]\nat = 0\naction = "flow_start"\nflow = "bg"\nhost = 1\nnic = 0\nto = 0\n'
                'bytes = "1G"\nseconds = 30\n')
    p = subprocess.Popen(TESTBED + ["run", "--scenario", scen, "--perf", perf, "--out", out,
                                    "--prefix", prefix], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, start_new_session=True)
    deadline = time.monotonic() + 30  # wait until ranks and the flow run inside the bed
    while time.monotonic() < deadline:
        nss, _ = owned(prefix)
        if len(nss) == 2 and sum(len(subprocess.run(["ip", "netns", "pids", n], capture_output=True,
                                                    text=True).stdout.split()) for n in nss) >= 4:
            break
        time.sleep(0.2)
    time.sleep(1)
    t = time.monotonic()
    os.killpg(p.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole foreground group
    try:
        output, _ = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        output, _ = p.communicate()
    print(output)
    c.expect(p.returncode != 0, f"interrupted run exits non-zero (rc {p.returncode})")
    c.expect(time.monotonic() - t < 20, f"and within 20 s ({time.monotonic() - t:.1f} s)")
    try:
        r = leg_files.load_result(out)
        c.expect(r["error"] and "interrupt" in r["error"] and r["left_behind"] == [],
                 f"result.json says interrupted, nothing left ({r['error']})")
    except (OSError, ValueError) as e:
        c.expect(False, f"result.json written after Ctrl-C ({e})")
    nothing_left(c, prefix)


def add_commands(sub):
    p = sub.add_parser("selftest", help="the bed's CI test (ctest testbed)", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--perf", required=True, help="path of preccl-perf")
    p.add_argument("--keep-out", help="keep run outputs here (default: a temporary directory)")
    p.set_defaults(fn=main)


def main(a):
    c = Checks()
    fails = selftest_parse.run()
    c.expect(not fails, f"scenario parsing: {len(selftest_parse.CASES)} cases" + "".join("\n    " + f for f in fails))
    fails = selftest_capacity.run()
    c.expect(not fails, "capacity limit arithmetic" + "".join("\n    " + f for f in fails))
    why = netns_possible()
    if why:
        print(f"skipped: {why} (the bed's network tests need root and network namespaces)")
        sys.exit(1 if c.failed else 0)
    if not c.expect(os.access(a.perf, os.X_OK), f"{a.perf} is executable"):
        sys.exit(1)
    with tempfile.TemporaryDirectory(prefix="testbed-selftest-") as tmp:
        out = a.keep_out or tmp
        before = set(names.STATE_DIR and os.listdir(names.STATE_DIR) if os.path.isdir(names.STATE_DIR) else [])
        try:
            test_refuse_and_down(c)
            test_run(c, os.path.abspath(a.perf), os.path.join(out, "run"))
            test_interrupt(c, os.path.abspath(a.perf), os.path.join(out, "interrupt"))
        finally:  # a crash of this script must not leave a bed behind either
            after = set(os.listdir(names.STATE_DIR) if os.path.isdir(names.STATE_DIR) else [])
            for state in sorted(after - before):
                if state.endswith(".json"):
                    subprocess.run(TESTBED + ["down", "--force", "--prefix", state[:-5]], timeout=60)
    print(f"testbed selftest: {'FAILED: ' + '; '.join(c.failed) if c.failed else 'all checks passed'}")
    sys.exit(1 if c.failed else 0)
