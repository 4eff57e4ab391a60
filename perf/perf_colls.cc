// Geometry, busbw factors and calls of the collectives preccl-perf measures.
#include "perf_colls.h"

namespace perf {

void inPlacePointers(const CallArgs& a, size_t typeSize, void* sendAlloc, void* recvAlloc, const void** send,
                     void** recv) {
  // AllGather and Gather live in the receive allocation, ReduceScatter and Scatter in the send one.
  const bool inSend = a.coll == Coll::ReduceScatter || a.coll == Coll::Scatter;
  char* base = static_cast<char*>(inSend ? sendAlloc : recvAlloc);
  *send = base + inPlaceSendOffset(a.coll, a.rank, a.count) * typeSize;
  *recv = base + inPlaceRecvOffset(a.coll, a.rank, a.count) * typeSize;
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
