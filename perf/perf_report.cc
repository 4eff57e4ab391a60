// Printing in nccl-tests' column layout so existing parsers and eyes read preccl-perf output unchanged.
#include "perf_report.h"

#include "perf_colls.h"

namespace perf {
namespace {

const char* opColumn(const PerfArgs& a) { return collReduces(a.coll) ? opName(a.op) : "none"; }
int rootColumn(const PerfArgs& a) { return collRooted(a.coll) ? a.root : -1; }

void printMeasure(const Measure& m) {
  if (!m.valid) {
    std::printf("  %7s  %6s  %6s  %6s", "N/A", "N/A", "N/A", "N/A");
    return;
  }
  // nccl-tests keeps the time column 7 wide by dropping decimals as it grows.
  char t[32];
  if (m.timeUs >= 10000.0)
    std::snprintf(t, sizeof t, "%7.0f", m.timeUs);
  else if (m.timeUs >= 100.0)
    std::snprintf(t, sizeof t, "%7.1f", m.timeUs);
  else
    std::snprintf(t, sizeof t, "%7.2f", m.timeUs);
  if (m.wrong >= 0)
    std::printf("  %7s  %6.2f  %6.2f  %6lld", t, m.algBw, m.busBw, static_cast<long long>(m.wrong));
  else
    std::printf("  %7s  %6.2f  %6.2f  %6s", t, m.algBw, m.busBw, "N/A");
}

void csvMeasure(std::FILE* f, const Measure& m) {
  if (!m.valid) {
    std::fprintf(f, ",,,,");
    return;
  }
  std::fprintf(f, ",%.3f,%.6f,%.6f,", m.timeUs, m.algBw, m.busBw);
  if (m.wrong >= 0) std::fprintf(f, "%lld", static_cast<long long>(m.wrong));
}

}  // namespace

void printHeader(const PerfArgs& a, int nranks, const std::vector<RankInfo>& ranks) {
  std::printf("# preccl-perf %s: nRanks %d minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d iters: %d "
              "validation: %d blocking: %d\n",
              collKey(a.coll), nranks, a.minBytes, a.maxBytes, a.increment ? a.increment : a.factor,
              a.increment ? "bytes" : "factor", a.warmup, a.iters, a.check ? 1 : 0, a.blocking ? 1 : 0);
  std::printf("#\n# Using devices\n");
  for (size_t r = 0; r < ranks.size(); r++)
    std::printf("#  Rank %2zu Group  0 Pid %6d on %10s\n", r, ranks[r].pid,
                ranks[r].host.c_str());
  std::printf("#\n");
  std::printf("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n",
              "", "", "", "", "");
  std::printf("# %10s  %12s  %8s  %6s  %6s", "size", "count", "type", "redop", "root");
  std::printf("  %7s  %6s  %6s  %6s", "time", "algbw", "busbw", "#wrong");
  std::printf("  %7s  %6s  %6s  %6s\n", "time", "algbw", "busbw", "#wrong");
  std::printf("# %10s  %12s  %8s  %6s  %6s", "(B)", "(elements)", "", "", "");
  std::printf("  %7s  %6s  %6s  %6s", "(us)", "(GB/s)", "(GB/s)", "");
  std::printf("  %7s  %6s  %6s  %6s\n", "(us)", "(GB/s)", "(GB/s)", "");
  std::fflush(stdout);
}

void printRow(const PerfArgs& a, const Row& r) {
  std::printf("%12zu  %12zu  %8s  %6s  %6d", r.bytes, r.count, typeName(a.type), opColumn(a), rootColumn(a));
  printMeasure(r.oop);
  printMeasure(r.ip);
  std::printf("\n");
  std::fflush(stdout);
}

bool printFooter(int64_t wrong, double avgBusBw) {
  std::printf("# Out of bounds values : %lld %s\n", static_cast<long long>(wrong), wrong == 0 ? "OK" : "FAILED");
  std::printf("# Avg bus bandwidth    : %g \n#\n", avgBusBw);
  std::fflush(stdout);
  return wrong == 0;
}

CsvWriter::CsvWriter(const std::string& path) {
  f_ = std::fopen(path.c_str(), "w");
  if (!f_) return;
  std::fprintf(f_, "collective,type,op,nranks,bytes,count,oop_time_us,oop_algbw,oop_busbw,oop_wrong,"
                   "ip_time_us,ip_algbw,ip_busbw,ip_wrong\n");
}

CsvWriter::~CsvWriter() {
  if (f_) std::fclose(f_);
}

void CsvWriter::write(const PerfArgs& a, int nranks, const Row& r) {
  if (!f_) return;
  std::fprintf(f_, "%s,%s,%s,%d,%zu,%zu", collKey(a.coll), typeName(a.type), opColumn(a), nranks, r.bytes,
               r.count);
  csvMeasure(f_, r.oop);
  csvMeasure(f_, r.ip);
  std::fprintf(f_, "\n");
  std::fflush(f_);
}

}  // namespace perf
