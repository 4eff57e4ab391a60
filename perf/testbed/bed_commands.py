"""The bed's own commands: build a bed, remove it, run a scenario on one, rewrite a finished run's
outputs, check scenario files (docs/testbed.md, "Commands").

  up --hosts 2 --nics 2 --rate 100mbit [--rate-of h1.nic0=25mbit] [--prefix P]
  down --prefix P [--force]
  run --scenario FILE.toml [--build DIR | --perf BIN] [--mpi BIN] [--gloo BIN]
      [--collectives a,b] [--systems x,y] [--iters N] [--tcp-cc NAME] [--ranks-per-host G]
      [--env NAME=VALUE]... [--out DIR] [--prefix P]
  report OUT_DIR
  check-scenario FILE.toml...

SIGTERM and SIGHUP end these as Ctrl-C does, so that a run removes its bed whichever way it is stopped.
"""
import functools
import os
import shlex
import signal
import subprocess
import sys
import time

from . import bed_names as names
from . import capacity
from . import leg_files
from . import leg_results
from . import run_scenario
from . import scenario
from . import svg_plot
from . import units
from .bed_net import Bed, BedError, alive, teardown

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _need_root():
    if os.geteuid() != 0:
        sys.exit("testbed: needs root (network namespaces, veth, bridges, tc)")


def cmd_up(a):
    _need_root()
    rate_of = {}
    for item in a.rate_of:
        nic, bps = scenario.option_nic_rate(a.hosts, a.nics, item)
        rate_of[nic] = bps
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
    print(f"# remove with: python3 -m perf.testbed down --prefix {prefix}")


def cmd_down(a):
    _need_root()
    names.check_prefix(a.prefix)
    st = names.read_state(a.prefix)
    # A zombie (killed, not yet reaped) counts as gone.
    if st and st.get("pid") and st["pid"] != os.getpid() and alive(st["pid"]) and not a.force:
        sys.exit(f"testbed: bed {a.prefix} belongs to running process {st['pid']} (it removes the bed when "
                 "it ends); use --force to remove it anyway")
    left = teardown(a.prefix)
    if left:
        sys.exit(f"testbed: could not remove: {', '.join(left)}")
    print(f"testbed: {a.prefix}: nothing left")


def cmd_run(a):
    try:
        sc = scenario.load(a.scenario)
    except scenario.ScenarioError as e:
        sys.exit(f"testbed: {e}")
    for key in ("collectives", "systems"):  # command-line overrides, checked like the file's keys
        value = getattr(a, key)
        if value is not None:
            try:
                setattr(sc, key, scenario.option_list(key, value))
            except scenario.ScenarioError as e:
                sys.exit(f"testbed: {e}")
    sc.collective = sc.collectives[0]
    if a.tcp_cc is not None:
        sc.tcp_cc = _tcp_cc(a.tcp_cc)
    if a.iters is not None:
        if not 1 <= a.iters <= 10000:
            sys.exit(f"testbed: --iters {a.iters}: want 1..10000")
        sc.iters = a.iters
    if a.ranks_per_host is not None:
        if not 1 <= a.ranks_per_host <= names.MAX_RANKS_PER_HOST:
            sys.exit(f"testbed: --ranks-per-host {a.ranks_per_host}: want 1..{names.MAX_RANKS_PER_HOST}")
        sc.ranks_per_host = a.ranks_per_host
    for item in a.env or []:  # added to the scenario's [run] env, checked as the file's
        name, eq, value = item.partition("=")
        if not eq or not name:
            sys.exit(f"testbed: --env {item!r}: want NAME=VALUE")
        if name in ("PRECCL_RANK", "PRECCL_NRANKS", "PRECCL_ROOT_ADDR"):
            sys.exit(f"testbed: --env {name}: is set by the bed")
        sc.env[name] = value
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
    bins["openmpi"] = os.path.abspath(a.mpi or os.path.join(peer_dir, "perf-mpi"))
    bins["gloo"] = os.path.abspath(a.gloo or os.path.join(peer_dir, "perf-gloo"))
    # The torch systems: the build's python directory, where preccl_torch is (bindings/torch).
    torch_dir = os.path.join(os.path.dirname(peer_dir), "python")
    bins["torch"] = torch_dir if os.path.isdir(os.path.join(torch_dir, "preccl_torch")) else None
    origin = {"commit": _source_commit(), "command": "python3 -m perf.testbed " + shlex.join(sys.argv[1:])}
    r = run_scenario.run(sc, bins["preccl"], out, prefix, bins=bins, origin=origin)
    sys.exit(0 if r["passed"] else 1)


def _source_commit():
    """The source tree's commit (with -dirty for uncommitted changes), for the results table; the build
    is taken to be of this tree."""
    try:
        p = subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty", "--abbrev=7"],
                           capture_output=True, text=True, timeout=10)
        return p.stdout.strip() or "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def _tcp_cc(name):
    if not scenario.TCP_CC_RE.match(name):
        sys.exit(f"testbed: --tcp-cc {name!r}: want a name like cubic, bbr or inherit")
    return name


def cmd_report(a):
    """Rewrites results.csv, timeline.csv, vt_share.csv and plot.svg of a finished run from its
    result.json and leg directories (after a change to the formulas or the plot)."""
    try:
        r = leg_files.load_result(a.out)
    except (OSError, ValueError) as e:
        sys.exit(f"testbed: {leg_files.result_json(a.out)}: {e}")
    b = r["bed"]
    sc = scenario.Scenario(path=r["scenario"], hosts=b["hosts"], nics=b["nics"], ranks_per_host=b["ranks_per_host"])
    rates = capacity.bed_rates(b)
    for leg in r["legs"]:
        leg_files.relocate(leg, a.out)
        if "launch_unix" in leg or "perf" in leg:
            leg_results.leg_numbers(leg, sc, rates)
    r["results"] = leg_results.result_rows(r["legs"])
    leg_files.write_tables(a.out, r["results"], r["legs"])
    leg_files.write_plot(a.out, svg_plot.render(os.path.basename(r["scenario"]), r["legs"]))
    leg_files.write_result(a.out, r)
    print(leg_files.results_text(a.out).rstrip())


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


def _bed_command(fn):
    """SIGTERM and SIGHUP raise KeyboardInterrupt (the run's teardown then runs as on Ctrl-C); a bed's or a
    value's error ends the command with its message."""
    @functools.wraps(fn)
    def run(a):
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, _interrupt)
        try:
            fn(a)
        except (BedError, ValueError) as e:
            sys.exit(f"testbed: {e}")
        except KeyboardInterrupt:
            print("testbed: interrupted", file=sys.stderr)
            sys.exit(130)
    return run


def _interrupt(signum, frame):
    raise KeyboardInterrupt()


def add_commands(sub):
    p = sub.add_parser("up", help="build a bed and leave it up")
    p.add_argument("--hosts", type=int, default=4)
    p.add_argument("--nics", type=int, default=2)
    p.add_argument("--rate", default="100mbit", help="every NIC, both directions (tc units)")
    p.add_argument("--rate-of", action="append", default=[], metavar="hH.nicK=RATE")
    p.add_argument("--tcp-cc", default="cubic", metavar="NAME",
                   help="the hosts' TCP congestion control (default cubic; inherit: the machine's)")
    p.add_argument("--prefix")
    p.set_defaults(fn=_bed_command(cmd_up))
    p = sub.add_parser("down", help="remove everything named after a prefix")
    p.add_argument("--prefix", required=True)
    p.add_argument("--force", action="store_true", help="even if the run that made it is still alive")
    p.set_defaults(fn=_bed_command(cmd_down))
    p = sub.add_parser("run", help="bed up, run ranks and events, collect, bed down")
    p.add_argument("--scenario", required=True)
    p.add_argument("--build", help="build directory holding perf/preccl-perf (default $PRECCL_BUILD or ./build)")
    p.add_argument("--perf", help="the preccl-perf binary itself (overrides --build)")
    p.add_argument("--mpi", help="perf-mpi (default: next to preccl-perf)")
    p.add_argument("--gloo", help="perf-gloo (default: next to preccl-perf)")
    p.add_argument("--collectives", help="comma-separated; overrides the scenario's [run] collectives")
    p.add_argument("--systems", help="comma-separated; overrides the scenario's [run] systems")
    p.add_argument("--tcp-cc", metavar="NAME", help="overrides the scenario's [bed] tcp_congestion_control")
    p.add_argument("--iters", type=int, help="overrides the scenario's [run] iters (timed calls per mode and size)")
    p.add_argument("--ranks-per-host", type=int, help="overrides the scenario's [bed] ranks_per_host")
    p.add_argument("--env", action="append", metavar="NAME=VALUE",
                   help="added to the scenario's [run] env (PReCCL's ranks); repeatable")
    p.add_argument("--out", help="output directory (default /tmp/preccl-testbed/<prefix>-<time>)")
    p.add_argument("--prefix")
    p.set_defaults(fn=_bed_command(cmd_run))
    p = sub.add_parser("report", help="rewrite the CSVs and plot.svg of a finished run from its result.json")
    p.add_argument("out", help="the run's --out directory")
    p.set_defaults(fn=_bed_command(cmd_report))
    p = sub.add_parser("check-scenario", help="parse and check scenario files only")
    p.add_argument("files", nargs="+")
    p.set_defaults(fn=_bed_command(cmd_check))
