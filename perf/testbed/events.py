"""Fires a scenario's events on schedule in a background thread and logs each with its timestamp.

An event's time is `at` seconds after its anchor: the launch of the ranks ("start") or the moment the
last rank exited ("ranks"). Events with equal times fire in file order.
"""
import threading
import time

from . import bed_names as names
from . import units


class EventRunner(threading.Thread):
    def __init__(self, bed, flows, events, t0):
        super().__init__(name="testbed-events", daemon=True)
        self.bed, self.flows, self.t0 = bed, flows, t0
        self.pending = sorted(events, key=lambda e: (e.after, e.at, e.index))
        self.anchors = {"start": t0, "ranks": None}
        self.log = []
        self._wake = threading.Event()
        self._stopped = False

    def ranks_done(self, t):
        self.anchors["ranks"] = t
        self._wake.set()

    def stop(self):
        self._stopped = True
        self._wake.set()

    def last_due(self):
        """When the last event is due (monotonic), or None while an anchor is still unknown."""
        dues = [self._due(e) for e in self.pending]
        return None if None in dues else max(dues, default=time.monotonic())

    def _due(self, ev):
        anchor = self.anchors[ev.after]
        return None if anchor is None else anchor + ev.at

    def run(self):
        while self.pending and not self._stopped:
            known = [(self._due(e), e.index, e) for e in self.pending if self._due(e) is not None]
            if not known:
                self._wake.wait(0.2)
                self._wake.clear()
                continue
            due, _, ev = min(known)
            wait = due - time.monotonic()
            if wait > 0:
                self._wake.wait(min(wait, 0.2))
                self._wake.clear()
                continue
            self.pending.remove(ev)
            self.log.append(self.fire(ev, due))
        for ev in self.pending:  # stopped early (error, Ctrl-C, run over): say what never fired
            self.log.append({**describe(ev), "fired": False})

    def fire(self, ev, due):
        rec = {**describe(ev), "fired": True, "planned_s": round(due - self.t0, 3),
               "t_s": round(time.monotonic() - self.t0, 3), "ok": True}
        try:
            if ev.action == "rate":
                self.bed.set_rate(ev.host, ev.nic, ev.rate_bps, ev.direction)
                egress, ingress = self.bed.shaped_rates(ev.host, ev.nic)
                rec["tc_rate_bps"] = {"egress": egress, "ingress": ingress}
            elif ev.action == "flow_start":
                self.flows.start(ev)
            elif ev.action == "flow_stop":
                self.flows.stop(ev.flow)
            elif ev.action in ("link_down", "link_up"):
                want = "UP" if ev.action == "link_up" else "DOWN"
                self.bed.set_link(ev.host, ev.nic, ev.action == "link_up")
                # The kernel reports the new operstate shortly after the admin change: read it back.
                deadline = time.monotonic() + 2
                state = self.bed.operstate(ev.host, ev.nic)
                while state != want and time.monotonic() < deadline:
                    time.sleep(0.05)
                    state = self.bed.operstate(ev.host, ev.nic)
                rec["operstate"] = state
                rec["ok"] = state == want
                if state != want:
                    rec["error"] = f"operstate is {state} after {ev.action}, want {want}"
        except Exception as e:  # one failed event must not stop the schedule; it is logged
            rec["ok"], rec["error"] = False, str(e)
        rec["done_s"] = round(time.monotonic() - self.t0, 3)
        return rec


def describe(ev):
    rec = {"index": ev.index, "action": ev.action, "at": ev.at, "after": ev.after}
    if ev.host is not None and ev.nic is not None:
        rec["nic"] = names.nic_label(ev.host, ev.nic)
    if ev.action == "rate":
        rec["rate"] = units.format_rate(ev.rate_bps)
        rec["direction"] = ev.direction
    if ev.flow is not None:
        rec["flow"] = ev.flow
    if ev.action == "flow_start":
        rec.update({"to": names.nic_label(ev.to, ev.nic), "bytes": ev.bytes, "seconds": ev.seconds,
                    "proto": ev.proto})
    return rec
