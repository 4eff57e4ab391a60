// Visibility: PRECCL_TRACE writes one JSON line per collective per rank, and precclCommGetVtStats gives
// shares that sum to 1 and, once telemetry of a complete epoch arrived, the model's estimates.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <string>

#include "harness.h"
#include "reference.h"

using namespace ptest;

TEST_CASE("PRECCL_TRACE lines and per-VT stats", "[trace]") {
  const std::string path = "/tmp/preccl-trace-test-" + std::to_string(getpid()) + ".jsonl";
  unlink(path.c_str());
  GroupOptions opt;
  opt.env = localEnv(Transport::Shm, 2);
  opt.env.push_back({"PRECCL_TRACE", path});
  opt.env.push_back({"PRECCL_POLICY", "preccl"});
  opt.env.push_back({"PRECCL_CHECK_ALLOC", "1"});
  opt.timeoutSec = 120;
  constexpr int kCalls = 4;
  GroupResult g = runGroup(2, opt, [&](Rank& r) {
    for (int i = 0; i < kCalls; ++i)
      runCase(r, Case{Coll::AllReduce, precclFloat, kSum, size_t(1) << 18, false, 0, uint32_t(500 + i)});
    precclVtStats_t st[8];
    int n = 8;
    if (!r.ok(precclCommGetVtStats(r.comm, st, &n), "CommGetVtStats")) return;
    r.check(n == 2, "expected 2 VTs, got " + std::to_string(n));
    double sum = 0;
    for (int v = 0; v < n && v < 8; ++v) {
      sum += st[v].share;
      r.check(st[v].lastBytes > 0, "VT " + std::to_string(v) + " moved no bytes in the last AllReduce");
      // Every call's records were known when it returned (the telemetry cut): the model has seen the VTs.
      r.check(st[v].estimateNs > 0, "VT " + std::to_string(v) + " has no model estimate after " + std::to_string(kCalls) + " calls");
    }
    r.check(sum > 0.999 && sum < 1.001, "shares sum to " + std::to_string(sum));
  });
  reportToCatch("trace", g);
  std::ifstream in(path);
  int lines = 0, rank0 = 0, lastEpoch = -1;
  std::string line;
  while (std::getline(in, line)) {
    lines++;
    INFO(line);
    CHECK(line.front() == '{');
    CHECK(line.back() == '}');
    CHECK(line.find("\"coll\":\"AllReduce\"") != std::string::npos);
    CHECK(line.find("\"vts\":[{\"vt\":0,") != std::string::npos);
    CHECK(line.find("\"alphaNs\":") != std::string::npos);
    CHECK(line.find("\"nsPerMiB\":") != std::string::npos);
    CHECK(line.find("\"pieceBytes\":0") == std::string::npos);  // every VT's piece is known
    if (line.rfind("{\"rank\":0,", 0) == 0) {
      rank0++;
      const size_t at = line.find("\"epoch\":");
      REQUIRE(at != std::string::npos);
      int e = std::atoi(line.c_str() + at + 8);
      CHECK(e == lastEpoch + 1);
      lastEpoch = e;
      // 1 MiB on 2 VTs is one round per VT with every chunk filled: the cut before its all-gather carries
      // the call's own records to both ranks, so the telemetry in use after call e is e's own.
      const size_t te = line.find("\"telemetryEpoch\":");
      REQUIRE(te != std::string::npos);
      CHECK(std::atoi(line.c_str() + te + 17) == e);
    }
  }
  CHECK(lines == 2 * kCalls);
  CHECK(rank0 == kCalls);
  unlink(path.c_str());
}
