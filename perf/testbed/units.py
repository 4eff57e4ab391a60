"""Rates ("100mbit", tc's units) and sizes ("4M", preccl-perf's powers of 1024)."""
import re

_RATE_RE = re.compile(r"^(\d+(?:\.\d+)?)(bit|kbit|mbit|gbit|bps|kbps|mbps|gbps)$")
# tc's meaning: *bit are bits/s in powers of 1000, *bps are bytes/s.
_RATE_MULT = {"bit": 1, "kbit": 10**3, "mbit": 10**6, "gbit": 10**9,
              "bps": 8, "kbps": 8 * 10**3, "mbps": 8 * 10**6, "gbps": 8 * 10**9}
MIN_RATE_BPS = 8_000           # below this tbf's burst/latency arithmetic stops making sense
MAX_RATE_BPS = 100 * 10**9

_SIZE_RE = re.compile(r"^(\d+)([KMG]?)$")
_SIZE_MULT = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_rate(text):
    """Returns bits per second; raises ValueError with the accepted forms."""
    m = _RATE_RE.match(str(text).strip().lower())
    if not m:
        raise ValueError(f"rate {text!r}: want a number with a unit bit|kbit|mbit|gbit|bps|kbps|mbps|gbps, "
                         "e.g. \"100mbit\"")
    bps = int(float(m.group(1)) * _RATE_MULT[m.group(2)])
    if not MIN_RATE_BPS <= bps <= MAX_RATE_BPS:
        raise ValueError(f"rate {text!r}: out of range 8kbit..100gbit")
    return bps


def format_rate(bps):
    for unit, mult in (("gbit", 10**9), ("mbit", 10**6), ("kbit", 10**3)):
        if bps % mult == 0:
            return f"{bps // mult}{unit}"
    return f"{bps}bit"


def parse_size(value):
    """An int, or a string like "4M" (K/M/G = powers of 1024, as preccl-perf's -b/-e)."""
    if isinstance(value, bool):
        raise ValueError(f"size {value!r}: want an integer or a string like \"4M\"")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"size {value}: must not be negative")
        return value
    m = _SIZE_RE.match(str(value).strip())
    if not isinstance(value, str) or not m:
        raise ValueError(f"size {value!r}: want an integer or a string like \"4M\" (K/M/G suffix)")
    return int(m.group(1)) * _SIZE_MULT[m.group(2)]


def tbf_params(bps):
    """tbf burst and latency for a rate: the bucket holds ~4 ms of traffic but at least 10 full frames,
    so one tick of the kernel timer never starves the link and small rates are not lumpy."""
    burst = max(15_140, bps // 8 * 4 // 1000)
    return ["rate", f"{bps}bit", "burst", str(burst), "latency", "50ms"]
