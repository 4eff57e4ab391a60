"""Whole-machine CPU use between two reads of /proc/stat: the bed shares 2 cores with everything else,
so a run that saturated the CPU measured the CPU, not the network. On a virtual machine the hypervisor
also takes time from it ("steal"): that time counts as busy here, and is reported on its own, since the
bed's ranks, proxies and the kernel's shaping then run slower in bursts no code of ours causes."""
import threading
import time

BUSY_WARN = 0.85
STEAL_WARN = 0.10   # above this the leg measured the machine's neighbours as much as the links


def read():
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    steal = fields[7] if len(fields) > 7 else 0
    # guest time is already inside user
    return {"total": sum(fields[:8]), "idle": idle, "steal": steal, "unix": time.time()}


def busy(before, after):
    total = after["total"] - before["total"]
    return 0.0 if total <= 0 else 1.0 - (after["idle"] - before["idle"]) / total


def steal(before, after):
    total = after["total"] - before["total"]
    return 0.0 if total <= 0 else (after["steal"] - before["steal"]) / total


def summary(before, after):
    b, s = busy(before, after), steal(before, after)
    return {"busy": round(b, 3), "steal": round(s, 3), "warn": b > BUSY_WARN, "steal_warn": s > STEAL_WARN}


class Sampler(threading.Thread):
    """Reads /proc/stat every `period` s while a leg runs, so that each call's steal can be told apart
    (steal_between): a slow call at unchanged shares is then either the links or the hypervisor. The
    samples go to the leg's cpu.csv (leg_files)."""

    def __init__(self, period=0.5):
        super().__init__(daemon=True)
        self.period, self.samples, self._done = period, [read()], threading.Event()

    def run(self):
        while not self._done.wait(self.period):
            self.samples.append(read())

    def stop(self):
        self._done.set()
        self.join(2)
        self.samples.append(read())


def steal_between(samples, t0_unix, t1_unix):
    """Steal over [t0, t1] (unix seconds) from the samples around it; None when they do not cover it."""
    before = [s for s in samples if s["unix"] <= t0_unix]
    after = [s for s in samples if s["unix"] >= t1_unix]
    if not before or not after:
        return None
    return steal(before[-1], after[0])
