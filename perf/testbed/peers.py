"""The peer systems a scenario compares PReCCL with, and how each is told which algorithm to run.

- `openmpi`: OpenMPI's own decision (coll_tuned's fixed rules), as a user gets it.
- `openmpi-<algorithm>`: coll_tuned's algorithm of that name forced for the leg's collective
  (`coll_tuned_use_dynamic_rules=1`, `coll_tuned_<collective>_algorithm=<id>`); a collective without an
  algorithm of that name skips the leg.
- `gloo`: Gloo as PyTorch runs one collective (gloo::allreduce's ring, and Gloo's one algorithm of the
  others), on one of its contexts (one NIC) per call, round-robin.
- `gloo-<algorithm>`: an AllReduce algorithm of Gloo's (GLOO_ALLREDUCE); other collectives skip the leg.
- `gloo[-<algorithm>]-concurrent`: every AllReduce, Broadcast and Reduce as one operation per context
  (one per NIC) on its share of the buffer, at once, as DDP's concurrent buckets use PyTorch's devices;
  the other collectives skip the leg.
- `torch-preccl`, `torch-gloo`: PyTorch's torch.distributed with the preccl backend (bindings/torch) or
  its own gloo (over every NIC: GLOO_SOCKET_IFNAME lists them, one device per NIC, operations round-robin),
  launched by torchrun in every host, AllReduce only (perf/torch_bench.py); `-ddp` runs DDP training
  steps instead, whose gradients are the leg's bytes.
- `openmpi-best`, `gloo-best`: per collective, the peer's fastest system on the bed (BEST, measured with
  perf/peer_algorithms.sh: docs/results.md, "Peers at their best"). A leg runs, and is recorded, under the
  name it resolves to, so every result names the algorithm that produced it.
"""
import re

SYSTEM_RE = re.compile(r"^(openmpi|gloo)(-[a-z_]+)?(-[a-z_]+)?$")
TORCH_RE = re.compile(r"^torch-(preccl|gloo)(-ddp)?$")
CONCURRENT = "-concurrent"

# coll_tuned's algorithm ids (OpenMPI 4.1, `ompi_info --param coll tuned --level 9`), per collective as the
# bed names it, with the MCA name of its setting. ReduceScatter is MPI_Reduce_scatter (perf-mpi calls it
# with equal counts): the _block variant has no ring.
MPI_ALGORITHMS = {
    "allreduce": ("allreduce", {"basic_linear": 1, "nonoverlapping": 2, "recursive_doubling": 3, "ring": 4,
                                "segmented_ring": 5, "rabenseifner": 6}),
    "reducescatter": ("reduce_scatter", {"non_overlapping": 1, "recursive_halving": 2, "ring": 3,
                                         "butterfly": 4}),
    "allgather": ("allgather", {"linear": 1, "bruck": 2, "recursive_doubling": 3, "ring": 4, "neighbor": 5,
                                "two_proc": 6}),
    "broadcast": ("bcast", {"basic_linear": 1, "chain": 2, "pipeline": 3, "split_binary_tree": 4,
                            "binary_tree": 5, "binomial": 6, "knomial": 7, "scatter_allgather": 8,
                            "scatter_allgather_ring": 9}),
    "reduce": ("reduce", {"linear": 1, "chain": 2, "pipeline": 3, "binary": 4, "binomial": 5,
                          "in_order_binary": 6, "rabenseifner": 7}),
    "alltoall": ("alltoall", {"linear": 1, "pairwise": 2, "modified_bruck": 3, "linear_sync": 4,
                              "two_proc": 5}),
}
# Forced, coll_tuned's segmented algorithms run with a segment size of 0, i.e. unsegmented: a chain or a
# tree then forwards the whole message hop by hop (a 4-host chain Broadcast ran at a third of the links,
# 51 Mbit/s of 160, whatever the algorithm). They get this segment size instead, as OpenMPI's own
# decisions give segmented algorithms for large messages: at 80 Mbit/s a segment is 13 ms.
SEGMENTED = {"allreduce": ("segmented_ring",),
             "broadcast": ("chain", "pipeline", "split_binary_tree", "binary_tree", "binomial", "knomial"),
             "reduce": ("chain", "pipeline", "binary", "binomial", "in_order_binary")}
SEGMENT_BYTES = 128 << 10
GLOO_ALLREDUCE = ("ring", "ring_chunked", "halving_doubling", "bcube")
GLOO_SPLITTABLE = ("allreduce", "broadcast", "reduce")  # elements independent: a call splits into parts
PEER_COLLECTIVES = tuple(MPI_ALGORITHMS)
BEST_ALIAS = "best"
# What `<peer>-best` runs per collective: the fastest system of perf/peer_algorithms.sh on balanced links,
# 64 MiB (docs/results.md, "Peers at their best"). A collective missing here runs the peer's own choice.
BEST = {
    "openmpi": {"allreduce": "openmpi-ring", "reducescatter": "openmpi-recursive_halving",
                "allgather": "openmpi-ring", "broadcast": "openmpi-pipeline", "reduce": "openmpi-pipeline",
                "alltoall": "openmpi-pairwise"},
    # One Gloo call runs on one context, one NIC; split over every context at once it uses them all.
    "gloo": {"allreduce": "gloo-ring_chunked-concurrent", "broadcast": "gloo-concurrent",
             "reduce": "gloo-concurrent"},
}


def candidates(collective):
    """Every peer system that can run the collective on a bed of more than two ranks: each peer's own
    choice, every forced algorithm, and Gloo's concurrent mode where the collective splits (what
    perf/peer_algorithms.sh compares to fill BEST)."""
    mpi = ["openmpi"] + [f"openmpi-{a}" for a in MPI_ALGORITHMS[collective][1] if a != "two_proc"]
    gloo = ["gloo"] + ([f"gloo-{a}" for a in GLOO_ALLREDUCE if a != "ring"] if collective == "allreduce" else [])
    if collective in GLOO_SPLITTABLE:
        gloo += [g + CONCURRENT for g in gloo]
    return mpi + gloo


def resolve(system, collective):
    """The system a leg of this collective runs: `<peer>-best` becomes that peer's BEST entry."""
    p = _parts(system)
    if not p or p[1] != BEST_ALIAS or p[2]:
        return system
    return BEST[p[0]].get(collective, p[0])


def is_peer(system):
    return _parts(system) is not None or is_torch(system)


def is_torch(system):
    return TORCH_RE.match(system) is not None


def torch_backend(system):
    """(backend, whether it runs DDP steps) of a torch system."""
    m = TORCH_RE.match(system)
    return m.group(1), bool(m.group(2))


def kind(system):
    """"openmpi", "gloo" or "torch" for a peer, "preccl" otherwise: what runs the leg."""
    if is_torch(system):
        return "torch"
    p = _parts(system)
    return p[0] if p else "preccl"


def _parts(system):
    """(kind, algorithm or None, concurrent) of a peer's name; None when it is not one."""
    m = SYSTEM_RE.match(system)
    if not m:
        return None
    rest = (m.group(2) or "") + (m.group(3) or "")
    conc = rest.endswith(CONCURRENT)
    if conc:
        rest = rest[:-len(CONCURRENT)]
    if "-" in rest[1:]:
        return None
    return m.group(1), rest[1:] or None, conc


def algorithm(system):
    """The forced algorithm's name, or None for the library's own choice."""
    p = _parts(system)
    return p[1] if p else None


def concurrent(system):
    p = _parts(system)
    return bool(p and p[2])


def valid(system):
    """A peer name this module knows (the algorithm may still not exist for some collective)."""
    if is_torch(system):
        return True
    algo = algorithm(system)
    if algo == BEST_ALIAS:
        return not concurrent(system)
    if kind(system) == "openmpi":
        return not concurrent(system) and (algo is None or any(algo in names for _, names in MPI_ALGORITHMS.values()))
    if kind(system) == "gloo":
        return algo is None or algo in GLOO_ALLREDUCE
    return False


def skip_reason(system, collective):
    """Why this peer cannot run this collective, or None."""
    if is_torch(system):
        return None if collective == "allreduce" else "the torch systems run AllReduce (or DDP's, with -ddp)"
    if collective not in PEER_COLLECTIVES:
        return f"the peer benchmarks do {', '.join(PEER_COLLECTIVES)}"
    algo = algorithm(system)
    if kind(system) == "openmpi" and algo is not None and algo not in MPI_ALGORITHMS[collective][1]:
        return f"OpenMPI has no {algo} algorithm for {collective}"
    if kind(system) == "gloo" and algo is not None and collective != "allreduce":
        return f"Gloo's {algo} is an AllReduce algorithm"
    if concurrent(system) and collective not in GLOO_SPLITTABLE:
        return f"a {collective} does not split into concurrent parts"
    return None


def mpi_mca(system, collective):
    """mpirun's --mca arguments that force the system's algorithm for the collective ([] for `openmpi`)."""
    algo = algorithm(system)
    if algo is None:
        return []
    setting, ids = MPI_ALGORITHMS[collective]
    mca = ["--mca", "coll_tuned_use_dynamic_rules", "1", "--mca", f"coll_tuned_{setting}_algorithm", str(ids[algo])]
    if algo in SEGMENTED.get(collective, ()):
        mca += ["--mca", f"coll_tuned_{setting}_algorithm_segmentsize", str(SEGMENT_BYTES)]
    return mca


def gloo_args(system):
    """perf-gloo's --algo and --concurrent for the system ([] for `gloo`: PyTorch's ring, one NIC a call)."""
    algo = algorithm(system)
    return (["--algo", algo] if algo else []) + (["--concurrent"] if concurrent(system) else [])
