// Rank-NIC affinity (PRECCL_NIC_AFFINITY=rail) and the same-host relay, on 2 namespaces x 2 ranks x 2 NICs:
// local rank g owns NIC g, so its AlltoAll bytes on the other rail go through the other local rank
// (shared memory, then that rank's NIC) when the split puts any there, and a ring's exit rank sends its
// VTs on the other rail the same way. Every result is checked, with the allocation digest on; tree
// collectives keep working under the affinity.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "harness.h"
#include "netns_bed.h"
#include "reference.h"

using namespace ptest;

namespace {

constexpr int kHosts = 2, kRails = 2, kRanksPerHost = 2, kRanks = kHosts * kRanksPerHost;

GroupOptions railOptions(const NetnsBed& bed, const char* policy, const char* relay) {
  GroupOptions opt;
  opt.env = {{"PRECCL_SOCKET_IFNAME", "rail"}, {"PRECCL_TIMEOUT", "30"},   {"PRECCL_CHECK_ALLOC", "1"},
             {"PRECCL_NIC_AFFINITY", "rail"},  {"PRECCL_POLICY", policy}, {"PRECCL_RELAY", relay}};
  opt.timeoutSec = 240;
  opt.beforeInit = [&bed](int rank) { enterNs(bed.ns(rank / kRanksPerHost)); };
  return opt;
}

// PyTorch's all_to_all_single with uneven splits: a grouped Send/Recv to and from every rank, counts
// that differ per pair and are odd, values that are not exactly representable in the narrower types.
void unevenAlltoAll(Rank& r, uint32_t seed) {
  const int n = r.nranks;
  auto count = [&](int from, int to) { return size_t(1 + (from * 7 + to * 13 + int(seed)) % 29) * 1021; };
  auto value = [&](int from, int to, size_t i) {
    return static_cast<double>(from * 1000 + to) + static_cast<double>(i) * 0.1 + seed * 0.01;
  };
  std::vector<std::vector<double>> out(n), in(n);
  bool ok = r.ok(precclGroupStart(), "GroupStart");
  for (int q = 0; q < n; ++q) {
    out[q].resize(count(r.rank, q));
    for (size_t i = 0; i < out[q].size(); ++i) out[q][i] = value(r.rank, q, i);
    in[q].assign(count(q, r.rank), -1.0);
    ok = r.ok(precclSend(out[q].data(), out[q].size(), precclFloat64, q, r.comm, nullptr), "Send") && ok;
    ok = r.ok(precclRecv(in[q].data(), in[q].size(), precclFloat64, q, r.comm, nullptr), "Recv") && ok;
  }
  ok = r.ok(precclGroupEnd(), "GroupEnd") && ok;
  if (!ok) return;
  size_t wrong = 0;
  for (int q = 0; q < n; ++q)
    for (size_t i = 0; i < in[q].size(); ++i) wrong += in[q][i] != value(q, r.rank, i);
  r.check(wrong == 0, "uneven Send/Recv AlltoAll: " + std::to_string(wrong) + " wrong elements");
}

void alltoallCases(Rank& r, uint32_t seed) {
  const size_t big = (size_t(4) << 20) / 4 / kRanks + 3;
  for (precclDataType_t t : {precclInt8, precclFloat16, precclBfloat16, precclInt32, precclFloat, precclFloat64, precclUint64})
    runCase(r, Case{Coll::AlltoAll, t, kCopy, 4099, t == precclFloat, 0, seed++});
  runCase(r, Case{Coll::AlltoAll, precclFloat, kCopy, 1, false, 0, seed++});
  runCase(r, Case{Coll::AlltoAll, precclFloat, kCopy, big, false, 0, seed++});
  runCase(r, Case{Coll::AlltoAll, precclFloat, kCopy, big, true, 0, seed++});
  unevenAlltoAll(r, seed++);
}

}  // namespace

TEST_CASE("rail affinity: every collective and AlltoAll through the relay", "[netns]") {
  auto bed = testBed(kHosts, kRails);
  if (!bed) return;
  struct Mode {
    const char* policy;
    const char* relay;
    const char* algo;
  };
  for (Mode m : {Mode{"static", "auto", "ring"}, Mode{"preccl", "auto", "ring"}, Mode{"static", "auto", "tree"},
                 Mode{"preccl", "off", "ring"}, Mode{"static", "force", "ring"}, Mode{"preccl", "force", "ring"}}) {
    const std::string what = std::string(m.policy) + ", relay " + m.relay + ", " + m.algo;
    GroupOptions opt = railOptions(*bed, m.policy, m.relay);
    opt.env.push_back({"PRECCL_ALGO", m.algo});
    GroupResult g = runGroup(kRanks, opt, [&](Rank& r) {
      uint32_t seed = 700;
      if (std::string(m.relay) == "auto" && std::string(m.policy) == "static") {
        // The ring and tree families under the affinity. Ranks 1 and 3 are their hosts' exits on the
        // ring (0 1 | 2 3) and own NIC 1: their VTs on NIC 0 go through ranks 0 and 2.
        const size_t big = (size_t(4) << 20) / 4 + 1;
        runCase(r, Case{Coll::AllReduce, precclFloat, kSum, big, false, 0, seed++});
        if (std::string(m.algo) == "ring") {
          const uint64_t relayed = lastRelayedBytes(r);
          r.info(what + ": AllReduce, rank " + std::to_string(r.rank) + " relayed " + std::to_string(relayed) + " B");
          if (r.rank % 2 == 0) r.check(relayed > 0, what + ": the ring's relay forwarded nothing");
          else r.check(relayed == 0, what + ": rank " + std::to_string(r.rank) + " relayed " + std::to_string(relayed) + " B");
        }
        runCase(r, Case{Coll::AllReduce, precclBfloat16, kSum, 1031, true, 0, seed++});
        runCase(r, Case{Coll::AllReduce, precclFloat16, kPreMulSum, 70001, false, 0, seed++});
        for (int root : {0, 1, 3}) {
          runCase(r, Case{Coll::Broadcast, precclUint8, kCopy, (size_t(2) << 20) + 5, root == 1, root, seed++});
          runCase(r, Case{Coll::Reduce, precclFloat, kAvg, (size_t(1) << 19) + 7, false, root, seed++});
        }
        runCase(r, Case{Coll::AllGather, precclInt32, kCopy, 65537, false, 0, seed++});
        runCase(r, Case{Coll::ReduceScatter, precclFloat, kSum, 65537, true, 0, seed++});
        runCase(r, Case{Coll::ReduceScatter, precclInt64, kMax, 1031, false, 0, seed++});
        runCase(r, Case{Coll::Gather, precclFloat64, kCopy, 1031, false, 2, seed++});
        runCase(r, Case{Coll::Scatter, precclUint32, kCopy, 1031, true, 1, seed++});
      }
      alltoallCases(r, seed);
      // A large AlltoAll: the static split is the owners' own (nothing relayed, the rule's balanced case);
      // forced, every rank relays its bytes on the other rail.
      runCase(r, Case{Coll::AlltoAll, precclFloat, kCopy, (size_t(8) << 20) / 4 / kRanks, false, 0, 900});
      const uint64_t relayed = lastRelayedBytes(r);
      r.info(what + ": AlltoAll, rank " + std::to_string(r.rank) + " relayed " + std::to_string(relayed) + " B");
      if (std::string(m.relay) == "force") r.check(relayed > 0, what + ": nothing relayed");
      if (std::string(m.policy) == "static" && std::string(m.relay) == "auto")
        r.check(relayed == 0, what + ": " + std::to_string(relayed) + " B relayed on equal shares");
    });
    reportToCatch("rail affinity, " + what, g);
  }
  CHECK(bed->teardown());
}

// Host 0's rail1 at 40 Mbit/s. Its rank 1 owns only that NIC: without the relay all its bytes cross it;
// with the relay, the policy's host split moves them to rail0 through rank 0, which forwards them.
TEST_CASE("rail affinity: a slow NIC's bytes go through the other rank's NIC", "[netns]") {
  auto bed = testBed(kHosts, kRails);
  if (!bed) return;
  std::string log;
  INFO("could not shape the namespaces: " << log);
  REQUIRE(bed->shape(0, 1, "40mbit", &log));
  GroupResult g = runGroup(kRanks, railOptions(*bed, "preccl", "auto"), [&](Rank& r) {
    const size_t count = (size_t(4) << 20) / 4 / kRanks;
    for (int i = 0; i < 10; ++i) runCase(r, Case{Coll::AlltoAll, precclFloat, kCopy, count, i % 2 == 1, 0, uint32_t(800 + i)});
    const double slow = nicShare(r, 1);
    const uint64_t relayed = lastRelayedBytes(r);
    r.info("slow NIC: rail1 share " + std::to_string(slow) + ", rank " + std::to_string(r.rank) + " relayed " +
           std::to_string(relayed) + " B");
    r.check(slow < 0.25, "rail1 (40 Mbit/s) still carries " + std::to_string(slow) + " of the host split");
    // Rank 0 owns rail0 on host 0: it forwards rank 1's bytes.
    if (r.rank == 0) r.check(relayed > 0, "rank 0 relayed nothing for rank 1");
  });
  reportToCatch("rail affinity, slow NIC", g);
  CHECK(bed->teardown());
}

// Host 0's rail0 dies while AlltoAll and ring AllReduce calls run, and comes back, four times, each time a
// little later into a call (some deaths land in the commit, after a rank's last notices left it). Rank 0
// owns only that NIC: once its VTs are masked, all its AlltoAll bytes go through rank 1, and the calls go
// on with every result checked; after the link returns the VTs rejoin.
TEST_CASE("rail affinity: a dead NIC's owner sends through the other rank", "[netns]") {
  auto bed = testBed(kHosts, kRails);
  if (!bed) return;
  std::string log;
  bool shaped = true;
  for (int h = 0; h < kHosts; h++)
    for (int rail = 0; rail < kRails; rail++) shaped = bed->shape(h, rail, "200mbit", &log) && shaped;
  INFO("tc: " << log);
  REQUIRE(shaped);
  constexpr int kCycles = 4, kCycleCalls = 12, kDownAt = 4, kUpAt = 9, kCalls = kCycles * kCycleCalls + 4, kIter = 0;
  GroupOptions opt = railOptions(*bed, "preccl", "auto");
  opt.env.push_back({"PRECCL_ALGO", "ring"});
  opt.env.push_back({"PRECCL_TIMEOUT", "20"});
  bool linksOk = true;
  std::string linkLog;
  opt.parentDuringRun = [&](Shared* s) {
    for (int c = 0; c < kCycles; c++)
      for (auto [at, up] : {std::pair<int, bool>{kDownAt, false}, {kUpAt, true}}) {
        const double end = nowSeconds() + 120;
        while (__atomic_load_n(&s->stamp[kIter], __ATOMIC_ACQUIRE) < c * kCycleCalls + at && nowSeconds() < end)
          usleep(1000);
        usleep(useconds_t(up ? 0 : 5000 + 15000 * c));  // into the call
        linksOk = bed->setLink(0, 0, up, &linkLog) && linksOk;
      }
  };
  GroupResult g = runGroup(kRanks, opt, [&](Rank& r) {
    uint64_t relayedWhileDown = 0;
    for (int i = 0; i < kCalls; i++) {
      if (r.rank == 0) __atomic_store_n(&r.shared->stamp[kIter], i, __ATOMIC_RELEASE);
      const Case c = i % 2 ? Case{Coll::AllReduce, precclFloat, kSum, (size_t(4) << 20) / 4 + 3, i % 4 == 1, 0, uint32_t(1000 + i)}
                           : Case{Coll::AlltoAll, precclFloat, kCopy, (size_t(4) << 20) / 4 / kRanks + 1, i % 4 == 2, 0,
                                  uint32_t(1000 + i)};
      if (!runCase(r, c)) return;
      const int inCycle = i % kCycleCalls;
      if (c.coll == Coll::AlltoAll && inCycle > kDownAt + 2 && inCycle < kUpAt) relayedWhileDown += lastRelayedBytes(r);
    }
    precclVtStats_t st[64];
    int nvt = 64;
    bool masked = false, allLive = true;
    if (r.ok(precclCommGetVtStats(r.comm, st, &nvt), "CommGetVtStats"))
      for (int v = 0; v < std::min(nvt, 64); ++v) {
        masked |= st[v].nic == 0 && st[v].stateEpoch > 0;
        allLive &= st[v].state != precclVtMasked;
      }
    r.info("dead NIC: rank " + std::to_string(r.rank) + " relayed " + std::to_string(relayedWhileDown) +
           " B while it was down");
    r.check(masked, "no VT of rail0 was masked");
    r.check(allLive, "a VT is still masked after the link came back");
    // Rank 1 owns rail1 on host 0: while rail0 was masked it carried rank 0's bytes.
    if (r.rank == 1) r.check(relayedWhileDown > 0, "rank 1 relayed nothing for rank 0 while rail0 was down");
  });
  INFO("ip link: " << linkLog);
  CHECK(linksOk);
  reportToCatch("rail affinity, dead NIC", g);
  CHECK(bed->teardown());
}
