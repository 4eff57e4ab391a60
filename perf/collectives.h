// The collectives a benchmark measures, as preccl-perf and the peer benchmarks (perf/peers) name them:
// buffer geometry per test size and bus-bandwidth factor (nccl-tests' conventions), and size arguments.
// Nothing here knows a library: the peers measure OpenMPI and Gloo with the same definitions.
#pragma once
#include <cstddef>

#include "base/coll.h"

namespace perf {

// The library's names of the collectives (src/base/coll.h: collKey "allreduce", collFromKey, collReduces,
// collRooted); nothing else of the library.
using preccl::Coll;
using preccl::collFromKey;
using preccl::collKey;
using preccl::collReduces;
using preccl::collRooted;
// "64M" -> 67108864; K/M/G are powers of 1024 as in nccl-tests. false on a malformed value.
bool parseBytes(const char* text, size_t* out);

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
// In-place is defined for every collective but SendRecv (send and receive of the same buffer race).
bool hasInPlace(Coll c);
// Where the NCCL in-place layout puts this rank's send and receive data within one allocation, in
// elements from its start: AllGather/Gather send at rank*count; ReduceScatter/Scatter receive at
// rank*count; the others use the allocation for both.
size_t inPlaceSendOffset(Coll c, int rank, size_t count);
size_t inPlaceRecvOffset(Coll c, int rank, size_t count);

}  // namespace perf
