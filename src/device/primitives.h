// What the executor runs. A CCT is a set of Tasks; a Task is one VT's (or one point-to-point edge's)
// sequence of Steps; a Step is one primitive over a byte range, executed slot by slot:
//   out = [reduce] pre(src) (+) recv[0] (+) recv[1], written to dst and to every send FIFO.
// NCCL's send / recv / recvReduceSend / recvReduceCopySend / recvCopySend are all Steps with different
// inputs and outputs present.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "device/reduce.h"
#include "preccl/preccl.h"
#include "transport/fifo.h"

namespace preccl {

struct Step {
  Conn* recv[2] = {nullptr, nullptr};
  int nrecv = 0;
  Conn* send[2] = {nullptr, nullptr};
  int nsend = 0;
  const char* src = nullptr;  // this rank's input, or null
  char* dst = nullptr;        // this rank's output, or null
  size_t bytes = 0;
  bool reduce = false;        // combine with the op (else copy)
  bool post = false;          // apply the op's post-division (Avg) to the result
};

struct Task {
  int vt = 0;
  std::vector<Step> steps;
  // Progress.
  size_t cur = 0;
  size_t off = 0;
  bool stalled = false;
  uint64_t stallStartNs = 0;
  bool done() const { return cur >= steps.size(); }
};

struct CctPlan {
  uint64_t epoch = 0;
  uint32_t digest = 0;
  bool checkDigest = false;
  precclDataType_t dtype = precclFloat;
  size_t elemBytes = 4;
  RedOp op;
  std::vector<Task> tasks;
};

}  // namespace preccl
