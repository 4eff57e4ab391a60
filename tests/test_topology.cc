// Which VTs share a NIC, and how the trees of the tree algorithms spread over the NICs (topo/topology.h).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

#include "topo/topology.h"

using namespace preccl;

namespace {

// `hosts` hosts with `ranksPerHost` ranks each; rank r has nics[r % nics.size()] NICs.
Topology makeTopology(int hosts, int ranksPerHost, std::vector<int> nics, int nVTs) {
  std::vector<RankInfo> infos(hosts * ranksPerHost);
  for (size_t r = 0; r < infos.size(); r++) {
    snprintf(infos[r].hostId, sizeof(infos[r].hostId), "host%zu", r / ranksPerHost);
    infos[r].nNics = nics[r % nics.size()];
  }
  Topology t;
  t.build(infos, 0, false, nVTs);
  return t;
}

// Ranges each (host, NIC) sends in a tree AllReduce where every VT carries one range: a node sends its
// range up to its parent once and down to each child once (the root only down).
std::map<std::pair<int, int>, int> rangesSentPerNic(const Topology& t, int nVTs) {
  std::map<std::pair<int, int>, int> sent;
  for (int vt = 0; vt < nVTs; vt++)
    for (int r = 0; r < t.nranks; r++) {
      const TreeLinks tl = vtTree(t, r, vt);
      sent[{t.hostOf[r], t.nicFor(r, vt)}] += (tl.parent >= 0) + tl.nchildren();
    }
  return sent;
}

}  // namespace

TEST_CASE("topology: VTs that share a NIC on every host, and both trees on every NIC", "[plan]") {
  SECTION("4 hosts x 2 NICs, 4 VTs: every NIC sends 3 of the 4 ranges, as in the ring") {
    const Topology t = makeTopology(4, 1, {2}, 4);
    CHECK(t.sharedNics == 2);
    CHECK(t.treeStride() == 2);
    // VTs 0 and 2 are on NIC 0 and follow different trees; so do 1 and 3 on NIC 1.
    CHECK(t.mirrorTree(0) != t.mirrorTree(2));
    CHECK(t.mirrorTree(1) != t.mirrorTree(3));
    const auto sent = rangesSentPerNic(t, 4);
    REQUIRE(sent.size() == 8);
    for (const auto& [hostNic, n] : sent) {
      INFO("host " << hostNic.first << " NIC " << hostNic.second);
      CHECK(n == 3);
    }
  }
  SECTION("4 hosts x 4 NICs, 8 VTs") {
    const Topology t = makeTopology(4, 1, {4}, 8);
    CHECK(t.sharedNics == 4);
    const auto sent = rangesSentPerNic(t, 8);
    REQUIRE(sent.size() == 16);
    for (const auto& [hostNic, n] : sent) CHECK(n == 3);
  }
  SECTION("one host: VTs meet in shared memory, no NIC is shared, trees alternate per VT") {
    const Topology t = makeTopology(1, 4, {2}, 4);
    CHECK(t.sharedNics == 0);
    CHECK(t.treeStride() == 1);
    CHECK(t.mirrorTree(1));
    CHECK_FALSE(t.mirrorTree(2));
  }
  SECTION("different NIC counts: VT v is on different NICs of different hosts, nothing is shared") {
    const Topology t = makeTopology(4, 1, {2, 1}, 2);
    CHECK(t.sharedNics == 0);
    CHECK(t.treeStride() == 1);
  }
  SECTION("one VT per NIC: nothing is shared") {
    const Topology t = makeTopology(4, 1, {2}, 2);
    CHECK(t.sharedNics == 0);
  }
}

// The policy converts a VT's range into the bytes its busiest rank sends (core/decide.cc allocKey):
// treeMaxSends must be what the trees' own links give, for every size, root and mirror.
TEST_CASE("topology: the most ranges a tree's busiest rank sends", "[plan]") {
  for (int n = 1; n <= 9; n++) {
    const Topology t = makeTopology(n, 1, {1}, 2);
    int allReduce = 0, broadcast = 0, reduce = 0;
    for (int vt = 0; vt < 2; vt++)
      for (int r = 0; r < n; r++) {
        const TreeLinks a = vtTree(t, r, vt);
        allReduce = std::max(allReduce, (a.parent >= 0) + a.nchildren());
        for (int root = 0; root < n; root++) {
          const TreeLinks b = vtTree(t, r, vt, root);
          broadcast = std::max(broadcast, b.nchildren());
          reduce = std::max(reduce, static_cast<int>(b.parent >= 0));
        }
      }
    INFO("n = " << n);
    CHECK(treeMaxSends(n, true, true) == allReduce);
    CHECK(treeMaxSends(n, false, true) == broadcast);
    CHECK(treeMaxSends(n, true, false) == reduce);
  }
  CHECK(treeMaxSends(4, true, true) == 2);  // the bed's 4 hosts: root and inner node send 2 ranges
  CHECK(treeMaxSends(8, true, true) == 3);
}

// Rank-NIC affinity (Topology::rail): who owns which NIC. From the NICs near each rank's CPUs where every
// rank found some and every NIC is near some rank, else by local index; every NIC always has an owner.
TEST_CASE("topology: NIC owners from locality, else by local index", "[plan]") {
  // Unknown locality (0 everywhere, as virtual NICs): by local index.
  CHECK(nicOwners({0, 0}, 2) == std::vector<uint32_t>{0x1, 0x2});
  CHECK(nicOwners({0, 0, 0, 0}, 2) == std::vector<uint32_t>{0x1, 0x2, 0x1, 0x2});
  CHECK(nicOwners({0, 0}, 4) == std::vector<uint32_t>{0x5, 0xa});
  // Two sockets, a NIC on each, ranks bound to the sockets in the other order than their local index.
  CHECK(nicOwners({0x2, 0x1}, 2) == std::vector<uint32_t>{0x2, 0x1});
  // Four ranks, two per socket: both of a socket's ranks own its NIC.
  CHECK(nicOwners({0x1, 0x1, 0x2, 0x2}, 2) == std::vector<uint32_t>{0x1, 0x1, 0x2, 0x2});
  // An unbound rank is near every NIC and owns them all; its bound neighbour keeps its own.
  CHECK(nicOwners({0x3, 0x2}, 2) == std::vector<uint32_t>{0x3, 0x2});
  // Both ranks on the socket of NIC 0: NIC 1 would have no owner, so by local index.
  CHECK(nicOwners({0x1, 0x1}, 2) == std::vector<uint32_t>{0x1, 0x2});
  // One rank that knows nothing: by local index for the whole host.
  CHECK(nicOwners({0x2, 0}, 2) == std::vector<uint32_t>{0x1, 0x2});
  // Bits beyond the host's NICs are ignored.
  CHECK(nicOwners({0x6, 0x1}, 2) == std::vector<uint32_t>{0x2, 0x1});

  // Through Topology::build: 2 hosts x 2 ranks x 2 NICs; host 0's ranks are bound in reverse, host 1's
  // locality is unknown. Each rank's relay for a VT is the first owner of the VT's NIC on its host.
  std::vector<RankInfo> infos(4);
  for (int r = 0; r < 4; r++) {
    snprintf(infos[r].hostId, sizeof(infos[r].hostId), "host%d", r / 2);
    infos[r].nNics = 2;
  }
  infos[0].nearNics = 0x2;
  infos[1].nearNics = 0x1;
  Topology t;
  t.build(infos, 0, false, 4, true);
  REQUIRE(t.rail);
  CHECK(t.ownsNic(0, 1));
  CHECK_FALSE(t.ownsNic(0, 0));
  CHECK(t.ownsNic(1, 0));
  CHECK(t.ownsNic(2, 0));
  CHECK(t.ownsNic(3, 1));
  for (int vt = 0; vt < 4; vt++) {
    CHECK(t.relayFor(0, vt) == (t.nicFor(0, vt) == 1 ? 0 : 1));
    CHECK(t.relayFor(2, vt) == (t.nicFor(2, vt) == 0 ? 2 : 3));
  }
  CHECK(t.ownVts(0, 4) == (t.nicFor(0, 1) == 1 ? 0xau : 0x5u));
}
