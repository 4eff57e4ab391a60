// Deferred commits (docs/failures.md, "Deferred commits"). A small AllReduce on recursive doubling is over
// in ceil(log2 n) exchanges, and its commit would add as many hops again; so its attempt ends when this
// rank's tasks are done, and the next collective settles it: every rank must have finished it to take part
// in that one. Until then the call is pending and its input is kept. A peer that still needs this rank's
// part (bytes lost on a path that died) gives the attempt up with an abort; this rank, already in a later
// call, joins it and runs the pending call again from the kept input (core/cct.cc).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "plan/call.h"
#include "preccl/preccl.h"

struct precclComm;

namespace preccl {

struct Cct;

// A buffer of the communicator's, grown and never shrunk.
struct KeptBuffer {
  std::unique_ptr<char, void (*)(void*)> mem{nullptr, free};
  size_t bytes = 0;
  char* grow(size_t n);  // null if it cannot hold n bytes
};

// The last deferred call on this rank, until a collective settles it.
struct PendingCct {
  bool active = false;
  uint64_t epoch = 0;
  uint32_t attempt = 0;  // the attempt that ended here
  CctArgs args;          // its input points at kept[buf]
  int buf = 0;
};

// Whether the call's attempts end without a commit: a small AllReduce on recursive doubling, with the
// agreement, on the host runner, unless PRECCL_DEFER_COMMIT=0. The same on every rank.
bool defersCommit(const precclComm* comm, const CctArgs& a, bool agree);
// Copies a deferred call's input into the kept buffer the pending call does not use, and points the call
// at it (an in-place call needs no other staging then).
precclResult_t keepInput(precclComm* comm, Cct* c);
// After an attempt of c that ended well: with the agreement, the pending call is settled (every rank
// finished it to take part in c), and a deferred c becomes the pending one.
void settlePending(precclComm* comm, const Cct& c, uint32_t attempt);

}  // namespace preccl
