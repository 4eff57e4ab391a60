"""AllReduce busbw, or DDP's step time, through torch.distributed with any backend, printed as
nccl-tests' table (and preccl-perf's, so the bed reads it): the bed's torch-preccl / torch-gloo systems.

    torchrun ... perf/torch_bench.py -t allreduce -b 64M -e 64M -n 3 -w 1 -c 1 --backend preccl
    torchrun ... perf/torch_bench.py ... --ddp      # DDP training steps whose gradients are -b bytes

all_reduce works in place, so the out-of-place columns read N/A. With --ddp each timed iteration is a
training step of a model of -b bytes of float32 weights (Linear 1024x1024 layers, DDP's default 25 MB
buckets), the time column is the step's time and busbw is its gradient bytes moved as an AllReduce's
(2(n-1)/n) over that time. -c 1 checks the data: the AllReduce of small integers exactly, the DDP replicas
bit-equal after training. Needs RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT (torchrun sets them).
"""
import argparse
import os
import time

import torch
import torch.distributed as dist

T0 = time.monotonic()


def size_arg(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * mult[s[-1].upper()] if s[-1].upper() in mult else int(s)


def args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-t", dest="coll", default="allreduce", choices=["allreduce"])
    p.add_argument("-b", dest="min_bytes", type=size_arg, default=1 << 20)
    p.add_argument("-e", dest="max_bytes", type=size_arg, default=1 << 20)
    p.add_argument("-f", dest="factor", type=int, default=2)
    p.add_argument("-n", dest="iters", type=int, default=5)
    p.add_argument("-w", dest="warmup", type=int, default=1)
    p.add_argument("-c", dest="check", type=int, default=1)
    p.add_argument("--backend", default="preccl")
    p.add_argument("--ddp", action="store_true")
    p.add_argument("--iter-csv")
    return p.parse_args()


class Iters:
    """Rank 0's iter.csv: one row per timed call or step."""

    def __init__(self, path, rank):
        self.f = open(path, "w") if path and rank == 0 else None
        if self.f:
            self.f.write("collective,mode,bytes,iter,t_s,unix_s,time_us,algbw,busbw\n")

    def row(self, nbytes, i, us, factor):
        if self.f:
            algbw = nbytes / 1e3 / us if us > 0 else 0.0
            self.f.write(f"allreduce,ip,{nbytes},{i},{time.monotonic() - T0:.6f},{time.time():.6f},{us:.3f},"
                         f"{algbw:.9f},{algbw * factor:.9f}\n")
            self.f.flush()


def allreduce_size(nbytes, o, factor, iters, rank, n):
    count = nbytes // 4
    t = torch.ones(count)
    for _ in range(o.warmup):
        dist.all_reduce(t)
    dist.barrier()
    total = 0.0
    for i in range(o.iters):
        t0 = time.monotonic()
        dist.all_reduce(t)
        us = (time.monotonic() - t0) * 1e6
        total += us
        iters.row(count * 4, i, us, factor)
    wrong = 0
    if o.check:
        idx = torch.arange(count, dtype=torch.int64)
        t = ((idx % 13) * (rank + 1)).float()
        dist.all_reduce(t)
        want = ((idx % 13) * (n * (n + 1) // 2)).float()
        wrong = int((t != want).sum())
    return count * 4, count, total / o.iters, wrong


def ddp_size(nbytes, o, factor, iters, rank, n):
    from torch.nn.parallel import DistributedDataParallel as DDP
    layers = max(1, nbytes // (1024 * 1024 * 4))
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024, bias=False) for _ in range(layers)])
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-4)
    g = torch.Generator().manual_seed(rank)

    def step():
        x = torch.randn(16, 1024, generator=g)
        opt.zero_grad()
        ddp(x).square().mean().backward()  # returns once the gradients are all-reduced
        opt.step()

    for _ in range(o.warmup):
        step()
    dist.barrier()
    total = 0.0
    grad_bytes = layers * 1024 * 1024 * 4
    for i in range(o.iters):
        t0 = time.monotonic()
        step()
        us = (time.monotonic() - t0) * 1e6
        total += us
        iters.row(grad_bytes, i, us, factor)
    wrong = 0
    if o.check:  # the replicas must be the same bits on every rank
        for p in model.parameters():
            ref = p.detach().clone()
            dist.broadcast(ref, 0)
            wrong += int((ref != p.detach()).sum())
    return grad_bytes, layers * 1024 * 1024, total / o.iters, wrong


def measure(o):
    if o.backend == "preccl":
        import preccl_torch  # noqa: F401
    dist.init_process_group(o.backend)
    rank, n = dist.get_rank(), dist.get_world_size()
    factor = 2 * (n - 1) / n if n > 1 else 1.0
    iters = Iters(o.iter_csv, rank)
    title = f"torch {torch.__version__} {o.backend}" + (" DDP steps" if o.ddp else "")
    if rank == 0:
        print(f"# {title}: allreduce nRanks {n} minBytes {o.min_bytes} maxBytes {o.max_bytes} warmup iters: "
              f"{o.warmup} iters: {o.iters} validation: {o.check}\n#")
        print(f"# {'size':>10}  {'count':>12}  {'type':>8}  {'redop':>6}  {'root':>6}  {'time':>7}  {'algbw':>6}  "
              f"{'busbw':>6}  {'#wrong':>6}  {'time':>7}  {'algbw':>6}  {'busbw':>6}  {'#wrong':>6}")
    total_wrong, bws = 0, []
    nbytes = o.min_bytes
    while nbytes <= o.max_bytes:
        moved, count, us, wrong = (ddp_size if o.ddp else allreduce_size)(nbytes, o, factor, iters, rank, n)
        w = torch.tensor([wrong], dtype=torch.int64)
        dist.all_reduce(w)
        total_wrong += int(w)
        if rank == 0:
            algbw = moved / 1e3 / us
            bws.append(algbw * factor)
            wc = str(int(w)) if o.check else "N/A"
            print(f"{moved:12d}  {count:12d}  {'float':>8}  {'sum':>6}  {-1:6d}  {'N/A':>7}  {'N/A':>6}  {'N/A':>6}  "
                  f"{'N/A':>6}  {us:7.0f}  {algbw:6.2f}  {algbw * factor:6.2f}  {wc:>6}", flush=True)
        if nbytes * o.factor <= nbytes:
            break
        nbytes *= o.factor
    if rank == 0:
        print(f"# Out of bounds values : {total_wrong} {'FAILED' if total_wrong else 'OK'}")
        print(f"# Avg bus bandwidth    : {sum(bws) / len(bws) if bws else 0:g} \n#", flush=True)
    dist.destroy_process_group()
    return 1 if total_wrong else 0


if __name__ == "__main__":
    raise SystemExit(measure(args()))
