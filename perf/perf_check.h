// Check mode of preccl-perf: deterministic per-rank inputs and an element-by-element comparison with a
// reference computed locally from every rank's (reproducible) inputs.
#pragma once
#include <cstddef>
#include <cstdint>

#include "perf_colls.h"

namespace perf {

// Data-moving collectives (broadcast, allgather, gather, scatter, alltoall, sendrecv) get hashed raw
// bytes: any bit pattern must arrive unchanged. Reducing collectives get small integers (and powers of
// two for prod) chosen per type and rank count so that every partial result is exactly representable,
// which makes the result independent of the reduction order and lets the check be bit-exact.
struct CheckSpec {
  Coll coll;
  precclDataType_t type;
  precclRedOp_t op;
  int root;
  int rank;
  int nranks;
  size_t count;  // the call's count argument
};

// Sets up the buffers for one checked run: poisons what will be written and writes this rank's input
// at `send` (the pointer the call gets, i.e. inside recvAlloc for an in-place run).
void prepareCheck(const CheckSpec& s, const Geometry& g, bool inPlace, void* sendAlloc, void* recvAlloc,
                  void* send);
// Writes this rank's input without poisoning (before the timed loop).
void fillInput(const CheckSpec& s, const Geometry& g, void* send);
// Number of wrong elements in this rank's result at `recv` (0 on ranks that receive nothing).
int64_t countWrong(const CheckSpec& s, const Geometry& g, const void* recv);

}  // namespace perf
