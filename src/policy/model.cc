#include "policy/model.h"

#include <algorithm>

namespace preccl {

namespace {

using i128 = __int128;

// The lower median of n > 0 values, reordering them: defined for any count, the same on every rank (the
// k-th smallest value is unique whatever the order nth_element leaves). In place, so that the per-call
// fits allocate nothing.
template <typename T>
T lowerMedian(T* v, size_t n) {
  std::nth_element(v, v + (n - 1) / 2, v + n);
  return v[(n - 1) / 2];
}

template <typename T>
T lowerMedian(std::vector<T> v) {
  return lowerMedian(v.data(), v.size());
}

// Intercepts of the lines through every pair of recent points whose byte counts differ enough; their
// median is robust to one bad point. Points from a single message size carry no intercept information,
// so alpha then keeps its previous value.
void refitAlpha(VtModel& m) {
  const uint32_t n = std::min<uint32_t>(m.nObs, kAlphaWindow);
  int64_t icpt[kAlphaWindow * kAlphaWindow];
  size_t nIcpt = 0;
  uint64_t minNs = UINT64_MAX;
  for (uint32_t i = 0; i < n; i++) {
    minNs = std::min(minNs, m.obsNs[i]);
    for (uint32_t j = 0; j < n; j++) {
      const uint64_t bi = m.obsBytes[i], bj = m.obsBytes[j];
      if (bj < kAlphaSpread * bi) continue;  // also skips i == j
      const i128 num = static_cast<i128>(m.obsNs[i]) * bj - static_cast<i128>(m.obsNs[j]) * bi;
      icpt[nIcpt++] = static_cast<int64_t>(num / static_cast<i128>(bj - bi));
    }
  }
  if (nIcpt == 0) return;
  // Latency cannot be negative, nor more than the fastest observed completion.
  m.alphaNs = std::clamp<int64_t>(lowerMedian(icpt, nIcpt), 0, static_cast<int64_t>(minNs));
}

void observe(VtModel& m, uint64_t bytes, uint64_t ns, uint64_t stalls, uint64_t epoch) {
  m.lastBytes = bytes;
  m.lastNs = ns;
  m.lastEpoch = epoch;
  m.obsBytes[m.nObs % kAlphaWindow] = bytes;
  m.obsNs[m.nObs % kAlphaWindow] = ns;
  m.nObs++;
  refitAlpha(m);
  if (bytes < kBetaMinBytes && m.nSamples > 0) return;  // latency-dominated: alpha only

  // Per-byte sample with the latency taken out; at least 1 so that a known VT never looks free.
  const uint64_t bodyNs = ns > static_cast<uint64_t>(m.alphaNs) ? ns - m.alphaNs : 0;
  const uint64_t s = std::max<uint64_t>(1, static_cast<uint64_t>((static_cast<i128>(bodyNs) << kBetaShift) / bytes));
  m.sample[m.nSamples % kBetaWindow] = s;
  m.nSamples++;
  m.betaSized = m.betaSized || bytes >= kBetaMinBytes;
  const uint64_t before = m.betaQ;
  if (m.nSamples >= static_cast<uint64_t>(kBetaWindow)) {
    // Median of 3: a single outlier is dropped; a real change wins from its second epoch on. A change
    // that began inside an epoch gives a partial sample first: when the newest sample is off the estimate
    // by more than 1/kConfirmDiv and the one before it by more than half that, on the same side, the
    // change is confirmed and the newest (the only one wholly after it) is taken, instead of the median,
    // which would be the partial one. Half, since a partial sample shows only part of the change.
    const uint64_t prev = m.sample[(m.nSamples - 2) % kBetaWindow], old = m.betaQ, tol = old / kConfirmDiv;
    // A change that builds up over epochs (contention whose flows take a few epochs to claim their
    // share) would then stall at its first confirmed level for an epoch, the median being that level:
    // so right after a change was taken, a sample further on the same side by more than 1/kConfirmDiv
    // is taken too. Only there: a lone spike in steady state is still dropped, and one right after a
    // change is undone by the median at the next epoch.
    const uint64_t tolPrev = tol / 2;
    const bool up = s > old + tol && (prev > old + tolPrev || m.trend > 0);
    const bool down = s + tol < old && (prev + tolPrev < old || m.trend < 0);
    const bool take = old != 0 && (up || down);
    uint64_t window[kBetaWindow];
    std::copy(m.sample, m.sample + kBetaWindow, window);
    m.betaQ = take ? s : lowerMedian(window, kBetaWindow);
    m.trend = take ? (up ? 1 : -1) : 0;
  } else {
    m.betaQ = s;  // too few samples for a median: follow the newest
  }
  // The path changed (beta moved by more than 1/4): points from before the change would pair with new
  // ones into nonsense intercepts, so the alpha fit restarts from the points that made the median move.
  const uint64_t diff = m.betaQ > before ? m.betaQ - before : before - m.betaQ;
  if (before != 0 && diff > before / kRegimeDiv) {
    uint64_t b[kBetaWindow - 1], t[kBetaWindow - 1];
    const uint32_t keep = std::min<uint32_t>(m.nObs, kBetaWindow - 1);
    for (uint32_t i = 0; i < keep; i++) {
      const uint32_t src = (m.nObs - keep + i) % kAlphaWindow;
      b[i] = m.obsBytes[src], t[i] = m.obsNs[src];
    }
    for (uint32_t i = 0; i < keep; i++) m.obsBytes[i] = b[i], m.obsNs[i] = t[i];
    m.nObs = keep;
    refitAlpha(m);
  }

  const uint64_t spm = static_cast<uint64_t>((static_cast<i128>(stalls) << 20) / bytes);
  m.stallsPerMiB = m.nSamples == 1 ? spm : (3 * m.stallsPerMiB + spm) / 4;
}

}  // namespace

void modelFold(ModelState& n, const EpochTelemetry& t) {
  if (!t.valid() || (n.version > 0 && t.epoch <= n.epoch)) return;
  if (n.vt.size() < static_cast<size_t>(t.nVTs)) n.vt.resize(t.nVTs);
  for (int v = 0; v < t.nVTs; v++) {
    uint64_t bytes = 0, ns = 0, stalls = 0;
    for (int r = 0; r < t.nranks; r++) {
      const VtRecord& rec = t.at(r, v);
      bytes = std::max(bytes, rec.bytes);
      ns = std::max(ns, rec.elapsedNs);
      stalls += rec.stalls;
    }
    if (bytes == 0) continue;  // unused this epoch: nothing learned
    observe(n.vt[v], bytes, ns, stalls, t.epoch);
  }
  n.epoch = t.epoch;
  n.version++;
}

ModelState modelUpdate(const ModelState& s, const EpochTelemetry& t) {
  ModelState n = s;
  modelFold(n, t);
  return n;
}

bool modelParams(const ModelState& s, int vt, int64_t* alphaNs, uint64_t* betaQ) {
  if (s.known(vt)) {
    *alphaNs = s.vt[vt].alphaNs;
    *betaQ = s.vt[vt].betaQ;
    return true;
  }
  std::vector<int64_t> alphas;
  std::vector<uint64_t> betas;
  for (int v = 0; v < static_cast<int>(s.vt.size()); v++) {
    if (!s.known(v)) continue;
    alphas.push_back(s.vt[v].alphaNs);
    betas.push_back(s.vt[v].betaQ);
  }
  if (betas.empty()) return false;
  *alphaNs = lowerMedian(alphas);
  *betaQ = lowerMedian(betas);
  return true;
}

uint64_t modelEstimateNs(const ModelState& s, int vt, uint64_t bytes) {
  int64_t a;
  uint64_t b;
  if (!modelParams(s, vt, &a, &b)) return 0;
  const i128 t = static_cast<i128>(a) + ((static_cast<i128>(b) * bytes) >> kBetaShift);
  return t > static_cast<i128>(UINT64_MAX) ? UINT64_MAX : static_cast<uint64_t>(t);
}

}  // namespace preccl
