"""The other tenant: a bounded TCP blaster. Runs inside a bed namespace (via `ip netns exec`).

  blaster.py recv --bind IP:PORT --seconds S
  blaster.py send --to IP:PORT --bind IP --bytes N --seconds S [--rate BPS]

Both ends stop at whichever bound comes first (bytes or seconds), and on SIGTERM, and print one JSON
line with what they moved. The sender binds the source address of the chosen NIC so the flow stays on
that rail.
"""
import argparse
import json
import signal
import socket
import sys
import time

CHUNK = 64 << 10


# SIGTERM/SIGINT only set a flag, and every blocking call waits at most TICK, so the loops see it: a
# handler that raised could fire inside the handling of another error (the peer, stopped at the same
# moment, resets the connection) and end the process with a traceback instead of its JSON line.
TICK = 0.5
_stop = False


def _on_term(signum, frame):
    global _stop
    _stop = True


def _addr(text):
    ip, port = text.rsplit(":", 1)
    return ip, int(port)


def recv(args):
    deadline = time.monotonic() + args.seconds
    total, t0, t_first = 0, time.monotonic(), None
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(_addr(args.bind))
    srv.listen(1)
    print(json.dumps({"listening": args.bind}), flush=True)
    conn = None
    try:
        while conn is None and not _stop and time.monotonic() < deadline:
            srv.settimeout(max(0.01, min(TICK, deadline - time.monotonic())))
            try:
                conn, _ = srv.accept()
            except socket.timeout:
                pass
        if conn is not None:
            t_first = time.monotonic()
        while conn is not None and not _stop:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            conn.settimeout(min(TICK, left))
            try:
                data = conn.recv(1 << 20)
            except socket.timeout:
                continue
            if not data:
                break
            total += len(data)
    except ConnectionError:
        pass
    t = time.monotonic() - (t_first or t0)
    print(json.dumps({"role": "recv", "bytes": total, "seconds": round(t, 3)}), flush=True)


def send(args):
    deadline = time.monotonic() + args.seconds
    total, t0, err = 0, time.monotonic(), None
    buf = bytes(CHUNK)
    try:
        # The receiver may still be starting: retry the connect within the time bound (a fresh socket
        # each time: Linux refuses a second connect on a socket whose first one failed).
        s = None
        while s is None and not _stop:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((args.bind, 0))
            try:
                s.settimeout(max(0.01, min(1.0, deadline - time.monotonic())))
                s.connect(_addr(args.to))
            except (ConnectionRefusedError, socket.timeout):
                s.close()
                s = None
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.05)
        while s is not None and not _stop and total < args.bytes:
            now = time.monotonic()
            if now >= deadline:
                break
            if args.rate:  # pace: never ahead of rate * elapsed
                ahead = total * 8 / args.rate - (now - t0)
                if ahead > 0:
                    time.sleep(min(ahead, deadline - now, TICK))
                    continue
            s.settimeout(max(0.01, min(TICK, deadline - now)))
            try:
                total += s.send(buf[:min(CHUNK, args.bytes - total)])
            except socket.timeout:
                continue
        if s is not None:
            s.close()
    except OSError as e:
        err = str(e)
    out = {"role": "send", "bytes": total, "seconds": round(time.monotonic() - t0, 3)}
    if err:
        out["error"] = err
    print(json.dumps(out), flush=True)


def main():
    signal.signal(signal.SIGTERM, _on_term)
    signal.signal(signal.SIGINT, _on_term)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("recv")
    r.add_argument("--bind", required=True)
    r.add_argument("--seconds", type=float, required=True)
    s = sub.add_parser("send")
    s.add_argument("--to", required=True)
    s.add_argument("--bind", required=True)
    s.add_argument("--bytes", type=int, required=True)
    s.add_argument("--seconds", type=float, required=True)
    s.add_argument("--rate", type=int, default=0, help="pacing in bits/s (0: as fast as the NIC allows)")
    args = ap.parse_args()
    # A flow lasts at most 600 s; its receiver is given a few seconds more to see the end (flows.py).
    max_s = 600 if args.cmd == "send" else 610
    if args.seconds <= 0 or args.seconds > max_s or (args.cmd == "send" and not 0 < args.bytes <= 1 << 34):
        sys.exit(f"blaster: --seconds must be in (0, {max_s}] and --bytes in (0, 16G]")
    (recv if args.cmd == "recv" else send)(args)


if __name__ == "__main__":
    main()
