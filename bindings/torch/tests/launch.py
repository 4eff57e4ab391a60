"""Starts one process per rank for the torch tests: loopback for both backends, one OMP thread, a free
port for the c10d store; returns what each worker put in the queue, in rank order, and the exit codes."""
import os
import socket

import torch.multiprocessing as mp


def spawn(worker, size, *args, timeout=600):
    """worker(rank, size, port, *args, queue) must put one item whose first element or "rank" is its rank."""
    os.environ.setdefault("NCCL_SOCKET_IFNAME", "lo")
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, size, port, *args, queue)) for r in range(size)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=timeout) for _ in procs]
    for p in procs:
        p.join(60)
    key = (lambda o: o["rank"]) if isinstance(results[0], dict) else (lambda o: o[0])
    return sorted(results, key=key), [p.exitcode for p in procs]
