#include "policy/policy.h"

#include <algorithm>
#include <bit>

namespace preccl {

namespace {

using i128 = __int128;

constexpr int kRateShift = 40;           // rates are bytes per ns << 40 (2^60 / betaQ)
constexpr uint64_t kDeadbandDiv = 256;   // preccl: no move when < 1/256 of the bytes would move
constexpr uint64_t kFullStepDiv = 16;    // preccl: full step when > 1/16 of the bytes would move
constexpr uint32_t kAimdIncDiv = 16;     // aimd: additive increase of 1/(16 * live VTs) per epoch

int countLive(int n, uint64_t mask) {
  int c = 0;
  for (int v = 0; v < n; v++) c += isLive(mask, v);
  return c;
}

uint32_t floorShare(int nLive) { return kShareOne / (kFloorDiv * static_cast<uint32_t>(nLive)); }

// The live VT with the largest share, lowest index on ties: it absorbs rounding residuals.
int largest(const std::vector<uint32_t>& s, int n, uint64_t mask) {
  int best = -1;
  for (int v = 0; v < n; v++)
    if (isLive(mask, v) && (best < 0 || s[v] > s[best])) best = v;
  return best;
}

// Masked VTs to 0, live ones at least the floor, and the sum exactly kShareOne.
void normalize(std::vector<uint32_t>& s, int n, uint64_t mask) {
  s.resize(n, 0);
  const int nl = countLive(n, mask);
  if (nl == 0) {
    std::fill(s.begin(), s.end(), 0u);
    return;
  }
  const uint32_t f = floorShare(nl);
  uint64_t sum = 0;
  for (int v = 0; v < n; v++) {
    s[v] = isLive(mask, v) ? std::max(s[v], f) : 0;
    sum += s[v];
  }
  if (sum != kShareOne) {
    for (int v = 0; v < n; v++)
      if (isLive(mask, v)) s[v] = std::max<uint32_t>(f, static_cast<uint32_t>(uint64_t{s[v]} * kShareOne / sum));
    sum = 0;
    for (int v = 0; v < n; v++) sum += s[v];
  }
  const int big = largest(s, n, mask);
  s[big] = static_cast<uint32_t>(int64_t{s[big]} + (int64_t{kShareOne} - static_cast<int64_t>(sum)));
}

// The bytes and model parameters of every live VT at the current shares; false if nothing is known.
struct Current {
  std::vector<int> live;
  std::vector<i128> bytes, alpha, rate;  // per live VT; rate in bytes/ns << kRateShift
  std::vector<uint64_t> betaQ;
};

bool current(const ShareSet& set, const ModelState& m, uint64_t wireBytes, uint64_t mask, Current* c) {
  const size_t n = set.share.size();  // reserved: this runs on every call that brings telemetry
  c->live.reserve(n), c->bytes.reserve(n), c->alpha.reserve(n), c->rate.reserve(n), c->betaQ.reserve(n);
  for (int v = 0; v < static_cast<int>(n); v++) {
    if (!isLive(mask, v)) continue;
    int64_t a;
    uint64_t b;
    if (!modelParams(m, v, &a, &b)) return false;
    c->live.push_back(v);
    c->bytes.push_back((static_cast<i128>(wireBytes) * set.share[v]) >> kShareShift);
    c->alpha.push_back(a);
    c->betaQ.push_back(b);
    c->rate.push_back((static_cast<i128>(1) << (kBetaShift + kRateShift)) / b);
  }
  return c->live.size() > 1;
}

// preccl: the split with equal modelled completion times. The unit of the split is a *link group*: the
// live VTs that share a NIC (PolicyState::vtGroup) share its bandwidth, so they are one resource. A group's
// completion time is its slowest member's (the link is busy until the last of them ends, and under fair
// sharing that member's time is the link's time for all their bytes), its rate is its bytes over that
// time, and its target is split equally among its members. VTs without a group, and VTs still probing
// after a mask change, are groups of their own.
// Water-filling over the groups, each at least its members' floors: T* = (W - pinned floors + sum alpha_g
// rate_g) / sum rate_g over the free groups; a group whose target is below its floor is pinned there and T*
// recomputed. Then a damped move from the current bytes toward the targets: the moves sum to zero.
struct Group {
  std::vector<size_t> member;  // indices into Current::live
  i128 bytes = 0, alpha = 0, rate = 0;
  bool pinned = false;
};

std::vector<Group> linkGroups(const Current& c, const std::vector<int>& vtGroup, const std::vector<char>& probing) {
  std::vector<Group> g;
  std::vector<std::pair<int, size_t>> byId;  // group id -> index in g
  g.reserve(c.live.size()), byId.reserve(c.live.size());
  for (size_t i = 0; i < c.live.size(); i++) {
    const int v = c.live[i];
    const int id = !probing[i] && v < static_cast<int>(vtGroup.size()) ? vtGroup[v] : -1;
    size_t at = g.size();
    for (auto& [gid, idx] : byId)
      if (id >= 0 && gid == id) at = idx;
    if (at == g.size()) {
      g.emplace_back();
      g.back().pinned = probing[i];
      if (id >= 0) byId.emplace_back(id, at);
    }
    g[at].member.push_back(i);
  }
  for (Group& x : g) {
    i128 slowT = -1;
    for (size_t i : x.member) {
      x.bytes += c.bytes[i];
      const i128 t = c.alpha[i] + ((static_cast<i128>(c.betaQ[i]) * c.bytes[i]) >> kBetaShift);
      if (t > slowT) slowT = t, x.alpha = c.alpha[i];
    }
    const i128 body = slowT - x.alpha;
    if (x.member.size() == 1 || body <= 0 || x.bytes == 0) {
      for (size_t i : x.member) x.rate += c.rate[i];
      if (x.member.size() > 1) x.rate /= static_cast<i128>(x.member.size());  // no data: an average member
    } else {
      x.rate = (x.bytes << kRateShift) / body;
    }
    if (x.rate <= 0) x.rate = 1;
  }
  return g;
}

bool precclStep(ShareSet& set, const ModelState& m, uint64_t W, uint64_t mask, const std::vector<int>& vtGroup) {
  Current c;
  if (!current(set, m, W, mask, &c)) return false;
  const size_t L = c.live.size();
  const i128 f = (static_cast<i128>(W) * floorShare(static_cast<int>(L))) >> kShareShift;
  std::vector<char> probing(L, 0);
  for (size_t i = 0; i < L; i++) {
    const int v = c.live[i];
    const uint64_t from = v < static_cast<int>(set.probeFrom.size()) ? set.probeFrom[v] : 0;
    if (from == 0) continue;
    if (v < static_cast<int>(m.vt.size()) && m.vt[v].lastEpoch >= from) set.probeFrom[v] = 0;  // it answered
    else probing[i] = 1;  // still probing: its model is from before the failure, if any
  }
  std::vector<Group> g = linkGroups(c, vtGroup, probing);
  std::vector<i128> gTarget(g.size());
  for (size_t k = 0; k < g.size(); k++) gTarget[k] = f * static_cast<i128>(g[k].member.size());
  for (size_t iter = 0; iter <= g.size(); iter++) {
    i128 num = static_cast<i128>(W) << kRateShift, den = 0;
    for (size_t k = 0; k < g.size(); k++) {
      if (g[k].pinned) num -= gTarget[k] << kRateShift;
      else num += g[k].alpha * g[k].rate, den += g[k].rate;
    }
    if (den == 0) break;
    const i128 T = num / den;
    bool changed = false;
    for (size_t k = 0; k < g.size(); k++) {
      if (g[k].pinned) continue;
      const i128 floorK = f * static_cast<i128>(g[k].member.size());
      gTarget[k] = ((T - g[k].alpha) * g[k].rate) / (static_cast<i128>(1) << kRateShift);
      if (gTarget[k] < floorK) g[k].pinned = true, gTarget[k] = floorK, changed = true;
    }
    if (!changed) break;
  }
  std::vector<i128> target(L, f);
  for (size_t k = 0; k < g.size(); k++) {
    const i128 each = gTarget[k] / static_cast<i128>(g[k].member.size());
    for (size_t j = 0; j < g[k].member.size(); j++)
      target[g[k].member[j]] = j + 1 < g[k].member.size() ? each : gTarget[k] - each * static_cast<i128>(j);
  }
  i128 moved = 0;
  for (size_t i = 0; i < L; i++) moved += target[i] > c.bytes[i] ? target[i] - c.bytes[i] : c.bytes[i] - target[i];
  // moved counts every byte twice (once leaving, once arriving).
  if (moved * kDeadbandDiv < 2 * static_cast<i128>(W)) return false;  // within noise: hold still
  const bool full = moved * kFullStepDiv > 2 * static_cast<i128>(W);  // far off: no noise can explain it
  for (size_t i = 0; i < L; i++) {
    const i128 nb = full ? target[i] : c.bytes[i] + (target[i] - c.bytes[i]) / 2;
    set.share[c.live[i]] = static_cast<uint32_t>(std::max<i128>(0, (nb << kShareShift) / W));
  }
  return true;
}

// aimd: each VT on its own. The slowest (modelled time at its current bytes) halves its weight, every
// other adds a constant; the allocation is the weights normalised. Nothing steers toward equal times.
bool aimdStep(ShareSet& set, const ModelState& m, uint64_t W, uint64_t mask) {
  Current c;
  if (!current(set, m, W, mask, &c)) return false;
  size_t slow = 0;
  i128 slowT = -1;
  for (size_t i = 0; i < c.live.size(); i++) {
    const i128 t = c.alpha[i] + ((static_cast<i128>(c.betaQ[i]) * c.bytes[i]) >> kBetaShift);
    if (t > slowT) slowT = t, slow = i;
  }
  const uint32_t inc = kShareOne / (kAimdIncDiv * static_cast<uint32_t>(c.live.size()));
  for (size_t i = 0; i < c.live.size(); i++) {
    uint32_t& s = set.share[c.live[i]];
    s = i == slow ? s / 2 : s + inc;
  }
  return true;
}

}  // namespace

int policySizeClass(const AllocRequest& req) {
  const uint64_t bytes = static_cast<uint64_t>(req.count) * std::max<size_t>(1, req.elemBytes);
  return std::bit_width(bytes) / 2;
}

uint64_t policyClassKey(const AllocKey& key, const AllocRequest& req) {
  return (uint64_t{key.coll} << 16) | (uint64_t{key.algo} << 8) | static_cast<uint64_t>(policySizeClass(req));
}

void policyObserve(PolicyState& st, const EpochTelemetry& t) { modelFold(st.model, t); }

std::vector<uint32_t> equalShares(int nVTs, uint64_t healthMask) {
  std::vector<uint32_t> s(std::max(1, nVTs), 0);
  const int nl = countLive(static_cast<int>(s.size()), healthMask);
  for (size_t v = 0; v < s.size(); v++)
    if (isLive(healthMask, static_cast<int>(v))) s[v] = kShareOne / nl;
  if (nl > 0) normalize(s, static_cast<int>(s.size()), healthMask);
  return s;
}

Allocation sharesToAllocation(const AllocRequest& req, const std::vector<uint32_t>& share, uint64_t healthMask) {
  const int n = std::max(1, req.nVTs);
  Allocation a;
  a.vt.assign(n, VtRange{});
  std::vector<int> live;
  live.reserve(n);
  for (int v = 0; v < n; v++)
    if (isLive(healthMask, v) && v < static_cast<int>(share.size())) live.push_back(v);
  if (req.count == 0 || live.empty()) return a;
  const size_t esz = std::max<size_t>(1, req.elemBytes);
  const size_t grain = std::max<size_t>(1, req.grainBytes / esz);
  const size_t bytes = req.count * esz;
  const size_t G = req.count / grain + (req.count % grain != 0);
  size_t used = std::min<size_t>(live.size(), std::max<size_t>(1, bytes / std::max<size_t>(1, req.minBytesPerVt)));
  used = std::min<size_t>(used, G);
  // Small message: the `used` live VTs with the largest shares (lowest index on ties), in VT order.
  std::vector<int> sel = live;
  std::stable_sort(sel.begin(), sel.end(), [&](int x, int y) { return share[x] > share[y]; });
  sel.resize(used);
  std::sort(sel.begin(), sel.end());
  i128 sum = 0;
  for (int v : sel) sum += std::max<uint32_t>(1, share[v]);
  // Largest remainder: floor of G * share / sum, the leftover grains to the largest fractions.
  std::vector<size_t> g(n, 0);
  std::vector<i128> frac(n, 0);
  size_t given = 0;
  for (int v : sel) {
    const i128 p = static_cast<i128>(G) * std::max<uint32_t>(1, share[v]);
    g[v] = static_cast<size_t>(p / sum);
    frac[v] = p % sum;
    given += g[v];
  }
  std::vector<int> byFrac = sel;
  std::stable_sort(byFrac.begin(), byFrac.end(), [&](int x, int y) { return frac[x] > frac[y]; });
  for (size_t i = 0; given < G; i = (i + 1) % byFrac.size(), given++) g[byFrac[i]]++;
  // Every selected VT carries at least one grain (G >= used): its model stays fresh.
  for (int v : sel) {
    if (g[v] > 0) continue;
    int big = sel[0];
    for (int u : sel)
      if (g[u] > g[big]) big = u;
    g[big]--, g[v]++;
  }
  size_t off = 0;
  for (int v = 0; v < n; v++) {
    const size_t c = std::min(g[v] * grain, req.count - off);
    a.vt[v] = {off, c};
    off += c;
  }
  return a;
}

Allocation equalAllocation(const AllocRequest& req, uint64_t healthMask) {
  const int n = std::max(1, req.nVTs);
  const uint64_t all = n >= 64 ? ~0ull : (1ull << n) - 1;
  const uint64_t mask = healthMask & all;
  return mask == all ? staticAllocation(req) : sharesToAllocation(req, equalShares(n, mask), mask);
}

Allocation decide(PolicyKind kind, PolicyState& st, const AllocRequest& req, const AllocKey& key,
                  const EpochTelemetry* latest, uint64_t healthMask) {
  if (latest) policyObserve(st, *latest);
  const int n = std::max(1, req.nVTs);
  const uint64_t all = n >= 64 ? ~0ull : (1ull << n) - 1;
  const uint64_t mask = healthMask & all;
  if (kind == PolicyKind::Static) return equalAllocation(req, mask);

  ShareSet& set = st.sets[policyClassKey(key, req)];
  if (set.share.size() != static_cast<size_t>(n)) {
    set = ShareSet{};
    set.share = equalShares(n, mask);
  } else {
    // The mask may have changed: failed VTs drop to 0; returning ones (share 0, now live) get the floor
    // and probe until their own telemetry is in.
    set.probeFrom.resize(n, 0);
    for (int v = 0; v < n; v++)
      if (set.share[v] == 0 && isLive(mask, v)) set.probeFrom[v] = st.model.epoch + 1;
    normalize(set.share, n, mask);
  }
  const uint64_t news = st.model.version - std::min(st.model.version, set.modelVersion);
  const uint64_t steps = std::min<uint64_t>(news, kind == PolicyKind::Aimd ? 1 : kMaxCatchUp);
  const uint64_t W = static_cast<uint64_t>(static_cast<i128>(req.count) * std::max<size_t>(1, req.elemBytes) *
                                           key.wireNum / std::max<uint32_t>(1, key.wireDen));
  for (uint64_t i = 0; i < steps && W > 0 && countLive(n, mask) > 1; i++) {
    const bool moved = kind == PolicyKind::Aimd ? aimdStep(set, st.model, W, mask) : precclStep(set, st.model, W, mask, st.vtGroup);
    if (!moved) break;
    normalize(set.share, n, mask);
    set.steps++;
  }
  set.modelVersion = st.model.version;
  const ShareSet::Memo& m = set.memo;
  if (m.valid && m.steps == set.steps && m.modelVersion == st.model.version && m.mask == mask && m.req == req)
    return m.al;
  Allocation a = sharesToAllocation(req, set.share, mask);
  for (int v = 0; v < n; v++) {
    int64_t alpha;
    uint64_t betaQ;
    // Only a rate measured on enough bytes sets a cap: the first beta of a run may come from a 4-byte
    // warm-up call, whose time is latency, and would shrink the next call's pieces to the floor.
    if (a.vt[v].count == 0 || !st.model.rateKnown(v) || !modelParams(st.model, v, &alpha, &betaQ)) continue;
    const i128 cap = (static_cast<i128>(kPieceNs) << kBetaShift) / std::max<uint64_t>(1, betaQ);
    a.vt[v].pieceCapBytes = static_cast<size_t>(std::clamp<i128>(cap, kMinPieceCapBytes, uint64_t{1} << 40));
  }
  set.memo = ShareSet::Memo{true, set.steps, st.model.version, mask, req, a};
  return a;
}

const ShareSet* policyShares(const PolicyState& st, const AllocKey& key, const AllocRequest& req) {
  auto it = st.sets.find(policyClassKey(key, req));
  return it == st.sets.end() ? nullptr : &it->second;
}

Allocation currentShares(const PolicyState& st, const AllocRequest& req, const AllocKey& key, uint64_t healthMask) {
  const int n = std::max(1, req.nVTs);
  const uint64_t mask = healthMask & (n >= 64 ? ~0ull : (1ull << n) - 1);
  const ShareSet* set = policyShares(st, key, req);
  if (!set || set->share.size() != static_cast<size_t>(n)) return equalAllocation(req, mask);
  std::vector<uint32_t> s = set->share;
  normalize(s, n, mask);  // the mask may have changed since the set's last step
  return sharesToAllocation(req, s, mask);
}

}  // namespace preccl
