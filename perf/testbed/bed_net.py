"""Builds, changes and removes the bed's namespaces, veths, bridges and tc shaping.

Topology: host h is network namespace <P>h<h>; its NIC k is `rail<k>` inside it, the other end of a
veth pair named <P>h<h>n<k> in the root namespace, enslaved to bridge <P>b<k> (one bridge per rail).
Both ends are shaped with tbf: rail<k>'s egress is the NIC's transmit side, the bridge-side end's egress
is the NIC's receive side.
"""
import json
import os
import signal
import subprocess
import time

from . import bed_names as names
from . import units


CC_PATH = "/proc/sys/net/ipv4/tcp_congestion_control"  # per network namespace since Linux 4.15
# Machine-wide: a namespace other than the machine's own may only default to an algorithm listed here.
ALLOWED_CC_PATH = "/proc/sys/net/ipv4/tcp_allowed_congestion_control"


class BedError(RuntimeError):
    pass


class CommandLog:
    """Every command the bed ran, with a timestamp: written to bed.log, the record of what was touched."""

    def __init__(self):
        self.lines = []
        self.t0 = time.monotonic()

    def add(self, argv, rc, err=""):
        t = time.monotonic() - self.t0
        self.lines.append(f"{t:9.3f} rc={rc} {' '.join(argv)}" + (f"  # {err.strip()}" if err.strip() else ""))


def sh(argv, log=None, check=True, timeout=20):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if log is not None:
        log.add(argv, p.returncode, p.stderr if p.returncode else "")
    if check and p.returncode != 0:
        raise BedError(f"`{' '.join(argv)}` failed (rc {p.returncode}): {p.stderr.strip()}")
    return p


def existing_netns():
    out = sh(["ip", "netns", "list"]).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def existing_links():
    """Names of links in the root namespace ("veth@if5" -> "veth")."""
    out = sh(["ip", "-o", "link", "show"]).stdout
    found = []
    for line in out.splitlines():
        parts = line.split(":", 2)
        if len(parts) >= 2:
            found.append(parts[1].strip().split("@")[0])
    return found


def owned(prefix):
    """(namespaces, links) in the system whose names match the prefix's patterns."""
    ns_re, link_re = names.owned_netns_re(prefix), names.owned_link_re(prefix)
    return ([n for n in existing_netns() if ns_re.match(n)],
            [l for l in existing_links() if link_re.match(l)])


def netns_pids(ns):
    p = sh(["ip", "netns", "pids", ns], check=False)
    return [int(x) for x in p.stdout.split() if x.isdigit()]


def _signal_all(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def teardown(prefix, log=None):
    """Removes everything named after the prefix: processes in its namespaces (all started by the bed),
    veths, bridges, namespaces, the state file. Returns what is still there afterwards (should be [])."""
    nss, links = owned(prefix)
    pids = [pid for ns in nss for pid in netns_pids(ns)]
    if pids:
        _signal_all(pids, signal.SIGTERM)
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and any(alive(p) for p in pids):
            time.sleep(0.05)
        _signal_all([p for p in pids if alive(p)], signal.SIGKILL)
    # Deleting a veth end deletes its peer; bridges go after their ports, namespaces last.
    for link in sorted(links, key=lambda l: (l.startswith(prefix + "b"), l)):
        sh(["ip", "link", "del", link], log, check=False)
    for ns in nss:
        sh(["ip", "netns", "del", ns], log, check=False)
    _restore_allowed_cc(names.read_state(prefix), log)
    names.remove_state(prefix)
    nss, links = owned(prefix)
    return nss + links


def _restore_allowed_cc(state, log):
    """Puts back the machine's allowed list if this bed widened it and nobody changed it since."""
    widened = (state or {}).get("allowed_cc")
    if not widened:
        return
    try:
        if open(ALLOWED_CC_PATH).read().split() == widened["set"]:
            with open(ALLOWED_CC_PATH, "w") as f:
                f.write(" ".join(widened["before"]))
            if log is not None:
                log.add(["restore", ALLOWED_CC_PATH, " ".join(widened["before"])], 0)
    except OSError as e:
        if log is not None:
            log.add(["restore", ALLOWED_CC_PATH], 1, str(e))


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie child of ours counts as gone.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class Bed:
    def __init__(self, prefix, hosts, nics, rate_bps, rate_of=None, log=None, tcp_cc=None):
        """tcp_cc: the TCP congestion control the hosts' sockets get ("cubic", "bbr", ...), set inside
        each namespace; None or "inherit" keeps what a new namespace inherits from the machine."""
        self.prefix = names.check_prefix(prefix)
        self.tcp_cc = None if tcp_cc in (None, "inherit") else tcp_cc
        if not 1 <= hosts <= names.MAX_HOSTS or not 1 <= nics <= names.MAX_NICS:
            raise BedError(f"hosts must be 1..{names.MAX_HOSTS} and nics 1..{names.MAX_NICS}")
        self.hosts, self.nics = hosts, nics
        self.rates = {(h, k): rate_bps for h in range(hosts) for k in range(nics)}
        for (h, k), bps in (rate_of or {}).items():
            if (h, k) not in self.rates:
                raise BedError(f"rate for h{h}.nic{k}: no such NIC in a {hosts}x{nics} bed")
            self.rates[(h, k)] = bps
        self.log = log or CommandLog()
        self.is_up = False

    # ---- lifecycle
    def clashes(self):
        """Names this bed would create that already exist (anything owned by the prefix counts)."""
        nss, links = owned(self.prefix)
        return nss + links + ([names.state_path(self.prefix)] if names.read_state(self.prefix) else [])

    def up(self):
        clash = self.clashes()
        if clash:
            raise BedError(f"prefix {self.prefix}: refusing to start, these names already exist: {', '.join(clash)} "
                           f"(remove them with `python3 -m perf.testbed down --prefix {self.prefix}`)")
        # State first: from here on a crash leaves a record that `down` can use.
        names.write_state(self.prefix, {"prefix": self.prefix, "hosts": self.hosts, "nics": self.nics,
                                        "pid": os.getpid(), "created": time.time()})
        self.is_up = True
        run = lambda *a: sh(list(a), self.log)
        machine_cc = open(CC_PATH).read().strip()
        if self.tcp_cc:
            self._allow_congestion_control()
        for k in range(self.nics):
            br = names.bridge(self.prefix, k)
            run("ip", "link", "add", br, "type", "bridge")
            run("ip", "link", "set", br, "up")
        for h in range(self.hosts):
            ns = names.netns(self.prefix, h)
            run("ip", "netns", "add", ns)
            run("ip", "-n", ns, "link", "set", "lo", "up")
            if self.tcp_cc:
                self._set_congestion_control(h, machine_cc)
            for k in range(self.nics):
                outer, inner = names.host_veth(self.prefix, h, k), names.nic(k)
                run("ip", "link", "add", outer, "type", "veth", "peer", "name", inner, "netns", ns)
                run("ip", "link", "set", outer, "master", names.bridge(self.prefix, k))
                run("ip", "link", "set", outer, "up")
                run("ip", "-n", ns, "addr", "add", f"{names.address(h, k)}/24", "dev", inner)
                run("ip", "-n", ns, "link", "set", inner, "up")
                self._shape(h, k, self.rates[(h, k)], "replace")

    def _allow_congestion_control(self):
        """Linux lets a namespace default only to an algorithm in the machine's allowed list (a machine
        that defaults to BBR may allow just "reno bbr"). If the scenario's is missing, it is added for the
        bed's life and recorded in the state file, so that teardown (or `down` after a crash) puts the
        list back. Nothing else of the machine changes: its own default stays what it was."""
        allowed = open(ALLOWED_CC_PATH).read().split()
        avail = open("/proc/sys/net/ipv4/tcp_available_congestion_control").read().split()
        if self.tcp_cc in allowed or self.tcp_cc not in avail:
            return   # an unknown name fails in _set_congestion_control with the list of what exists
        widened = allowed + [self.tcp_cc]
        names.write_state(self.prefix, {**names.read_state(self.prefix),
                                        "allowed_cc": {"before": allowed, "set": widened}})
        with open(ALLOWED_CC_PATH, "w") as f:
            f.write(" ".join(widened))
        self.log.add(["write", ALLOWED_CC_PATH, " ".join(widened)], 0)

    def _set_congestion_control(self, h, machine_cc):
        """Setting it in a host touches nothing outside the bed (CC_PATH is per namespace). On an older
        kernel the write would change the machine's own value, so that is checked and put back if it moved."""
        p = sh(self.exec_argv(h, ["sysctl", "-qw", f"net.ipv4.tcp_congestion_control={self.tcp_cc}"]),
               self.log, check=False)
        if open(CC_PATH).read().strip() != machine_cc:
            with open(CC_PATH, "w") as f:
                f.write(machine_cc)
            raise BedError("this kernel's TCP congestion control is not per network namespace; "
                           "run with tcp_congestion_control = \"inherit\"")
        if p.returncode != 0:
            avail = open("/proc/sys/net/ipv4/tcp_available_congestion_control").read().split()
            raise BedError(f"TCP congestion control {self.tcp_cc!r} cannot be set in the hosts "
                           f"(this machine has: {', '.join(avail)}): {p.stderr.strip()}")

    def down(self):
        left = teardown(self.prefix, self.log)
        self.is_up = False
        return left

    # ---- changes during a run
    def _shape(self, h, k, bps, verb, direction="both"):
        ns = names.netns(self.prefix, h)
        params = units.tbf_params(bps)
        if direction in ("both", "egress"):
            sh(["tc", "-n", ns, "qdisc", verb, "dev", names.nic(k), "root", "tbf", *params], self.log)
        if direction in ("both", "ingress"):
            sh(["tc", "qdisc", verb, "dev", names.host_veth(self.prefix, h, k), "root", "tbf", *params],
               self.log)

    def set_rate(self, h, k, bps, direction="both"):
        self._shape(h, k, bps, "change", direction)
        self.rates[(h, k)] = bps

    def shaped_rates(self, h, k):
        """The rates tc reports now for (egress, ingress) of the NIC, in bits/s: proof a change took."""
        def rate(argv):
            for q in json.loads(sh(argv, self.log).stdout or "[]"):
                if q.get("kind") == "tbf" and q.get("root"):
                    return int(q["options"]["rate"]) * 8 if "rate" in q["options"] else None
            return None
        ns = names.netns(self.prefix, h)
        return (rate(["tc", "-j", "-n", ns, "qdisc", "show", "dev", names.nic(k)]),
                rate(["tc", "-j", "qdisc", "show", "dev", names.host_veth(self.prefix, h, k)]))

    def set_link(self, h, k, up):
        sh(["ip", "-n", names.netns(self.prefix, h), "link", "set", names.nic(k), "up" if up else "down"],
           self.log)

    # ---- observation
    def nic_state(self):
        """{"h0.nic1": {"tx_bytes", "rx_bytes", "operstate"}} read inside every namespace."""
        state = {}
        for h in range(self.hosts):
            out = sh(["ip", "-n", names.netns(self.prefix, h), "-j", "-s", "link", "show"]).stdout
            by_name = {l["ifname"]: l for l in json.loads(out)}
            for k in range(self.nics):
                link = by_name.get(names.nic(k))
                if link is None:
                    raise BedError(f"{names.nic(k)} missing in {names.netns(self.prefix, h)}")
                state[names.nic_label(h, k)] = {"tx_bytes": link["stats64"]["tx"]["bytes"],
                                                "rx_bytes": link["stats64"]["rx"]["bytes"],
                                                "operstate": link.get("operstate", "UNKNOWN")}
        return state

    def tx_counter_paths(self):
        """{"h0.nic1": sysfs path} of each NIC's transmit byte counter, readable without entering the
        namespace: the root-side end of the NIC's veth receives what the NIC sends."""
        return {names.nic_label(h, k): f"/sys/class/net/{names.host_veth(self.prefix, h, k)}/statistics/rx_bytes"
                for h in range(self.hosts) for k in range(self.nics)}

    def operstate(self, h, k):
        return self.nic_state()[names.nic_label(h, k)]["operstate"]

    def congestion_control(self):
        """The TCP congestion control a new socket in the hosts gets, read back in host 0, or 'unknown'."""
        try:
            p = sh(self.exec_argv(0, ["cat", CC_PATH]), self.log, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return "unknown"
        return p.stdout.strip() if p.returncode == 0 and p.stdout.strip() else "unknown"

    def exec_argv(self, h, argv):
        return ["ip", "netns", "exec", names.netns(self.prefix, h), *argv]
