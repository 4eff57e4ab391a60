// Visibility: PRECCL_TRACE writes one JSON line per collective per rank, and precclCommGetVtStats gives
// shares that sum to 1 and, once telemetry of a complete epoch arrived, the model's estimates.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
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
      r.check(st[v].state == precclVtLive && st[v].stateEpoch == 0, "VT " + std::to_string(v) + " is not live from the start");
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
    CHECK(line.find("\"attempts\":1,") != std::string::npos);     // nothing failed: one run
    CHECK(line.find("\"state\":\"masked\"") == std::string::npos);
    CHECK(line.find("\"state\":\"live\",\"stateEpoch\":0}") != std::string::npos);
    // The control path's cost against the call's: both timed, the call not free.
    CHECK(line.find("\"decideNs\":") != std::string::npos);
    CHECK(line.find("\"planNs\":") != std::string::npos);
    const size_t ex = line.find("\"execNs\":");
    REQUIRE(ex != std::string::npos);
    CHECK(std::atoll(line.c_str() + ex + 9) > 0);
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

// The telemetry cut (docs/telemetry.md): a call with enough pieces on every VT carries its own records to
// every rank before it returns, on every algorithm that has a cut. With the cut missing on any of them the
// telemetry in use after call e would be an older epoch's, and the digest check (on) would catch ranks
// that disagree about it.
TEST_CASE("a large call's own telemetry is known on every rank when it returns", "[trace]") {
  for (const char* algo : {"ring", "tree"}) {
    const std::string path = "/tmp/preccl-cut-test-" + std::to_string(getpid()) + "-" + algo + ".jsonl";
    unlink(path.c_str());
    GroupOptions opt;
    opt.env = localEnv(Transport::Shm, 2);
    opt.env.push_back({"PRECCL_TRACE", path});
    opt.env.push_back({"PRECCL_POLICY", "preccl"});
    opt.env.push_back({"PRECCL_ALGO", algo});
    opt.env.push_back({"PRECCL_CHECK_ALLOC", "1"});
    // 64 KiB pieces: a VT has >= 2 of them even at the policy's floor (1/32 of 4 MiB = 128 KiB), which
    // preccl can reach on one busy host, where the VTs' times follow the scheduler. With 512 KiB pieces a
    // VT pushed below 1 MiB had one piece, no room for a cut, and so the whole call had none.
    opt.env.push_back({"PRECCL_SLOT_BYTES", "65536"});
    opt.timeoutSec = 120;
    const bool ring = std::string(algo) == "ring";
    constexpr size_t kBig = size_t(1) << 20;  // 4 MiB of floats
    GroupResult g = runGroup(4, opt, [&](Rank& r) {
      runCase(r, Case{Coll::AllReduce, precclFloat, kSum, kBig, false, 0, 900});
      runCase(r, Case{Coll::Broadcast, precclFloat, kSum, kBig, false, 1, 901});
      runCase(r, Case{Coll::Reduce, precclFloat, kSum, kBig, true, 2, 902});
      runCase(r, Case{Coll::AllReduce, precclFloat, kSum, 8, false, 0, 903});  // too small for a cut
      if (!ring) return;                                                      // tree: these three only
      runCase(r, Case{Coll::AllGather, precclFloat, kSum, kBig / 2, false, 0, 904});
      runCase(r, Case{Coll::ReduceScatter, precclFloat, kSum, kBig / 2, true, 0, 905});
      runCase(r, Case{Coll::AlltoAll, precclFloat, kSum, kBig / 2, false, 0, 906});  // kBig / 2 per rank
    });
    reportToCatch(std::string("cut, ") + algo, g);
    std::ifstream in(path);
    std::string line;
    int big = 0, small = 0;
    while (std::getline(in, line)) {
      INFO(line);
      auto field = [&](const char* name) {
        const size_t at = line.find(name);
        REQUIRE(at != std::string::npos);
        return std::atoll(line.c_str() + at + std::strlen(name));
      };
      const long long epoch = field("\"epoch\":"), tele = field("\"telemetryEpoch\":"), count = field("\"count\":");
      if (count >= static_cast<long long>(kBig / 2)) {
        big++;
        CHECK(tele == epoch);
      } else if (count == 8) {
        small++;
        CHECK(tele == epoch - 1);  // no cut: the previous call's records stay the latest
      }
    }
    CHECK(big == 4 * (ring ? 6 : 3));
    CHECK(small == 4);
    unlink(path.c_str());
  }
}
