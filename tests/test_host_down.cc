// A host that loses every NIC in the middle of a run has no path left: no VT can carry its bytes, so every
// rank's call must fail with a clear error within PRECCL_TIMEOUT plus a margin (never hang), the async
// error must be set, and CommAbort must return at once. 3 namespaces x 2 NICs, one rank each; both NICs
// of host 1 go down while the ranks run a loop of large AllReduces. Needs root and `ip netns`.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "harness.h"
#include "netns_bed.h"
#include "reference.h"

using namespace ptest;

namespace {

constexpr int kHosts = 3, kRails = 2, kDeadHost = 1;
constexpr double kTimeoutEnv = 5;                 // PRECCL_TIMEOUT in this test
constexpr double kErrorLimit = kTimeoutEnv + 5;  // seconds from the links going down to each rank's error
// Shared stamps: [0] when the links went down, [1] a rank is in the loop.

void hostDownBody(Rank& r) {
  if (!runCase(r, Case{Coll::AllReduce, precclFloat, kSum, 1031, false, 0, 5})) return;
  const size_t count = (size_t(16) << 20) / 4;
  std::vector<float> a(count, 1.0f), b(count, 0.0f);
  __atomic_store_n(&r.shared->stamp[1], int64_t(1), __ATOMIC_RELEASE);
  const double end = nowSeconds() + 60;
  precclResult_t res = precclSuccess;
  while (nowSeconds() < end) {
    res = precclAllReduce(a.data(), b.data(), count, precclFloat, precclSum, r.comm, nullptr);
    if (res != precclSuccess) break;
  }
  const int64_t downAt = __atomic_load_n(&r.shared->stamp[0], __ATOMIC_ACQUIRE);
  const double dt = downAt ? double(nowNs() - downAt) * 1e-9 : -1;
  const std::string msg = lastError(r.comm);
  if (!r.check(res != precclSuccess, "AllReduce kept succeeding for 60 s without host 1's NICs")) return;
  r.check(downAt != 0, "AllReduce failed (" + resultName(res) + ") before the links went down: " + msg);
  r.check(dt < kErrorLimit, "the error came " + std::to_string(dt) + " s after the links went down (PRECCL_TIMEOUT=" +
                                std::to_string(int(kTimeoutEnv)) + "): " + msg);
  r.check(msg.find("VT") != std::string::npos && msg.find("rank") != std::string::npos,
          "the error does not name the rank and VT it waited on: " + msg);
  r.info("error " + std::to_string(dt) + " s after the links went down: " + msg);
  precclResult_t async = precclSuccess;
  if (r.ok(precclCommGetAsyncError(r.comm, &async), "CommGetAsyncError"))
    r.check(async != precclSuccess && async != precclInProgress, "CommGetAsyncError reports " + resultName(async));
  const double t0 = nowSeconds();
  r.ok(precclCommAbort(r.comm), "CommAbort");
  r.check(nowSeconds() - t0 < 2, "CommAbort took " + std::to_string(nowSeconds() - t0) + " s");
  r.comm = nullptr;
}

}  // namespace

TEST_CASE("every NIC of one host down: every rank fails within the timeout", "[netns]") {
  auto bed = testBed(kHosts, kRails);
  if (!bed) return;
  GroupOptions opt;
  opt.env = {{"PRECCL_SOCKET_IFNAME", "rail"}, {"PRECCL_TIMEOUT", std::to_string(int(kTimeoutEnv))}, {"PRECCL_DEBUG", "WARN"}};
  opt.timeoutSec = 120;
  opt.beforeInit = [&](int rank) { enterNs(bed->ns(rank)); };
  std::string linkLog;
  bool downOk = true;
  opt.parentDuringRun = [&](Shared* s) {
    const double end = nowSeconds() + 60;
    while (!__atomic_load_n(&s->stamp[1], __ATOMIC_ACQUIRE) && nowSeconds() < end) usleep(10 * 1000);
    usleep(300 * 1000);  // inside a call, not between two
    for (int rail = 0; rail < kRails; ++rail) downOk = bed->setLink(kDeadHost, rail, false, &linkLog) && downOk;
    __atomic_store_n(&s->stamp[0], nowNs(), __ATOMIC_RELEASE);
  };
  GroupResult g = runGroup(kHosts, opt, hostDownBody);
  INFO("ip link set down: " << linkLog);
  CHECK(downOk);
  reportToCatch("host 1 without NICs", g);
  CHECK(bed->teardown());
}
