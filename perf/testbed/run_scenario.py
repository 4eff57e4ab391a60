"""`testbed.py run`: bed up, ranks + events, counters and CPU before/after, result.json, bed down.

Teardown runs in `finally` with SIGINT/SIGTERM ignored, so Ctrl-C, an error or a failed rank all end
with the bed removed; result.json records what (if anything) was left behind.
"""
import json
import os
import signal
import time

import bed_names as names
import cpu_use
import units
from bed_net import Bed, BedError
from events import EventRunner
from flows import Flows
from ranks import Ranks

EVENT_GRACE_S = 15   # how long after its due time the last event may take before the run gives up


class _Terminated(KeyboardInterrupt):
    pass


def _raise_terminated(signum, frame):
    raise _Terminated()


def _delta(a, b):
    return {label: {"tx_bytes": b[label]["tx_bytes"] - a[label]["tx_bytes"],
                    "rx_bytes": b[label]["rx_bytes"] - a[label]["rx_bytes"]} for label in a if label in b}


def run(sc, perf_bin, out_dir, prefix, say=print):
    os.makedirs(out_dir, exist_ok=True)
    bed = Bed(prefix, sc.hosts, sc.nics, sc.rate_bps, sc.rate_of)
    ranks = Ranks(bed, sc, perf_bin, out_dir)
    flows = Flows(bed, out_dir)
    events = None
    result = {"prefix": prefix, "scenario": os.path.abspath(sc.path), "out_dir": os.path.abspath(out_dir),
              "bed": {"hosts": sc.hosts, "nics": sc.nics, "ranks_per_host": sc.ranks_per_host,
                      "rates": {names.nic_label(h, k): units.format_rate(r) for (h, k), r in bed.rates.items()}},
              "command": ranks.command(), "error": None, "counters": {}}
    old = {s: signal.signal(s, _raise_terminated) for s in (signal.SIGTERM, signal.SIGHUP)}
    cpu0 = cpu_use.read()
    t_wall0 = time.monotonic()
    try:
        say(f"testbed {prefix}: {sc.hosts} hosts x {sc.nics} NICs, {units.format_rate(sc.rate_bps)}, "
            f"{ranks.nranks} ranks")
        bed.up()
        result["counters"]["start"] = bed.nic_state()
        t0 = time.monotonic()
        events = EventRunner(bed, flows, sc.events, t0)
        ranks.start()
        events.start()
        ranks.wait(sc.run_timeout)
        t_ranks = time.monotonic()
        events.ranks_done(t_ranks)
        result["ranks_s"] = round(t_ranks - t0, 3)
        result["counters"]["ranks_done"] = bed.nic_state()
        while events.is_alive():
            events.join(0.2)
            last = events.last_due()
            if last is not None and time.monotonic() > last + EVENT_GRACE_S:
                raise BedError("events did not finish within their schedule")
        flows.finish()
        time.sleep(sc.tail)
        result["counters"]["end"] = bed.nic_state()
    except KeyboardInterrupt as e:
        result["error"] = "terminated by signal" if isinstance(e, _Terminated) else "interrupted (Ctrl-C)"
    except (BedError, OSError, ValueError) as e:
        result["error"] = str(e)
    finally:
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)
        try:
            if events is not None:
                events.stop()
                events.join(5)
            ranks.kill()
            flows.kill_all()
            result["left_behind"] = bed.down() if bed.is_up else []
        finally:
            cpu1 = cpu_use.read()
            signal.signal(signal.SIGINT, signal.default_int_handler)
            for s, h in old.items():
                signal.signal(s, h)
    result["wall_s"] = round(time.monotonic() - t_wall0, 3)
    busy = cpu_use.busy(cpu0, cpu1)
    result["cpu"] = {"busy": round(busy, 3), "cores": os.cpu_count(), "warn": busy > cpu_use.BUSY_WARN}
    result.update(ranks.summary())
    result["events"] = events.log if events is not None else []
    result["flows"] = flows.summary()
    c = result["counters"]
    if "start" in c and "ranks_done" in c:
        result["delta_ranks"] = _delta(c["start"], c["ranks_done"])
    if "start" in c and "end" in c:
        result["delta_total"] = _delta(c["start"], c["end"])
    final = c.get("end") or c.get("ranks_done") or {}
    result["nics_down"] = sorted(l for l, s in final.items() if s["operstate"] != "UP")
    result["events_ok"] = all(e.get("ok", False) for e in result["events"])
    result["passed"] = (result["ok"] and result["events_ok"] and not result["error"]
                        and not result["left_behind"])
    with open(os.path.join(out_dir, "result.json"), "w") as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(out_dir, "bed.log"), "w") as f:
        f.write("\n".join(bed.log.lines) + "\n")
    with open(os.path.join(out_dir, "events.log"), "w") as f:
        for e in result["events"]:
            f.write(json.dumps(e) + "\n")
    _report(result, out_dir, say)
    return result


def _report(r, out_dir, say):
    rank0 = os.path.join(out_dir, "rank0.out")
    if os.path.exists(rank0):
        say(open(rank0).read().rstrip())
    for label, d in r.get("delta_ranks", {}).items():
        say(f"# {label}: during ranks tx {d['tx_bytes']} B rx {d['rx_bytes']} B")
    for e in r["events"]:
        status = "not fired" if not e["fired"] else ("ok" if e["ok"] else "FAILED: " + e.get("error", ""))
        extra = f" operstate {e['operstate']}" if "operstate" in e else ""
        say(f"# event #{e['index'] + 1} {e['action']} {e.get('nic', e.get('flow', ''))} "
            f"at {e.get('t_s', '-')} s: {status}{extra}")
    if r["nics_down"]:
        say(f"# NICs down at the end: {', '.join(r['nics_down'])}")
    say(f"# CPU busy {r['cpu']['busy'] * 100:.0f}% of {r['cpu']['cores']} cores over {r['wall_s']} s")
    if r["cpu"]["warn"]:
        say(f"# WARNING: the machine was more than {cpu_use.BUSY_WARN * 100:.0f}% busy; "
            "the numbers may measure the CPU, not the network")
    if r["error"]:
        say(f"# ERROR: {r['error']}")
    if r["left_behind"]:
        say(f"# ERROR: left behind: {', '.join(r['left_behind'])}")
    say(f"# ranks {'ok' if r['ok'] else 'FAILED'}; result: {os.path.join(out_dir, 'result.json')}")
