"""How busy each NIC's transmit side was during each call: what it sent over what its shaped rate allows.

The fraction of the capacity limit a call reaches mixes two losses: bytes that are not payload (headers,
ACKs, retransmissions) and time in which a link had nothing to send. This tells them apart. The
bed samples every NIC's transmit counter every 0.1 s while a leg runs (the root-side end of its veth:
what the NIC sent arrives there), and each call gets, per NIC, the bits sent during it over the bits its
link could carry (tbf's rate over the call, link events included). A link that is full gives 1.0, less
the few per cent tbf lets through above the rate. Another tenant's bytes count too: this is the link's
use, not the collective's.

As a command: `python3 -m perf.testbed nic-use OUT_DIR [--collective C] [--system S]` prints every timed
call's NIC use per NIC, and `--series N` the N-th call's rates in 0.2 s steps (which link idled, and when).
"""
import bisect
import sys
import threading
import time

from . import leg_files
from .bed_names import parse_nic_label
from .capacity import RateTimeline, bed_rates

PERIOD_S = 0.1


class Sampler(threading.Thread):
    """Reads {label: sysfs counter path} every `period` s until stop(); a vanished file ends sampling.
    The samples go to the leg's nics.csv (leg_files)."""

    def __init__(self, paths, period=PERIOD_S):
        super().__init__(daemon=True)
        self.labels = sorted(paths)
        self._paths = [paths[l] for l in self.labels]
        self.period, self.samples, self._done = period, [], threading.Event()
        self._read()

    def _read(self):
        try:
            vals = []
            for p in self._paths:
                with open(p) as f:
                    vals.append(int(f.read()))
        except (OSError, ValueError):
            return False
        self.samples.append((time.time(), vals))
        return True

    def run(self):
        while not self._done.wait(self.period) and self._read():
            pass

    def stop(self):
        self._done.set()
        self.join(2)
        self._read()


def _bytes_at(samples, i, t):
    """Counter i at unix time t, linear between the samples around it; None outside them."""
    if not samples or t < samples[0][0] or t > samples[-1][0]:
        return None
    j = max(1, bisect.bisect_left(samples, t, key=lambda s: s[0]))
    (t0, v0), (t1, v1) = samples[j - 1], samples[j]
    return v0[i] + (v1[i] - v0[i]) * ((t - t0) / (t1 - t0) if t1 > t0 else 1.0)


def use_over(labels, samples, rt, launch_unix, spans):
    """{nic label: bits sent / bits the link could carry} over the spans [(t_start, t_end)] (seconds after
    launch) together; a NIC whose counter does not cover a span is left out."""
    out = {}
    for i, label in enumerate(labels):
        h, k = parse_nic_label(label)
        bits = cap = 0.0
        for a, b in spans:
            x0, x1 = _bytes_at(samples, i, launch_unix + a), _bytes_at(samples, i, launch_unix + b)
            if x0 is None or x1 is None:
                break
            bits += (x1 - x0) * 8
            cap += rt.shaped_bits(h, k, "egress", a, b)
        else:
            if cap > 0:
                out[label] = bits / cap
    return out


def call_use(labels, samples, rt, launch_unix, t_start, t_end):
    return use_over(labels, samples, rt, launch_unix, [(t_start, t_end)])


def summarize(use):
    """(mean, min) over the NICs, or (None, None)."""
    if not use:
        return None, None
    return sum(use.values()) / len(use), min(use.values())


# ---- the command

def add_commands(sub):
    p = sub.add_parser("nic-use", help="every timed call's NIC use per NIC, from a finished run",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("out_dir")
    p.add_argument("--collective")
    p.add_argument("--system")
    p.add_argument("--series", type=int, help="the N-th timed call (0-based): rates in 0.2 s steps")
    p.set_defaults(fn=main)


def _timeline(res, leg):
    bed = res["bed"]
    return RateTimeline(bed["hosts"], bed["nics"], bed_rates(bed), leg.get("events", []), leg.get("flows"))


def main(a):
    found = False
    res = leg_files.load_result(a.out_dir)
    for leg in leg_files.select_legs(res, a.collective, a.system):
        d = leg_files.leg_dir(a.out_dir, leg)
        labels, samples = leg_files.read_nic_samples(leg_files.nics_csv(d))
        calls = leg_files.read_iters(leg_files.iter_csv(d), leg.get("launch_unix"))
        if not samples or not calls:
            continue
        found = True
        rt = _timeline(res, leg)
        print(f"== {leg['collective']} / {leg['system']}: NIC transmit use per call (sent / shaped rate)")
        print("mode iter   time_s " + " ".join(f"{l:>8s}" for l in labels) + "     mean      min")
        for n, r in enumerate(calls):
            use = call_use(labels, samples, rt, leg["launch_unix"], r["t_start"], r["t_end"])
            mean, low = summarize(use)
            if mean is None:
                continue
            print(f"{r['mode']:4s} {r['iter']:4d} {r['time_us'] / 1e6:8.3f} "
                  + " ".join(f"{use.get(l, float('nan')):8.3f}" for l in labels) + f" {mean:8.3f} {low:8.3f}")
            if a.series == n:
                _series(labels, samples, rt, leg["launch_unix"], r["t_start"], r["t_end"])
    if not found:
        print(f"nic_use: no leg with NIC samples in {a.out_dir}", file=sys.stderr)
        return 1
    return 0


def _series(labels, samples, rt, launch_unix, t_start, t_end, step=0.2):
    print(f"   call from {t_start:.2f} s to {t_end:.2f} s after launch, per {step} s:")
    t = t_start
    while t + step <= t_end + 1e-9:
        use = call_use(labels, samples, rt, launch_unix, t, t + step)
        print(f"   +{t - t_start:6.2f} " + " ".join(f"{use.get(l, float('nan')):8.2f}" for l in labels))
        t += step
