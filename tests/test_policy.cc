// The allocation policies and the alpha-beta model, driven by the deterministic simulator (no sockets).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>

#include "policy/model.h"
#include "policy/policy.h"
#include "policy/sim.h"

using namespace preccl;

namespace {

constexpr uint64_t kGiga = 1'000'000'000;

SimConfig fourVtsOneSlow() {
  SimConfig cfg;
  cfg.vt.assign(4, SimVt{kGiga, 20'000});
  cfg.vt[3].rateBps = kGiga / 4;  // one NIC at 25%
  return cfg;
}

AllocRequest request(size_t count, size_t esz, int nVTs) {
  AllocRequest r;
  r.count = count;
  r.elemBytes = esz;
  r.nVTs = nVTs;
  return r;
}

// Max/min completion time over the VTs that carried bytes, from the simulator's per-VT times.
double timeRatio(const SimConfig& cfg, const SimStep& s, size_t esz) {
  SimEpoch r = simEpoch(cfg, s.epoch, s.al, esz);
  uint64_t lo = UINT64_MAX, hi = 0;
  for (uint64_t t : r.vtNs)
    if (t) lo = std::min(lo, t), hi = std::max(hi, t);
  return static_cast<double>(hi) / static_cast<double>(lo);
}

void checkCovers(const Allocation& al, const AllocRequest& req) {
  REQUIRE(al.vt.size() == static_cast<size_t>(req.nVTs));
  REQUIRE(al.coversExactly(req.count));
  const size_t grain = std::max<size_t>(1, req.grainBytes / req.elemBytes);
  int lastUsed = -1;
  for (int v = 0; v < req.nVTs; v++)
    if (al.vt[v].count) lastUsed = v;
  for (int v = 0; v < req.nVTs; v++)
    if (v != lastUsed) REQUIRE(al.vt[v].count % grain == 0);
}

}  // namespace

TEST_CASE("policy names round-trip", "[policy]") {
  for (PolicyKind k : {PolicyKind::Static, PolicyKind::Aimd, PolicyKind::Preccl}) {
    PolicyKind out = PolicyKind::Static;
    REQUIRE(policyFromName(policyName(k), &out));
    REQUIRE(out == k);
  }
  PolicyKind out;
  REQUIRE_FALSE(policyFromName("texcp", &out));
}

TEST_CASE("every policy covers the range exactly, grain-aligned, for many shapes", "[policy]") {
  for (PolicyKind k : {PolicyKind::Static, PolicyKind::Aimd, PolicyKind::Preccl}) {
    for (int n : {1, 2, 3, 4, 7, 32}) {
      for (size_t esz : {1, 2, 4, 8}) {
        for (size_t count : {size_t{0}, size_t{1}, size_t{1000}, size_t{123457}, size_t{(8 << 20) + 3}}) {
          SimConfig cfg;
          for (int v = 0; v < n; v++) cfg.vt.push_back(SimVt{kGiga * (1 + v % 5) / 5, 1'000u * (v % 3)});
          const AllocRequest req = request(count, esz, n);
          for (const SimStep& s : simRun(k, cfg, req, 6)) {
            checkCovers(s.al, req);
            REQUIRE(s.al.total() == count);
          }
        }
      }
    }
  }
}

TEST_CASE("identical telemetry gives identical allocations and model state", "[policy]") {
  SimConfig cfg = fourVtsOneSlow();
  cfg.noisePermille = 30;
  cfg.changes.push_back({12, 1, SimVt{kGiga / 3, 50'000}});
  const AllocRequest req = request((16 << 20) + 17, 4, 4);
  for (PolicyKind k : {PolicyKind::Aimd, PolicyKind::Preccl}) {
    auto a = simRun(k, cfg, req, 30), b = simRun(k, cfg, req, 30);
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); i++) {
      REQUIRE(a[i].al.digest() == b[i].al.digest());
      for (size_t v = 0; v < a[i].al.vt.size(); v++) {
        REQUIRE(a[i].al.vt[v].offset == b[i].al.vt[v].offset);
        REQUIRE(a[i].al.vt[v].count == b[i].al.vt[v].count);
      }
    }
  }
  // Two "ranks", each with its own state, fed the same telemetry: byte-identical model and allocation.
  PolicyState r0, r1;
  AllocKey key;
  for (uint64_t e = 1; e <= 20; e++) {
    SimEpoch t = simEpoch(cfg, e, staticAllocation(req), 4);
    Allocation x = decide(PolicyKind::Preccl, r0, req, key, &t.tel, kAllHealthy);
    Allocation y = decide(PolicyKind::Preccl, r1, req, key, &t.tel, kAllHealthy);
    REQUIRE(x.digest() == y.digest());
    for (size_t v = 0; v < r0.model.vt.size(); v++) {
      REQUIRE(r0.model.vt[v].alphaNs == r1.model.vt[v].alphaNs);
      REQUIRE(r0.model.vt[v].betaQ == r1.model.vt[v].betaQ);
    }
  }
}

TEST_CASE("preccl converges to equal completion times: one NIC at 25%", "[policy]") {
  const SimConfig cfg = fourVtsOneSlow();
  const AllocRequest req = request(16 << 20, 4, 4);
  auto pre = simRun(PolicyKind::Preccl, cfg, req, 30);
  auto sta = simRun(PolicyKind::Static, cfg, req, 30);
  size_t first = 0;
  for (size_t i = 0; i < pre.size() && !first; i++)
    if (timeRatio(cfg, pre[i], 4) < 1.1) first = i + 1;
  INFO("first epoch with max/min completion ratio < 1.1: " << first);
  REQUIRE(first > 0);
  REQUIRE(first <= 10);
  for (size_t i = first; i < pre.size(); i++) {
    REQUIRE(timeRatio(cfg, pre[i], 4) < 1.1);
    REQUIRE(static_cast<double>(pre[i].idealNs) / pre[i].cctNs >= 0.9);      // near the capacity limit
    REQUIRE(static_cast<double>(sta[i].cctNs) / pre[i].cctNs >= 1.8);        // vs NCCL's equal split
  }
  // The slow VT carries about a quarter of a fast one's bytes (1/13 of the total), not the floor.
  const auto& last = pre.back().al.vt;
  REQUIRE(last[3].count * 4 == Approx(last[0].count).epsilon(0.02));
}

TEST_CASE("preccl and aimd bound each VT's pipeline piece by its modelled rate; static does not", "[policy]") {
  SimConfig cfg = fourVtsOneSlow();
  for (SimVt& v : cfg.vt) v.rateBps /= 50;  // 20 MB/s and 5 MB/s: links where pieces matter
  const AllocRequest req = request(4 << 20, 4, 4);
  for (PolicyKind k : {PolicyKind::Preccl, PolicyKind::Aimd}) {
    auto run = simRun(k, cfg, req, 6);
    REQUIRE(run.front().al.vt[0].pieceCapBytes == 0);  // nothing known yet
    const auto& al = run.back().al.vt;
    // kPieceNs at the VT's rate: 5 ms at 20 MB/s = 100 kB, at 5 MB/s 25 kB, raised to the 64 KiB floor.
    CHECK(al[0].pieceCapBytes == Approx(100'000).epsilon(0.05));
    CHECK(al[3].pieceCapBytes == kMinPieceCapBytes);
  }
  for (const SimStep& s : simRun(PolicyKind::Static, cfg, req, 6))
    for (const VtRange& r : s.al.vt) REQUIRE(r.pieceCapBytes == 0);
  // A run that starts with a 4-byte warm-up call: its time is latency, so as a per-byte rate it is
  // thousands of times too slow. No cap from it; the first large call's telemetry sets the caps.
  PolicyState st;
  const SimEpoch tiny = simEpoch(cfg, 1, staticAllocation(request(1, 4, 4)), 4);
  Allocation al = decide(PolicyKind::Preccl, st, req, AllocKey{}, &tiny.tel, kAllHealthy);
  REQUIRE(st.model.known(0));
  for (const VtRange& r : al.vt) REQUIRE(r.pieceCapBytes == 0);
  const SimEpoch big = simEpoch(cfg, 2, al, 4);
  al = decide(PolicyKind::Preccl, st, req, AllocKey{}, &big.tel, kAllHealthy);
  CHECK(al.vt[0].pieceCapBytes == Approx(100'000).epsilon(0.05));
  // Part of the digest: ranks that disagreed on a piece would fail the allocation check.
  Allocation a = staticAllocation(req), b = a;
  b.vt[1].pieceCapBytes = 1 << 20;
  REQUIRE(a.digest() != b.digest());
}

TEST_CASE("VTs that share a NIC: preccl balances the links and splits each equally", "[policy]") {
  // 2 NICs x 2 VTs (VT v on NIC v mod 2), NIC 0 at 25%: the VTs of one NIC share its rate fairly, so the
  // one with fewer bytes looks slower per byte than it is. Balancing VTs one by one would chase that; the
  // policy, told which VTs share a link, balances the links and keeps each link's VTs equal.
  for (uint32_t noise : {0u, 20u}) {
    SimConfig cfg;
    cfg.vt.assign(4, SimVt{kGiga, 20'000});
    cfg.vt[0].rateBps = cfg.vt[2].rateBps = kGiga / 4;
    cfg.link = {0, 1, 0, 1};
    cfg.noisePermille = noise;
    const AllocRequest req = request(16 << 20, 4, 4);
    auto pre = simRun(PolicyKind::Preccl, cfg, req, 40);
    INFO("noise " << noise);
    for (size_t i = 3; i < pre.size(); i++) {
      const auto& v = pre[i].al.vt;
      INFO("epoch " << pre[i].epoch << " counts " << v[0].count << " " << v[1].count << " " << v[2].count << " " << v[3].count);
      REQUIRE(static_cast<double>(pre[i].idealNs) / pre[i].cctNs >= 0.97);
      REQUIRE(std::abs(static_cast<double>(v[0].count) - static_cast<double>(v[2].count)) <= 128);  // a grain
      REQUIRE(std::abs(static_cast<double>(v[1].count) - static_cast<double>(v[3].count)) <= 128);
      REQUIRE(static_cast<double>(v[0].count + v[2].count) / req.count == Approx(0.2).margin(0.01));  // 1/(1+4)
    }
    REQUIRE(simMaxShareChange(pre, 10, 40) < kShareOne / 50);  // < 2% per epoch
  }
}

TEST_CASE("preccl holds still on a fixed environment while aimd oscillates", "[policy]") {
  for (uint32_t noise : {0u, 20u}) {
    SimConfig cfg = fourVtsOneSlow();
    cfg.noisePermille = noise;  // +-2%: a measured environment is never exactly fixed
    const AllocRequest req = request(16 << 20, 4, 4);
    auto pre = simRun(PolicyKind::Preccl, cfg, req, 60);
    auto aimd = simRun(PolicyKind::Aimd, cfg, req, 60);
    const uint32_t two = kShareOne / 50;
    INFO("noise " << noise << " preccl max change " << simMaxShareChange(pre, 10, 60) << " aimd "
                  << simMaxShareChange(aimd, 10, 60) << " (2% = " << two << ")");
    REQUIRE(simMaxShareChange(pre, 10, 60) < two);
    REQUIRE(simMaxShareChange(aimd, 10, 60) > 5 * two);  // visibly: > 10% moves after 10 epochs
    uint64_t worstAimd = 0, worstPre = 0;
    for (size_t i = 10; i < 60; i++) worstAimd = std::max(worstAimd, aimd[i].cctNs), worstPre = std::max(worstPre, pre[i].cctNs);
    REQUIRE(worstAimd > worstPre * 11 / 10);
  }
}

TEST_CASE("preccl follows a rate change within a few epochs and ignores one noisy epoch", "[policy]") {
  SimConfig cfg = fourVtsOneSlow();
  cfg.changes.push_back({20, 1, SimVt{kGiga / 4, 20'000}});  // contention starts on VT 1
  cfg.changes.push_back({40, 1, SimVt{kGiga, 20'000}});      // and stops
  cfg.spikes.push_back({30, 0, 400});                        // VT 0 once 4x slower: noise
  const AllocRequest req = request(16 << 20, 4, 4);
  auto tr = simRun(PolicyKind::Preccl, cfg, req, 60);
  for (uint64_t change : {20u, 40u}) {
    // By the third CCT after the change (epoch change+2) the CCT is within 10% of the new optimum.
    for (uint64_t e = change + 2; e < change + 15; e++) {
      if (e == 30) continue;  // the spike epoch itself is slow whatever the split
      const SimStep& s = tr[e - 1];
      INFO("epoch " << e << " cct " << s.cctNs << " ideal " << s.idealNs);
      REQUIRE(s.cctNs * 10 <= s.idealNs * 11);
    }
  }
  // The spike at epoch 30 moves nothing: the median of 3 drops it.
  for (uint64_t e = 30; e < 40; e++) REQUIRE(tr[e].al.digest() == tr[28].al.digest());
}

TEST_CASE("the model fits alpha and beta from two message sizes and tracks a step", "[policy]") {
  SimConfig cfg;
  cfg.nranks = 2;
  cfg.vt.assign(2, SimVt{kGiga, 200'000});  // 200 us latency, 1 GB/s: 1 ns per byte
  ModelState m;
  for (uint64_t e = 1; e <= 12; e++) {
    const AllocRequest req = request(e % 2 ? (1 << 20) : (4 << 20), 1, 2);
    m = modelUpdate(m, simEpoch(cfg, e, staticAllocation(req), 1).tel);
  }
  REQUIRE(m.version == 12);
  REQUIRE(m.vt[0].alphaNs == Approx(200'000).epsilon(0.01));
  REQUIRE(static_cast<double>(m.vt[0].betaQ) / (1 << kBetaShift) == Approx(1.0).epsilon(0.01));
  REQUIRE(modelEstimateNs(m, 1, 8 << 20) == Approx(200'000 + (8 << 20)).epsilon(0.01));
  // The same epoch again changes nothing.
  const ModelState again = modelUpdate(m, simEpoch(cfg, 12, staticAllocation(request(1 << 20, 1, 2)), 1).tel);
  REQUIRE(again.version == m.version);
  REQUIRE(again.vt[0].betaQ == m.vt[0].betaQ);
  // The rate halves at epoch 13: the estimate follows at the second epoch after it.
  cfg.changes.push_back({13, 0, SimVt{kGiga / 2, 200'000}});
  for (uint64_t e = 13; e <= 14; e++) {
    m = modelUpdate(m, simEpoch(cfg, e, staticAllocation(request(4 << 20, 1, 2)), 1).tel);
    const double beta = static_cast<double>(m.vt[0].betaQ) / (1 << kBetaShift);
    REQUIRE(beta == Approx(e == 13 ? 1.0 : 2.0).epsilon(0.02));
  }
  REQUIRE(m.vt[0].stallsPerMiB > 0);        // VT 0 now waits for its slower link
  REQUIRE(m.vt[1].alphaNs == Approx(200'000).epsilon(0.01));
}

TEST_CASE("small messages between large ones do not disturb beta", "[policy]") {
  // A benchmark loop: two 8-byte syncs after every 4 MiB call (each a CCT with its own telemetry). The
  // syncs take 200 us of latency with 2% noise: after alpha is taken out, their few ns of body are
  // swamped by microseconds of noise, and as per-byte samples they are wrong by 100-1000x; two in a row
  // would win beta's median of 3.
  SimConfig cfg;
  cfg.nranks = 2;
  cfg.noisePermille = 20;
  cfg.vt.assign(2, SimVt{kGiga, 200'000});
  ModelState m;
  uint64_t e = 0;
  for (int round = 0; round < 6; round++) {
    m = modelUpdate(m, simEpoch(cfg, ++e, staticAllocation(request(4 << 20, 1, 2)), 1).tel);
    for (int k = 0; k < 2; k++) m = modelUpdate(m, simEpoch(cfg, ++e, staticAllocation(request(8, 1, 2)), 1).tel);
    // Round 0 has no alpha yet (beta then holds the latency too, 10% here); from round 1 on, 1 ns/B.
    if (round > 0) REQUIRE(static_cast<double>(m.vt[0].betaQ) / (1 << kBetaShift) == Approx(1.0).epsilon(0.02));
  }
  REQUIRE(m.vt[0].alphaNs == Approx(200'000).epsilon(0.05));  // the small ones still teach alpha
}

TEST_CASE("beta: a change that starts inside an epoch is taken at its first whole epoch; a spike is not", "[policy]") {
  // One VT, 1 MiB per epoch, no latency: each epoch's sample is its ns per byte.
  auto feed = [](ModelState m, uint64_t epoch, double nsPerByte) {
    EpochTelemetry t;
    t.reset(epoch, 1, 1);
    t.at(0, 0).bytes = 1 << 20;
    t.at(0, 0).elapsedNs = static_cast<uint64_t>(nsPerByte * (1 << 20));
    return modelUpdate(m, t);
  };
  auto beta = [](const ModelState& m) { return static_cast<double>(m.vt[0].betaQ) / (1 << kBetaShift); };
  ModelState m;
  uint64_t e = 0;
  for (int i = 0; i < 5; i++) m = feed(m, ++e, 1.0);
  SECTION("a change: partial epoch (1.6), then whole ones (2.5)") {
    m = feed(m, ++e, 1.6);
    REQUIRE(beta(m) == Approx(1.0));  // one sample off: could be noise
    m = feed(m, ++e, 2.5);
    REQUIRE(beta(m) == Approx(2.5));  // confirmed: the newest, not the median (1.6)
    m = feed(m, ++e, 2.5);
    REQUIRE(beta(m) == Approx(2.5));
  }
  SECTION("a change that began late in its epoch: a partial sample off by only 1/8, then whole ones") {
    m = feed(m, ++e, 1.125);
    REQUIRE(beta(m) == Approx(1.0));
    m = feed(m, ++e, 2.5);
    REQUIRE(beta(m) == Approx(2.5));  // the partial one was off by more than 1/10 on the same side
  }
  SECTION("a change that builds up over epochs: each further step is taken at once") {
    m = feed(m, ++e, 1.5);
    REQUIRE(beta(m) == Approx(1.0));
    m = feed(m, ++e, 2.2);
    REQUIRE(beta(m) == Approx(2.2));  // confirmed
    m = feed(m, ++e, 3.0);
    REQUIRE(beta(m) == Approx(3.0));  // goes on: not the median (2.2)
    m = feed(m, ++e, 3.1);
    REQUIRE(beta(m) == Approx(3.0));  // within 1/5: the median again
    m = feed(m, ++e, 5.0);
    REQUIRE(beta(m) == Approx(3.1));  // the change had ended: a lone spike is dropped
  }
  SECTION("a spike right after a change is taken once and undone at the next epoch") {
    m = feed(m, ++e, 1.6);
    m = feed(m, ++e, 2.5);
    REQUIRE(beta(m) == Approx(2.5));
    m = feed(m, ++e, 6.0);
    REQUIRE(beta(m) == Approx(6.0));
    m = feed(m, ++e, 2.5);
    REQUIRE(beta(m) == Approx(2.5));  // the median of (2.5, 6.0, 2.5)
  }
  SECTION("a change down that builds up") {
    m = feed(m, ++e, 0.7);
    m = feed(m, ++e, 0.5);
    REQUIRE(beta(m) == Approx(0.5));
    m = feed(m, ++e, 0.3);
    REQUIRE(beta(m) == Approx(0.3));
    m = feed(m, ++e, 0.9);
    REQUIRE(beta(m) == Approx(0.5));  // the other side: the median of (0.5, 0.3, 0.9)
  }
  SECTION("a spike after a sample within 1/10 is not a change") {
    m = feed(m, ++e, 1.08);
    m = feed(m, ++e, 2.5);
    REQUIRE(beta(m) == Approx(1.08));  // the median of (1.0, 1.08, 2.5)
  }
  SECTION("a spike after a sample off on the other side is not a change") {
    m = feed(m, ++e, 0.85);
    m = feed(m, ++e, 2.5);
    REQUIRE(beta(m) == Approx(1.0));  // the median of (1.0, 0.85, 2.5)
  }
  SECTION("a spike is ignored, and so is noise within 1/5") {
    m = feed(m, ++e, 3.0);
    REQUIRE(beta(m) == Approx(1.0));
    m = feed(m, ++e, 1.0);
    REQUIRE(beta(m) == Approx(1.0));
    m = feed(m, ++e, 1.15);
    m = feed(m, ++e, 1.1);
    REQUIRE(beta(m) == Approx(1.1));  // the median of (1.0, 1.15, 1.1): no jump to the newest
  }
}

TEST_CASE("one VT, 32 VTs, zero bytes", "[policy]") {
  SECTION("one VT carries everything") {
    SimConfig cfg;
    cfg.vt = {SimVt{kGiga, 0}};
    const AllocRequest req = request(100'003, 4, 1);
    for (const SimStep& s : simRun(PolicyKind::Preccl, cfg, req, 5)) {
      REQUIRE(s.al.vt[0].offset == 0);
      REQUIRE(s.al.vt[0].count == 100'003);
    }
  }
  SECTION("32 VTs with mixed rates converge") {
    SimConfig cfg;
    for (int v = 0; v < 32; v++) cfg.vt.push_back(SimVt{kGiga * (1 + v % 4) / 4, 10'000u + 1'000u * (v % 5)});
    const AllocRequest req = request(64 << 20, 4, 32);
    auto tr = simRun(PolicyKind::Preccl, cfg, req, 20);
    for (size_t i = 9; i < tr.size(); i++) {
      checkCovers(tr[i].al, req);
      REQUIRE(timeRatio(cfg, tr[i], 4) < 1.1);
    }
    REQUIRE(simMaxShareChange(tr, 10, 20) < kShareOne / 50);
  }
  SECTION("zero bytes: every range empty") {
    const AllocRequest req = request(0, 4, 4);
    PolicyState st;
    SimEpoch t = simEpoch(fourVtsOneSlow(), 1, staticAllocation(request(1 << 20, 4, 4)), 4);
    for (PolicyKind k : {PolicyKind::Static, PolicyKind::Aimd, PolicyKind::Preccl}) {
      Allocation al = decide(k, st, req, AllocKey{}, &t.tel, kAllHealthy);
      REQUIRE(al.vt.size() == 4);
      for (const VtRange& r : al.vt) REQUIRE(r.count == 0);
      REQUIRE(al.coversExactly(0));
    }
  }
}

TEST_CASE("a stuck VT keeps only the floor; a masked VT gets nothing and comes back", "[policy]") {
  SimConfig cfg;
  cfg.vt.assign(4, SimVt{kGiga, 20'000});
  cfg.vt[2].rateBps = 0;  // stuck: reports the timeout
  const AllocRequest req = request(16 << 20, 4, 4);
  auto tr = simRun(PolicyKind::Preccl, cfg, req, 8);
  const size_t floorElems = req.count / (kFloorDiv * 4);
  const size_t grain = req.grainBytes / req.elemBytes;
  for (size_t i = 2; i < tr.size(); i++) {
    REQUIRE(tr[i].al.vt[2].count > 0);
    REQUIRE(tr[i].al.vt[2].count <= floorElems + grain);
  }
  // Masked: zero elements, under every policy; the live VTs split the range among themselves.
  const uint64_t mask = kAllHealthy & ~(1ull << 2);
  for (PolicyKind k : {PolicyKind::Static, PolicyKind::Aimd, PolicyKind::Preccl}) {
    for (const SimStep& s : simRun(k, cfg, req, 6, 1, mask)) {
      REQUIRE(s.al.vt[2].count == 0);
      checkCovers(s.al, req);
      if (k == PolicyKind::Preccl && s.epoch > 1) REQUIRE(s.cctNs < 10'000'000'000ull);
    }
  }
  // Recovery: a VT unmasked later starts at the floor and grows back to its equal-time share.
  cfg.vt[2].rateBps = kGiga;
  PolicyState st;
  std::vector<EpochTelemetry> tel;
  Allocation al;
  for (uint64_t e = 1; e <= 12; e++) {
    const uint64_t m = e <= 5 ? mask : kAllHealthy;
    al = decide(PolicyKind::Preccl, st, req, AllocKey{}, e > 1 ? &tel.back() : nullptr, m);
    if (e <= 5) REQUIRE(al.vt[2].count == 0);
    if (e == 6) REQUIRE(al.vt[2].count <= floorElems + grain);
    // It shows as probing (live from epoch 6) until its telemetry of epoch 6 is in the model; static
    // gives it its share at once, so never.
    if (e >= 6) REQUIRE(vtProbing(PolicyKind::Preccl, st.model, 2, 6) == (e == 6));
    REQUIRE_FALSE(vtProbing(PolicyKind::Static, st.model, 2, 6));
    REQUIRE_FALSE(vtProbing(PolicyKind::Preccl, st.model, 2, 0));
    tel.push_back(simEpoch(cfg, e, al, 4).tel);
  }
  REQUIRE(al.vt[2].count == Approx(req.count / 4.0).epsilon(0.02));
  // No live VT at all: nothing is allocated, so the caller sees the range is not covered.
  PolicyState none;
  REQUIRE_FALSE(decide(PolicyKind::Preccl, none, req, AllocKey{}, nullptr, 0).coversExactly(req.count));
}

// Between telemetry epochs decide() reuses its last allocation (ShareSet::memo): it must be what a fresh
// computation gives, and any change of request, mask or model must bypass it.
TEST_CASE("a decision between epochs equals a fresh one; a changed request, mask or model is not reused", "[policy]") {
  const SimConfig cfg = fourVtsOneSlow();
  const AllocRequest req = request(16 << 20, 4, 4);
  PolicyState st;
  std::vector<EpochTelemetry> tel;
  Allocation al;
  for (uint64_t e = 1; e <= 6; e++) {
    al = decide(PolicyKind::Preccl, st, req, AllocKey{}, e > 1 ? &tel.back() : nullptr, kAllHealthy);
    tel.push_back(simEpoch(cfg, e, al, 4).tel);
  }
  al = decide(PolicyKind::Preccl, st, req, AllocKey{}, &tel.back(), kAllHealthy);  // folds epoch 6 in
  auto same = [](const Allocation& x, const Allocation& y) {
    REQUIRE(x.vt.size() == y.vt.size());
    for (size_t v = 0; v < x.vt.size(); v++) {
      REQUIRE(x.vt[v].offset == y.vt[v].offset);
      REQUIRE(x.vt[v].count == y.vt[v].count);
      REQUIRE(x.vt[v].pieceCapBytes == y.vt[v].pieceCapBytes);
    }
  };
  PolicyState fresh = st;
  for (auto& [k, set] : fresh.sets) set.memo.valid = false;
  const Allocation again = decide(PolicyKind::Preccl, st, req, AllocKey{}, &tel.back(), kAllHealthy);
  same(again, decide(PolicyKind::Preccl, fresh, req, AllocKey{}, &tel.back(), kAllHealthy));
  same(again, al);
  REQUIRE(again.vt[3].pieceCapBytes > 0);  // the model is known: the memo carries the piece caps too
  // Another count in the same size class: its own ranges, covering it exactly.
  AllocRequest other = req;
  other.count += 3;
  checkCovers(decide(PolicyKind::Preccl, st, other, AllocKey{}, &tel.back(), kAllHealthy), other);
  // A mask change: the masked VT gets nothing at once.
  const uint64_t mask = kAllHealthy & ~(1ull << 1);
  REQUIRE(decide(PolicyKind::Preccl, st, req, AllocKey{}, &tel.back(), mask).vt[1].count == 0);
  // New telemetry (the slow VT recovered): the shares move, not the memo's.
  SimConfig healed = cfg;
  healed.vt[3] = healed.vt[0];
  const EpochTelemetry next = simEpoch(healed, 7, again, 4).tel;
  const Allocation moved = decide(PolicyKind::Preccl, st, req, AllocKey{}, &next, kAllHealthy);
  REQUIRE(moved.vt[3].count > again.vt[3].count);
}

TEST_CASE("small messages use fewer VTs, sizes keep separate shares", "[policy]") {
  const SimConfig cfg = fourVtsOneSlow();
  PolicyState st;
  const AllocRequest big = request(16 << 20, 4, 4), small = request(10'000, 4, 4);  // 40 KB: one VT
  std::vector<EpochTelemetry> tel;
  for (uint64_t e = 1; e <= 6; e++) {
    Allocation al = decide(PolicyKind::Preccl, st, big, AllocKey{}, e > 1 ? &tel.back() : nullptr, kAllHealthy);
    tel.push_back(simEpoch(cfg, e, al, 4).tel);
  }
  const Allocation s = decide(PolicyKind::Preccl, st, small, AllocKey{}, &tel.back(), kAllHealthy);
  checkCovers(s, small);
  int used = 0;
  for (const VtRange& r : s.vt) used += r.count > 0;
  REQUIRE(used == 1);
  REQUIRE(s.vt[3].count == 0);  // the slow VT is never the one picked
  REQUIRE(policyClassKey(AllocKey{}, big) != policyClassKey(AllocKey{}, small));
  REQUIRE(policyShares(st, AllocKey{}, big) != policyShares(st, AllocKey{}, small));
}

// Prints the convergence table of docs/policy.md:  preccl-tests "[policy-table]"
TEST_CASE("policy convergence table", "[.][policy-table]") {
  struct Row { const char* name; SimConfig cfg; };
  std::vector<Row> rows;
  rows.push_back({"4 VTs, one at 25%", fourVtsOneSlow()});
  SimConfig c = fourVtsOneSlow();
  c.noisePermille = 20;
  rows.push_back({"same, +-2% jitter", c});
  c = fourVtsOneSlow();
  c.changes.push_back({20, 1, SimVt{kGiga / 4, 20'000}});
  c.changes.push_back({40, 1, SimVt{kGiga, 20'000}});
  rows.push_back({"VT 1 to 25% at 20, back at 40", c});
  c = SimConfig{};
  for (int v = 0; v < 32; v++) c.vt.push_back(SimVt{kGiga * (1 + v % 4) / 4, 10'000u + 1'000u * (v % 5)});
  rows.push_back({"32 VTs, rates 1:2:3:4", c});
  std::printf("| scenario | policy | capacity fraction e=2,3,5,10 | e=21,22,23 | e=41,42,43 | max share change e>=10 |\n");
  std::printf("| --- | --- | --- | --- | --- | --- |\n");
  for (const Row& r : rows) {
    const AllocRequest req = request(16 << 20, 4, static_cast<int>(r.cfg.vt.size()));
    for (PolicyKind k : {PolicyKind::Static, PolicyKind::Aimd, PolicyKind::Preccl}) {
      auto tr = simRun(k, r.cfg, req, 60);
      auto f = [&](uint64_t e) { return static_cast<double>(tr[e - 1].idealNs) / tr[e - 1].cctNs; };
      std::printf("| %s | %s | %.3f %.3f %.3f %.3f | %.3f %.3f %.3f | %.3f %.3f %.3f | %.2f%% |\n", r.name, policyName(k),
                  f(2), f(3), f(5), f(10), f(21), f(22), f(23), f(41), f(42), f(43),
                  100.0 * simMaxShareChange(tr, 10, 60) / kShareOne);
    }
  }
}
