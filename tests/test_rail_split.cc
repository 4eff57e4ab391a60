#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "policy/allocation.h"
#include "policy/policy.h"
#include "policy/rail_split.h"

using namespace preccl;

// Rail affinity's split (policy/rail_split.h): each local rank's split covers its block exactly, the
// ranks together follow the host's split, a relay is never chosen on balanced paths (equal shares, at
// every rounding, or shares a few percent apart), and where the host's split needs one, as few elements
// as it needs go through it.
namespace {
std::vector<uint64_t> owners(int nLocal, int nNics, int nVTs) {
  std::vector<uint64_t> own(size_t(nLocal), 0);
  for (int g = 0; g < nLocal; g++)
    for (int v = 0; v < nVTs; v++) {
      const int k = v % nNics;
      if (nLocal >= nNics ? g % nNics == k : k % nLocal == g) own[size_t(g)] |= 1ull << v;
    }
  return own;
}
void checkCovers(const std::vector<Allocation>& split, size_t count) {
  for (const Allocation& a : split) CHECK(a.coversExactly(count));
}
}  // namespace

TEST_CASE("rail split: no relay on balanced paths, the least relay otherwise", "[policy]") {
  for (int nLocal : {1, 2, 3, 4, 8})
    for (int nNics : {2, 4})
      for (int nVTs : {nNics, 2 * nNics})
        for (size_t esz : {size_t(1), size_t(2), size_t(4), size_t(8)})
          for (size_t count : {size_t(1), size_t(7), size_t(4099), size_t(65537), size_t(1) << 20, (size_t(1) << 24) + 3}) {
            INFO(nLocal << " local ranks, " << nNics << " NICs, " << nVTs << " VTs, " << esz << " B, count " << count);
            const auto own = owners(nLocal, nNics, nVTs);
            const size_t slack = 2 * size_t(nLocal) * std::max<size_t>(1, 512 / esz);  // as plan_p2p.cc
            AllocRequest req;
            req.count = count;
            req.elemBytes = esz;
            req.nVTs = nVTs;
            const Allocation host = equalAllocation(req, ~0ull);
            const auto split = railSplit(host, count, own, ~0ull, RelayMode::Auto, slack);
            checkCovers(split, count);
            // With as many owners on every NIC, their own bytes are the host's equal split; with 3 ranks
            // on 2 NICs, NIC 1's one owner cannot carry its half of three ranks' bytes without a relay.
            if (nLocal % nNics == 0 || nNics % nLocal == 0) CHECK(relayedElems(split, own) == 0);
            CHECK(relayedElems(railSplit(host, count, own, ~0ull, RelayMode::Off, slack), own) == 0);
          }
  // Balanced links as the model measures them: shares a few percent apart (the bed's 0.243-0.257). The
  // owners alone stretch the host's time by less than the relay's least gain, so nothing is relayed.
  for (int nLocal : {2, 4})
    for (int nNics : {2, 4})
      for (int skew : {0, 1, 3, 6}) {
        INFO(nLocal << " local ranks, " << nNics << " NICs, shares within " << skew << " % of equal");
        const int nVTs = 2 * nNics;
        const size_t count = (size_t(1) << 22) + 5;
        const auto own = owners(nLocal, nNics, nVTs);
        std::vector<size_t> part(static_cast<size_t>(nVTs));
        size_t sum = 0;
        for (int v = 0; v < nVTs; v++) sum += part[size_t(v)] = size_t(1000 + (v % 3 == 1 ? 10 * skew : v % 3 == 2 ? -10 * skew : 0));
        Allocation host;
        size_t off = 0;
        for (int v = 0; v < nVTs; v++) {
          const size_t c = v + 1 == nVTs ? count - off : count * part[size_t(v)] / sum;
          host.vt.push_back({off, c});
          off += c;
        }
        REQUIRE(host.coversExactly(count));
        const auto split = railSplit(host, count, own, ~0ull, RelayMode::Auto, 2 * size_t(nLocal) * 128);
        checkCovers(split, count);
        CHECK(relayedElems(split, own) == 0);
      }
  // One NIC of two at a fifth of the host's bytes, 2 ranks with one NIC each, 4 VTs (VT v on NIC v mod 2).
  const size_t count = 1 << 20;
  const auto own = owners(2, 2, 4);
  Allocation host;
  host.vt = {{0, 409600}, {409600, 104858}, {514458, 409600}, {924058, 124518}};
  REQUIRE(host.coversExactly(count));
  const auto split = railSplit(host, count, own, ~0ull, RelayMode::Auto, 256);
  checkCovers(split, count);
  // Without the relay rank 1 would send its whole block on rail 1, whose part is 229376 of every block:
  // the host's time 2.29x its split's, well above the relay's least gain.
  std::vector<std::vector<size_t>> offPer(2, std::vector<size_t>(4));
  for (int g = 0; g < 2; g++)
    for (int v = 0; v < 4; v++) offPer[size_t(g)][size_t(v)] = railSplit(host, count, own, ~0ull, RelayMode::Off, 256)[size_t(g)].vt[size_t(v)].count;
  const std::vector<size_t> hostPart = {409600, 104858, 409600, 124518};
  CHECK(stretchesBeyond(offPer, hostPart, 228, 100));
  CHECK_FALSE(stretchesBeyond(offPer, hostPart, 229, 100));
  // The host sends 2 x count: rail0 takes 2 x 819200; rank 0 has only count of its own, so rank 1 sends
  // the rest of rail0's part, 2 x 819200 - count, through rank 0, and nothing else moves.
  CHECK(relayedElems(split, own) <= 2 * 819200 - count);
  CHECK(relayedElems(split, own) + 2 * 256 >= 2 * 819200 - count);
  // Each VT carries the host's part of it, give or take the owners' slack on every VT.
  for (int v = 0; v < 4; v++) {
    const size_t sum = split[0].vt[size_t(v)].count + split[1].vt[size_t(v)].count, want = 2 * host.vt[size_t(v)].count;
    CHECK(sum + 4 * 256 >= want);
    CHECK(sum <= want + 4 * 256);
  }
  CHECK(split[0].vt[1].count + split[0].vt[3].count == 0);  // rank 0 never relays through rank 1
  // Off: each rank on its own NIC only, in proportion to the host's parts there.
  const auto off = railSplit(host, count, own, ~0ull, RelayMode::Off, 256);
  checkCovers(off, count);
  CHECK(relayedElems(off, own) == 0);
  CHECK(off[1].vt[1].count == 479351);  // 104858 / (104858 + 124518) of count, rounded
  // Force: the host's split for every rank, whatever it relays.
  const auto force = railSplit(host, count, own, ~0ull, RelayMode::Force, 256);
  CHECK(force[0].vt[1].count == host.vt[1].count);
  CHECK(relayedElems(force, own) == 2 * count - 819200 - 229376);
}
