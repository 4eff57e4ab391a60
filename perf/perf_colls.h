// What each collective moves: buffer geometry for a given size, its bus-bandwidth factor, and the call.
#pragma once
#include <cstddef>

#include "perf_args.h"
#include "preccl/preccl.h"

namespace perf {

// Sizes in elements for one test size, following nccl-tests: "size" is the whole n-rank buffer for
// allgather, reducescatter, alltoall, gather and scatter, and one rank's buffer otherwise.
struct Geometry {
  size_t count = 0;      // the count argument passed to the call
  size_t sendElems = 0;  // elements the send buffer holds
  size_t recvElems = 0;  // elements the receive buffer holds
  size_t totalElems = 0; // printed "count" column; printed size = totalElems * element size
};

Geometry geometryFor(Coll c, size_t bytes, size_t typeSize, int nranks);
// busbw = algbw * factor (nccl-tests' formulas).
double busBwFactor(Coll c, int nranks);
bool usesOp(Coll c);    // AllReduce, Reduce, ReduceScatter
bool usesRoot(Coll c);  // Broadcast, Reduce, Gather, Scatter
// In-place is defined for every collective but SendRecv (send and receive of the same buffer race).
bool hasInPlace(Coll c);

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
