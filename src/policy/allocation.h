// The allocation: which contiguous element range of a collective each VT carries. It always covers the
// whole range exactly. Policies produce it; the plan builders consume it; nothing else decides bytes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace preccl {

struct VtRange {
  size_t offset = 0;  // elements
  size_t count = 0;
  // The largest pipeline piece for this VT, in bytes, from its modelled rate (policy.h kPieceNs); 0: no
  // bound (static, or nothing known). The plan's piece is the smaller of this and the FIFO's slot.
  size_t pieceCapBytes = 0;
};

struct Allocation {
  std::vector<VtRange> vt;
  size_t total() const;
  bool coversExactly(size_t count) const;  // contiguous, in VT order, summing to count
  // Same on every rank that holds the same allocation: carried in slot headers when checking is on.
  uint32_t digest() const;
};

// What a policy is asked for. Pure data: no communicator, no I/O.
struct AllocRequest {
  size_t count = 0;           // elements to split
  size_t elemBytes = 1;
  int nVTs = 1;
  size_t grainBytes = 512;    // ranges are multiples of this (except the last used VT's)
  size_t minBytesPerVt = 32 * 1024;  // below this, fewer VTs are used (NCCL reduces channels too)
  bool operator==(const AllocRequest&) const = default;
};

// NCCL's equal split: the same number of grains to every used VT.
Allocation staticAllocation(const AllocRequest& req);
// Everything on VT `vt` (in the allocation's memory: a call of every size pays no allocation for it).
void oneVtAllocation(const AllocRequest& req, int vt, Allocation* out);

// static: NCCL's equal split; aimd: per-VT AIMD (baseline); preccl: coordinated (src/policy/policy.h).
enum class PolicyKind { Static, Aimd, Preccl };
bool policyFromName(const std::string& name, PolicyKind* out);
const char* policyName(PolicyKind kind);

}  // namespace preccl
