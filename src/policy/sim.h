// A tiny deterministic simulator of VTs for the policy tests and docs/policy.md: N VTs with rates and
// latencies that may change at given epochs; for an allocation it produces the EpochTelemetry that the
// ranks would report. VT v's completion time is alpha_v + wireBytes_v / rate_v (times an optional
// deterministic jitter); its sender counts one stall per nsPerStall of waiting. No clocks, no I/O.
#pragma once
#include <cstdint>
#include <vector>

#include "policy/allocation.h"
#include "policy/policy.h"
#include "policy/telemetry.h"

namespace preccl {

struct SimVt {
  uint64_t rateBps = 1'000'000'000;  // bytes per second; 0: the VT is stuck (reports stuckNs)
  uint64_t alphaNs = 0;
};

struct SimChange {  // from `epoch` on, VT `vt` has this rate and latency
  uint64_t epoch;
  int vt;
  SimVt to;
};

struct SimSpike {  // in `epoch` only, VT `vt` takes factorPct/100 times as long (one noisy epoch)
  uint64_t epoch;
  int vt;
  uint32_t factorPct;
};

struct SimConfig {
  int nranks = 4;
  std::vector<SimVt> vt;  // the initial VTs; their count is the number of VTs
  std::vector<SimChange> changes;
  std::vector<SimSpike> spikes;
  uint32_t noisePermille = 0;  // each (epoch, vt, rank) time is scaled by 1 + u, u uniform in +-noise/1000
  uint64_t seed = 1;
  uint32_t wireNum = 1, wireDen = 1;      // bytes a VT sends per byte of its range
  uint64_t stuckNs = 10'000'000'000ull;  // what a zero-rate VT reports (the executor's timeout)
  uint64_t nsPerStall = 10'000;          // one stall per this much waiting for a slot
  // Per VT, the link it shares (empty: every VT has its own). VTs on one link share its rate fairly
  // (processor sharing: while m of them are busy each gets 1/m), the link's rate and latency being its
  // lowest-index VT's; simRun tells the policy the same grouping, as the core does with NICs.
  std::vector<int> link;
};

// The VT's parameters in force at `epoch`.
SimVt simVtAt(const SimConfig& cfg, uint64_t epoch, int vt);

struct SimEpoch {
  EpochTelemetry tel;
  uint64_t cctNs = 0;            // the CCT's completion: its slowest VT on its slowest rank
  std::vector<uint64_t> vtNs;    // per VT, slowest rank (0 if unused)
};
SimEpoch simEpoch(const SimConfig& cfg, uint64_t epoch, const Allocation& al, size_t elemBytes);

// Per VT, the completion time of the VTs that share a link with another (0 for the others).
std::vector<uint64_t> linkTimesNs(const SimConfig& cfg, uint64_t epoch, const Allocation& al, size_t elemBytes);

// The capacity limit: the smallest completion time of any (continuous) split of `rangeBytes`.
uint64_t simIdealNs(const SimConfig& cfg, uint64_t epoch, uint64_t rangeBytes);

struct SimStep {
  uint64_t epoch = 0;
  uint64_t cctNs = 0, idealNs = 0;
  std::vector<uint32_t> share;  // each VT's fraction of the bytes in this epoch's allocation, units 2^-20
  Allocation al;
};

// Runs `epochs` CCTs (epochs 1..epochs) of `req` under `kind`: each decides with the telemetry of the
// epoch `lag` CCTs earlier (none for the first ones), as the core will.
std::vector<SimStep> simRun(PolicyKind kind, const SimConfig& cfg, const AllocRequest& req, uint64_t epochs,
                            int lag = 1, uint64_t healthMask = kAllHealthy);

// Largest |share change| between consecutive steps in [from, to), relative to the earlier share, in
// units of 2^-20 (1% = 10486); VTs with zero bytes in both steps are skipped.
uint32_t simMaxShareChange(const std::vector<SimStep>& trace, size_t from, size_t to);

}  // namespace preccl
