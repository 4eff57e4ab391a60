#include "core/enqueue.h"

#include <cstdlib>
#include <cstring>
#include <memory>

#include "core/comm.h"
#include "core/debug.h"
#include "core/group.h"
#include "core/stream.h"
#include "device/dtype.h"
#include "device/executor.h"

namespace preccl {

const char* collName(Coll c) {
  switch (c) {
    case Coll::AllReduce: return "AllReduce";
    case Coll::Broadcast: return "Broadcast";
    case Coll::Reduce: return "Reduce";
    case Coll::AllGather: return "AllGather";
    case Coll::ReduceScatter: return "ReduceScatter";
    case Coll::AlltoAll: return "AlltoAll";
    case Coll::Gather: return "Gather";
    case Coll::Scatter: return "Scatter";
    case Coll::P2P: return "SendRecv";
  }
  return "?";
}

Conn* connTo(precclComm* comm, int peer, int vt) { return comm->conns[peer][vt].get(); }

bool useTree(precclComm* comm, const CctArgs& a) {
  if (comm->cfg.algo == Algo::Tree) return true;
  if (comm->cfg.algo == Algo::Ring) return false;
  // Auto: the tree's log(n) latency wins for small AllReduce; the ring's bandwidth for the rest.
  return a.coll == Coll::AllReduce && comm->nranks > 2 && a.count * dtypeSize(a.dtype) <= comm->cfg.treeMaxBytes;
}

static Allocation allocate(precclComm* comm, const CctArgs& a) {
  AllocRequest req;
  req.count = a.count;
  req.elemBytes = dtypeSize(a.dtype);
  req.nVTs = comm->nVTs;
  // Only the static split is wired to the data path so far: resolveConfig refuses the others until the
  // per-epoch telemetry exchange feeds them.
  return staticAllocation(req);
}

precclResult_t launchCct(precclComm* comm, const CctArgs& args) {
  std::lock_guard<std::mutex> lock(comm->execMutex);
  if (int e = comm->asyncError.load(); e != precclSuccess)
    return setError(comm, static_cast<precclResult_t>(e), fmt::format("communicator has failed earlier: {}", comm->lastError));
  CctArgs a = args;
  // In-place AlltoAll: stage the input, since block q is overwritten by rank q while still being sent.
  std::unique_ptr<char, void (*)(void*)> staging(nullptr, free);
  if (a.coll == Coll::AlltoAll && a.sendbuff == a.recvbuff && comm->nranks > 1 && a.count > 0) {
    size_t bytes = a.count * comm->nranks * dtypeSize(a.dtype);
    staging.reset(static_cast<char*>(malloc(bytes)));
    if (!staging) return PRECCL_ERR(comm, precclSystemError, "AlltoAll: cannot allocate {} B for in-place staging", bytes);
    memcpy(staging.get(), a.sendbuff, bytes);
    a.sendbuff = staging.get();
  }
  CctPlan plan;
  plan.epoch = comm->epoch;
  plan.dtype = a.dtype;
  plan.elemBytes = dtypeSize(a.dtype);
  plan.op = a.op;
  Allocation al;
  if (a.coll == Coll::P2P) {
    std::string why;
    if (!planP2P(comm, a, &plan, &why)) return PRECCL_ERR(comm, precclInvalidUsage, "{}", why);
  } else {
    al = allocate(comm, a);
    plan.digest = al.digest() ^ static_cast<uint32_t>(a.coll) * 0x9e3779b9u ^ static_cast<uint32_t>(a.root);
    plan.checkDigest = comm->cfg.checkAlloc;
    switch (a.coll) {
      case Coll::AllReduce:
        useTree(comm, a) ? planTreeAllReduce(comm, a, al, &plan) : planRingAllReduce(comm, a, al, &plan);
        break;
      case Coll::Broadcast:
        useTree(comm, a) ? planTreeBroadcast(comm, a, al, &plan) : planRingBroadcast(comm, a, al, &plan);
        break;
      case Coll::Reduce:
        useTree(comm, a) ? planTreeReduce(comm, a, al, &plan) : planRingReduce(comm, a, al, &plan);
        break;
      case Coll::AllGather: planRingAllGather(comm, a, al, &plan); break;
      case Coll::ReduceScatter: planRingReduceScatter(comm, a, al, &plan); break;
      case Coll::AlltoAll: planAlltoAll(comm, a, al, &plan); break;
      case Coll::Gather: planGather(comm, a, al, &plan); break;
      case Coll::Scatter: planScatter(comm, a, al, &plan); break;
      case Coll::P2P: break;
    }
  }
  precclResult_t res = execute(comm, plan);
  if (res != precclSuccess) {
    // The FIFOs may hold a half-finished CCT: later calls on this communicator fail fast.
    comm->raiseAsync(res, lastErrorText(comm));
    return res;
  }
  if (a.coll != Coll::P2P) {
    comm->epoch++;
    const size_t total = std::max<size_t>(1, al.total());
    for (int v = 0; v < comm->nVTs && v < static_cast<int>(al.vt.size()); v++)
      comm->vtStats[v].lastShare = static_cast<double>(al.vt[v].count) / total;
  }
  return precclSuccess;
}

precclResult_t submit(precclComm* comm, precclStream_t stream, CctArgs a) {
  if (groupDepth() > 0) return groupAdd(comm, stream, std::move(a));
  if (stream) return streamEnqueue(stream, [comm, a = std::move(a)] { return launchCct(comm, a); });
  return launchCct(comm, a);
}

}  // namespace preccl
