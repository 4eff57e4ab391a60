// preccl-perf: nccl-tests-style bandwidth benchmark of PReCCL's collectives, using only the public API.
// Every rank times n iterations; the printed time is the slowest rank's (max-reduced), and with -c 1 every
// output element is compared with a locally computed reference. --iter-csv adds rank 0's per-iteration view.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "reduce/dtype.h"
#include "perf_args.h"
#include "perf_check.h"
#include "perf_colls.h"
#include "perf_iters.h"
#include "perf_launch.h"
#include "perf_report.h"
#include "preccl/preccl.h"

namespace perf {
namespace {

struct Ctx {
  const PerfArgs& a;
  precclComm_t comm = nullptr;
  precclStream_t stream = nullptr;
  int rank = 0;
  int nranks = 0;
  IterCsv* iterCsv = nullptr;  // rank 0 with --iter-csv only
};

bool ok(const Ctx& c, precclResult_t r, const char* what) {
  if (r == precclSuccess) return true;
  std::fprintf(stderr, "preccl-perf: rank %d: %s failed: %s (%s)\n", c.rank, what, precclGetErrorString(r),
               precclGetLastError(c.comm));
  return false;
}
#define PERF_TRY(ctx, call) \
  do {                      \
    if (!ok((ctx), (call), #call)) return false; \
  } while (0)

// One int64 reduced over all ranks, blocking; exact, unlike a double.
bool allReduceI64(const Ctx& c, int64_t* v, precclRedOp_t op) {
  PERF_TRY(c, precclAllReduce(v, v, 1, precclInt64, op, c.comm, nullptr));
  return true;
}

bool gatherRankInfo(const Ctx& c, std::vector<RankInfo>* out) {
  constexpr size_t kRec = 128;  // int32 pid, then the host name
  std::vector<char> mine(kRec, 0), all(kRec * size_t(c.nranks), 0);
  const int32_t pid = int32_t(::getpid());
  std::memcpy(mine.data(), &pid, sizeof pid);
  ::gethostname(mine.data() + 4, kRec - 5);
  PERF_TRY(c, precclAllGather(mine.data(), all.data(), kRec, precclUint8, c.comm, nullptr));
  for (int r = 0; r < c.nranks; r++) {
    const char* rec = all.data() + size_t(r) * kRec;
    RankInfo ri;
    std::memcpy(&ri.pid, rec, sizeof(int32_t));
    ri.host.assign(rec + 4, strnlen(rec + 4, kRec - 5));
    out->push_back(ri);
  }
  return true;
}

// n calls; with a stream they are enqueued and the stream is synchronised once at the end.
bool runCalls(const Ctx& c, const CallArgs& ca, const void* send, void* recv, int n) {
  for (int i = 0; i < n; i++) {
    const precclResult_t r = issueCollective(ca, send, recv);
    if (r != precclSuccess) {
      const std::string what = std::string(collKey(ca.coll)) + " of " + std::to_string(ca.count) + " " +
                               typeName(ca.type) + (c.stream ? " (stream)" : "");
      return ok(c, r, what.c_str());
    }
  }
  if (c.stream) PERF_TRY(c, precclStreamSynchronize(c.stream));
  return true;
}

// Where a timed loop's iterations go in --iter-csv.
struct IterTag {
  size_t bytes;
  const char* mode;  // "oop" or "ip"
  double busFactor;
};

// With --iter-csv every rank times each call on its own (with a stream: each call is synchronised), and
// rank 0 writes a row after each one; the per-size result stays the max-reduced total, as without it.
bool timeCalls(const Ctx& c, const CallArgs& ca, const void* send, void* recv, const IterTag& tag,
               double* timeUs) {
  if (!runCalls(c, ca, send, recv, c.a.warmup)) return false;
  int64_t sync = 0;  // start together, so no rank's time includes waiting for a late one
  if (!allReduceI64(c, &sync, precclSum)) return false;
  const auto t0 = std::chrono::steady_clock::now();
  if (c.a.iterCsv.empty()) {
    if (!runCalls(c, ca, send, recv, c.a.iters)) return false;
  } else {
    for (int i = 0; i < c.a.iters; i++) {
      const auto ti = std::chrono::steady_clock::now();
      if (!runCalls(c, ca, send, recv, 1)) return false;
      const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - ti).count();
      if (c.iterCsv) c.iterCsv->write(c.a, tag.bytes, tag.mode, i, us, tag.busFactor);
    }
  }
  const auto t1 = std::chrono::steady_clock::now();
  int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
  if (!allReduceI64(c, &ns, precclMax)) return false;
  *timeUs = double(ns) / 1e3 / c.a.iters;
  return true;
}

// One checked run; *wrong is the sum over all ranks.
bool checkedRun(const Ctx& c, const CallArgs& ca, const CheckSpec& spec, const Geometry& g, bool inPlace,
                void* sendAlloc, void* recvAlloc, const void* send, void* recv, int64_t* wrong) {
  prepareCheck(spec, g, inPlace, sendAlloc, recvAlloc, const_cast<void*>(send));
  if (!runCalls(c, ca, send, recv, 1)) return false;
  *wrong = countWrong(spec, g, recv);
  return allReduceI64(c, wrong, precclSum);
}

struct Buffer {
  void* p = nullptr;
  explicit Buffer(size_t bytes) {
    const size_t sz = std::max<size_t>(4096, (bytes + 4095) / 4096 * 4096);
    p = std::aligned_alloc(4096, sz);
    if (p) std::memset(p, 0, sz);  // touch every page before timing
  }
  ~Buffer() { std::free(p); }
};

std::vector<size_t> testSizes(const PerfArgs& a) {
  std::vector<size_t> sizes;
  for (size_t s = a.minBytes; s <= a.maxBytes;) {
    sizes.push_back(s);
    const size_t next = a.increment ? s + a.increment : (s ? s * a.factor : 1);
    if (next <= s) break;  // overflow
    s = next;
  }
  return sizes;
}

// Measures one size out-of-place and in-place; fills *row.
bool runSize(const Ctx& c, size_t bytes, void* sendAlloc, void* recvAlloc, Row* row) {
  const PerfArgs& a = c.a;
  const size_t ts = preccl::dtypeSize(a.type);
  const Geometry g = geometryFor(a.coll, bytes, ts, c.nranks);
  const CallArgs ca{a.coll, a.type, a.op, a.root, c.rank, c.nranks, g.count, c.comm, c.stream};
  const CheckSpec spec{a.coll, a.type, a.op, a.root, c.rank, c.nranks, g.count};
  const double factor = busBwFactor(a.coll, c.nranks);
  row->bytes = g.totalElems * ts;
  row->count = g.totalElems;

  auto finish = [&](Measure* m, double us) {
    m->valid = true;
    m->timeUs = us;
    m->algBw = us > 0 ? double(row->bytes) / 1e3 / us : 0.0;  // bytes/us/1e3 = GB/s
    m->busBw = m->algBw * factor;
  };

  double us = 0;
  if (a.check) fillInput(spec, g, sendAlloc);
  if (!timeCalls(c, ca, sendAlloc, recvAlloc, IterTag{row->bytes, "oop", factor}, &us)) return false;
  finish(&row->oop, us);
  if (a.check && !checkedRun(c, ca, spec, g, false, sendAlloc, recvAlloc, sendAlloc, recvAlloc, &row->oop.wrong))
    return false;

  if (!hasInPlace(a.coll)) return true;
  const void* send = nullptr;
  void* recv = nullptr;
  inPlacePointers(ca, ts, sendAlloc, recvAlloc, &send, &recv);
  if (a.check) fillInput(spec, g, const_cast<void*>(send));
  if (!timeCalls(c, ca, send, recv, IterTag{row->bytes, "ip", factor}, &us)) return false;
  finish(&row->ip, us);
  if (a.check && !checkedRun(c, ca, spec, g, true, sendAlloc, recvAlloc, send, recv, &row->ip.wrong))
    return false;
  return true;
}

bool benchmark(Ctx& c, bool* allRight) {
  const PerfArgs& a = c.a;
  if (collRooted(a.coll) && a.root >= c.nranks) {
    if (c.rank == 0) std::fprintf(stderr, "preccl-perf: root %d out of range (%d ranks)\n", a.root, c.nranks);
    return false;
  }
  std::vector<RankInfo> info;
  if (!gatherRankInfo(c, &info)) return false;
  if (c.rank == 0) printHeader(a, c.nranks, info);
  std::unique_ptr<CsvWriter> csv;
  if (c.rank == 0 && !a.csv.empty()) {
    csv = std::make_unique<CsvWriter>(a.csv);
    if (!csv->ok()) std::fprintf(stderr, "preccl-perf: cannot write %s\n", a.csv.c_str());
  }

  std::unique_ptr<IterCsv> iterCsv;
  if (c.rank == 0 && !a.iterCsv.empty()) {
    iterCsv = std::make_unique<IterCsv>(a.iterCsv, c.comm);
    if (!iterCsv->ok()) std::fprintf(stderr, "preccl-perf: cannot write %s\n", a.iterCsv.c_str());
    c.iterCsv = iterCsv.get();
  }

  const size_t ts = preccl::dtypeSize(a.type);
  const Geometry gmax = geometryFor(a.coll, a.maxBytes, ts, c.nranks);
  Buffer sendBuf(gmax.sendElems * ts), recvBuf(gmax.recvElems * ts);
  if (!sendBuf.p || !recvBuf.p) {
    std::fprintf(stderr, "preccl-perf: rank %d: out of memory for %zu bytes\n", c.rank, a.maxBytes);
    return false;
  }

  int64_t wrong = 0;
  double bwSum = 0;
  int bwCount = 0;
  for (size_t bytes : testSizes(a)) {
    Row row{};
    if (!runSize(c, bytes, sendBuf.p, recvBuf.p, &row)) return false;
    for (const Measure* m : {&row.oop, &row.ip}) {
      if (!m->valid) continue;
      bwSum += m->busBw, bwCount++;
      if (m->wrong > 0) wrong += m->wrong;
    }
    if (c.rank == 0) {
      printRow(a, row);
      if (csv) csv->write(a, c.nranks, row);
    }
  }
  *allRight = wrong == 0;
  if (c.rank == 0) printFooter(wrong, bwCount ? bwSum / bwCount : 0.0);
  return true;
}

int runRank(const PerfArgs& a, int rank, int nranks, const precclUniqueId& id) {
  Ctx c{a};
  c.rank = rank;
  c.nranks = nranks;
  if (!ok(c, precclCommInitRank(&c.comm, nranks, id, rank), "precclCommInitRank")) return 1;
  if (!a.blocking && !ok(c, precclStreamCreate(&c.stream), "precclStreamCreate")) {
    precclCommAbort(c.comm);
    return 1;
  }
  bool allRight = false;
  if (!benchmark(c, &allRight)) {
    // A failed rank cannot finish the collective protocol with the others: abort, do not hang.
    if (c.stream) precclStreamDestroy(c.stream);
    precclCommAbort(c.comm);
    return 1;
  }
  bool clean = true;
  if (c.stream) clean &= ok(c, precclStreamDestroy(c.stream), "precclStreamDestroy");
  clean &= ok(c, precclCommFinalize(c.comm), "precclCommFinalize");
  clean &= ok(c, precclCommDestroy(c.comm), "precclCommDestroy");
  return allRight && clean ? 0 : 1;
}

}  // namespace
}  // namespace perf

int main(int argc, char** argv) {
  perf::PerfArgs args;
  const int pr = perf::parseArgs(argc, argv, &args);
  if (pr != 0) return pr > 0 ? 0 : 2;
  const perf::RankBody body = [&args](int rank, int nranks, const precclUniqueId& id) {
    return perf::runRank(args, rank, nranks, id);
  };
  if (args.ranks == 0 && perf::jobEnvironmentPresent()) return perf::launchFromEnvironment(body);
  return perf::launchLocal(args.ranks > 0 ? args.ranks : 4, body);
}
