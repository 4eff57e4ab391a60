// Command-line options of preccl-perf (nccl-tests names and defaults).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "collectives.h"
#include "preccl/preccl.h"

namespace perf {

struct PerfArgs {
  Coll coll = Coll::AllReduce;
  size_t minBytes = 8;
  size_t maxBytes = size_t(64) << 20;
  size_t factor = 2;     // sizes grow by *factor ...
  size_t increment = 0;  // ... or by +increment when this is non-zero (-i)
  int iters = 20;
  int warmup = 5;
  bool check = true;
  precclRedOp_t op = precclSum;
  precclDataType_t type = precclFloat;
  int root = 0;
  bool blocking = true;  // -z 1: NULL stream; -z 0: enqueue on a stream, then synchronize
  int ranks = 0;         // --ranks; 0 = not given
  std::string csv;       // --csv FILE
  std::string iterCsv;   // --iter-csv FILE: one row per timed iteration (rank 0)
};

// Parses argv into *out. Returns 0 to run, 1 after printing help (-h), -1 on a bad option (message on
// stderr).
int parseArgs(int argc, char** argv, PerfArgs* out);
const char* opName(precclRedOp_t op);
const char* typeName(precclDataType_t t);

}  // namespace perf
