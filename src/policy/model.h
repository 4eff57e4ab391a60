// The per-VT alpha-beta model: T_vt(bytes) = alpha_vt + beta_vt * bytes, fitted online from telemetry.
// Integer arithmetic only, so every rank that feeds the same records gets bit-identical state.
// The estimator and its constants are described in docs/policy.md.
#pragma once
#include <cstdint>
#include <vector>

#include "policy/telemetry.h"

namespace preccl {

constexpr int kBetaShift = 20;        // beta is in units of 2^-20 ns per byte
constexpr int kBetaWindow = 3;        // median of the last 3 per-byte samples: one noisy epoch is ignored
constexpr int kAlphaWindow = 8;       // (bytes, time) points kept for the intercept fit
constexpr uint64_t kAlphaSpread = 2;  // a point pair gives an intercept only if its byte counts differ 2x
constexpr uint64_t kRegimeDiv = 4;    // beta moving by more than 1/4 restarts the alpha fit window
constexpr uint64_t kConfirmDiv = 5;   // newest sample off the estimate by > 1/5, the one before by > 1/10,
                                      // same side: a change; right after a change, one more sample off by
                                      // > 1/5 on its side: the change goes on (docs/policy.md)
// Observations smaller than this feed the alpha fit only: their time is mostly latency, and a per-byte
// sample from them (a 1-element sync AllReduce between large calls) would be an outlier in beta's window.
constexpr uint64_t kBetaMinBytes = 64 << 10;

struct VtModel {
  int64_t alphaNs = 0;  // latency estimate (>= 0)
  uint64_t betaQ = 0;   // ns per byte << kBetaShift; 0 while the VT has never carried bytes
  uint64_t sample[kBetaWindow] = {};  // the last per-byte samples, newest at (nSamples - 1) % window
  uint64_t nSamples = 0;
  int trend = 0;  // +1 / -1: the last update took a change up / down (confirmed or going on); else 0
  bool betaSized = false;  // a sample from >= kBetaMinBytes was taken: beta is a rate, not a latency
  uint64_t obsBytes[kAlphaWindow] = {};  // ring of recent (bytes, time) points for the alpha fit
  uint64_t obsNs[kAlphaWindow] = {};
  uint32_t nObs = 0;
  uint64_t lastBytes = 0, lastNs = 0;  // the last observation (diagnostics, docs)
  uint64_t stallsPerMiB = 0;           // EWMA (1/4 gain) of stalls per MiB sent, for diagnostics
  uint64_t lastEpoch = 0;              // epoch of the last observation
};

struct ModelState {
  std::vector<VtModel> vt;
  uint64_t epoch = 0;    // the newest epoch folded in
  uint64_t version = 0;  // number of epochs folded in
  bool known(int v) const { return v >= 0 && v < static_cast<int>(vt.size()) && vt[v].betaQ != 0; }
  // Beta measured on enough bytes to be the VT's own rate (the first sample may be a tiny call's latency).
  bool rateKnown(int v) const { return known(v) && vt[v].betaSized; }
};

// Folds one epoch's records into the model and returns the new state. Per VT it takes the slowest
// rank's elapsed time and the largest byte count (a VT's CCT ends when its last rank ends); VTs that
// moved no bytes keep their estimate. Telemetry older than or equal to s.epoch (after the first) is
// ignored, so feeding the same epoch twice changes nothing.
ModelState modelUpdate(const ModelState& s, const EpochTelemetry& t);
// The same in place: the policy's path on every call, where copying the state would cost more than the
// fit (and most calls bring no newer epoch at all).
void modelFold(ModelState& s, const EpochTelemetry& t);

// The estimated completion time in ns of `bytes` on VT vt. A VT never observed borrows the median of the
// observed VTs (so a new VT starts as an average one); with no observation at all it returns 0.
uint64_t modelEstimateNs(const ModelState& s, int vt, uint64_t bytes);

// The model's parameters for vt with the borrowing above applied; false when nothing is known at all.
bool modelParams(const ModelState& s, int vt, int64_t* alphaNs, uint64_t* betaQ);

}  // namespace preccl
