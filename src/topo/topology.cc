#include "topo/topology.h"

#include <algorithm>
#include <cstring>
#include <map>

namespace preccl {

void Topology::build(const std::vector<RankInfo>& infos, int myRank, bool shmDisable, int nVTs, bool railAffinity) {
  nranks = static_cast<int>(infos.size());
  rank = myRank;
  shmDisabled = shmDisable;
  hostOf.assign(nranks, -1);
  hostRanks.clear();
  localIdx.assign(nranks, 0);
  nNics.assign(nranks, 1);
  std::map<std::string, int> hostIndex;
  for (int r = 0; r < nranks; r++) {
    std::string id(infos[r].hostId, strnlen(infos[r].hostId, sizeof(infos[r].hostId)));
    auto it = hostIndex.find(id);
    if (it == hostIndex.end()) {
      it = hostIndex.emplace(id, static_cast<int>(hostRanks.size())).first;
      hostRanks.emplace_back();
    }
    hostOf[r] = it->second;
    localIdx[r] = static_cast<int>(hostRanks[it->second].size());
    hostRanks[it->second].push_back(r);
    nNics[r] = infos[r].nNics > 0 ? infos[r].nNics : 1;
  }
  order.clear();
  for (auto& h : hostRanks) order.insert(order.end(), h.begin(), h.end());
  posOf.assign(nranks, 0);
  for (int p = 0; p < nranks; p++) posOf[order[p]] = p;
  bool sameK = true;
  for (int r = 0; r < nranks; r++) sameK &= nNics[r] == nNics[0];
  sharedNics = sameK && nVTs > nNics[0] && nHosts() > 1 ? nNics[0] : 0;
  rail = railAffinity && sameK && nNics[0] > 1 && nHosts() > 1 && !shmDisabled;
  ownedNics.assign(nranks, 0);
  if (rail)
    for (const auto& h : hostRanks) {
      std::vector<uint32_t> near;
      for (int r : h) near.push_back(infos[r].nearNics);
      const std::vector<uint32_t> own = nicOwners(near, nNics[0]);
      for (size_t g = 0; g < h.size(); g++) ownedNics[h[g]] = own[g];
    }
}

std::vector<uint32_t> nicOwners(const std::vector<uint32_t>& nearOfLocal, int nNics) {
  const int l = static_cast<int>(nearOfLocal.size()), k = std::min(nNics, 32);
  const uint32_t all = k >= 32 ? ~0u : (1u << k) - 1;
  std::vector<uint32_t> own;
  uint32_t covered = 0;
  bool everyRank = true;
  for (uint32_t n : nearOfLocal) {
    own.push_back(n & all);
    covered |= n & all;
    everyRank &= (n & all) != 0;
  }
  if (everyRank && covered == all) return own;
  for (int g = 0; g < l; g++) {
    own[g] = 0;
    for (int nic = 0; nic < k; nic++)
      if (l >= k ? g % k == nic : nic % l == g) own[g] |= 1u << nic;
  }
  return own;
}

bool Topology::ownsNic(int r, int nic) const {
  return !rail || (nic >= 0 && nic < 32 && ((ownedNics[r] >> nic) & 1));
}

int Topology::relayFor(int r, int vt) const {
  const int nic = nicFor(r, vt);
  if (ownsNic(r, nic)) return r;
  for (int q : hostRanks[hostOf[r]])
    if (ownsNic(q, nic)) return q;
  return r;  // unreachable: every NIC has an owner on every host
}

uint64_t Topology::ownVts(int r, int nVTs) const {
  uint64_t m = 0;
  for (int v = 0; v < nVTs && v < 64; v++)
    if (ownsNic(r, nicFor(r, v))) m |= 1ull << v;
  return m;
}

TreeLinks treeLinks(const Topology& topo, int rank, int rootRank, bool mirror) {
  const int n = topo.nranks;
  // Virtual index: 0 is the root, then the ring order onwards from it (or backwards when mirrored).
  auto vOf = [&](int r) {
    int d = (topo.posOf[r] - topo.posOf[rootRank] + n) % n;
    return mirror && d ? n - d : d;
  };
  auto rankOf = [&](int v) {
    int d = mirror && v ? n - v : v;
    return topo.order[(topo.posOf[rootRank] + d) % n];
  };
  TreeLinks t;
  int v = vOf(rank);
  if (v > 0) t.parent = rankOf((v - 1) / 2);
  for (int c = 0; c < 2; c++) {
    int cv = 2 * v + 1 + c;
    if (cv < n) t.child[c] = rankOf(cv);
  }
  return t;
}

int treeMaxSends(int n, bool up, bool down) {
  // treeLinks' virtual index v has children 2v+1 and 2v+2 below n: their count never grows with v, so the
  // busiest rank is the root (no parent) or its first child (the most children of any rank with one).
  auto children = [n](int v) { return (2 * v + 1 < n) + (2 * v + 2 < n); };
  const int root = down ? children(0) : 0;
  const int first = n > 1 ? (up ? 1 : 0) + (down ? children(1) : 0) : 0;
  return std::max(root, first);
}

TreeLinks vtTree(const Topology& topo, int rank, int vt, int root) { return treeLinks(topo, rank, root, topo.mirrorTree(vt)); }

TreeLinks allReduceTree(const Topology& topo, int rank, bool mirror) {
  return treeLinks(topo, rank, mirror ? topo.order.back() : topo.order.front(), mirror);
}

TreeLinks vtTree(const Topology& topo, int rank, int vt) { return allReduceTree(topo, rank, topo.mirrorTree(vt)); }

}  // namespace preccl
