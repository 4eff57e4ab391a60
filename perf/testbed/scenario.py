"""Parses and checks scenario files (TOML). Every rejection names the file, the key and the problem.

The format is documented in docs/testbed.md; an example is scenarios/example.toml.
"""
import re
import tomllib
from dataclasses import dataclass, field

from . import bed_names as names
from . import peers
from . import units

COLLECTIVES = ("allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall", "gather",
               "scatter", "sendrecv")
ACTIONS = ("rate", "flow_start", "flow_stop", "link_down", "link_up")
MAX_EVENT_AT = 3600.0
MAX_FLOW_SECONDS = 600.0
MAX_FLOW_BYTES = 1 << 34
# Systems a scenario can compare: PReCCL with a policy (PRECCL_POLICY=<name>), optionally with an
# algorithm (`preccl-<policy>-tree` / `-ring`: PRECCL_ALGO) and without the relay (`-norelay`:
# PRECCL_RELAY=off), and the peers (peers.py).
DEFAULT_SYSTEMS = ("preccl-static", "openmpi", "gloo")
TCP_CC_RE = re.compile(r"^[a-z][a-z0-9_]{0,15}$")   # a kernel module's name, or "inherit"
SYSTEM_RE = re.compile(r"^preccl-[a-z][a-z0-9_]*(-tree|-ring)?(-norelay)?$")


SYSTEMS_WANTED = ("preccl-<policy>[-tree|-ring][-norelay] (e.g. preccl-static), openmpi[-<algorithm>] "
                  "or gloo[-<allreduce algorithm>][-concurrent], or <peer>-best, or torch-preccl|gloo[-ddp]")


def valid_system(name):
    return SYSTEM_RE.match(name) is not None or peers.valid(name)


class ScenarioError(ValueError):
    pass


@dataclass
class Event:
    index: int            # position in the file, for messages and the event log
    at: float             # seconds after the anchor
    after: str            # anchor: "start" (ranks launched) or "ranks" (all ranks exited)
    action: str
    host: int | None = None
    nic: int | None = None
    rate_bps: int | None = None
    direction: str = "both"
    flow: str | None = None
    to: int | None = None
    bytes: int | None = None
    seconds: float | None = None
    proto: str = "tcp"    # a flow's transport: "udp" sends at its rate whatever the queue does


@dataclass
class Scenario:
    path: str
    hosts: int = 2
    nics: int = 2
    rate_bps: int = 100 * 10**6
    rate_of: dict = field(default_factory=dict)     # (host, nic) -> bits/s
    ranks_per_host: int = 1
    # The hosts' TCP congestion control: Linux's default unless a scenario says otherwise, so that a
    # result does not depend on what the machine running the bed was set to ("inherit" keeps that).
    tcp_cc: str = "cubic"
    prefix: str | None = None
    collective: str = "allreduce"
    min_bytes: int = 4 << 20
    max_bytes: int = 4 << 20
    iters: int = 5
    warmup: int = 1
    check: bool = True
    dtype: str = "float"
    op: str = "sum"
    timeout: int = 30
    run_timeout: float = 300.0
    tail: float = 0.5
    env: dict = field(default_factory=dict)
    events: list = field(default_factory=list)
    collectives: list = field(default_factory=lambda: ["allreduce"])   # run one after the other
    systems: list = field(default_factory=lambda: list(DEFAULT_SYSTEMS))


class _Table:
    """One TOML table being read: typed getters that record which keys were used, then reject the rest."""

    def __init__(self, path, where, data):
        if not isinstance(data, dict):
            raise ScenarioError(f"{path}: {where}: want a table, got {_tname(data)}")
        self.path, self.where, self.data, self.used = path, where, data, set()

    def fail(self, key, problem):
        raise ScenarioError(f"{self.path}: {self.where} key '{key}': {problem}")

    def get(self, key, kind, default=None, required=False):
        self.used.add(key)
        if key not in self.data:
            if required:
                raise ScenarioError(f"{self.path}: {self.where}: missing required key '{key}'")
            return default
        value = self.data[key]
        ok = {"int": lambda v: isinstance(v, int) and not isinstance(v, bool),
              "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
              "str": lambda v: isinstance(v, str),
              "bool": lambda v: isinstance(v, bool),
              "size": lambda v: isinstance(v, (int, str)) and not isinstance(v, bool),
              "table": lambda v: isinstance(v, dict),
              "list": lambda v: isinstance(v, list)}[kind](value)
        if not ok:
            want = {"int": "an integer", "number": "a number", "str": "a string", "bool": "true or false",
                    "size": "an integer or a string like \"4M\"", "table": "a table",
                    "list": "an array"}[kind]
            self.fail(key, f"want {want}, got {_tname(value)} {value!r}")
        return value

    def int_in(self, key, lo, hi, default=None, required=False):
        v = self.get(key, "int", default, required)
        if v is not None and not lo <= v <= hi:
            self.fail(key, f"{v} is out of range {lo}..{hi}")
        return v

    def number_in(self, key, lo, hi, default=None, required=False):
        v = self.get(key, "number", default, required)
        if v is not None and not lo <= v <= hi:
            self.fail(key, f"{v} is out of range {lo}..{hi}" + (" (negative times are not allowed)"
                                                               if v < 0 and lo == 0 else ""))
        return None if v is None else float(v)

    def choice(self, key, choices, default=None, required=False):
        v = self.get(key, "str", default, required)
        if v is not None and v not in choices:
            self.fail(key, f"{v!r} is not one of {', '.join(choices)}")
        return v

    def rate(self, key, default=None, required=False):
        v = self.get(key, "str", default, required)
        if v is None:
            return None
        try:
            return units.parse_rate(v)
        except ValueError as e:
            self.fail(key, str(e))

    def size(self, key, default=None):
        v = self.get(key, "size", default)
        if v is None:
            return None
        try:
            return units.parse_size(v)
        except ValueError as e:
            self.fail(key, str(e))

    def done(self):
        extra = sorted(set(self.data) - self.used)
        if extra:
            raise ScenarioError(f"{self.path}: {self.where}: unknown key '{extra[0]}'"
                                + (f" (allowed: {', '.join(sorted(self.used))})" if self.used else ""))


def _tname(v):
    return {bool: "boolean", int: "integer", float: "float", str: "string", dict: "table",
            list: "array"}.get(type(v), type(v).__name__)


def load(path):
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise ScenarioError(f"{path}: cannot read: {e.strerror}")
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"{path}: not valid TOML: {e}")
    return parse(path, data)


def parse(path, data):
    top = _Table(path, "top level", data)
    sc = Scenario(path=path)
    _parse_bed(sc, _Table(path, "[bed]", top.get("bed", "table", {})))
    _parse_run(sc, _Table(path, "[run]", top.get("run", "table", {})))
    top.used.add("event")
    raw = data.get("event", [])
    if not isinstance(raw, list):
        raise ScenarioError(f"{path}: top level key 'event': want an array of tables ([[event]]), "
                            f"got {_tname(raw)}")
    for i, ev in enumerate(raw):
        sc.events.append(_parse_event(sc, i, _Table(path, f"[[event]] #{i + 1}", ev)))
    top.done()
    _check_flows(sc)
    return sc


def _parse_bed(sc, t):
    sc.hosts = t.int_in("hosts", 1, names.MAX_HOSTS, sc.hosts)
    sc.nics = t.int_in("nics", 1, names.MAX_NICS, sc.nics)
    sc.rate_bps = t.rate("rate", units.format_rate(sc.rate_bps))
    sc.ranks_per_host = t.int_in("ranks_per_host", 1, names.MAX_RANKS_PER_HOST, sc.ranks_per_host)
    sc.tcp_cc = t.get("tcp_congestion_control", "str", sc.tcp_cc)
    if not TCP_CC_RE.match(sc.tcp_cc):
        t.fail("tcp_congestion_control", f"{sc.tcp_cc!r}: want a name like \"cubic\" or \"inherit\"")
    sc.prefix = t.get("prefix", "str")
    if sc.prefix is not None:
        try:
            names.check_prefix(sc.prefix)
        except ValueError as e:
            t.fail("prefix", str(e))
    rate_of = t.get("rate_of", "table", {})
    for label, value in rate_of.items():
        h, k = _parse_label(sc, t, f"rate_of.{label}", label)
        if not isinstance(value, str):
            t.fail(f"rate_of.{label}", f"want a string like \"25mbit\", got {_tname(value)} {value!r}")
        try:
            sc.rate_of[(h, k)] = units.parse_rate(value)
        except ValueError as e:
            t.fail(f"rate_of.{label}", str(e))
    t.done()


def _parse_label(sc, t, key, label):
    """"h1.nic0" -> (1, 0), checked against the bed's size."""
    m = re.match(r"^h(\d+)\.nic(\d+)$", label)
    if not m:
        t.fail(key, f"{label!r} is not a NIC name like \"h1.nic0\"")
    h, k = int(m.group(1)), int(m.group(2))
    if h >= sc.hosts:
        t.fail(key, f"host {h} out of range 0..{sc.hosts - 1}")
    if k >= sc.nics:
        t.fail(key, f"nic {k} out of range 0..{sc.nics - 1}")
    return h, k


def _parse_run(sc, t):
    sc.collective = t.choice("collective", COLLECTIVES, sc.collective)
    sc.collectives = _str_list(t, "collectives", [sc.collective], lambda v: v in COLLECTIVES,
                               f"one of {', '.join(COLLECTIVES)}")
    if "collective" in t.data and "collectives" in t.data:
        t.fail("collectives", "give either collective or collectives, not both")
    sc.collective = sc.collectives[0]
    sc.systems = _str_list(t, "systems", list(DEFAULT_SYSTEMS), valid_system, SYSTEMS_WANTED)
    size = t.size("bytes", None)
    sc.min_bytes = t.size("min_bytes", size if size is not None else sc.min_bytes)
    sc.max_bytes = t.size("max_bytes", size if size is not None else sc.max_bytes)
    if size is not None and ("min_bytes" in t.data or "max_bytes" in t.data):
        t.fail("bytes", "give either bytes or min_bytes/max_bytes, not both")
    if sc.min_bytes > sc.max_bytes:
        t.fail("min_bytes", f"{sc.min_bytes} is larger than max_bytes {sc.max_bytes}")
    if sc.max_bytes > 1 << 30:
        t.fail("max_bytes", f"{sc.max_bytes} is above 1G, too large for this bed")
    sc.iters = t.int_in("iters", 1, 10000, sc.iters)
    sc.warmup = t.int_in("warmup", 0, 10000, sc.warmup)
    sc.check = t.get("check", "bool", sc.check)
    sc.dtype = t.choice("dtype", ("int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "float",
                                  "double", "bfloat16", "f8e4m3", "f8e5m2"), sc.dtype)
    sc.op = t.choice("op", ("sum", "prod", "max", "min", "avg"), sc.op)
    sc.timeout = t.int_in("timeout", 1, 3600, sc.timeout)
    sc.run_timeout = t.number_in("run_timeout", 1, 3600, sc.run_timeout)
    sc.tail = t.number_in("tail", 0, 600, sc.tail)
    env = t.get("env", "table", {})
    for k, v in env.items():
        if not isinstance(v, str):
            t.fail(f"env.{k}", f"want a string, got {_tname(v)} {v!r}")
        if k in ("PRECCL_RANK", "PRECCL_NRANKS", "PRECCL_ROOT_ADDR"):
            t.fail(f"env.{k}", "is set by the bed")
    sc.env = dict(env)
    t.done()


# `run --collectives` / `--systems`: what each entry must be, named as the options' messages say it.
OPTION_LISTS = {"collectives": (lambda v: v in COLLECTIVES, "a collective"),
                "systems": (lambda v: valid_system(v), SYSTEMS_WANTED)}


def option_list(key, text):
    """`--collectives a,b` / `--systems x,y`: the list, checked like the file's key of that name."""
    t = _Table(f"--{key}", "option", {key: [x for x in text.split(",") if x]})
    return _str_list(t, key, None, *OPTION_LISTS[key])


def option_nic_rate(hosts, nics, item):
    """`--rate-of h1.nic0=25mbit` -> ((1, 0), bits/s), the NIC checked against a hosts x nics bed."""
    label, _, rate = item.partition("=")
    bps = units.parse_rate(rate)
    t = _Table("--rate-of", "option", {"rate_of": {label: rate}})
    return _parse_label(Scenario(path="--rate-of", hosts=hosts, nics=nics), t, f"rate_of.{label}", label), bps


def _str_list(t, key, default, valid, want):
    """A non-empty array of distinct strings, each accepted by `valid`."""
    v = t.get(key, "list", default)
    if not v:
        t.fail(key, "want a non-empty array")
    for x in v:
        if not isinstance(x, str) or not valid(x):
            t.fail(key, f"{x!r}: want {want}")
    if len(set(v)) != len(v):
        t.fail(key, f"{v!r} names an entry twice")
    return list(v)


def _parse_event(sc, i, t):
    ev = Event(index=i, at=t.number_in("at", 0, MAX_EVENT_AT, required=True),
               after=t.choice("after", ("start", "ranks"), "start"),
               action=t.choice("action", ACTIONS, required=True))
    if ev.action in ("rate", "flow_start", "link_down", "link_up"):
        ev.host = t.int_in("host", 0, sc.hosts - 1, required=True)
        ev.nic = t.int_in("nic", 0, sc.nics - 1, required=True)
    if ev.action == "rate":
        ev.rate_bps = t.rate("rate", required=True)
        ev.direction = t.choice("direction", ("both", "egress", "ingress"), "both")
    if ev.action in ("flow_start", "flow_stop"):
        ev.flow = t.get("flow", "str", required=True)
        if not ev.flow or not ev.flow.replace("-", "").replace("_", "").isalnum():
            t.fail("flow", f"{ev.flow!r}: want a non-empty id of letters, digits, '-' and '_'")
    if ev.action == "flow_start":
        ev.to = t.int_in("to", 0, sc.hosts - 1, required=True)
        if ev.to == ev.host:
            t.fail("to", f"flow goes from host {ev.host} to itself; pick another host on the same rail")
        ev.bytes = t.size("bytes", None)
        if ev.bytes is None:
            t.fail("bytes", "required: every background flow is bounded in bytes and in seconds")
        if not 1 <= ev.bytes <= MAX_FLOW_BYTES:
            t.fail("bytes", f"{ev.bytes} is out of range 1..{MAX_FLOW_BYTES}")
        ev.seconds = t.number_in("seconds", 0.1, MAX_FLOW_SECONDS, required=True)
        ev.rate_bps = t.rate("rate")  # optional pacing by the blaster itself
        ev.proto = t.choice("proto", ("tcp", "udp"), "tcp")
        if ev.proto == "udp" and ev.rate_bps is None:
            t.fail("rate", "required with proto = \"udp\": a datagram flow is bounded by its rate")
    t.done()
    return ev


def _check_flows(sc):
    """A flow id starts once; flow_stop names a started flow; both on the same anchor order."""
    started = {}
    for ev in sc.events:
        if ev.action == "flow_start":
            if ev.flow in started:
                raise ScenarioError(f"{sc.path}: [[event]] #{ev.index + 1} key 'flow': {ev.flow!r} is "
                                    f"already started by [[event]] #{started[ev.flow] + 1}")
            started[ev.flow] = ev.index
    for ev in sc.events:
        if ev.action == "flow_stop" and ev.flow not in started:
            raise ScenarioError(f"{sc.path}: [[event]] #{ev.index + 1} key 'flow': no flow_start "
                                f"with flow = {ev.flow!r}")
