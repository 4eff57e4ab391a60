#!/usr/bin/env python3
"""PReCCL multi-host, multi-NIC test bed: H hosts x K NICs as network namespaces (see docs/testbed.md).

  testbed.py up --hosts 2 --nics 2 --rate 100mbit [--rate-of h1.nic0=25mbit] [--prefix P]
  testbed.py down --prefix P [--force]
  testbed.py run --scenario FILE.toml [--build DIR | --perf BIN] [--mpi BIN] [--gloo BIN]
                 [--collectives a,b] [--systems x,y] [--iters N] [--tcp-cc NAME] [--out DIR] [--prefix P]
  testbed.py report OUT_DIR
  testbed.py check-scenario FILE.toml...
"""
import argparse
import os
import signal
import sys
import time

sys.dont_write_bytecode = True  # keep the source tree clean (no __pycache__)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bed_names as names  # noqa: E402
import capacity  # noqa: E402
import scenario  # noqa: E402
import units  # noqa: E402
from bed_net import Bed, BedError, teardown  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _need_root():
    if os.geteuid() != 0:
        sys.exit("testbed: needs root (network namespaces, veth, bridges, tc)")


def cmd_up(a):
    _need_root()
    rate_of = {}
    for item in a.rate_of:
        label, _, rate = item.partition("=")
        t = scenario._Table("--rate-of", "option", {"rate_of": {label: rate}})
        sc = scenario.Scenario(path="--rate-of", hosts=a.hosts, nics=a.nics)
        rate_of[scenario._parse_label(sc, t, f"rate_of.{label}", label)] = units.parse_rate(rate)
    prefix = a.prefix or names.new_prefix()
    bed = Bed(prefix, a.hosts, a.nics, units.parse_rate(a.rate), rate_of, tcp_cc=_tcp_cc(a.tcp_cc))
    try:
        bed.up()
    except BaseException:  # error, Ctrl-C, SIGTERM: remove the half-built bed, undisturbed
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        if bed.is_up:
            left = bed.down()
            print(f"testbed: setup failed, removed what was created{'; LEFT: ' + str(left) if left else ''}",
                  file=sys.stderr)
        raise
    names.write_state(prefix, {**names.read_state(prefix), "pid": None})  # nobody owns it now but `down`
    print(prefix)
    for label, s in bed.nic_state().items():
        h, k = (int(x) for x in label[1:].replace("nic", "").split("."))
        print(f"# {label}: netns {names.netns(prefix, h)} dev {names.nic(k)} {names.address(h, k)}/24 "
              f"{units.format_rate(bed.rates[(h, k)])} {s['operstate']}")
    print(f"# remove with: {sys.argv[0]} down --prefix {prefix}")


def cmd_down(a):
    _need_root()
    names.check_prefix(a.prefix)
    st = names.read_state(a.prefix)
    if st and st.get("pid") and st["pid"] != os.getpid() and _pid_alive(st["pid"]) and not a.force:
        sys.exit(f"testbed: bed {a.prefix} belongs to running process {st['pid']} (it removes the bed when "
                 "it ends); use --force to remove it anyway")
    left = teardown(a.prefix)
    if left:
        sys.exit(f"testbed: could not remove: {', '.join(left)}")
    print(f"testbed: {a.prefix}: nothing left")


def _pid_alive(pid):
    from bed_net import _alive
    return _alive(pid)  # a zombie (killed, not yet reaped) counts as gone


def cmd_run(a):
    import run_scenario
    try:
        sc = scenario.load(a.scenario)
    except scenario.ScenarioError as e:
        sys.exit(f"testbed: {e}")
    for key in ("collectives", "systems"):  # command-line overrides, checked like the file's keys
        value = getattr(a, key)
        if value is not None:
            t = scenario._Table(f"--{key}", "option", {key: [x for x in value.split(",") if x]})
            try:
                setattr(sc, key, scenario._str_list(t, key, None, *_CHECKS[key]))
            except scenario.ScenarioError as e:
                sys.exit(f"testbed: {e}")
    sc.collective = sc.collectives[0]
    if a.tcp_cc is not None:
        sc.tcp_cc = _tcp_cc(a.tcp_cc)
    if a.iters is not None:
        if not 1 <= a.iters <= 10000:
            sys.exit(f"testbed: --iters {a.iters}: want 1..10000")
        sc.iters = a.iters
    _need_root()
    build = a.build or os.environ.get("PRECCL_BUILD") or os.path.join(REPO, "build")
    perf = a.perf or os.path.join(build, "perf", "preccl-perf")
    if not os.access(perf, os.X_OK):
        sys.exit(f"testbed: {perf} not found; build it: cmake -S {REPO} -B {build} -DPRECCL_BUILD_TESTS=OFF "
                 f"&& cmake --build {build} -j2 --target preccl-perf")
    prefix = a.prefix or sc.prefix or names.new_prefix()
    out = a.out or os.path.join("/tmp/preccl-testbed", f"{prefix}-{time.strftime('%Y%m%d-%H%M%S')}")
    bins = {"preccl": os.path.abspath(perf)}
    peer_dir = os.path.dirname(bins["preccl"])  # the peers are built next to preccl-perf
    bins["openmpi"] = os.path.abspath(a.mpi or os.path.join(peer_dir, "perf-mpi-allreduce"))
    bins["gloo"] = os.path.abspath(a.gloo or os.path.join(peer_dir, "perf-gloo-allreduce"))
    r = run_scenario.run(sc, bins["preccl"], out, prefix, bins=bins)
    sys.exit(0 if r["passed"] else 1)


def _tcp_cc(name):
    if not scenario.TCP_CC_RE.match(name):
        sys.exit(f"testbed: --tcp-cc {name!r}: want a name like cubic, bbr or inherit")
    return name


_CHECKS = {"collectives": (lambda v: v in scenario.COLLECTIVES, "a collective"),
           "systems": (lambda v: v in scenario.PEER_SYSTEMS or scenario.SYSTEM_RE.match(v) is not None,
                       "openmpi, gloo or preccl-<policy>")}


def cmd_report(a):
    """Rewrites results.csv, timeline.csv, vt_share.csv and plot.svg of a finished run from its
    result.json and leg directories (after a change to the formulas or the plot)."""
    import json
    import leg_results
    import svg_plot
    path = os.path.join(a.out, "result.json")
    try:
        r = json.load(open(path))
    except (OSError, ValueError) as e:
        sys.exit(f"testbed: {path}: {e}")
    b = r["bed"]
    sc = scenario.Scenario(path=r["scenario"], hosts=b["hosts"], nics=b["nics"], ranks_per_host=b["ranks_per_host"])
    rates = capacity.bed_rates(b)
    for leg in r["legs"]:
        if leg.get("iter_csv"):  # the run directory may have moved
            leg["iter_csv"] = os.path.join(a.out, leg["dir"], "iter.csv")
        if leg.get("nics_csv"):
            leg["nics_csv"] = os.path.join(a.out, leg["dir"], "nics.csv")
        if "launch_unix" in leg or "perf" in leg:
            leg_results.leg_numbers(leg, sc, rates)
    r["results"] = leg_results.write_outputs(a.out, r["legs"])
    svg_plot.write(os.path.join(a.out, "plot.svg"), os.path.basename(r["scenario"]), r["legs"])
    with open(path, "w") as f:
        json.dump(r, f, indent=1)
    print(open(os.path.join(a.out, "results.csv")).read().rstrip())


def cmd_check(a):
    bad = 0
    for path in a.files:
        try:
            sc = scenario.load(path)
            print(f"{path}: ok ({sc.hosts} hosts x {sc.nics} NICs, {sc.ranks_per_host} ranks/host, "
                  f"{len(sc.events)} events; {', '.join(sc.collectives)} x {', '.join(sc.systems)})")
        except scenario.ScenarioError as e:
            print(f"testbed: {e}", file=sys.stderr)
            bad += 1
    sys.exit(1 if bad else 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("up", help="build a bed and leave it up")
    p.add_argument("--hosts", type=int, default=4)
    p.add_argument("--nics", type=int, default=2)
    p.add_argument("--rate", default="100mbit", help="every NIC, both directions (tc units)")
    p.add_argument("--rate-of", action="append", default=[], metavar="hH.nicK=RATE")
    p.add_argument("--tcp-cc", default="cubic", metavar="NAME",
                   help="the hosts' TCP congestion control (default cubic; inherit: the machine's)")
    p.add_argument("--prefix")
    p.set_defaults(fn=cmd_up)
    p = sub.add_parser("down", help="remove everything named after a prefix")
    p.add_argument("--prefix", required=True)
    p.add_argument("--force", action="store_true", help="even if the run that made it is still alive")
    p.set_defaults(fn=cmd_down)
    p = sub.add_parser("run", help="bed up, run ranks and events, collect, bed down")
    p.add_argument("--scenario", required=True)
    p.add_argument("--build", help="build directory holding perf/preccl-perf (default $PRECCL_BUILD or ./build)")
    p.add_argument("--perf", help="the preccl-perf binary itself (overrides --build)")
    p.add_argument("--mpi", help="perf-mpi-allreduce (default: next to preccl-perf)")
    p.add_argument("--gloo", help="perf-gloo-allreduce (default: next to preccl-perf)")
    p.add_argument("--collectives", help="comma-separated; overrides the scenario's [run] collectives")
    p.add_argument("--systems", help="comma-separated; overrides the scenario's [run] systems")
    p.add_argument("--tcp-cc", metavar="NAME", help="overrides the scenario's [bed] tcp_congestion_control")
    p.add_argument("--iters", type=int, help="overrides the scenario's [run] iters (timed calls per mode and size)")
    p.add_argument("--out", help="output directory (default /tmp/preccl-testbed/<prefix>-<time>)")
    p.add_argument("--prefix")
    p.set_defaults(fn=cmd_run)
    p = sub.add_parser("report", help="rewrite the CSVs and plot.svg of a finished run from its result.json")
    p.add_argument("out", help="the run's --out directory")
    p.set_defaults(fn=cmd_report)
    p = sub.add_parser("check-scenario", help="parse and check scenario files only")
    p.add_argument("files", nargs="+")
    p.set_defaults(fn=cmd_check)
    a = ap.parse_args()
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _interrupt)
    try:
        a.fn(a)
    except (BedError, ValueError) as e:
        sys.exit(f"testbed: {e}")
    except KeyboardInterrupt:
        print("testbed: interrupted", file=sys.stderr)
        sys.exit(130)


def _interrupt(signum, frame):
    raise KeyboardInterrupt()


if __name__ == "__main__":
    main()
