#include "policy/rail_split.h"

#include <algorithm>

namespace preccl {

namespace {

bool has(uint64_t mask, size_t v) { return v < 64 && ((mask >> v) & 1); }

// `count` elements over the VTs in `mask` in proportion to `weight` (largest remainders, ties to the lower
// VT); none when the weights there are all 0.
std::vector<size_t> proportional(size_t count, std::vector<size_t> weight, uint64_t mask) {
  const size_t n = weight.size();
  for (size_t v = 0; v < n; v++)
    if (!has(mask, v)) weight[v] = 0;
  size_t sum = 0;
  for (size_t w : weight) sum += w;
  std::vector<size_t> out(n, 0);
  if (sum == 0) return out;
  std::vector<std::pair<unsigned __int128, size_t>> rest;
  size_t given = 0;
  for (size_t v = 0; v < n; v++) {
    const unsigned __int128 p = static_cast<unsigned __int128>(count) * weight[v];
    out[v] = static_cast<size_t>(p / sum);
    given += out[v];
    if (weight[v]) rest.emplace_back(p % sum, v);
  }
  std::stable_sort(rest.begin(), rest.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 0; given < count; i++, given++) out[rest[i % rest.size()].second]++;
  return out;
}

Allocation ranges(const std::vector<size_t>& counts) {
  Allocation a;
  a.vt.resize(counts.size());
  size_t off = 0;
  for (size_t v = 0; v < counts.size(); v++) {
    a.vt[v].offset = off;
    a.vt[v].count = counts[v];
    off += counts[v];
  }
  return a;
}

// Off: each rank over its own VTs the host uses, in proportion to the host's parts there (over every VT
// the host uses when it uses none of the rank's).
std::vector<std::vector<size_t>> ownOnly(size_t count, const std::vector<size_t>& hostPart,
                                         const std::vector<uint64_t>& own, uint64_t used) {
  std::vector<std::vector<size_t>> per;
  for (uint64_t mine : own) per.push_back(proportional(count, hostPart, mine & used ? mine & used : used));
  return per;
}

// The host's split with the fewest elements relayed: every rank first fills the VTs it owns up to the
// host's part of each (with the slack), and only what remains goes to VTs with room left.
std::vector<std::vector<size_t>> leastRelayed(size_t count, const std::vector<size_t>& hostPart,
                                              const std::vector<uint64_t>& own, uint64_t used, size_t slackElems) {
  const size_t nLocal = own.size(), nVt = hostPart.size();
  std::vector<std::vector<size_t>> per(nLocal, std::vector<size_t>(nVt, 0));
  std::vector<size_t> room(nVt), left(nLocal, count);
  for (size_t v = 0; v < nVt; v++) room[v] = hostPart[v] * nLocal;
  auto fill = [&](size_t g, bool ownOnly, size_t slack) {
    for (size_t v = 0; v < nVt && left[g] > 0; v++) {
      if (!has(used, v) || (ownOnly && !has(own[g], v))) continue;
      const size_t take = std::min(left[g], room[v] + slack);
      per[g][v] += take;
      room[v] -= std::min(room[v], take);
      left[g] -= take;
    }
  };
  // The owners may take up to `slackElems` more than a VT's part: the parts are rounded to grains, and a
  // few elements through a relay would cost a task and a piece for nothing.
  for (size_t g = 0; g < nLocal; g++) fill(g, true, slackElems);
  for (size_t g = 0; g < nLocal; g++) fill(g, false, 0);
  // What the slack left without room goes to the rank's own VTs, or the VTs the host uses.
  for (size_t g = 0; g < nLocal; g++) fill(g, (own[g] & used) != 0, left[g]);
  return per;
}

}  // namespace

bool stretchesBeyond(const std::vector<std::vector<size_t>>& per, const std::vector<size_t>& hostPart, uint32_t num,
                     uint32_t den) {
  using u128 = unsigned __int128;
  for (size_t v = 0; v < hostPart.size(); v++) {
    size_t load = 0;
    for (const auto& p : per) load += p[v];
    if (load > 0 && u128(load) * den > u128(hostPart[v]) * per.size() * num) return true;
  }
  return false;
}

std::vector<Allocation> railSplit(const Allocation& host, size_t count, const std::vector<uint64_t>& own, uint64_t live,
                                 RelayMode mode, size_t slackElems) {
  const size_t nLocal = own.size(), nVt = host.vt.size();
  std::vector<Allocation> out;
  if (mode == RelayMode::Force) {
    for (size_t g = 0; g < nLocal; g++) out.push_back(host);
    return out;
  }
  std::vector<size_t> hostPart(nVt);
  uint64_t used = 0;
  for (size_t v = 0; v < nVt; v++) {
    hostPart[v] = host.vt[v].count;
    if (hostPart[v] && v < 64) used |= 1ull << v;
  }
  if (nVt < 64) live &= (1ull << nVt) - 1;
  std::vector<std::vector<size_t>> per(nLocal, std::vector<size_t>(nVt, 0));
  if (__builtin_popcountll(used) < __builtin_popcountll(live)) {
    // A message small enough that the host's split uses fewer VTs than are live: latency counts, not
    // bandwidth, so each rank sends all of it on one VT of its own (the one with the largest part).
    for (size_t g = 0; g < nLocal; g++) {
      const uint64_t mine = own[g] & live ? own[g] & live : used;
      size_t best = nVt;
      for (size_t v = 0; v < nVt; v++)
        if (has(mine, v) && (best == nVt || hostPart[v] > hostPart[best])) best = v;
      if (best < nVt) per[g][best] = count;
    }
  } else {
    per = ownOnly(count, hostPart, own, used);
    // Auto relays only when the owners alone would stretch the host's time by more than a tenth.
    if (mode == RelayMode::Auto && stretchesBeyond(per, hostPart, kRelayGainNum, kRelayGainDen))
      per = leastRelayed(count, hostPart, own, used, slackElems);
  }
  for (size_t g = 0; g < nLocal; g++) {
    out.push_back(ranges(per[g]));
    for (size_t v = 0; v < nVt; v++) out[g].vt[v].pieceCapBytes = host.vt[v].pieceCapBytes;
  }
  return out;
}

size_t relayedElems(const std::vector<Allocation>& split, const std::vector<uint64_t>& own) {
  size_t n = 0;
  for (size_t g = 0; g < split.size() && g < own.size(); g++)
    for (size_t v = 0; v < split[g].vt.size(); v++)
      if (!has(own[g], v)) n += split[g].vt[v].count;
  return n;
}

}  // namespace preccl
