// Mixed transports: 2 "hosts" (network namespaces) x 2 ranks x 2 NICs. Each namespace has rail0 and
// rail1, veth pairs whose root-side ends join one bridge per rail (198.18.<rail>.<host+1>/24). Ranks in
// one namespace use shared memory, ranks in different namespaces sockets over both rails. Needs root
// and `ip netns`; skips with a message otherwise. Everything created is deleted (RAII), and checked.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>


#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "harness.h"
#include "netns_bed.h"
#include "reference.h"

using namespace ptest;

namespace {

constexpr int kHosts = 2, kRails = 2, kRanksPerHost = 2;

int hostOf(int rank) { return rank / kRanksPerHost; }

// The bed itself works: a process in host 1 reaches a listener in host 0 over each rail.
void bedSelfCheck(const NetnsBed& bed) {
  GroupOptions opt;
  opt.initComm = false;
  opt.timeoutSec = 30;
  opt.beforeInit = [&](int rank) { enterNs(bed.ns(rank)); };
  GroupResult g = runGroup(2, opt, [](Rank& r) {
    for (int rail = 0; rail < kRails; ++rail) {
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(uint16_t(47000 + rail));
      a.sin_addr.s_addr = htonl((198u << 24) | (18u << 16) | (uint32_t(rail) << 8) | 1u);
      if (r.rank == 0) {
        int s = socket(AF_INET, SOCK_STREAM, 0);
        int one = 1;
        setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (!r.check(bind(s, (sockaddr*)&a, sizeof a) == 0 && listen(s, 4) == 0, "bed: bind/listen on rail " + std::to_string(rail)))
          return;
        r.barrier(10);
        int c = accept(s, nullptr, nullptr);
        r.check(c >= 0, "bed: accept on rail " + std::to_string(rail));
        if (c >= 0) close(c);
        close(s);
      } else {
        r.barrier(10);
        int s = socket(AF_INET, SOCK_STREAM, 0);
        r.check(connect(s, (sockaddr*)&a, sizeof a) == 0,
                "bed: host 1 cannot reach 198.18." + std::to_string(rail) + ".1 over the bridge: " + strerror(errno));
        close(s);
      }
    }
  });
  reportToCatch("netns bed self-check", g);
}

void sendRecvRing(Rank& r, size_t count, uint32_t seed) {
  const int n = r.nranks, next = (r.rank + 1) % n, prev = (r.rank + n - 1) % n;
  DataSpec mine{precclFloat, kCopy, n, seed + uint32_t(r.rank)}, theirs{precclFloat, kCopy, n, seed + uint32_t(prev)};
  GuardedBuffer s(count * 4), d(count * 4), want(count * 4);
  fillInput(mine, r.rank, s.data(), count);
  d.fill(0xCD);
  bool ok = r.ok(precclGroupStart(), "GroupStart");
  ok = r.ok(precclSend(s.data(), count, precclFloat, next, r.comm, nullptr), "Send ring") && ok;
  ok = r.ok(precclRecv(d.data(), count, precclFloat, prev, r.comm, nullptr), "Recv ring") && ok;
  ok = r.ok(precclGroupEnd(), "GroupEnd") && ok;
  if (!ok) return;
  fillInput(theirs, prev, want.data(), count);
  compareElements(precclFloat, d.data(), want.data(), count, "netns send/recv ring count=" + std::to_string(count),
                  [&](const std::string& m) { r.fail(m); });
  r.check(d.guardDamage().empty(), "netns send/recv ring: " + d.guardDamage());
}

void mixedBody(Rank& r, bool tree) {
  const int n = r.nranks;
  uint32_t seed = 100;
  const size_t big = (size_t(8) << 20) / 4 + 1;
  runCase(r, Case{Coll::AllReduce, precclFloat, kSum, 1031, false, 0, seed++});
  runCase(r, Case{Coll::AllReduce, precclFloat, kSum, big, false, 0, seed++});
  runCase(r, Case{Coll::AllReduce, precclFloat, kSum, big, true, 0, seed++});
  for (int op : {kSum, kProd, kMax, kMin, kAvg, kPreMulSum})
    for (precclDataType_t t : {precclInt32, precclFloat16, precclFloat8e5m2})
      runCase(r, Case{Coll::AllReduce, t, op, 1031, op % 2 == 0, 0, seed++});
  for (int root : {0, n - 1}) {
    runCase(r, Case{Coll::Broadcast, precclUint8, kCopy, 65537, root != 0, root, seed++});
    runCase(r, Case{Coll::Reduce, precclBfloat16, kSum, 4099, false, root, seed++});
  }
  if (!tree) {
    runCase(r, Case{Coll::AllGather, precclInt32, kCopy, 4099, false, 0, seed++});
    runCase(r, Case{Coll::AllGather, precclInt32, kCopy, big / 4, true, 0, seed++});
    runCase(r, Case{Coll::ReduceScatter, precclFloat, kSum, 4099, false, 0, seed++});
    runCase(r, Case{Coll::ReduceScatter, precclInt64, kMax, 1031, true, 0, seed++});
    runCase(r, Case{Coll::AlltoAll, precclInt8, kCopy, 4099, false, 0, seed++});
    runCase(r, Case{Coll::AlltoAll, precclFloat, kCopy, big / 4, false, 0, seed++});
    runCase(r, Case{Coll::Gather, precclFloat64, kCopy, 1031, false, n - 1, seed++});
    runCase(r, Case{Coll::Scatter, precclUint32, kCopy, 1031, true, 0, seed++});
    sendRecvRing(r, 7, seed++);
    sendRecvRing(r, big, seed++);
  }
  // The VTs' inter-host edges use both NICs.
  precclVtStats_t st[64];
  int nvt = 64;
  if (r.ok(precclCommGetVtStats(r.comm, st, &nvt), "CommGetVtStats")) {
    bool nic[kRails] = {};
    for (int v = 0; v < std::min(nvt, 64); ++v)
      if (st[v].nic >= 0 && st[v].nic < kRails) nic[st[v].nic] = true;
    r.check(nic[0] && nic[1], "VT stats: the VTs do not use both NICs (rail0 " + std::to_string(nic[0]) + ", rail1 " +
                                  std::to_string(nic[1]) + ", " + std::to_string(nvt) + " VTs)");
  }
}

}  // namespace

TEST_CASE("mixed shm + sockets: 2 namespaces x 2 ranks x 2 NICs", "[netns]") {
  auto bed = testBed(kHosts, kRails);
  if (!bed) return;
  bedSelfCheck(*bed);

  for (bool tree : {false, true}) {
    uint64_t before[kRails], after[kRails];
    for (int r = 0; r < kRails; ++r) before[r] = bed->railBytes(r);
    GroupOptions opt;
    opt.env = {{"PRECCL_SOCKET_IFNAME", "rail"},
               {"PRECCL_TIMEOUT", "20"},
               {"PRECCL_CHECK_ALLOC", "1"},
               {"PRECCL_DEBUG", "WARN"},
               {"PRECCL_ALGO", tree ? "tree" : "ring"}};
    opt.timeoutSec = 240;
    opt.beforeInit = [&](int rank) { enterNs(bed->ns(hostOf(rank))); };
    GroupResult g = runGroup(kHosts * kRanksPerHost, opt, [&](Rank& r) { mixedBody(r, tree); });
    for (int r = 0; r < kRails; ++r) after[r] = bed->railBytes(r);
    reportToCatch(std::string("mixed netns, ") + (tree ? "tree" : "ring"), g);
    for (int r = 0; r < kRails; ++r) {
      std::printf("    rail%d carried %llu bytes (%s)\n", r, (unsigned long long)(after[r] - before[r]), tree ? "tree" : "ring");
      INFO("rail " << r << " carried " << after[r] - before[r] << " bytes (" << (tree ? "tree" : "ring") << ")");
      CHECK(after[r] - before[r] > (uint64_t(2) << 20));
    }
  }
  CHECK(bed->teardown());
  bed.reset();
  std::string list;
  sh("ip netns list", &list);
  CHECK(list.find("pcclt" + std::to_string(getpid())) == std::string::npos);
}

// The policy at work on a real shaped NIC: rail1 of host 0 at 40 Mbit/s, rail0 unshaped. With `preccl`
// the VTs on rail1 end up with a small share of the bytes; with `static` they keep half. Every result is
// checked and PRECCL_CHECK_ALLOC=1 makes any disagreement between the ranks' allocations fail the run.
namespace {

// Broadcasts and/or Reduces (both roots, in-place and not) on a fresh communicator, with nothing else to
// learn from: their own telemetry tail must move their size classes off the shaped rail1.
void learnFromOwnTail(Rank& r, const std::string& what, const std::vector<Coll>& colls) {
  const size_t count = (size_t(2) << 20) / 4;
  for (int i = 0; i < 10; ++i) {
    const Coll c = colls[size_t(i) % colls.size()];
    runCase(r, Case{c, precclInt32, kSum, count, i % 4 >= 2, (i / 2) % 2, uint32_t(400 + i)});
    if (i < 8) continue;
    const double slow = nicShare(r, 1);
    r.info(what + (c == Coll::Broadcast ? " Broadcast" : " Reduce") + ": share on rail1 " + std::to_string(slow));
    r.check(slow < 0.25, "preccl " + what + ": rail1 still carries " + std::to_string(slow) + " of the bytes");
  }
}
}  // namespace

TEST_CASE("a slow NIC loses bytes to the fast one (preccl policy)", "[netns]") {
  auto bed = testBed(kHosts, kRails);
  if (!bed) return;
  std::string log;
  INFO("could not shape the namespaces: " << log);
  REQUIRE(bed->shape(0, 1, "40mbit", &log));
  // One rank per namespace, over the rails, with every slot's allocation digest checked.
  auto options = [&](const char* algo, const char* policy) {
    GroupOptions opt;
    opt.env = {{"PRECCL_SOCKET_IFNAME", "rail"}, {"PRECCL_TIMEOUT", "30"}, {"PRECCL_CHECK_ALLOC", "1"},
               {"PRECCL_ALGO", algo},            {"PRECCL_POLICY", policy}};
    opt.timeoutSec = 240;
    opt.beforeInit = [&](int rank) { enterNs(bed->ns(rank)); };
    return opt;
  };
  for (const char* policy : {"static", "preccl"}) {
    const GroupOptions opt = options("ring", policy);
    const std::string pol = policy;
    GroupResult g = runGroup(kHosts, opt, [&](Rank& r) {
      const size_t count = (size_t(2) << 20) / 4;
      // Chains (ring Broadcast and Reduce) learn from their own telemetry tail: run first on the fresh
      // communicator, with no AllReduce to learn from, they move their own size classes off rail1.
      if (pol == "preccl") learnFromOwnTail(r, "chain", {Coll::Broadcast, Coll::Reduce});
      for (int i = 0; i < 8; ++i) runCase(r, Case{Coll::AllReduce, precclFloat, kSum, count, i % 2 == 1, 0, uint32_t(300 + i)});
      const double slow = nicShare(r, 1), fast = nicShare(r, 0);
      r.info(pol + ": share on the shaped rail1 " + std::to_string(slow) + ", on rail0 " + std::to_string(fast));
      if (pol == "static") r.check(slow > 0.45 && slow < 0.55, "static: rail1 share " + std::to_string(slow) + " is not 1/2");
      else r.check(slow < 0.25, "preccl: rail1 (40 Mbit/s) still carries " + std::to_string(slow) + " of the bytes");
    });
    reportToCatch(std::string("slow NIC, ") + policy, g);
  }
  // Tree Broadcast (a tail up to the root and down again) and tree Reduce (down from the root), each alone
  // on its own communicator: together, either would also learn from the other's telemetry.
  for (Coll c : {Coll::Broadcast, Coll::Reduce})
    reportToCatch("slow NIC, tree",
                  runGroup(kHosts, options("tree", "preccl"), [&](Rank& r) { learnFromOwnTail(r, "tree", {c}); }));
  // AlltoAll alone on its own communicator: its cut brings every rank's records to every rank within the
  // call, so it moves its shares off rail1 from its own telemetry too.
  reportToCatch("slow NIC, AlltoAll", runGroup(kHosts, options("ring", "preccl"), [&](Rank& r) {
    const size_t count = (size_t(2) << 20) / 4 / size_t(r.nranks);
    for (int i = 0; i < 10; ++i)
      runCase(r, Case{Coll::AlltoAll, precclFloat, kSum, count, i % 2 == 1, 0, uint32_t(500 + i)});
    const double slow = nicShare(r, 1);
    r.info("AlltoAll: share on rail1 " + std::to_string(slow));
    r.check(slow < 0.25, "preccl AlltoAll: rail1 still carries " + std::to_string(slow) + " of the bytes");
    // A grouped Send/Recv of the same per-peer size (PyTorch's all_to_all_single with splits) takes
    // AlltoAll's split, the same on both ends.
    const int peer = 1 - r.rank;
    std::vector<float> out(count), in(count, 0.f);
    auto value = [](int from, size_t i) { return static_cast<float>(from * 1000003 + static_cast<int>(i)) * 0.1f; };
    for (size_t i = 0; i < count; i++) out[i] = value(r.rank, i);
    r.ok(precclGroupStart(), "GroupStart");
    r.ok(precclSend(out.data(), count, precclFloat, peer, r.comm, nullptr), "Send");
    r.ok(precclRecv(in.data(), count, precclFloat, peer, r.comm, nullptr), "Recv");
    if (!r.ok(precclGroupEnd(), "GroupEnd")) return;
    size_t wrong = 0;
    for (size_t i = 0; i < count; i++) wrong += in[i] != value(peer, i);
    r.check(wrong == 0, "Send/Recv: " + std::to_string(wrong) + " wrong elements");
    precclVtStats_t st[64];
    int nvt = 64;
    uint64_t rail1 = 0, all = 0;
    if (r.ok(precclCommGetVtStats(r.comm, st, &nvt), "CommGetVtStats"))
      for (int v = 0; v < std::min(nvt, 64); ++v) {
        all += st[v].lastBytes;
        if (st[v].nic == 1) rail1 += st[v].lastBytes;
      }
    const double p2p = all ? double(rail1) / double(all) : 1.0;
    r.info("Send/Recv: fraction of the bytes on rail1 " + std::to_string(p2p));
    r.check(p2p < 0.25, "preccl Send/Recv: rail1 carries " + std::to_string(p2p) + " of the bytes");
  }));
  CHECK(bed->teardown());
}
