#!/usr/bin/env python3
"""PReCCL multi-host, multi-NIC test bed: H hosts x K NICs as network namespaces (see docs/testbed.md).

  testbed.py up --hosts 2 --nics 2 --rate 100mbit [--rate-of h1.nic0=25mbit] [--prefix P]
  testbed.py down --prefix P [--force]
  testbed.py run --scenario FILE.toml [--build DIR | --perf BIN] [--out DIR] [--prefix P]
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
    bed = Bed(prefix, a.hosts, a.nics, units.parse_rate(a.rate), rate_of)
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
    _need_root()
    build = a.build or os.environ.get("PRECCL_BUILD") or os.path.join(REPO, "build")
    perf = a.perf or os.path.join(build, "perf", "preccl-perf")
    if not os.access(perf, os.X_OK):
        sys.exit(f"testbed: {perf} not found; build it: cmake -S {REPO} -B {build} -DPRECCL_BUILD_TESTS=OFF "
                 f"&& cmake --build {build} -j2 --target preccl-perf")
    prefix = a.prefix or sc.prefix or names.new_prefix()
    out = a.out or os.path.join("/tmp/preccl-testbed", f"{prefix}-{time.strftime('%Y%m%d-%H%M%S')}")
    r = run_scenario.run(sc, os.path.abspath(perf), out, prefix)
    sys.exit(0 if r["passed"] else 1)


def cmd_check(a):
    bad = 0
    for path in a.files:
        try:
            sc = scenario.load(path)
            print(f"{path}: ok ({sc.hosts} hosts x {sc.nics} NICs, {sc.ranks_per_host} ranks/host, "
                  f"{len(sc.events)} events)")
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
    p.add_argument("--out", help="output directory (default /tmp/preccl-testbed/<prefix>-<time>)")
    p.add_argument("--prefix")
    p.set_defaults(fn=cmd_run)
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
