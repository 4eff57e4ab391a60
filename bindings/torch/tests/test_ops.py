"""Every torch.distributed op on the `preccl` backend against the `gloo` backend, 4 processes.

Each process runs both backends side by side (the default group is preccl, a gloo group spans the same
ranks) on the same inputs. Integer results and float results of exactly representable values must be
equal; floats that round are compared within a tolerance, because gloo sums in another order. Where gloo
lacks an op or dtype (AVG, PREMUL_SUM, bfloat16, ...), the reference is computed locally: every rank can
build every rank's input. Run: /usr/bin/python3 test_ops.py [nprocs]  (PYTHONPATH: the built preccl_torch).
"""
import datetime
import os
import sys
import traceback

import torch
import torch.distributed as dist

import warnings

import preccl_torch  # noqa: F401  registers "preccl"
from launch import spawn

warnings.filterwarnings("ignore", message=".*is a private function.*")  # _all_gather_base and friends

FAILS = []
CHECKED = {"gloo": 0, "reference": 0}  # comparisons made, so that a run that compared nothing shows it


def expect(cond, what):
    if not cond:
        FAILS.append(what)


def same(a, b, what, exact=True):
    CHECKED["gloo" if "vs gloo" in what else "reference"] += 1
    if a.dtype != b.dtype or a.shape != b.shape:
        FAILS.append(f"{what}: {a.dtype}{tuple(a.shape)} vs {b.dtype}{tuple(b.shape)}")
        return
    if exact or not (a.is_floating_point() or a.is_complex()):
        ok = torch.equal(a, b)
    else:
        tol = {torch.float16: 1e-2, torch.bfloat16: 5e-2}.get(a.dtype, 1e-5)
        ok = torch.allclose(a.double() if not a.is_complex() else a, b.double() if not b.is_complex() else b,
                            rtol=tol, atol=tol)
    if not ok:
        diff = (a.double() - b.double()).abs().max().item() if not a.is_complex() else float("nan")
        FAILS.append(f"{what}: differs (max abs diff {diff})")


def inp(rank, n, dtype, kind="int", shape=None):
    """Rank `rank`'s input: small integers (exact in every dtype) or values that round."""
    g = torch.Generator().manual_seed(1000 + rank)
    shape = shape or (n,)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if kind == "int" or not (dtype.is_floating_point or dtype.is_complex):
        lo, hi = (0, 3) if dtype in (torch.uint8, torch.int8) else (-50, 50)
        if dtype == torch.uint8:
            lo, hi = 0, 60
        return torch.randint(lo, hi, shape, generator=g).to(dtype)
    if dtype.is_complex:
        return torch.randn(shape, generator=g, dtype=dtype) / 3
    return (torch.rand(shape, generator=g, dtype=torch.float64) * 0.2 + 0.9).to(dtype) / 3  # 1/3 rounds


def run_both(fn, gloo_group):
    """fn(group) on preccl (default group) and on gloo; gloo's result is None when gloo refuses."""
    ours = fn(None)
    try:
        theirs = fn(gloo_group)
    except RuntimeError:
        theirs = None
    return ours, theirs


def reduce_ref(tensors, op):
    t = torch.stack([x.double() if not x.is_complex() else x for x in tensors])
    if op == "sum":
        r = t.sum(0)
    elif op == "prod":
        r = t.prod(0)
    elif op == "min":
        r = t.min(0).values
    elif op == "max":
        r = t.max(0).values
    elif op == "avg":
        r = t.sum(0) / len(tensors)
    return r


OPS = {"sum": dist.ReduceOp.SUM, "prod": dist.ReduceOp.PRODUCT, "min": dist.ReduceOp.MIN,
       "max": dist.ReduceOp.MAX, "avg": dist.ReduceOp.AVG}


def check_all_reduce(rank, size, gloo):
    n = 10007
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.int32,
                  torch.int64):
        for opname in ("sum", "prod", "min", "max", "avg"):
            if opname == "prod" and dtype in (torch.float16, torch.bfloat16, torch.int8, torch.uint8):
                kinds = ()  # products of 4 such values overflow or lose everything: not a meaningful compare
            else:
                kinds = ("int", "round") if dtype.is_floating_point else ("int",)
            for kind in kinds:
                what = f"all_reduce {opname} {dtype} {kind}"
                def go(group):
                    t = inp(rank, n, dtype, kind)
                    dist.all_reduce(t, op=OPS[opname], group=group)
                    return t
                # gloo has no AVG.
                ours, theirs = run_both(go, gloo) if opname != "avg" else (go(None), None)
                ref = reduce_ref([inp(r, n, dtype, kind) for r in range(size)], opname)
                if opname == "avg" and not dtype.is_floating_point:
                    ref = torch.div(reduce_ref([inp(r, n, dtype, kind) for r in range(size)], "sum"), size,
                                    rounding_mode="trunc")
                # Small integers sum, multiply and average (a division by 4) exactly in every dtype.
                exact = kind == "int"
                same(ours, ref.to(dtype), what + " vs reference", exact=exact)
                if theirs is not None:
                    same(ours, theirs, what + " vs gloo", exact=exact)
    # bool: SUM is "any", PRODUCT "all" (as NCCL's backend); gloo has no bool.
    t = inp(rank, 999, torch.bool)
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    same(t, torch.stack([inp(r, 999, torch.bool) for r in range(size)]).any(0), "all_reduce sum bool")
    t = inp(rank, 999, torch.bool)
    dist.all_reduce(t, op=dist.ReduceOp.PRODUCT)
    same(t, torch.stack([inp(r, 999, torch.bool) for r in range(size)]).all(0), "all_reduce product bool")
    # complex sums, PREMUL_SUM (float factor and tensor factor), a non-contiguous tensor.
    t = inp(rank, 1001, torch.complex64, "round")
    dist.all_reduce(t)
    same(t, reduce_ref([inp(r, 1001, torch.complex64, "round") for r in range(size)], "sum").to(torch.complex64),
         "all_reduce sum complex64", exact=False)
    for factor in (0.1, [torch.tensor([3.0], dtype=torch.float64)]):
        t = inp(rank, 4099, torch.float64, "round")
        dist.all_reduce(t, op=dist._make_nccl_premul_sum(factor))
        f = 0.1 if isinstance(factor, float) else 3.0
        ref = sum(inp(r, 4099, torch.float64, "round") * f for r in range(size))
        same(t, ref, f"all_reduce premul_sum {factor}", exact=False)
    base = torch.stack([inp(rank, 300, torch.int64) for _ in range(3)])  # 3 x 300
    view = base.t()                                                       # not contiguous
    dist.all_reduce(view)
    ref = torch.stack([inp(r, 300, torch.int64) for r in range(size)]).sum(0)
    same(base, torch.stack([ref] * 3), "all_reduce of a transposed view")
    # Bitwise ops are refused with a clear message, as NCCL's backend refuses them.
    try:
        dist.all_reduce(torch.ones(4, dtype=torch.int32), op=dist.ReduceOp.BAND)
        FAILS.append("all_reduce BAND was accepted")
    except RuntimeError as e:
        expect("BAND" in str(e), f"the BAND error does not say why: {e}")
    try:
        dist.all_reduce(torch.ones(4, dtype=torch.int16))
        FAILS.append("all_reduce of int16 was accepted")
    except RuntimeError as e:
        expect("not supported" in str(e), f"the int16 error does not say why: {e}")


def check_data_movement(rank, size, gloo):
    n = 5003
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.uint8, torch.bool, torch.complex128,
                  torch.int16):
        def bcast(group):
            t = inp(rank, n, dtype, "round")
            dist.broadcast(t, src=1 % size, group=group)
            return t
        ours, theirs = run_both(bcast, gloo)
        same(ours, inp(1 % size, n, dtype, "round"), f"broadcast {dtype}")
        if theirs is not None:
            same(ours, theirs, f"broadcast {dtype} vs gloo")

        def gather_all(group):
            outs = [torch.empty(n, dtype=dtype) for _ in range(size)]
            dist.all_gather(outs, inp(rank, n, dtype, "round"), group=group)
            return torch.stack(outs)
        ours, theirs = run_both(gather_all, gloo)
        same(ours, torch.stack([inp(r, n, dtype, "round") for r in range(size)]), f"all_gather {dtype}")
        if theirs is not None:
            same(ours, theirs, f"all_gather {dtype} vs gloo")

        out = torch.empty(size * n, dtype=dtype)
        dist._all_gather_base(out, inp(rank, n, dtype, "round"))
        same(out, torch.cat([inp(r, n, dtype, "round") for r in range(size)]), f"_all_gather_base {dtype}")

        root = size - 1
        def gather(group):
            outs = [torch.empty(n, dtype=dtype) for _ in range(size)] if rank == root else None
            dist.gather(inp(rank, n, dtype, "round"), outs, dst=root, group=group)
            return torch.stack(outs) if outs else torch.empty(0, dtype=dtype)
        ours, theirs = run_both(gather, gloo)
        if rank == root:
            same(ours, torch.stack([inp(r, n, dtype, "round") for r in range(size)]), f"gather {dtype}")
            if theirs is not None:
                same(ours, theirs, f"gather {dtype} vs gloo")

        def scatter(group):
            out = torch.empty(n, dtype=dtype)
            ins = [inp(100 + r, n, dtype, "round") for r in range(size)] if rank == 0 else None
            dist.scatter(out, ins, src=0, group=group)
            return out
        ours, theirs = run_both(scatter, gloo)
        same(ours, inp(100 + rank, n, dtype, "round"), f"scatter {dtype}")
        if theirs is not None:
            same(ours, theirs, f"scatter {dtype} vs gloo")

    # Reductions to one root, and reduce_scatter in both forms.
    for dtype in (torch.float32, torch.int32, torch.float64):
        for opname in ("sum", "max", "min"):
            root = 2 % size
            def reduce(group):
                t = inp(rank, n, dtype)
                dist.reduce(t, dst=root, op=OPS[opname], group=group)
                return t
            ours, theirs = run_both(reduce, gloo)
            if rank == root:
                ref = reduce_ref([inp(r, n, dtype) for r in range(size)], opname).to(dtype)
                same(ours, ref, f"reduce {opname} {dtype}")
                if theirs is not None:
                    same(ours, theirs, f"reduce {opname} {dtype} vs gloo")
            def rs(group):
                out = torch.empty(n, dtype=dtype)
                dist.reduce_scatter(out, [inp(rank * size + p, n, dtype) for p in range(size)], op=OPS[opname],
                                    group=group)
                return out
            ours, theirs = run_both(rs, gloo)
            ref = reduce_ref([inp(r * size + rank, n, dtype) for r in range(size)], opname).to(dtype)
            same(ours, ref, f"reduce_scatter {opname} {dtype}")
            if theirs is not None:
                same(ours, theirs, f"reduce_scatter {opname} {dtype} vs gloo")
            out = torch.empty(n, dtype=dtype)
            dist._reduce_scatter_base(out, torch.cat([inp(rank * size + p, n, dtype) for p in range(size)]),
                                      op=OPS[opname])
            same(out, ref, f"_reduce_scatter_base {opname} {dtype}")


def check_all_to_all(rank, size, gloo):
    for dtype in (torch.float32, torch.int64, torch.float16):
        # Equal splits.
        def single(group):
            out = torch.empty(size * 777, dtype=dtype)
            dist.all_to_all_single(out, inp(rank, size * 777, dtype, "round"), group=group)
            return out
        ours, theirs = run_both(single, gloo)
        ref = torch.cat([inp(r, size * 777, dtype, "round")[rank * 777:(rank + 1) * 777] for r in range(size)])
        same(ours, ref, f"all_to_all_single {dtype}")
        if theirs is not None:
            same(ours, theirs, f"all_to_all_single {dtype} vs gloo")
        # Uneven splits of 2-d rows, as MoE dispatch sends them: rank r sends (r + p + 1) rows to p.
        def rows(src, dst):
            return src + dst + 1
        def uneven(group):
            ins = torch.cat([inp(rank * 100 + p, rows(rank, p) * 3, dtype, "round").view(-1, 3) for p in range(size)])
            out = torch.empty(sum(rows(p, rank) for p in range(size)), 3, dtype=dtype)
            dist.all_to_all_single(out, ins, output_split_sizes=[rows(p, rank) for p in range(size)],
                                   input_split_sizes=[rows(rank, p) for p in range(size)], group=group)
            return out
        ours, theirs = run_both(uneven, gloo)
        ref = torch.cat([inp(p * 100 + rank, rows(p, rank) * 3, dtype, "round").view(-1, 3) for p in range(size)])
        same(ours, ref, f"all_to_all_single uneven {dtype}")
        if theirs is not None:
            same(ours, theirs, f"all_to_all_single uneven {dtype} vs gloo")
        # The list form, tensors of different sizes per peer.
        outs = [torch.empty(rows(p, rank), dtype=dtype) for p in range(size)]
        dist.all_to_all(outs, [inp(rank * 10 + p, rows(rank, p), dtype, "round") for p in range(size)])
        for p in range(size):
            same(outs[p], inp(p * 10 + rank, rows(p, rank), dtype, "round"), f"all_to_all list {dtype} from {p}")


def check_p2p(rank, size, gloo):
    # send/recv pairs (0 -> 1, 2 -> 3), both backends.
    for group in (None, gloo):
        t = inp(rank, 3001, torch.float32, "round")
        if rank % 2 == 0 and rank + 1 < size:
            dist.send(t, dst=rank + 1, group=group)
        elif rank % 2 == 1:
            got = torch.empty(3001)
            dist.recv(got, src=rank - 1, group=group)
            same(got, inp(rank - 1, 3001, torch.float32, "round"), f"recv from {rank - 1} ({'gloo' if group else 'preccl'})")
    # A ring exchange in both directions at once: only batch_isend_irecv (one group) completes it in any order.
    nxt, prv = (rank + 1) % size, (rank - 1) % size
    a, b = torch.empty(2000 + prv, dtype=torch.int64), torch.empty(2000 + nxt, dtype=torch.int64)
    ops = [dist.P2POp(dist.isend, inp(rank, 2000 + rank, torch.int64), nxt),
           dist.P2POp(dist.isend, inp(rank + 50, 2000 + rank, torch.int64), prv),
           dist.P2POp(dist.irecv, a, prv), dist.P2POp(dist.irecv, b, nxt)]
    for req in dist.batch_isend_irecv(ops):
        req.wait()
    same(a, inp(prv, 2000 + prv, torch.int64), "batch_isend_irecv from prev")
    same(b, inp(nxt + 50, 2000 + nxt, torch.int64), "batch_isend_irecv from next")
    # Asynchronous work and its future.
    t = inp(rank, 65536, torch.float64)
    work = dist.all_reduce(t, async_op=True)
    fut = work.get_future()
    res = fut.wait()
    expect(work.is_completed(), "a waited future left its work incomplete")
    same(res[0], reduce_ref([inp(r, 65536, torch.float64) for r in range(size)], "sum"), "all_reduce future value")
    dist.barrier()


def worker(rank, size, port, queue):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    try:
        dist.init_process_group("preccl", rank=rank, world_size=size, timeout=datetime.timedelta(seconds=120))
        gloo = dist.new_group(backend="gloo")
        expect(dist.get_backend() == "preccl", f"default backend is {dist.get_backend()}")
        for check in (check_all_reduce, check_data_movement, check_all_to_all, check_p2p):
            before = len(FAILS)
            check(rank, size, gloo)
            print(f"rank {rank}: {check.__name__}: {len(FAILS) - before} failures", flush=True)
        dist.destroy_process_group()
    except Exception:
        FAILS.append(traceback.format_exc())
    queue.put((rank, FAILS[:20], len(FAILS), dict(CHECKED)))


def main():
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    results, codes = spawn(worker, size)
    bad = 0
    for rank, fails, count, checked in results:
        for f in fails:
            print(f"rank {rank}: FAILED {f}")
        bad += count
        print(f"rank {rank}: {checked['gloo']} results compared with gloo's, {checked['reference']} with the reference")
    print(f"test_ops: {size} ranks, {bad} failures")
    sys.exit(1 if bad or any(c != 0 for c in codes) else 0)


if __name__ == "__main__":
    main()
