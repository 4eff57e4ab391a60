// nccl-tests-style output of preccl-perf (printed by rank 0 only) and the optional CSV file.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "perf_args.h"

namespace perf {

struct RankInfo {
  int pid;
  std::string host;
};

struct Measure {
  bool valid = false;  // false: not run (SendRecv in-place)
  double timeUs = 0;
  double algBw = 0;    // GB/s
  double busBw = 0;    // GB/s
  int64_t wrong = -1;  // -1: not checked
};

struct Row {
  size_t bytes;
  size_t count;
  Measure oop, ip;
};

void printHeader(const PerfArgs& a, int nranks, const std::vector<RankInfo>& ranks);
void printRow(const PerfArgs& a, const Row& r);
// Returns the footer's verdict: true when no value was wrong.
bool printFooter(int64_t wrong, double avgBusBw);

class CsvWriter {
 public:
  // Opens (truncates) the file and writes the column names; ok() is false when it could not.
  explicit CsvWriter(const std::string& path);
  ~CsvWriter();
  bool ok() const { return f_ != nullptr; }
  void write(const PerfArgs& a, int nranks, const Row& r);

 private:
  std::FILE* f_ = nullptr;
};

}  // namespace perf
