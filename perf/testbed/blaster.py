"""The other tenant: a bounded TCP or UDP blaster. Runs inside a bed namespace (via `ip netns exec`).

  python3 perf/testbed/blaster.py recv --bind IP:PORT --seconds S [--udp]
  python3 perf/testbed/blaster.py send --to IP:PORT --bind IP --bytes N --seconds S [--rate BPS] [--udp]

A program of its own, not a command of the package (flows.py starts two per flow, as processes in the
namespaces): it imports nothing from the package, so that a flow's processes start with the standard
library alone and nothing the bed's own modules do at import can delay or disturb the traffic.

Both ends stop at whichever bound comes first (bytes or seconds), and on SIGTERM, and print one JSON
line with what they moved. The sender binds the source address of the chosen NIC so the flow stays on
that rail.

--udp sends datagrams at the paced rate (required) whatever the queue does: no congestion control, so
the load does not depend on how the hosts' TCP competes for the drop-tail queue (a tenant that does
not yield, as RDMA traffic with its own rate control). Datagrams the queue dropped are the difference
between the sender's and the receiver's bytes.
"""
import argparse
import json
import signal
import socket
import sys
import time

CHUNK = 64 << 10
SO_SNDBUFFORCE, SO_RCVBUFFORCE = 32, 33   # Linux's <asm-generic/socket.h>; Python does not name them
DATAGRAM = 1400   # fits the bed's 1500-byte MTU: a lost fragment would lose a whole larger datagram
HELLO = b"blaster-hello"  # the UDP sender's knock; the receiver answers it and does not count it


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


def _big_buffer(s, force, plain):
    """4 MiB of socket buffer, beyond the machine's cap where allowed (root: the bed's hosts). The sender
    needs it most: a datagram waiting in the queue counts against the socket's buffer, and with the
    default ~200 KiB a sender whose datagrams sit in a deep queue blocks, i.e. yields to TCP after all."""
    try:
        s.setsockopt(socket.SOL_SOCKET, force, 4 << 20)
    except OSError:
        s.setsockopt(socket.SOL_SOCKET, plain, 4 << 20)


def recv_udp(args):
    deadline = time.monotonic() + args.seconds
    total, datagrams, t_first, t_last = 0, 0, None, None
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    _big_buffer(s, SO_RCVBUFFORCE, socket.SO_RCVBUF)
    s.bind(_addr(args.bind))
    print(json.dumps({"listening": args.bind, "udp": True}), flush=True)
    while not _stop:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        s.settimeout(min(TICK, left))
        try:
            data, peer = s.recvfrom(1 << 16)
        except socket.timeout:
            continue
        if data == HELLO:
            s.sendto(HELLO, peer)
            continue
        n = len(data)
        t_last = time.monotonic()
        t_first = t_first or t_last
        total += n
        datagrams += 1
    t = (t_last - t_first) if t_first else 0.0
    print(json.dumps({"role": "recv", "bytes": total, "datagrams": datagrams, "seconds": round(t, 3)}),
          flush=True)


def recv(args):
    if args.udp:
        return recv_udp(args)
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


def _pump(s, put, chunk, args, deadline, t0):
    """Sends until the byte or the time bound or a stop, never ahead of args.rate * elapsed (if a rate is
    set); put(n) sends up to n bytes and returns how many went. A full socket buffer blocks at most TICK.
    Returns (bytes sent, error text or None)."""
    total = 0
    try:
        while not _stop and total < args.bytes:
            now = time.monotonic()
            if now >= deadline:
                break
            if args.rate:
                ahead = total * 8 / args.rate - (now - t0)
                if ahead > 0:
                    time.sleep(min(ahead, deadline - now, TICK))
                    continue
            s.settimeout(max(0.01, min(TICK, deadline - now)))
            try:
                total += put(min(chunk, args.bytes - total))
            except socket.timeout:
                continue
    except OSError as e:
        return total, str(e)
    return total, None


def send_udp(args):
    """Unconnected sendto: an ICMP error from a receiver not yet listening is not reported back."""
    deadline = time.monotonic() + args.seconds
    total, t0, err = 0, time.monotonic(), None
    buf, dst = bytes(DATAGRAM), _addr(args.to)
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        _big_buffer(s, SO_SNDBUFFORCE, socket.SO_SNDBUF)
        s.bind((args.bind, 0))
        # Knock until the receiver answers, within the time bound, so that no datagram is sent before it
        # listens (the TCP sender's connect retry, for datagrams).
        answered = False
        while not answered and not _stop and time.monotonic() < deadline:
            s.sendto(HELLO, dst)
            s.settimeout(0.05)
            try:
                answered = s.recv(64) == HELLO
            except socket.timeout:
                pass
        if not answered and not _stop:
            raise OSError("the receiver never answered")
        t0 = time.monotonic()
        total, err = _pump(s, lambda n: s.sendto(buf[:n], dst), DATAGRAM, args, deadline, t0)
        s.close()
    except OSError as e:
        err = str(e)
    out = {"role": "send", "bytes": total, "seconds": round(time.monotonic() - t0, 3), "udp": True}
    if err:
        out["error"] = err
    print(json.dumps(out), flush=True)


def send(args):
    if args.udp:
        return send_udp(args)
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
        if s is not None:
            total, err = _pump(s, lambda n: s.send(buf[:n]), CHUNK, args, deadline, t0)
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
    r.add_argument("--udp", action="store_true")
    s = sub.add_parser("send")
    s.add_argument("--to", required=True)
    s.add_argument("--bind", required=True)
    s.add_argument("--bytes", type=int, required=True)
    s.add_argument("--seconds", type=float, required=True)
    s.add_argument("--rate", type=int, default=0, help="pacing in bits/s (0: as fast as the NIC allows)")
    s.add_argument("--udp", action="store_true", help="datagrams at --rate, no congestion control")
    args = ap.parse_args()
    # A flow lasts at most 600 s; its receiver is given a few seconds more to see the end (flows.py).
    max_s = 600 if args.cmd == "send" else 610
    if args.seconds <= 0 or args.seconds > max_s or (args.cmd == "send" and not 0 < args.bytes <= 1 << 34):
        sys.exit(f"blaster: --seconds must be in (0, {max_s}] and --bytes in (0, 16G]")
    if args.cmd == "send" and args.udp and args.rate <= 0:
        sys.exit("blaster: --udp needs --rate > 0 (an unpaced datagram flood has no bound but the NIC)")
    (recv if args.cmd == "recv" else send)(args)


if __name__ == "__main__":
    main()
