"""`python3 -m perf.testbed run`: one bed; for every collective of the scenario, every system in turn (a
"leg"): ranks + the scenario's events (the schedule restarts for every leg), counters and CPU
before/after; between legs the bed is put back as it was built (rates, links up, no flows). Then
results.csv, timeline.csv, vt_share.csv, plot.svg and result.json (written by leg_files), and the bed is
removed.

Teardown runs in `finally` with SIGINT/SIGTERM ignored, so Ctrl-C, an error or a failed rank all end
with the bed removed; result.json records what (if anything) was left behind. A leg that fails (a rank
exits non-zero, e.g. PReCCL when a NIC fails) is recorded with its error text; the next leg still runs.
"""
import dataclasses
import os
import signal
import time

from . import bed_names as names
from . import cpu_use
from . import leg_files
from . import leg_results
from . import nic_use
from . import peers
from . import svg_plot
from . import units
from .bed_net import Bed, BedError
from .events import EventRunner
from .flows import Flows
from .ranks import Ranks, system_binary

EVENT_GRACE_S = 15   # how long after its due time the last event may take before the run gives up
SETTLE_S = 1.0       # between legs: let queues drain and sockets close
# Keys of a leg that result.json also carries at the top level when the run has exactly one leg (the
# layout of the single-system bed, which the self-test reads).
LEG_KEYS = ("command", "ok", "timed_out", "ranks", "perf", "counters", "delta_ranks", "delta_total", "events",
            "flows", "nics_down", "events_ok", "ranks_s", "errors")


class _Terminated(KeyboardInterrupt):
    pass


def _raise_terminated(signum, frame):
    raise _Terminated()


def _delta(a, b):
    return {label: {"tx_bytes": b[label]["tx_bytes"] - a[label]["tx_bytes"],
                    "rx_bytes": b[label]["rx_bytes"] - a[label]["rx_bytes"]} for label in a if label in b}


def run(sc, perf_bin, out_dir, prefix, say=print, bins=None, origin=None):
    """bins: {"preccl", "openmpi", "gloo"} -> binary; perf_bin is the PReCCL one. origin: the source's
    commit and the command line, recorded for the results table."""
    os.makedirs(out_dir, exist_ok=True)
    bins = dict(bins or {})
    bins.setdefault("preccl", perf_bin)
    bed = Bed(prefix, sc.hosts, sc.nics, sc.rate_bps, sc.rate_of, tcp_cc=sc.tcp_cc)
    built_rates = dict(bed.rates)
    result = {"prefix": prefix, "scenario": os.path.abspath(sc.path), "out_dir": os.path.abspath(out_dir),
              "bed": {"hosts": sc.hosts, "nics": sc.nics, "ranks_per_host": sc.ranks_per_host,
                      "rates": {names.nic_label(h, k): units.format_rate(r) for (h, k), r in bed.rates.items()}},
              "collectives": sc.collectives, "systems": sc.systems, "origin": origin or {}, "error": None,
              "legs": []}
    legs = result["legs"]
    old = {s: signal.signal(s, _raise_terminated) for s in (signal.SIGTERM, signal.SIGHUP)}
    cpu0 = cpu_use.read()
    t_wall0 = time.monotonic()
    try:
        say(f"testbed {prefix}: {sc.hosts} hosts x {sc.nics} NICs, {units.format_rate(sc.rate_bps)}, "
            f"{sc.hosts * sc.ranks_per_host} ranks; {', '.join(sc.collectives)} x {', '.join(sc.systems)}")
        bed.up()
        # TCP's congestion control shapes what a flow gets through tbf (docs/testbed.md: BBR costs the
        # tree algorithms 10-20 % here), so every result names the one its hosts ran, read back.
        result["bed"]["tcp_congestion_control"] = bed.congestion_control()
        say(f"# TCP congestion control in the hosts: {result['bed']['tcp_congestion_control']}")
        dirty = False
        for coll in sc.collectives:
            for system in dict.fromkeys(peers.resolve(s, coll) for s in sc.systems):
                leg = {"collective": coll, "system": system, "dir": leg_files.leg_dir_name(coll, system)}
                legs.append(leg)
                why = peers.skip_reason(system, coll) if peers.is_peer(system) else None
                if why:
                    leg.update(ok=None, note=f"skipped: {why}")
                    continue
                binary = system_binary(system, bins)
                if not binary or not os.access(binary, os.X_OK):
                    leg.update(ok=False, note=f"skipped: {binary or system} is not built")
                    continue
                if dirty:
                    _restore(bed, built_rates)
                dirty = True
                say(f"== {coll} / {system}")
                _run_leg(bed, dataclasses.replace(sc, collective=coll), system, bins,
                         leg_files.leg_dir(out_dir, leg), leg, say)
    except KeyboardInterrupt as e:
        result["error"] = "terminated by signal" if isinstance(e, _Terminated) else "interrupted (Ctrl-C)"
    except (BedError, OSError, ValueError) as e:
        result["error"] = str(e)
    finally:
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)
        try:
            result["left_behind"] = bed.down() if bed.is_up else []
        finally:
            cpu1 = cpu_use.read()
            signal.signal(signal.SIGINT, signal.default_int_handler)
            for s, h in old.items():
                signal.signal(s, h)
    result["wall_s"] = round(time.monotonic() - t_wall0, 3)
    result["cpu"] = {**cpu_use.summary(cpu0, cpu1), "cores": os.cpu_count()}
    for leg in legs:
        if "launch_unix" in leg or "perf" in leg:
            leg_results.leg_numbers(leg, sc, built_rates)
    result["results"] = leg_results.result_rows(legs)
    leg_files.write_tables(out_dir, result["results"], legs)
    try:
        leg_files.write_plot(out_dir, svg_plot.render(os.path.basename(sc.path), legs))
    except (OSError, ValueError, TypeError, KeyError) as e:  # a plot must not cost the numbers
        result["plot_error"] = str(e)
    ran = [l for l in legs if l.get("ok") is not None and not l.get("note")]
    if len(legs) == 1 and ran:
        result.update({k: ran[0][k] for k in LEG_KEYS if k in ran[0]})
    result["nics_down"] = ran[-1].get("nics_down", []) if ran else []
    result["ok"] = bool(ran) and all(l.get("ok") for l in ran)
    result["events_ok"] = all(l.get("events_ok", False) for l in ran)
    result["cpu_warn_legs"] = [l["dir"] for l in ran if l.get("cpu", {}).get("warn")]
    result["steal_warn_legs"] = [l["dir"] for l in ran if l.get("cpu", {}).get("steal_warn")]
    result["passed"] = (result["ok"] and result["events_ok"] and not result["error"]
                        and not result["left_behind"])
    leg_files.write_result(out_dir, result)
    leg_files.write_bed_log(out_dir, bed.log.lines)
    _report(result, out_dir, say)
    return result


def _restore(bed, built_rates):
    """Puts the bed back as built: every NIC up at its built rate (both directions). Checked with tc."""
    for (h, k), bps in built_rates.items():
        bed.set_link(h, k, True)
        bed.set_rate(h, k, bps)
        got = bed.shaped_rates(h, k)
        if got != (bps, bps):
            raise BedError(f"restoring {names.nic_label(h, k)} to {units.format_rate(bps)}: tc reports {got}")
    deadline = time.monotonic() + 5
    while any(s["operstate"] != "UP" for s in bed.nic_state().values()):
        if time.monotonic() > deadline:
            raise BedError("restoring the bed: a NIC did not come back UP within 5 s")
        time.sleep(0.05)
    time.sleep(SETTLE_S)


def _run_leg(bed, sc, system, bins, leg_dir, leg, say):
    """One system, one collective: ranks and events; fills `leg`. KeyboardInterrupt propagates (after the
    leg's processes are gone); other errors end only this leg."""
    os.makedirs(leg_dir, exist_ok=True)
    ranks = Ranks(bed, sc, bins["preccl"], leg_dir, system=system, bins=bins)
    flows = Flows(bed, leg_dir)
    events = None
    leg.update(command=ranks.command(), counters={}, error=None)
    leg_files.note_iter_csv(leg, leg_dir)
    cpu = cpu_use.Sampler()
    cpu.start()
    nics = nic_use.Sampler(bed.tx_counter_paths())
    nics.start()
    t_leg0 = time.monotonic()
    try:
        leg["counters"]["start"] = bed.nic_state()
        t0 = time.monotonic()
        events = EventRunner(bed, flows, sc.events, t0)
        ranks.start()
        leg["launch_unix"] = ranks.launch_unix
        events.start()
        ranks.wait(sc.run_timeout)
        t_ranks = time.monotonic()
        events.ranks_done(t_ranks)
        leg["ranks_s"] = round(t_ranks - t0, 3)
        leg["counters"]["ranks_done"] = bed.nic_state()
        while events.is_alive():
            events.join(0.2)
            last = events.last_due()
            if last is not None and time.monotonic() > last + EVENT_GRACE_S:
                raise BedError("events did not finish within their schedule")
        flows.finish()
        time.sleep(sc.tail)
        leg["counters"]["end"] = bed.nic_state()
    except (BedError, OSError, ValueError) as e:
        leg["error"] = str(e)
    finally:
        if events is not None:
            events.stop()
            events.join(5)
        ranks.kill()
        flows.kill_all()
        cpu.stop()
        nics.stop()
        leg_files.write_nic_samples(leg, leg_dir, nics.labels, nics.samples)
        leg["cpu"] = cpu_use.summary(cpu.samples[0], cpu.samples[-1])
        leg_files.write_cpu_samples(leg, leg_dir, cpu.samples)
        leg["wall_s"] = round(time.monotonic() - t_leg0, 3)
        leg.update(ranks.summary())
        leg["events"] = events.log if events is not None else []
        leg["flows"] = flows.summary()
        c = leg["counters"]
        if "start" in c and "ranks_done" in c:
            leg["delta_ranks"] = _delta(c["start"], c["ranks_done"])
        if "start" in c and "end" in c:
            leg["delta_total"] = _delta(c["start"], c["end"])
        final = c.get("end") or c.get("ranks_done") or {}
        leg["nics_down"] = sorted(l for l, s in final.items() if s["operstate"] != "UP")
        leg["events_ok"] = all(e.get("ok", False) for e in leg["events"]) and \
            all(f.get("ok", False) for f in leg["flows"].values())
        leg["passed"] = leg["ok"] and leg["events_ok"] and not leg["error"]
        leg_files.write_events(leg_dir, leg["events"])
        _report_leg(leg, leg_dir, say)


def _report_leg(leg, leg_dir, say):
    table = leg_files.rank0_output(leg_dir, leg["system"])
    if table is not None:
        say(table.rstrip())
    for label, d in leg.get("delta_ranks", {}).items():
        say(f"# {label}: during ranks tx {d['tx_bytes']} B rx {d['rx_bytes']} B")
    for e in leg["events"]:
        status = "not fired" if not e["fired"] else ("ok" if e["ok"] else "FAILED: " + e.get("error", ""))
        extra = f" operstate {e['operstate']}" if "operstate" in e else ""
        say(f"# event #{e['index'] + 1} {e['action']} {e.get('nic', e.get('flow', ''))} "
            f"at {e.get('t_s', '-')} s: {status}{extra}")
    for fid, f in leg.get("flows", {}).items():
        sent, recv = f.get("send") or {}, f.get("recv") or {}
        rate = leg_results.flow_rate_mbit(f)
        say(f"# flow {fid} ({f.get('proto', 'tcp')} {f['from']} -> {f['to']}): sent {sent.get('bytes', 0)} B, "
            f"received {recv.get('bytes', 0)} B" + ("" if rate is None else f", {rate:.1f} Mbit/s over "
                                                     f"{recv['seconds']} s"))
    for line in leg.get("errors", []):
        say(f"# {line}")
    say(f"# CPU busy {leg['cpu']['busy'] * 100:.0f}% ({_steal(leg['cpu'])}) over {leg['wall_s']} s"
        + (" -- WARNING: the machine, not the links, may have been the bottleneck" if leg["cpu"]["warn"] else "")
        + (" -- WARNING: the hypervisor took the CPU for a while: slow calls may not be the links'"
           if leg["cpu"].get("steal_warn") else ""))
    if leg["error"]:
        say(f"# ERROR: {leg['error']}")
    say(f"# {leg['collective']} / {leg['system']}: {'ok' if leg['ok'] else 'FAILED'}")


def _steal(cpu):
    return f"steal {cpu.get('steal', 0) * 100:.0f}%"


def _report(r, out_dir, say):
    for row in r["results"]:
        if row.get("size") is None:
            say(f"# {row['collective']:>13} {row['system']:>14}: {row['note']}")
            continue
        ratio = row.get("ratio_to_preccl_static")
        frac = row.get("fraction_of_capacity")
        steal = "" if row.get("steal") is None else f", steal {row['steal'] * 100:.0f}%"
        if row.get("flows_mbit") is not None:
            steal += f", background flows {row['flows_mbit']} Mbit/s"
        say(f"# {row['collective']:>13} {row['system']:>14} {row['size']:>10} B: busbw {row['busbw']} Mbit/s, "
            f"capacity {row['capacity_limit']} Mbit/s ({'-' if frac is None else f'{frac * 100:.0f}%'}), "
            f"ratio to preccl-static {'-' if ratio is None else ratio}{steal}{'' if row['ok'] else ' FAILED'}")
    if r["nics_down"]:
        say(f"# NICs down at the end of the last leg: {', '.join(r['nics_down'])}")
    say(f"# CPU busy {r['cpu']['busy'] * 100:.0f}% ({_steal(r['cpu'])}) of {r['cpu']['cores']} cores "
        f"over {r['wall_s']} s")
    if r["cpu"]["warn"] or r["cpu_warn_legs"]:
        say(f"# WARNING: the machine was more than {cpu_use.BUSY_WARN * 100:.0f}% busy "
            f"({', '.join(r['cpu_warn_legs']) or 'whole run'}); the numbers may measure the CPU, not the network")
    if r["steal_warn_legs"]:
        say(f"# WARNING: the hypervisor took more than {cpu_use.STEAL_WARN * 100:.0f}% of the CPU during "
            f"{', '.join(r['steal_warn_legs'])}; per-call steal is in {leg_files.TIMELINE_CSV}")
    if r["error"]:
        say(f"# ERROR: {r['error']}")
    if r["left_behind"]:
        say(f"# ERROR: left behind: {', '.join(r['left_behind'])}")
    say(f"# {'passed' if r['passed'] else 'FAILED'}; result: {leg_files.result_json(out_dir)}, "
        f"{leg_files.PLOT_SVG}, {leg_files.RESULTS_CSV}, {leg_files.TIMELINE_CSV}")
