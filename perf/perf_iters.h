// Per-iteration output of preccl-perf (--iter-csv FILE): one row per timed iteration, written by rank 0,
// with the allocation's per-VT view of that iteration (precclCommGetVtStats), so that the test bed can
// plot busbw and the VT shares over time next to the events of a scenario.
#pragma once
#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

#include "perf_args.h"
#include "preccl/preccl.h"

namespace perf {

class IterCsv {
 public:
  // Opens (truncates) the file; the header is written with the first row, once the VT count is known.
  IterCsv(const std::string& path, precclComm_t comm);
  ~IterCsv();
  IterCsv(const IterCsv&) = delete;
  IterCsv& operator=(const IterCsv&) = delete;
  bool ok() const { return f_ != nullptr; }
  // One timed iteration that just completed: rank 0's own time of it; `busFactor` turns algbw into busbw.
  // Reads the VT counters now, so it must run before any other collective is issued.
  void write(const PerfArgs& a, size_t bytes, const char* mode, int iter, double timeUs, double busFactor);

 private:
  std::FILE* f_ = nullptr;
  precclComm_t comm_;
  int nVts_ = -1;  // -1: header not yet written
};

}  // namespace perf
