"""Names and addresses of everything a bed creates, all derived from one short prefix.

Deriving every name from the prefix is what lets `python3 -m perf.testbed down --prefix P` clean up a crashed
run even when its state file is gone: it deletes exactly the names that match the prefix's patterns.
"""
import json
import os
import re
import secrets

MAX_HOSTS = 32   # 198.18.<r>.<h+1>; kept small: every host is a process tree on a 2-core machine
MAX_NICS = 8
MAX_RANKS_PER_HOST = 8
NIC_NAME = "rail"          # NIC k inside every namespace is rail<k>; PRECCL_SOCKET_IFNAME=rail selects all
PREFIX_RE = re.compile(r"^[a-z][a-z0-9]{1,6}$")  # <= 7 chars so "<P>h31n7" stays within IFNAMSIZ-1 = 15
STATE_DIR = os.environ.get("PRECCL_TESTBED_STATE", "/run/preccl-testbed")


def new_prefix():
    return "ptb" + secrets.token_hex(2)


def check_prefix(prefix):
    if not PREFIX_RE.match(prefix):
        raise ValueError(f"prefix {prefix!r}: want 2..7 chars, [a-z][a-z0-9]* (interface names max 15 chars)")
    return prefix


def netns(prefix, host):
    return f"{prefix}h{host}"


def bridge(prefix, nic):
    return f"{prefix}b{nic}"


def host_veth(prefix, host, nic):
    """Bridge-side end of host's NIC (lives in the root namespace, enslaved to the rail's bridge)."""
    return f"{prefix}h{host}n{nic}"


def nic(k):
    return f"{NIC_NAME}{k}"


def address(host, k):
    return f"198.18.{k}.{host + 1}"


def parse_address(addr):
    """address's inverse: "198.18.1.3" -> (2, 1) (host, NIC); None for an address the bed does not give."""
    m = re.match(r"^198\.18\.(\d+)\.(\d+)$", addr)
    return (int(m.group(2)) - 1, int(m.group(1))) if m and int(m.group(2)) >= 1 else None


def live_prefixes():
    """Prefixes of the beds that are up now (their state files)."""
    try:
        names = os.listdir(STATE_DIR)
    except FileNotFoundError:
        return []
    return [n[:-5] for n in names if n.endswith(".json") and PREFIX_RE.match(n[:-5])]


def nic_label(host, k):
    return f"h{host}.nic{k}"


def parse_nic_label(label):
    """nic_label's inverse: "h2.nic1" -> (2, 1), for labels the bed wrote (scenario files check theirs)."""
    h, k = label[1:].split(".nic")
    return int(h), int(k)


def owned_netns_re(prefix):
    return re.compile(rf"^{re.escape(prefix)}h\d+$")


def owned_link_re(prefix):
    return re.compile(rf"^{re.escape(prefix)}(b\d+|h\d+n\d+)$")


def state_path(prefix):
    return os.path.join(STATE_DIR, f"{prefix}.json")


def write_state(prefix, state):
    os.makedirs(STATE_DIR, exist_ok=True)
    tmp = state_path(prefix) + ".tmp"
    with open(tmp, "w") as f:
        json.dump(state, f, indent=1)
    os.replace(tmp, state_path(prefix))


def read_state(prefix):
    try:
        with open(state_path(prefix)) as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def remove_state(prefix):
    try:
        os.unlink(state_path(prefix))
    except FileNotFoundError:
        pass
