// Rows of --iter-csv. Times are rank 0's own (no extra collective per iteration: a tiny max-reduce would
// be an epoch of its own, move the "last epoch" VT counters and feed adaptive policies a fake sample).
#include "perf_iters.h"

#include <algorithm>
#include <chrono>

namespace perf {
namespace {

// Seconds are counted from the load of the program, so that t_s includes communicator set-up.
const auto kProgramStart = std::chrono::steady_clock::now();

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The names PRECCL_TRACE uses, so that the bed reads one vocabulary.
const char* stateName(int state) {
  return state == precclVtMasked ? "masked" : state == precclVtProbing ? "probing" : "live";
}

double unixSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

IterCsv::IterCsv(const std::string& path, precclComm_t comm) : comm_(comm) {
  f_ = std::fopen(path.c_str(), "w");
}

IterCsv::~IterCsv() {
  if (f_) std::fclose(f_);
}

void IterCsv::write(const PerfArgs& a, size_t bytes, const char* mode, int iter, double timeUs,
                    double busFactor) {
  if (!f_) return;
  // Take the clocks and counters first: formatting must not shift the timestamp of the iteration.
  const double tS = secondsSince(kProgramStart), unixS = unixSeconds();
  int n = 0;
  std::vector<precclVtStats_t> vts;
  if (precclCommGetVtStats(comm_, nullptr, &n) == precclSuccess && n > 0) {
    vts.resize(size_t(n));
    if (precclCommGetVtStats(comm_, vts.data(), &n) != precclSuccess) vts.clear();
    vts.resize(std::min(vts.size(), size_t(n)));
  }
  uint64_t epoch = 0;
  precclCommGetEpoch(comm_, &epoch);
  if (nVts_ < 0) {
    nVts_ = int(vts.size());
    std::fprintf(f_, "collective,mode,bytes,iter,t_s,unix_s,time_us,algbw,busbw,epoch");
    for (int v = 0; v < nVts_; v++)
      std::fprintf(f_, ",vt%d_nic,vt%d_share,vt%d_bytes,vt%d_stalls,vt%d_stall_ns,vt%d_state,vt%d_relayed", v, v, v, v, v,
                   v, v);
    std::fprintf(f_, "\n");
  }
  const double algBw = timeUs > 0 ? double(bytes) / 1e3 / timeUs : 0.0;  // GB/s
  std::fprintf(f_, "%s,%s,%zu,%d,%.6f,%.6f,%.3f,%.9f,%.9f,%llu", collKey(a.coll), mode, bytes, iter, tS, unixS,
               timeUs, algBw, algBw * busFactor, static_cast<unsigned long long>(epoch));
  // The VT count is fixed for a communicator; a mismatch would shift columns, so pad or cut to the header.
  for (int v = 0; v < nVts_; v++) {
    if (v < int(vts.size())) {
      const precclVtStats_t& s = vts[size_t(v)];
      std::fprintf(f_, ",%d,%.6f,%llu,%llu,%llu,%s,%llu", s.nic, s.share, static_cast<unsigned long long>(s.lastBytes),
                   static_cast<unsigned long long>(s.lastStalls), static_cast<unsigned long long>(s.lastStallNs),
                   stateName(s.state), static_cast<unsigned long long>(s.lastRelayedBytes));
    } else {
      std::fprintf(f_, ",,,,,,,");
    }
  }
  std::fprintf(f_, "\n");
  std::fflush(f_);  // a run killed mid-way (a failed NIC) still leaves every finished iteration on disk
}

}  // namespace perf
