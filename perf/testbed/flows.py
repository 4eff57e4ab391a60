"""Background flows (the other tenant): one blaster receiver + sender pair per flow, on one rail,
from one host's namespace to another's. Each is bounded in bytes and seconds by the blaster itself,
and terminated at flow_stop and at teardown. The blaster is a program of its own (blaster.py), started
inside the namespaces."""
import os
import signal
import subprocess
import sys
import time

from . import bed_names as names
from . import leg_files

BLASTER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "blaster.py")
BASE_PORT = 40000
RECV_SLACK_S = 2.0   # the receiver outlives the sender's bound by this much, so it sees the end


class Flows:
    def __init__(self, bed, out_dir):
        self.bed, self.out_dir = bed, out_dir
        self.flows = {}   # id -> dict(event, procs{role: Popen}, paths{role: path})

    def start(self, ev):
        port = BASE_PORT + ev.index
        dst = f"{names.address(ev.to, ev.nic)}:{port}"
        roles = {"recv": (ev.to, ["recv", "--bind", dst, "--seconds", str(ev.seconds + RECV_SLACK_S)]),
                 "send": (ev.host, ["send", "--to", dst, "--bind", names.address(ev.host, ev.nic),
                                    "--bytes", str(ev.bytes), "--seconds", str(ev.seconds),
                                    "--rate", str(ev.rate_bps or 0)])}
        if ev.proto == "udp":
            for _, args in roles.values():
                args.append("--udp")
        flow = {"event": ev, "procs": {}, "paths": {}, "started": time.monotonic()}
        for role, (host, args) in roles.items():  # receiver first; the sender retries its connect
            path = leg_files.flow_output(self.out_dir, ev.flow, role)
            with open(path, "w") as f:
                flow["procs"][role] = subprocess.Popen(
                    self.bed.exec_argv(host, [sys.executable, BLASTER, *args]),
                    stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            flow["paths"][role] = path
        self.flows[ev.flow] = flow

    def stop(self, flow_id):
        flow = self.flows.get(flow_id)
        if flow is None:
            raise RuntimeError(f"flow {flow_id!r} was never started")
        for p in flow["procs"].values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)

    def finish(self, grace=0.0):
        """Waits (at most each flow's own bound + slack, or `grace` for stragglers) and kills leftovers."""
        for flow in self.flows.values():
            ev = flow["event"]
            t_end = max(flow["started"] + ev.seconds + RECV_SLACK_S + 1, time.monotonic() + grace)
            for p in flow["procs"].values():
                try:
                    p.wait(max(0.01, t_end - time.monotonic()))
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()

    def kill_all(self):
        for flow in self.flows.values():
            for p in flow["procs"].values():
                if p.poll() is None:
                    p.kill()
                    p.wait()

    def summary(self):
        out = {}
        for fid, flow in self.flows.items():
            ev = flow["event"]
            rec = {"from": names.nic_label(ev.host, ev.nic), "to": names.nic_label(ev.to, ev.nic),
                   "proto": ev.proto, "limit_bytes": ev.bytes, "limit_seconds": ev.seconds}
            for role, path in flow["paths"].items():
                rec[role] = leg_files.read_flow_output(path)
                rec[role + "_exit"] = flow["procs"][role].returncode
            # A flow that moved nothing (its blaster refused its arguments, or never connected) did not
            # load the link: the leg must not pass as if it had.
            rec["ok"] = all(rec[r + "_exit"] in (0, -signal.SIGTERM) for r in flow["paths"]) and \
                bool((rec.get("send") or {}).get("bytes"))
            out[fid] = rec
        return out
