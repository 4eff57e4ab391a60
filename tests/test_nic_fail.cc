// A NIC that dies in the middle of a collective is masked on every rank and the call runs again on the
// other VTs: the job goes on, every result is checked, and float reductions keep the bits of an undisturbed
// run. 3 namespaces x 4 NICs (one VT per NIC), one rank each, every NIC shaped so that a call lasts long
// enough to be interrupted. Three NICs of three different hosts die one after another, each while a chosen
// call runs (in place and out of place, every collective type over the ring and tree variants), leaving
// VT 0; then the links come back, and the VTs must rejoin and carry bytes again. Needs root and `ip netns`.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "harness.h"
#include "netns_bed.h"
#include "reference.h"
#include "rounding.h"

using namespace ptest;

namespace {

constexpr int kHosts = 3, kRails = 4, kFailures = 3;
// Failure f takes NIC f+1 of host kFailHost[f] down: VT f+1 loses a path; VT 0 stays whole.
constexpr int kFailHost[kFailures] = {1, 2, 0};
constexpr size_t kElems = 1 << 20;  // per call: 4 MiB of floats (per rank's block where the API counts one)
// Shared stamps.
constexpr int kCallIndex = 9;     // [9, 9 + kHosts): rank r: the index of the call it is issuing (rounds after the first)
constexpr int kDuration = 3;      // [3, 3 + kFailures): rank 0: round 0's time of each failure's call, ns
constexpr int kDownAt = 6;        // [6, 6 + kFailures): parent: when NIC f+1 went down, ns
constexpr int kWantUp = 14, kUp = 15;

struct Item {
  Coll coll;
  bool inPlace;
};
// Reductions run with inputs that round (bits compared with round 0); the others through CaseRun.
const Item kItems[] = {{Coll::AllReduce, false}, {Coll::AllGather, false},    {Coll::ReduceScatter, true},
                       {Coll::Broadcast, true},  {Coll::Reduce, false},       {Coll::AlltoAll, false},
                       {Coll::AllReduce, true},  {Coll::AllGather, true},     {Coll::ReduceScatter, false},
                       {Coll::Broadcast, false}, {Coll::Reduce, true},        {Coll::AlltoAll, true}};
constexpr int kItemCount = sizeof(kItems) / sizeof(kItems[0]);
// 0 undisturbed; 1-3 a failure each; 4 without the NICs; then, with them back, rounds until every VT
// rejoined (at most kRejoinRounds), and one more. Every rank decides the same: VT states change at agreed
// epochs.
constexpr int kFailedRounds = 5;
constexpr int kRejoinRounds = 20;

bool reduces(Coll c) { return c == Coll::AllReduce || c == Coll::ReduceScatter || c == Coll::Reduce; }

// Which item each failure interrupts, per algorithm: between the two, every collective type, in place
// and out of place.
const int kRingTargets[kFailures] = {0, 2, 5};
const int kTreeTargets[kFailures] = {6, 4, 3};

int64_t stampGet(Shared* s, int i) { return __atomic_load_n(&s->stamp[i], __ATOMIC_ACQUIRE); }
void stampSet(Shared* s, int i, int64_t v) { __atomic_store_n(&s->stamp[i], v, __ATOMIC_RELEASE); }

struct CallRecord {
  uint64_t epoch;
  int64_t startNs, endNs;
};

bool runItem(Rank& r, const Item& it, std::vector<uint8_t>* bits) {
  const size_t n = size_t(r.nranks);
  if (reduces(it.coll)) {
    const Shape s{it.coll, it.coll == Coll::ReduceScatter ? kElems / n : kElems, 1};
    return runRounding(r, r.comm, s, precclFloat, kSum, it.inPlace, bits);
  }
  Case c{it.coll, precclFloat, kSum, it.coll == Coll::Broadcast ? kElems : kElems / n, it.inPlace, 2, 7};
  CaseRun run(r, c);
  return r.ok(run.issue(), run.name()) && run.check();
}

bool allLive(Rank& r, precclVtStats_t* st) {
  int nv = kRails;
  if (!r.ok(precclCommGetVtStats(r.comm, st, &nv), "CommGetVtStats") || !r.check(nv == kRails, "VT count")) return false;
  for (int v = 0; v < kRails; v++)
    if (st[v].state != precclVtLive) return false;
  return true;
}

void nicFailBody(Rank& r, const int* targets) {
  std::vector<std::vector<uint8_t>> first(kItemCount);
  std::vector<CallRecord> calls;
  std::vector<precclVtStats_t> failedStats;
  int extraRounds = 0;
  uint64_t upEpoch = 0;
  // One call first, checked like the others: the communicator's first call pays for TCP's slow start,
  // and round 0's durations time where the failures strike (40 % into the call): measured on a cold first
  // call, that point fell after the whole warm call and the link went down between two calls.
  {
    std::vector<uint8_t> warm;
    if (!runItem(r, kItems[0], &warm)) return;
  }
  for (int round = 0;; round++) {
    if (round == kFailedRounds) {
      // The failures' state, then the links back up; the masked VTs rejoin once probed.
      precclVtStats_t st[kRails];
      allLive(r, st);
      failedStats.assign(st, st + kRails);
      if (r.rank == 0) stampSet(r.shared, kWantUp, 1);
      const double end = nowSeconds() + 30;
      while (!stampGet(r.shared, kUp) && nowSeconds() < end) usleep(10 * 1000);
      precclCommGetEpoch(r.comm, &upEpoch);
    }
    if (round > kFailedRounds) {
      precclVtStats_t st[kRails];
      if (allLive(r, st) || round > kFailedRounds + kRejoinRounds) extraRounds++;
      if (extraRounds == 2) {
        if (!r.check(allLive(r, st), "the VTs whose NICs came back did not rejoin within " + std::to_string(kRejoinRounds) +
                                         " rounds of " + std::to_string(kItemCount) + " calls"))
          return;
        if (r.rank == 0)
          for (int v = 1; v < kRails; v++)
            r.info("VT " + std::to_string(v) + " rejoined " + std::to_string(st[v].stateEpoch - upEpoch) +
                   " calls after the links came up");
        for (int v = 1; v < kRails; v++)
          r.check(st[v].lastBytes > 0, "VT " + std::to_string(v) + " carried nothing in the last call after it rejoined");
        break;
      }
    }
    for (int i = 0; i < kItemCount; i++) {
      const Item& it = kItems[i];
      if (round > 0) stampSet(r.shared, kCallIndex + r.rank, round * kItemCount + i);
      CallRecord rec{};
      precclCommGetEpoch(r.comm, &rec.epoch);
      rec.startNs = nowNs();
      std::vector<uint8_t> got;
      const bool ok = runItem(r, it, &got);
      rec.endNs = nowNs();
      calls.push_back(rec);
      const std::string what = std::string(collName(it.coll)) + (it.inPlace ? " in place" : "") + ", round " +
                               std::to_string(round);
      if (!ok) return;
      if (round == 0) {
        for (int f = 0; f < kFailures; f++)
          if (r.rank == 0 && targets[f] == i) stampSet(r.shared, kDuration + f, rec.endNs - rec.startNs);
        if (reduces(it.coll)) {
          const Shape s{it.coll, it.coll == Coll::ReduceScatter ? kElems / size_t(r.nranks) : kElems, 1};
          if (!got.empty() && !nearReference(r, s, precclFloat, kSum, got, what)) return;
          first[i] = got;
        }
      } else if (reduces(it.coll) && got != first[i]) {
        size_t e = 0;
        while (e + 4 <= got.size() && !memcmp(&got[e], &first[i][e], 4)) e += 4;
        r.fail(what + ": element " + std::to_string(e / 4) + " is " + exact(loadValue(precclFloat, got.data(), e / 4)) +
               ", undisturbed " + exact(loadValue(precclFloat, first[i].data(), e / 4)));
        return;
      }
    }
  }
  // Every failed NIC's VT was masked, from the call that ran when its link went down (or the next one, if
  // that call had moved all its bytes on the VT already); VT 0 stayed live.
  const precclVtStats_t* st = failedStats.data();
  r.check(st[0].state == precclVtLive, "VT 0 is masked");
  for (int f = 0; f < kFailures; f++) {
    const int vt = f + 1;
    const int64_t down = stampGet(r.shared, kDownAt + f);
    uint64_t during = ~0ull;
    for (const CallRecord& c : calls)
      if (c.startNs <= down && down < c.endNs) during = c.epoch;
    r.check(st[vt].state == precclVtMasked, "VT " + std::to_string(vt) + " is not masked after its NIC died");
    r.check(during != ~0ull, "NIC " + std::to_string(vt) + " went down between two calls, not inside one");
    r.check(st[vt].stateEpoch == during || st[vt].stateEpoch == during + 1,
            "VT " + std::to_string(vt) + " was masked from epoch " + std::to_string(st[vt].stateEpoch) +
                ", its NIC went down in epoch " + std::to_string(during));
  }
}

void nicFailGroup(const char* algo, const int* targets) {
  auto bed = testBed(kHosts, kRails);
  if (!bed) return;
  std::string log;
  bool shaped = true;
  for (int h = 0; h < kHosts; h++)
    for (int rail = 0; rail < kRails; rail++) shaped = bed->shape(h, rail, "100mbit", &log) && shaped;
  INFO("tc: " << log);
  REQUIRE(shaped);
  GroupOptions opt;
  opt.env = {{"PRECCL_SOCKET_IFNAME", "rail"}, {"PRECCL_NVTS", std::to_string(kRails)}, {"PRECCL_ALGO", algo},
             {"PRECCL_TIMEOUT", "20"},        {"PRECCL_CHECK_ALLOC", "1"},             {"PRECCL_DEBUG", "WARN"}};
  opt.timeoutSec = 240;
  opt.beforeInit = [&](int rank) { enterNs(bed->ns(rank)); };
  bool linksOk = true;
  std::string linkLog;
  opt.parentDuringRun = [&](Shared* s) {
    for (int f = 0; f < kFailures; f++) {
      const int64_t index = (f + 1) * kItemCount + targets[f];
      const double end = nowSeconds() + 60;
      // Every rank inside the call, not only rank 0: a rank still checking the previous call's results
      // would see the link go down between two of its calls.
      auto slowest = [s] {
        int64_t m = INT64_MAX;
        for (int h = 0; h < kHosts; h++) m = std::min(m, stampGet(s, kCallIndex + h));
        return m;
      };
      while (slowest() < index && nowSeconds() < end) usleep(1000);
      usleep(useconds_t(stampGet(s, kDuration + f) * 4 / 10 / 1000));  // 40 % into the call
      linksOk = bed->setLink(kFailHost[f], f + 1, false, &linkLog) && linksOk;
      stampSet(s, kDownAt + f, nowNs());
    }
    const double end = nowSeconds() + 60;
    while (!stampGet(s, kWantUp) && nowSeconds() < end) usleep(10 * 1000);
    for (int f = 0; f < kFailures; f++) linksOk = bed->setLink(kFailHost[f], f + 1, true, &linkLog) && linksOk;
    stampSet(s, kUp, 1);
  };
  GroupResult g = runGroup(kHosts, opt, [&](Rank& r) { nicFailBody(r, targets); });
  INFO("ip link: " << linkLog);
  CHECK(linksOk);
  reportToCatch(std::string("NICs failing mid-collective, ") + algo, g);
  CHECK(bed->teardown());
}

}  // namespace

TEST_CASE("NICs that die mid-collective are masked and the calls retried bit-exactly: ring", "[netns]") {
  nicFailGroup("ring", kRingTargets);
}

TEST_CASE("NICs that die mid-collective are masked and the calls retried bit-exactly: tree", "[netns]") {
  nicFailGroup("tree", kTreeTargets);
}
