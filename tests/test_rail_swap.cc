// A rail that came back takes over when the other dies (docs/failures.md, "Retry"): 2 namespaces x 2 NICs,
// one rank each, VT v on rail v. Rail 1 of host 1 goes down and its VT is masked; the link returns, and
// before any call could take the VT back, rail 0 of host 1 goes down for longer than PRECCL_TIMEOUT.
// The next call must succeed on the returned rail, with its result checked, instead of waiting for the
// dead one until "no VT is left"; when rail 0 returns it must rejoin. Needs root and `ip netns`.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "harness.h"
#include "netns_bed.h"
#include "reference.h"

using namespace ptest;

namespace {

constexpr int kHosts = 2, kRails = 2, kHost = 1;
constexpr int kTimeoutEnv = 5;          // PRECCL_TIMEOUT here
constexpr double kRail0Down = 3.0 * kTimeoutEnv;  // rail 0 stays down this long unless the ranks are done
// Shared stamps, each set once: by the ranks (rank 0) or by the parent.
constexpr int kWarm = 0;         // rank 0: warmed up; the parent takes rail 1 down
constexpr int kRail1Down = 1;    // parent
constexpr int kRail1Masked = 2;  // rank 0: VT 1 is masked; the parent swaps the rails
constexpr int kSwapped = 3;      // parent: rail 1 is up, rail 0 down
constexpr int kSurvived = 4;     // rank 0: the call after the swap succeeded; the parent brings rail 0 back
constexpr int kRail0Up = 5;      // parent

int64_t stampGet(Shared* s, int i) { return __atomic_load_n(&s->stamp[i], __ATOMIC_ACQUIRE); }
void stampSet(Shared* s, int i) { __atomic_store_n(&s->stamp[i], int64_t(1), __ATOMIC_RELEASE); }
bool waitStamp(Shared* s, int i, double seconds) {
  const double end = nowSeconds() + seconds;
  while (!stampGet(s, i) && nowSeconds() < end) usleep(2000);
  return stampGet(s, i) != 0;
}

int vtState(Rank& r, int vt) {
  precclVtStats_t st[kRails];
  int nv = kRails;
  if (precclCommGetVtStats(r.comm, st, &nv) != precclSuccess || vt >= nv) return -1;
  return st[vt].state;
}

// Checked calls until VT `vt` is in `state` on this rank (every rank agrees on the mask at the same epoch).
bool callUntil(Rank& r, int vt, int state, uint32_t& seed, const std::string& what) {
  const double end = nowSeconds() + 30;
  while (vtState(r, vt) != state) {
    if (nowSeconds() > end) return r.check(false, what + ": not within 30 s");
    if (!runCase(r, Case{Coll::AllReduce, precclFloat, kSum, 262147, seed % 2 == 0, 0, seed})) return false;
    seed++;
  }
  return true;
}

void swapBody(Rank& r) {
  uint32_t seed = 11;
  if (!runCase(r, Case{Coll::AllReduce, precclFloat, kSum, 1031, false, 0, seed++})) return;
  if (r.rank == 0) stampSet(r.shared, kWarm);
  if (!r.check(waitStamp(r.shared, kRail1Down, 30), "rail 1 never went down")) return;
  if (!callUntil(r, 1, precclVtMasked, seed, "VT 1 masked after rail 1 went down")) return;
  if (r.rank == 0) stampSet(r.shared, kRail1Masked);
  if (!r.check(waitStamp(r.shared, kSwapped, 30), "the rails were never swapped")) return;
  // No call ran since rail 1 returned, so VT 1 is still masked: this call finds VT 0 dead and must move.
  r.check(vtState(r, 1) == precclVtMasked, "VT 1 rejoined before the swap");
  const double t0 = nowSeconds();
  if (!runCase(r, Case{Coll::AllReduce, precclFloat, kSum, 262147, true, 0, seed++})) return;
  r.info("the call after the swap took " + std::to_string(nowSeconds() - t0) + " s");
  // VT 1 is live again, or probing (its own telemetry of the retry is not in the model yet).
  r.check(vtState(r, 0) == precclVtMasked && vtState(r, 1) != precclVtMasked,
          "after the swap VT 0 should be masked and VT 1 live");
  if (r.rank == 0) stampSet(r.shared, kSurvived);
  if (!r.check(waitStamp(r.shared, kRail0Up, 30), "rail 0 never came back")) return;
  callUntil(r, 0, precclVtLive, seed, "VT 0 rejoined after rail 0 came back");
}

}  // namespace

TEST_CASE("a rail that came back takes over when the other dies", "[netns]") {
  auto bed = testBed(kHosts, kRails);
  if (!bed) return;
  GroupOptions opt;
  opt.env = {{"PRECCL_SOCKET_IFNAME", "rail"}, {"PRECCL_NVTS", std::to_string(kRails)},
             {"PRECCL_TIMEOUT", std::to_string(kTimeoutEnv)}, {"PRECCL_DEBUG", "WARN"}};
  opt.timeoutSec = 150;
  opt.beforeInit = [&](int rank) { enterNs(bed->ns(rank)); };
  bool linksOk = true;
  std::string linkLog;
  opt.parentDuringRun = [&](Shared* s) {
    auto failed = [s] { return __atomic_load_n(&s->failed, __ATOMIC_ACQUIRE) > 0; };
    if (!waitStamp(s, kWarm, 60) || failed()) return;
    linksOk = bed->setLink(kHost, 1, false, &linkLog) && linksOk;
    stampSet(s, kRail1Down);
    if (!waitStamp(s, kRail1Masked, 40) || failed()) return;
    linksOk = bed->setLink(kHost, 1, true, &linkLog) && linksOk;
    linksOk = bed->setLink(kHost, 0, false, &linkLog) && linksOk;
    stampSet(s, kSwapped);
    const double end = nowSeconds() + kRail0Down;
    while (!stampGet(s, kSurvived) && !failed() && nowSeconds() < end) usleep(5000);
    linksOk = bed->setLink(kHost, 0, true, &linkLog) && linksOk;
    stampSet(s, kRail0Up);
  };
  GroupResult g = runGroup(kHosts, opt, swapBody);
  INFO("ip link: " << linkLog);
  CHECK(linksOk);
  reportToCatch("rail 1 returns, rail 0 dies", g);
  CHECK(bed->teardown());
}
