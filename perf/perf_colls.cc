// Geometry, busbw factors and calls of the collectives preccl-perf measures.
#include "perf_colls.h"

namespace perf {

Geometry geometryFor(Coll c, size_t bytes, size_t typeSize, int nranks) {
  const size_t n = size_t(nranks);
  const size_t total = bytes / typeSize;
  Geometry g;
  switch (c) {
    case Coll::AllReduce:
    case Coll::Broadcast:
    case Coll::Reduce:
    case Coll::SendRecv:
      g.count = g.sendElems = g.recvElems = g.totalElems = total;
      break;
    case Coll::AllGather:
    case Coll::Gather:
      g.count = total / n;
      g.sendElems = g.count;
      g.recvElems = g.totalElems = g.count * n;
      break;
    case Coll::ReduceScatter:
    case Coll::Scatter:
      g.count = total / n;
      g.sendElems = g.totalElems = g.count * n;
      g.recvElems = g.count;
      break;
    case Coll::AlltoAll:
      g.count = total / n;
      g.sendElems = g.recvElems = g.totalElems = g.count * n;
      break;
  }
  return g;
}

double busBwFactor(Coll c, int nranks) {
  const double n = nranks;
  switch (c) {
    case Coll::AllReduce: return 2.0 * (n - 1) / n;
    case Coll::AllGather:
    case Coll::ReduceScatter:
    case Coll::AlltoAll:
    case Coll::Gather:
    case Coll::Scatter: return (n - 1) / n;
    case Coll::Broadcast:
    case Coll::Reduce:
    case Coll::SendRecv: return 1.0;
  }
  return 1.0;
}

bool usesOp(Coll c) { return c == Coll::AllReduce || c == Coll::Reduce || c == Coll::ReduceScatter; }

bool usesRoot(Coll c) {
  return c == Coll::Broadcast || c == Coll::Reduce || c == Coll::Gather || c == Coll::Scatter;
}

bool hasInPlace(Coll c) { return c != Coll::SendRecv; }

void inPlacePointers(const CallArgs& a, size_t typeSize, void* sendAlloc, void* recvAlloc, const void** send,
                     void** recv) {
  const size_t shift = size_t(a.rank) * a.count * typeSize;
  switch (a.coll) {
    case Coll::AllGather:
    case Coll::Gather:
      *recv = recvAlloc;
      *send = static_cast<char*>(recvAlloc) + shift;
      break;
    case Coll::ReduceScatter:
    case Coll::Scatter:
      *send = sendAlloc;
      *recv = static_cast<char*>(sendAlloc) + shift;
      break;
    default:
      *send = recvAlloc;
      *recv = recvAlloc;
      break;
  }
}

precclResult_t issueCollective(const CallArgs& a, const void* send, void* recv) {
  switch (a.coll) {
    case Coll::AllReduce:
      return precclAllReduce(send, recv, a.count, a.type, a.op, a.comm, a.stream);
    case Coll::AllGather:
      return precclAllGather(send, recv, a.count, a.type, a.comm, a.stream);
    case Coll::ReduceScatter:
      return precclReduceScatter(send, recv, a.count, a.type, a.op, a.comm, a.stream);
    case Coll::Broadcast:
      return precclBroadcast(send, recv, a.count, a.type, a.root, a.comm, a.stream);
    case Coll::Reduce:
      return precclReduce(send, recv, a.count, a.type, a.op, a.root, a.comm, a.stream);
    case Coll::AlltoAll:
      return precclAlltoAll(send, recv, a.count, a.type, a.comm, a.stream);
    case Coll::Gather:
      return precclGather(send, recv, a.count, a.type, a.root, a.comm, a.stream);
    case Coll::Scatter:
      return precclScatter(send, recv, a.count, a.type, a.root, a.comm, a.stream);
    case Coll::SendRecv: {
      const int next = (a.rank + 1) % a.nranks;
      const int prev = (a.rank + a.nranks - 1) % a.nranks;
      precclResult_t r = precclGroupStart();
      if (r != precclSuccess) return r;
      precclResult_t rs = precclSend(send, a.count, a.type, next, a.comm, a.stream);
      precclResult_t rr = precclRecv(recv, a.count, a.type, prev, a.comm, a.stream);
      // GroupEnd always runs so a failed Send/Recv does not leave the group open.
      r = precclGroupEnd();
      if (rs != precclSuccess) return rs;
      if (rr != precclSuccess) return rr;
      return r;
    }
  }
  return precclInvalidArgument;
}

}  // namespace perf
