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


class _Stop(Exception):
    pass


def _on_term(signum, frame):
    raise _Stop()


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
    try:
        srv.settimeout(max(0.01, deadline - time.monotonic()))
        conn, _ = srv.accept()
        t_first = time.monotonic()
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            conn.settimeout(left)
            data = conn.recv(1 << 20)
            if not data:
                break
            total += len(data)
    except (socket.timeout, _Stop, ConnectionError):
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
        while True:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((args.bind, 0))
            try:
                s.settimeout(max(0.01, min(1.0, deadline - time.monotonic())))
                s.connect(_addr(args.to))
                break
            except (ConnectionRefusedError, socket.timeout):
                s.close()
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.05)
        while total < args.bytes:
            now = time.monotonic()
            if now >= deadline:
                break
            if args.rate:  # pace: never ahead of rate * elapsed
                ahead = total * 8 / args.rate - (now - t0)
                if ahead > 0:
                    time.sleep(min(ahead, deadline - now))
                    continue
            s.settimeout(max(0.01, deadline - now))
            n = s.send(buf[:min(CHUNK, args.bytes - total)])
            total += n
        s.close()
    except (_Stop, OSError) as e:
        err = None if isinstance(e, _Stop) else str(e)
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
