"""DDP training of a small model for 50 steps on synthetic data, with `preccl` and with `gloo`.

Each of 4 processes trains two copies of the same model (same seed): one under DDP over the preccl group,
one under DDP over a gloo group spanning the same ranks, on the same batches. Both start from the same
weights (DDP broadcasts rank 0's) and see the same data, so their losses may differ only by the order in
which each backend sums the 4 ranks' gradients (float32 addition is not associative): the test prints the
largest difference and fails above 1e-5 relative. Run: /usr/bin/python3 test_ddp.py [nprocs] [steps].
"""
import datetime
import os
import sys
import traceback

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import preccl_torch  # noqa: F401
from launch import spawn

REL_TOL = 1e-5


def model():
    torch.manual_seed(7)
    return torch.nn.Sequential(torch.nn.Linear(32, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256), torch.nn.ReLU(),
                               torch.nn.Linear(256, 10))


def train(ddp, steps, rank):
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(100 + rank)
    teacher = torch.randn(32, 10, generator=torch.Generator().manual_seed(5))  # a rule the model can learn
    losses = []
    for _ in range(steps):
        x = torch.randn(64, 32, generator=g)
        y = (x @ teacher).argmax(1)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(ddp(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return torch.stack(losses)


def worker(rank, size, port, steps, queue):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    out = {"rank": rank, "error": None}
    try:
        dist.init_process_group("preccl", rank=rank, world_size=size, timeout=datetime.timedelta(seconds=120))
        gloo = dist.new_group(backend="gloo")
        ours = train(DDP(model()), steps, rank)
        theirs = train(DDP(model(), process_group=gloo), steps, rank)
        out["ours"], out["theirs"] = ours.tolist(), theirs.tolist()
        dist.destroy_process_group()
    except Exception:
        out["error"] = traceback.format_exc()
    queue.put(out)


def main():
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    results, codes = spawn(worker, size, steps)
    bad = False
    worst = 0.0
    for o in results:
        if o["error"]:
            print(f"rank {o['rank']}: FAILED\n{o['error']}")
            bad = True
            continue
        a, b = torch.tensor(o["ours"]), torch.tensor(o["theirs"])
        rel = ((a - b).abs() / b.abs().clamp_min(1e-12)).max().item()
        worst = max(worst, rel)
        if rel > REL_TOL:
            print(f"rank {o['rank']}: FAILED losses differ by {rel:.3g} relative (limit {REL_TOL})")
            bad = True
        if a[-1] >= a[0]:
            print(f"rank {o['rank']}: FAILED the loss did not fall ({a[0]:.4f} -> {a[-1]:.4f})")
            bad = True
    r0 = results[0]
    if not r0["error"]:
        print(f"rank 0 loss: step 1 {r0['ours'][0]:.6f}, step {steps} preccl {r0['ours'][-1]:.8f} "
              f"gloo {r0['theirs'][-1]:.8f}")
    print(f"test_ddp: {size} ranks x {steps} steps, largest relative loss difference preccl vs gloo {worst:.3g}")
    sys.exit(1 if bad or any(c != 0 for c in codes) else 0)


if __name__ == "__main__":
    main()
