// Who is where: hosts, ranks per host, NICs per rank, the ring order every VT follows and the trees.
// Computed identically on every rank from the RankInfo table the bootstrap exchanged.
#pragma once
#include <netinet/in.h>

#include <cstdint>
#include <string>
#include <vector>

namespace preccl {

constexpr int kMaxNics = 8;
constexpr int kMaxVTs = 32;

// Exchanged once at init; fixed size so the bootstrap can check it.
struct RankInfo {
  uint64_t hostHash;
  uint64_t nonce;        // random per rank; rank 0's names this communicator's shared memory
  char hostId[160];
  int32_t pid;
  int32_t nNics;
  int32_t nVTs;          // this rank's wish; the communicator uses the minimum
  int32_t shmDisable;
  int32_t railAffinity;  // PRECCL_NIC_AFFINITY=rail; the communicator uses it when every rank asks
  int32_t relay;         // PRECCL_RELAY (policy/rail_split.h RelayMode); rank 0's holds
  uint32_t nearNics;     // the NICs near this rank's CPUs, bit k (core/locality.h nicsNearCaller); 0: unknown
  uint32_t nslots;
  uint32_t slotBytes;
  sockaddr_storage nicAddr[kMaxNics];  // listening address (with port) per NIC
  sockaddr_storage shrinkRoot;         // where this rank hosts the bootstrap root if it leads a CommShrink
  char nicName[kMaxNics][16];
};

// Which NICs each local rank of one host owns under rail affinity (bit k: NIC k of K), from what each
// found near its CPUs (RankInfo::nearNics): those, when every local rank found some and every NIC is near
// some rank (a rank bound to one socket owns that socket's NICs; an unbound one is near all of them);
// else by local index, local rank g of L owning NIC g mod K (L >= K) or the NICs k with k mod L == g
// (L < K). Either way every NIC has an owner on the host. Pure: the same on every rank.
std::vector<uint32_t> nicOwners(const std::vector<uint32_t>& nearOfLocal, int nNics);

struct Topology {
  int nranks = 0;
  int rank = 0;
  std::vector<int> hostOf;                  // rank -> host index (hosts numbered by lowest rank)
  std::vector<std::vector<int>> hostRanks;  // host -> its ranks, ascending
  std::vector<int> localIdx;                // rank -> index among its host's ranks
  std::vector<int> nNics;                   // rank -> NIC count
  std::vector<int> order;                   // ring order: host by host
  std::vector<int> posOf;                   // rank -> position in `order`
  bool shmDisabled = false;
  // K when VTs v and v+K share a NIC on every host (every rank has K NICs, there are more VTs than K and
  // more than one host; VT v uses NIC v mod K): the policy treats such VTs as one link (policy.h vtGroup).
  // 0 otherwise, and on a single host, where VTs meet in shared memory, not on a NIC.
  int sharedNics = 0;
  // Which of the two trees (tree algorithms) VT v follows: v / treeStride() alternates. The stride is
  // `sharedNics` when set, so that every NIC carries both trees, as in NCCL's double binary tree: a node
  // inner in one tree (it sends that range up and down) is a leaf in the other (it sends it once). With
  // one tree per NIC, an inner node's NIC sends its whole tree's range twice, which caps an AllReduce on 4
  // hosts at 3/4 of the ring's bandwidth; with both, the trees match the ring there.
  int treeStride() const { return sharedNics > 0 ? sharedNics : 1; }
  bool mirrorTree(int vt) const { return (vt / treeStride()) % 2 == 1; }
  // Rank-NIC affinity (PRECCL_NIC_AFFINITY=rail), as on GPU servers where each GPU sits next to one NIC:
  // each rank owns some of its host's NICs (nicOwners). The point-to-point families send a rank's bytes on
  // another rank's rail through that rail's first owner on the host (a relay: shared memory, then its
  // NIC). Set only where it means something: several hosts, shared memory between local ranks, the same
  // K > 1 everywhere.
  bool rail = false;
  std::vector<uint32_t> ownedNics;  // rank -> the NICs it owns under `rail`, bit k

  void build(const std::vector<RankInfo>& infos, int myRank, bool shmDisable, int nVTs, bool railAffinity = false);
  bool sameHost(int a, int b) const { return hostOf[a] == hostOf[b]; }
  bool useShm(int a, int b) const { return !shmDisabled && sameHost(a, b); }
  int nicFor(int r, int vt) const { return vt % nNics[r]; }
  int ringNext(int r) const { return order[(posOf[r] + 1) % nranks]; }
  int ringPrev(int r) const { return order[(posOf[r] + nranks - 1) % nranks]; }
  int nHosts() const { return static_cast<int>(hostRanks.size()); }
  bool ownsNic(int r, int nic) const;
  // Who sends r's bytes of VT vt to other hosts: r itself when it owns the VT's NIC (or without rail
  // affinity), else the NIC's first owner on r's host.
  int relayFor(int r, int vt) const;
  // The VTs whose NIC r owns (every VT without rail affinity).
  uint64_t ownVts(int r, int nVTs) const;
};

// A binary tree over ring positions, rooted at `rootPos`; `mirror` flips it so that a second VT's interior
// nodes are mostly the first one's leaves (a double binary tree, as NCCL builds).
struct TreeLinks {
  int parent = -1;
  int child[2] = {-1, -1};
  int nchildren() const { return (child[0] >= 0) + (child[1] >= 0); }
};
TreeLinks treeLinks(const Topology& topo, int rank, int rootRank, bool mirror);
// The most ranges any rank of an n-rank tree (treeLinks' shape, the same for every root and mirror)
// sends in one collective: `up` once to its parent, `down` once to each child. AllReduce sends both,
// Broadcast down, Reduce up. This is what the busiest rank's telemetry counts per byte of a VT's range.
int treeMaxSends(int n, bool up, bool down);
// VT vt's tree for a rooted collective (Broadcast, Reduce): rooted at `root`, mirrored per mirrorTree.
TreeLinks vtTree(const Topology& topo, int rank, int vt, int root);
// AllReduce's tree: rooted at the first ring position, or, mirrored, at the last.
TreeLinks allReduceTree(const Topology& topo, int rank, bool mirror);
// VT vt's AllReduce tree when trees are picked by VT (mirrorTree).
TreeLinks vtTree(const Topology& topo, int rank, int vt);

}  // namespace preccl
