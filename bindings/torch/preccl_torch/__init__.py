"""PReCCL as a torch.distributed backend (docs/torch.md).

    import preccl_torch                      # registers the "preccl" backend
    torch.distributed.init_process_group("preccl")
"""
import torch.distributed as dist

from . import _C

ProcessGroupPreccl = _C.ProcessGroupPreccl


def _create(store, rank, world_size, timeout):
    return _C.ProcessGroupPreccl(store, rank, world_size, timeout)


if "PRECCL" not in dist.Backend._plugins:
    dist.Backend.register_backend("preccl", _create)
