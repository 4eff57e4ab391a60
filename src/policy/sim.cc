#include "policy/sim.h"

#include <algorithm>

namespace preccl {

namespace {

using i128 = __int128;

// SplitMix64: a fixed, portable jitter source (no std::random distribution, whose output may vary).
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t vtTimeNs(const SimVt& p, uint64_t wireBytes, const SimConfig& cfg) {
  if (p.rateBps == 0) return cfg.stuckNs;
  return p.alphaNs + static_cast<uint64_t>(static_cast<i128>(wireBytes) * 1'000'000'000 / p.rateBps);
}

int linkOf(const SimConfig& cfg, int v) { return v < static_cast<int>(cfg.link.size()) ? cfg.link[v] : -1; }

}  // namespace

// Completion times of the VTs that share a link with another VT (0 for the others): processor sharing of
// the link's rate, the VT with the fewest bytes finishing first.
std::vector<uint64_t> linkTimesNs(const SimConfig& cfg, uint64_t epoch, const Allocation& al, size_t elemBytes) {
  const int n = static_cast<int>(std::min(cfg.vt.size(), al.vt.size()));
  std::vector<uint64_t> t(cfg.vt.size(), 0);
  std::vector<char> done(n, 0);
  for (int v = 0; v < n; v++) {
    if (done[v] || linkOf(cfg, v) < 0) continue;
    std::vector<std::pair<uint64_t, int>> members;  // (wire bytes, vt)
    for (int u = v; u < n; u++)
      if (linkOf(cfg, u) == linkOf(cfg, v)) {
        done[u] = 1;
        const uint64_t range = al.vt[u].count * elemBytes;
        if (range) members.push_back({static_cast<uint64_t>(static_cast<i128>(range) * cfg.wireNum / std::max(1u, cfg.wireDen)), u});
      }
    if (members.size() < 2) continue;
    const SimVt p = simVtAt(cfg, epoch, v);
    std::sort(members.begin(), members.end());
    i128 now = 0;  // ns since the data started
    uint64_t sent = 0;  // bytes every still-busy member has sent so far
    for (size_t k = 0; k < members.size(); k++) {
      const uint64_t busy = members.size() - k;
      if (p.rateBps == 0) {
        t[members[k].second] = cfg.stuckNs;
        continue;
      }
      now += static_cast<i128>(members[k].first - sent) * busy * 1'000'000'000 / p.rateBps;
      sent = members[k].first;
      t[members[k].second] = p.alphaNs + static_cast<uint64_t>(now);
    }
  }
  return t;
}

SimVt simVtAt(const SimConfig& cfg, uint64_t epoch, int vt) {
  SimVt p = cfg.vt[vt];
  uint64_t at = 0;
  for (const SimChange& c : cfg.changes)  // the latest change not after `epoch` wins
    if (c.vt == vt && c.epoch <= epoch && c.epoch >= at) p = c.to, at = c.epoch;
  return p;
}

SimEpoch simEpoch(const SimConfig& cfg, uint64_t epoch, const Allocation& al, size_t elemBytes) {
  const int n = static_cast<int>(cfg.vt.size());
  SimEpoch out;
  out.tel.reset(epoch, cfg.nranks, n);
  out.vtNs.assign(n, 0);
  uint64_t fastest = 0;  // the sender's own speed: it could push at the best link's rate
  for (int v = 0; v < n; v++) fastest = std::max(fastest, simVtAt(cfg, epoch, v).rateBps);
  const std::vector<uint64_t> shared = linkTimesNs(cfg, epoch, al, elemBytes);
  for (int v = 0; v < n && v < static_cast<int>(al.vt.size()); v++) {
    const uint64_t range = al.vt[v].count * elemBytes;
    if (range == 0) continue;
    const SimVt p = simVtAt(cfg, epoch, v);
    const uint64_t wire = static_cast<uint64_t>(static_cast<i128>(range) * cfg.wireNum / std::max(1u, cfg.wireDen));
    uint64_t base = shared[v] ? shared[v] : vtTimeNs(p, wire, cfg);
    for (const SimSpike& s : cfg.spikes)
      if (s.epoch == epoch && s.vt == v) base = static_cast<uint64_t>(static_cast<i128>(base) * s.factorPct / 100);
    const uint64_t ownNs = fastest ? static_cast<uint64_t>(static_cast<i128>(wire) * 1'000'000'000 / fastest) : 0;
    for (int r = 0; r < cfg.nranks; r++) {
      uint64_t t = base;
      if (cfg.noisePermille) {
        const uint64_t h = mix(cfg.seed ^ mix(epoch * 1'000'003 + static_cast<uint64_t>(v) * 1009 + r));
        const int64_t u = static_cast<int64_t>(h % (2 * cfg.noisePermille + 1)) - cfg.noisePermille;
        t = static_cast<uint64_t>(static_cast<i128>(t) * (1000 + u) / 1000);
      }
      VtRecord& rec = out.tel.at(r, v);
      rec.bytes = wire;
      rec.elapsedNs = t;
      rec.stalledNs = t > p.alphaNs + ownNs ? t - p.alphaNs - ownNs : 0;
      rec.stalls = static_cast<uint32_t>(std::min<uint64_t>(UINT32_MAX, rec.stalledNs / std::max<uint64_t>(1, cfg.nsPerStall)));
      out.vtNs[v] = std::max(out.vtNs[v], t);
    }
    out.cctNs = std::max(out.cctNs, out.vtNs[v]);
  }
  return out;
}

uint64_t simIdealNs(const SimConfig& cfg, uint64_t epoch, uint64_t rangeBytes) {
  const int n = static_cast<int>(cfg.vt.size());
  const i128 wire = static_cast<i128>(rangeBytes) * cfg.wireNum / std::max(1u, cfg.wireDen);
  if (wire == 0) return 0;
  // Bytes all VTs finish by time T: sum of (T - alpha_v) * rate_v. Smallest T that covers the range.
  auto carried = [&](uint64_t T) {
    i128 b = 0;
    for (int v = 0; v < n; v++) {
      bool counted = false;  // a shared link counts once, with its first VT's parameters
      for (int u = 0; u < v; u++) counted |= linkOf(cfg, v) >= 0 && linkOf(cfg, u) == linkOf(cfg, v);
      if (counted) continue;
      const SimVt p = simVtAt(cfg, epoch, v);
      if (T > p.alphaNs) b += static_cast<i128>(T - p.alphaNs) * p.rateBps / 1'000'000'000;
    }
    return b;
  };
  uint64_t lo = 0, hi = cfg.stuckNs;
  while (hi < (1ull << 62) && carried(hi) < wire) hi *= 2;
  while (lo + 1 < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    (carried(mid) >= wire ? hi : lo) = mid;
  }
  return hi;
}

std::vector<SimStep> simRun(PolicyKind kind, const SimConfig& cfg, const AllocRequest& req, uint64_t epochs, int lag,
                            uint64_t healthMask) {
  PolicyState st;
  st.vtGroup = cfg.link;
  AllocKey key;
  key.wireNum = cfg.wireNum;
  key.wireDen = cfg.wireDen;
  std::vector<EpochTelemetry> tel;  // tel[e - 1] is epoch e's
  std::vector<SimStep> trace;
  const size_t esz = std::max<size_t>(1, req.elemBytes);
  for (uint64_t e = 1; e <= epochs; e++) {
    const EpochTelemetry* latest = e > static_cast<uint64_t>(lag) ? &tel[e - lag - 1] : nullptr;
    SimStep s;
    s.epoch = e;
    s.al = decide(kind, st, req, key, latest, healthMask);
    SimEpoch r = simEpoch(cfg, e, s.al, esz);
    s.cctNs = r.cctNs;
    s.idealNs = simIdealNs(cfg, e, req.count * esz);
    for (const VtRange& x : s.al.vt)
      s.share.push_back(req.count ? static_cast<uint32_t>((static_cast<i128>(x.count) << kShareShift) / req.count) : 0);
    tel.push_back(std::move(r.tel));
    trace.push_back(std::move(s));
  }
  return trace;
}

uint32_t simMaxShareChange(const std::vector<SimStep>& trace, size_t from, size_t to) {
  uint32_t worst = 0;
  for (size_t i = std::max<size_t>(from, 1); i < to && i < trace.size(); i++) {
    const auto& a = trace[i - 1].share;
    const auto& b = trace[i].share;
    for (size_t v = 0; v < a.size() && v < b.size(); v++) {
      if (a[v] == 0 && b[v] == 0) continue;
      const uint64_t d = a[v] > b[v] ? a[v] - b[v] : b[v] - a[v];
      const uint64_t rel = a[v] ? (d << kShareShift) / a[v] : kShareOne;
      worst = static_cast<uint32_t>(std::min<uint64_t>(UINT32_MAX, std::max<uint64_t>(worst, rel)));
    }
  }
  return worst;
}

}  // namespace preccl
