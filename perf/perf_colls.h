// What each collective moves: buffer geometry for a given size, its bus-bandwidth factor, and the call.
#pragma once
#include <cstddef>

#include "collectives.h"
#include "perf_args.h"
#include "preccl/preccl.h"

namespace perf {

struct CallArgs {
  Coll coll;
  precclDataType_t type;
  precclRedOp_t op;
  int root;
  int rank;
  int nranks;
  size_t count;
  precclComm_t comm;
  precclStream_t stream;  // nullptr: blocking call
};

// The NCCL in-place layout: the pointers to pass when sendbuff/recvbuff are the same allocation.
// AllGather/Gather: sendbuff = recvbuff + rank*count; ReduceScatter/Scatter: recvbuff = sendbuff +
// rank*count; the others: sendbuff = recvbuff. `sendAlloc`/`recvAlloc` are the two allocations.
void inPlacePointers(const CallArgs& a, size_t typeSize, void* sendAlloc, void* recvAlloc, const void** send,
                     void** recv);

// Issues one collective (SendRecv: send to rank+1, receive from rank-1, in one group).
precclResult_t issueCollective(const CallArgs& a, const void* send, void* recv);

}  // namespace perf
