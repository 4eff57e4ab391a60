// The peers' shared benchmark loop (peer_bench.h).
#include "peer_bench.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

namespace peer {

namespace {

bool parseInt(const char* t, int lo, int* out) {
  char* end = nullptr;
  const long v = std::strtol(t, &end, 10);
  if (end == t || *end || v < lo || v > (1 << 30)) return false;
  *out = int(v);
  return true;
}

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
const int64_t kProgramStartNs = nowNs();

double unixSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Small integers: a float sum over up to 2^17 ranks is exact in any order, so every library's result
// must equal the reference bit for bit.
float input(int rank, size_t i) { return float((size_t(rank) * 7 + i * 13 + (i >> 7)) % 128); }

// What rank `rank` must hold at element i of its result.
float expected(Coll c, int rank, int nranks, int root, size_t count, size_t i) {
  auto sum = [&](size_t at) {
    float s = 0;
    for (int r = 0; r < nranks; r++) s += input(r, at);
    return s;
  };
  switch (c) {
    case Coll::AllReduce:
    case Coll::Reduce: return sum(i);
    case Coll::ReduceScatter: return sum(size_t(rank) * count + i);
    case Coll::AllGather: return input(int(i / count), i % count);
    case Coll::Broadcast: return input(root, i);
    case Coll::AlltoAll: return input(int(i / count), size_t(rank) * count + i % count);
    default: return 0;
  }
}

bool hasResult(Coll c, int rank, int root) { return c != Coll::Reduce || rank == root; }

void printMeasure(double us, double algbw, double busbw, long long wrong, bool check) {
  char t[32];
  std::snprintf(t, sizeof t, us >= 10000.0 ? "%7.0f" : us >= 100.0 ? "%7.1f" : "%7.2f", us);
  if (check) std::printf("  %7s  %6.2f  %6.2f  %6lld", t, algbw, busbw, wrong);
  else std::printf("  %7s  %6.2f  %6.2f  %6s", t, algbw, busbw, "N/A");
}

// The buffers of one size: two allocations out-of-place, one in-place, laid out as NCCL lays them.
struct Buffers {
  std::vector<float> a, b;
  const float* send = nullptr;
  float* recv = nullptr;
  size_t sendElems = 0, recvElems = 0;
  void layout(Coll c, const perf::Geometry& g, int rank, bool inPlace) {
    sendElems = g.sendElems, recvElems = g.recvElems;
    if (inPlace) {
      float* base = a.data();
      send = base + perf::inPlaceSendOffset(c, rank, g.count);
      recv = base + perf::inPlaceRecvOffset(c, rank, g.count);
    } else {
      send = a.data();
      recv = b.data();
    }
  }
  void fillInput(int rank) {
    float* s = const_cast<float*>(send);
    for (size_t i = 0; i < sendElems; i++) s[i] = input(rank, i);
  }
};

}  // namespace

bool peerSupports(Coll c) {
  return c == Coll::AllReduce || c == Coll::ReduceScatter || c == Coll::AllGather || c == Coll::Broadcast ||
         c == Coll::Reduce || c == Coll::AlltoAll;
}

OptResult commonOption(int c, const char* arg, Opts* o) {
  switch (c) {
    case 't': return perf::collFromKey(arg, &o->coll) && peerSupports(o->coll) ? OptResult::Taken : OptResult::Bad;
    case 'b': return perf::parseBytes(arg, &o->minBytes) ? OptResult::Taken : OptResult::Bad;
    case 'e': return perf::parseBytes(arg, &o->maxBytes) ? OptResult::Taken : OptResult::Bad;
    case 'f': {
      int f;
      if (!parseInt(arg, 2, &f)) return OptResult::Bad;
      o->factor = size_t(f);
      return OptResult::Taken;
    }
    case 'n': return parseInt(arg, 1, &o->iters) ? OptResult::Taken : OptResult::Bad;
    case 'w': return parseInt(arg, 0, &o->warmup) ? OptResult::Taken : OptResult::Bad;
    case 'r': return parseInt(arg, 0, &o->root) ? OptResult::Taken : OptResult::Bad;
    case 'c': {
      int v;
      if (!parseInt(arg, 0, &v)) return OptResult::Bad;
      o->check = v != 0;
      return OptResult::Taken;
    }
    case kIterCsvOption: o->iterCsv = arg; return OptResult::Taken;
    default: return OptResult::NotMine;
  }
}

const char* commonUsage() {
  return "  -t <coll>   allreduce (default), reducescatter, allgather, broadcast, reduce, alltoall (float, sum)\n"
         "  -b/-e <bytes>  minimum / maximum size (default 8 / 64M; K/M/G), -f <factor> (default 2)\n"
         "  -n <iters> (default 20), -w <warmup> (default 5), -c <0|1> check results (default 1)\n"
         "  -r <root>   root of broadcast and reduce (default 0)\n"
         "  --iter-csv FILE  rank 0 writes one row per timed iteration\n";
}

int runSizes(const Opts& o, int rank, int nranks, PeerComm& comm, const std::string& title) {
  if (o.root >= nranks) {
    if (rank == 0) std::fprintf(stderr, "%s: root %d is not a rank of %d\n", title.c_str(), o.root, nranks);
    return 2;
  }
  const Coll c = o.coll;
  const char* name = perf::collKey(c);
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> iterFile(nullptr, std::fclose);
  if (rank == 0 && !o.iterCsv.empty()) {
    iterFile.reset(std::fopen(o.iterCsv.c_str(), "w"));
    if (!iterFile) std::fprintf(stderr, "%s: cannot write %s\n", title.c_str(), o.iterCsv.c_str());
    else std::fprintf(iterFile.get(), "collective,mode,bytes,iter,t_s,unix_s,time_us,algbw,busbw\n");
  }
  const perf::Geometry most = perf::geometryFor(c, o.maxBytes, sizeof(float), nranks);
  Buffers buf;
  buf.a.assign(std::max<size_t>(1, std::max(most.sendElems, most.recvElems)), 0.0f);
  buf.b.assign(std::max<size_t>(1, most.recvElems), 0.0f);
  const double factor = perf::busBwFactor(c, nranks);
  const bool rooted = perf::collRooted(c);
  if (rank == 0) {
    std::printf("# %s: %s nRanks %d minBytes %zu maxBytes %zu step: %zu(factor) warmup iters: %d iters: %d "
                "validation: %d\n#\n",
                title.c_str(), name, nranks, o.minBytes, o.maxBytes, o.factor, o.warmup, o.iters, o.check ? 1 : 0);
    std::printf("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "",
                "", "", "", "");
    std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size", "count", "type",
                "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
    std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)", "(elements)", "",
                "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  }
  long long totalWrong = 0;
  double bwSum = 0;
  int bwCount = 0;
  for (size_t bytes = o.minBytes; bytes <= o.maxBytes;) {
    const perf::Geometry g = perf::geometryFor(c, bytes, sizeof(float), nranks);
    const size_t moved = g.totalElems * sizeof(float);
    double us[2];
    long long wrong[2] = {0, 0};
    for (int ip = 0; ip < 2; ip++) {
      buf.layout(c, g, rank, ip == 1);
      auto once = [&] { comm.run(c, buf.send, buf.recv, g.count, o.root, ip == 1); };
      if (o.check) buf.fillInput(rank);
      for (int i = 0; i < o.warmup; i++) once();
      comm.allReduceI64(0, false);
      const int64_t t0 = nowNs();
      for (int i = 0; i < o.iters; i++) {
        const int64_t ti = nowNs();
        once();
        if (iterFile) {
          const double callUs = double(nowNs() - ti) / 1e3, algbw = callUs > 0 ? double(moved) / 1e3 / callUs : 0.0;
          std::fprintf(iterFile.get(), "%s,%s,%zu,%d,%.6f,%.6f,%.3f,%.9f,%.9f\n", name, ip ? "ip" : "oop", moved, i,
                       double(nowNs() - kProgramStartNs) / 1e9, unixSeconds(), callUs, algbw, algbw * factor);
          std::fflush(iterFile.get());
        }
      }
      us[ip] = double(comm.allReduceI64(nowNs() - t0, true)) / 1e3 / o.iters;
      if (o.check) {  // one more call on fresh inputs, the output poisoned first
        std::memset(buf.recv, 0xA5, buf.recvElems * sizeof(float));
        buf.fillInput(rank);
        once();
        int64_t w = 0;
        if (hasResult(c, rank, o.root))
          for (size_t i = 0; i < buf.recvElems; i++) {
            const float want = expected(c, rank, nranks, o.root, g.count, i);
            w += std::memcmp(&want, &buf.recv[i], sizeof want) != 0;
          }
        wrong[ip] = comm.allReduceI64(w, false);
        totalWrong += wrong[ip];
      }
    }
    if (rank == 0) {
      std::printf("%12zu  %12zu  %8s  %6s  %6d", moved, g.totalElems, "float", perf::collReduces(c) ? "sum" : "none",
                  rooted ? o.root : -1);
      for (int ip = 0; ip < 2; ip++) {
        const double algbw = us[ip] > 0 ? double(moved) / 1e3 / us[ip] : 0.0;
        printMeasure(us[ip], algbw, algbw * factor, wrong[ip], o.check);
        bwSum += algbw * factor, bwCount++;
      }
      std::printf("\n");
      std::fflush(stdout);
    }
    const size_t step = bytes ? bytes * o.factor : 1;
    if (step <= bytes) break;
    bytes = step;
  }
  if (rank == 0) {
    std::printf("# Out of bounds values : %lld %s\n", totalWrong, totalWrong ? "FAILED" : "OK");
    std::printf("# Avg bus bandwidth    : %g \n#\n", bwCount ? bwSum / bwCount : 0.0);
    std::fflush(stdout);
  }
  return totalWrong ? 1 : 0;
}

}  // namespace peer
