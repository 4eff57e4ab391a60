// The allocation policies: static (NCCL's equal split), aimd (each VT on its own: the oscillating
// baseline) and preccl (coordinated: equalise the modelled completion times). Pure functions of the
// telemetry, the model and the previous shares; integer arithmetic, so every rank that holds the same
// telemetry computes the same allocation. The rules and constants are in docs/policy.md.
#pragma once
#include <cstdint>
#include <map>
#include <vector>

#include "policy/allocation.h"
#include "policy/model.h"
#include "policy/telemetry.h"

namespace preccl {

constexpr int kShareShift = 20;  // shares are fixed point, units of 2^-20 of the collective's bytes
constexpr uint32_t kShareOne = 1u << kShareShift;
constexpr uint32_t kFloorDiv = 16;  // each live VT keeps >= 1/(16 * live VTs): its model stays fresh
constexpr uint64_t kAllHealthy = ~0ull;
// Whether VT v is live in a health mask (bit v set; VTs from 64 on never are).
inline bool isLive(uint64_t mask, int v) { return v >= 0 && v < 64 && ((mask >> v) & 1); }

// What the shares are kept per, besides the size class (derived from the request's bytes).
struct AllocKey {
  uint8_t coll = 0;  // the caller's collective id (e.g. static_cast<uint8_t>(Coll::AllReduce))
  uint8_t algo = 0;  // the caller's algorithm id (ring, tree)
  // Bytes a VT sends per byte of its range (ring AllReduce: 2(n-1)/n): converts the range to the bytes
  // the model was fitted on, so that alpha and beta keep their relative weight.
  uint32_t wireNum = 1, wireDen = 1;
};

// The shares of one (collective, algorithm, size class), each in units of 2^-20; they sum to kShareOne
// over the live VTs and are 0 for masked ones (aimd keeps its per-VT weights here, normalised the same way).
struct ShareSet {
  std::vector<uint32_t> share;
  uint64_t modelVersion = 0;  // the model version of the last step
  // Per VT: a VT given back by the mask stays at the floor (a probe) until telemetry of an epoch from
  // after its return arrives, i.e. until model.vt[v].lastEpoch >= probeFrom[v]; 0 = not probing.
  std::vector<uint64_t> probeFrom;
  uint64_t steps = 0;         // update steps taken (diagnostics; part of the memo's key)
  // The last allocation and what it was built from: reused while none of these changes, i.e. between
  // telemetry epochs, so that a small call's decision costs about what static's does.
  struct Memo {
    bool valid = false;
    uint64_t steps = 0, modelVersion = 0, mask = 0;
    AllocRequest req;
    Allocation al;
  } memo;
};

struct PolicyState {
  // Per VT, the id of the link it shares with other VTs (the NIC; -1 or absent = its own). The same on
  // every rank (the core sets it from the NIC count all ranks agree on). preccl splits a link's bytes
  // equally among its VTs and balances the links: VTs that share a NIC share its bandwidth, and a
  // per-VT split inside a link only chases noise.
  std::vector<int> vtGroup;
  ModelState model;
  std::map<uint64_t, ShareSet> sets;  // by policyClassKey()
};

// Whether VT v, live again from epoch `since` (0: live from the start), is still a probe: the adaptive
// policies hold a returning VT at the floor until the model has its telemetry from an epoch since then
// (ShareSet::probeFrom); static gives it its equal share at once.
inline bool vtProbing(PolicyKind kind, const ModelState& m, int v, uint64_t since) {
  if (kind == PolicyKind::Static || since == 0) return false;
  return v < 0 || v >= static_cast<int>(m.vt.size()) || m.vt[v].lastEpoch < since;
}

// Size classes are powers of 4 of the request's bytes: messages within 4x of each other share shares.
int policySizeClass(const AllocRequest& req);
uint64_t policyClassKey(const AllocKey& key, const AllocRequest& req);

// Folds one epoch's telemetry into the model (no-op for an epoch already folded in).
void policyObserve(PolicyState& st, const EpochTelemetry& t);

// The allocation for the next CCT. Call once per CCT with the latest complete telemetry (or nullptr).
// healthMask bit v set = VT v is live; VTs that are masked (or >= 64) get zero elements. With no live
// VT every range is empty, so the result does not cover a non-zero count: the caller must fail.
// preccl takes up to kMaxCatchUp model-based steps per call (one per telemetry epoch not yet used by
// this size class); aimd one; static none and ignores the state.
constexpr uint64_t kMaxCatchUp = 4;
// aimd and preccl also bound each VT's pipeline piece by what its link moves in kPieceNs at the modelled
// rate (VtRange::pieceCapBytes), not below kMinPieceCapBytes: a slot is forwarded only once received
// whole, so on a slow link a large piece makes the start and end of every call long; below 64 KiB the
// bed's 40 Mbit/s paths lost throughput (docs/policy.md).
constexpr uint64_t kPieceNs = 5'000'000;
constexpr uint64_t kMinPieceCapBytes = 64 << 10;
Allocation decide(PolicyKind kind, PolicyState& st, const AllocRequest& req, const AllocKey& key,
                  const EpochTelemetry* latest, uint64_t healthMask);

// Shares of a class (nullptr before the class was first decided): for tests, logs and docs.
const ShareSet* policyShares(const PolicyState& st, const AllocKey& key, const AllocRequest& req);
// The allocation of the shares key's class holds now, read only (no telemetry, no step): what two ranks
// that must split one transfer alike each compute, whatever else either of them ran since the last
// collective. The equal split over the live VTs where the class has no shares yet.
Allocation currentShares(const PolicyState& st, const AllocRequest& req, const AllocKey& key, uint64_t healthMask);

// NCCL's equal split over the live VTs (staticAllocation when every VT is live): what static decides.
Allocation equalAllocation(const AllocRequest& req, uint64_t healthMask);

// Building blocks, exposed for tests. Equal shares over the live VTs.
std::vector<uint32_t> equalShares(int nVTs, uint64_t healthMask);
// Shares -> element ranges: grain-aligned (all but the last used VT), covering req.count exactly, using
// fewer VTs for small messages as staticAllocation does (the live VTs with the largest shares).
Allocation sharesToAllocation(const AllocRequest& req, const std::vector<uint32_t>& share, uint64_t healthMask);

}  // namespace preccl
