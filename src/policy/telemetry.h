// Telemetry records: what each rank measured for each VT during one epoch (one CCT). Every rank ends up
// holding the same EpochTelemetry for an epoch (src/core exchanges it), so the model and the policies,
// which read nothing else, compute the same allocation on every rank.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace preccl {

// The epoch of no telemetry: a slot that carries none, a CCT with no older records riding on it.
constexpr uint64_t kNoTeleEpoch = ~0ull;

// One rank's view of one VT in one epoch. Plain integers so that it can be sent as bytes and compared
// bit for bit; 32 bytes.
struct VtRecord {
  uint64_t bytes = 0;      // bytes this rank sent on the VT in the epoch (0: the VT was unused)
  uint64_t elapsedNs = 0;  // from the CCT's start on this rank until the VT's last step finished there
  uint64_t stalledNs = 0;  // time the VT's sender waited for a free downstream slot
  uint32_t stalls = 0;     // how many times it found the send FIFO full (counted in the wait loop)
  uint32_t flags = 0;      // reserved (0); kept so the record stays 32 bytes
};
static_assert(sizeof(VtRecord) == 32, "VtRecord travels as raw bytes");

struct EpochTelemetry {
  uint64_t epoch = 0;
  int nranks = 0, nVTs = 0;
  std::vector<VtRecord> rec;  // [rank * nVTs + vt]

  void reset(uint64_t e, int ranks, int vts) {
    epoch = e;
    nranks = ranks;
    nVTs = vts;
    rec.assign(static_cast<size_t>(ranks) * static_cast<size_t>(vts), VtRecord{});
  }
  VtRecord& at(int rank, int vt) { return rec[static_cast<size_t>(rank) * nVTs + vt]; }
  const VtRecord& at(int rank, int vt) const { return rec[static_cast<size_t>(rank) * nVTs + vt]; }
  bool valid() const { return nranks > 0 && nVTs > 0 && rec.size() == static_cast<size_t>(nranks) * nVTs; }
};

}  // namespace preccl
