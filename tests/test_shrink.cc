// Dropping a dead rank (docs/failures.md, "Dropping a rank"): a rank is SIGKILLed in the middle of an
// AllReduce loop; every survivor's call fails, the survivors shrink the communicator without it (after
// CommRevoke, or with PRECCL_SHRINK_ABORT) and run checked collectives on the new one. The victim is rank 2,
// or rank 0, whose process hosted the bootstrap root. Also the bad inputs of Shrink and Revoke.
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <thread>

#include "harness.h"
#include "reference.h"

using namespace ptest;

namespace {

constexpr double kTimeoutEnv = 5;                  // PRECCL_TIMEOUT in these tests
constexpr double kBound = kTimeoutEnv + 5;         // seconds a survivor may take to see the loss, or to shrink
constexpr int kRanks = 4;

enum class Way { RevokeThenShrink, ShrinkAbort };

void dropRankBody(Rank& r, int victim, Way way) {
  if (!runCase(r, Case{Coll::AllReduce, precclFloat, kSum, 1031, false, 0, 3})) return;
  const size_t count = (size_t(8) << 20) / 4;
  std::vector<float> a(count, 1.0f), b(count, 0.0f);
  if (r.rank == victim)
    std::thread([] {
      usleep(300 * 1000);
      kill(getpid(), SIGKILL);
    }).detach();
  precclResult_t res = precclSuccess;
  for (int i = 0; i < 100000 && res == precclSuccess; i++)
    res = precclAllReduce(a.data(), b.data(), count, precclFloat, precclSum, r.comm, nullptr);
  if (r.rank == victim) {
    r.fail("the victim ran on after SIGKILL");
    return;
  }
  r.check(res != precclSuccess, "the AllReduce loop never failed");

  double t0 = nowSeconds();
  int flags = PRECCL_SHRINK_ABORT;
  if (way == Way::RevokeThenShrink) {
    r.ok(precclCommRevoke(r.comm, PRECCL_REVOKE_DEFAULT), "CommRevoke");
    precclResult_t st = precclInProgress;
    r.ok(precclCommGetAsyncError(r.comm, &st), "CommGetAsyncError");
    r.check(st == precclSuccess, "after CommRevoke the state reads " + resultName(st) + ", not success");
    r.check(precclAllReduce(a.data(), b.data(), 1, precclFloat, precclSum, r.comm, nullptr) == precclInvalidUsage,
            "a revoked communicator took an AllReduce");
    r.check(precclCommFinalize(r.comm) == precclInvalidUsage, "CommFinalize after CommRevoke was accepted");
    flags = PRECCL_SHRINK_DEFAULT;
  }
  int excluded = victim;
  precclComm_t small = nullptr;
  if (!r.ok(precclCommShrink(r.comm, &excluded, 1, &small, nullptr, flags), "CommShrink")) return;
  r.check(nowSeconds() - t0 < kBound, "CommShrink took " + std::to_string(nowSeconds() - t0) + " s");
  int n = 0, me = -1;
  r.ok(precclCommCount(small, &n), "CommCount");
  r.ok(precclCommUserRank(small, &me), "CommUserRank");
  r.check(n == kRanks - 1 && me == r.rank - (r.rank > victim ? 1 : 0),
          "the new communicator has rank " + std::to_string(me) + " of " + std::to_string(n));
  precclComm_t again = nullptr;
  r.check(precclCommShrink(r.comm, &excluded, 1, &again, nullptr, flags) == precclInvalidUsage && !again,
          "a second shrink of the same communicator was accepted");

  // The survivors go on: every result checked, floats from inputs that are not exactly representable.
  Rank s = r.view(small);
  s.rank = me;
  s.nranks = n;
  runCase(s, Case{Coll::AllReduce, precclFloat, kSum, 300007, false, 0, 11});
  runCase(s, Case{Coll::AllReduce, precclInt32, kSum, 4099, true, 0, 12});
  runCase(s, Case{Coll::AlltoAll, precclInt64, kSum, 1001, false, 0, 13});
  runCase(s, Case{Coll::Broadcast, precclDouble, kSum, 7777, false, n - 1, 14});
  r.absorb(s);
  t0 = nowSeconds();
  r.ok(precclCommDestroy(small), "CommDestroy of the shrunk communicator");
  r.ok(precclCommAbort(r.comm), "CommAbort of the parent");
  r.check(nowSeconds() - t0 < kBound, "destroying both took " + std::to_string(nowSeconds() - t0) + " s");
  r.comm = nullptr;
}

void dropRank(Transport t, int victim, Way way) {
  GroupOptions opt;
  opt.env = localEnv(t, 2);
  opt.env.push_back({"PRECCL_TIMEOUT", std::to_string(int(kTimeoutEnv))});
  opt.timeoutSec = 90;
  GroupResult g = runGroup(kRanks, opt, [victim, way](Rank& r) { dropRankBody(r, victim, way); });
  reportToCatch(std::string("shrink after killing rank ") + std::to_string(victim) + ", " + transportName(t) +
                    (way == Way::RevokeThenShrink ? ", revoke first" : ", shrink with abort"),
                g, [victim](int rank) { return rank == victim; });
  CHECK(g.ranks[size_t(victim)].signal == SIGKILL);
}

}  // namespace

TEST_CASE("survivors shrink away a killed rank and go on", "[shrink]") {
  dropRank(Transport::Shm, 2, Way::RevokeThenShrink);
  dropRank(Transport::Socket, 0, Way::ShrinkAbort);  // the rank that hosted the bootstrap root
  dropRank(Transport::Shm, 0, Way::ShrinkAbort);
  dropRank(Transport::Socket, 2, Way::RevokeThenShrink);
}

TEST_CASE("Shrink and Revoke refuse bad input", "[shrink]") {
  GroupOptions opt;
  opt.env = localEnv(Transport::Shm, 2);
  GroupResult g = runGroup(2, opt, [](Rank& r) {
    precclComm_t out = nullptr;
    int list[2] = {1, 1};
    r.check(precclCommShrink(r.comm, list, 2, &out, nullptr, 0) == precclInvalidArgument, "a rank excluded twice");
    list[0] = 5;
    r.check(precclCommShrink(r.comm, list, 1, &out, nullptr, 0) == precclInvalidArgument, "an excluded rank out of range");
    list[0] = r.rank;
    r.check(precclCommShrink(r.comm, list, 1, &out, nullptr, 0) == precclInvalidArgument, "a rank excluding itself");
    r.check(precclCommShrink(r.comm, nullptr, 1, &out, nullptr, 0) == precclInvalidArgument, "a NULL list");
    r.check(precclCommShrink(r.comm, list, 0, &out, nullptr, 7) == precclInvalidArgument, "unknown shrink flags");
    r.check(precclCommShrink(r.comm, list, 0, nullptr, nullptr, 0) == precclInvalidArgument, "a NULL newcomm");
    r.check(precclCommRevoke(r.comm, 1) == precclInvalidArgument, "unknown revoke flags");
    r.check(precclCommRevoke(nullptr, 0) == precclInvalidArgument, "revoking NULL");
    r.check(out == nullptr, "a refused shrink wrote a communicator");
    // Nothing was consumed: a shrink that excludes nobody still works, and it is the whole group again.
    if (r.ok(precclCommShrink(r.comm, nullptr, 0, &out, nullptr, 0), "CommShrink excluding nobody")) {
      Rank s = r.view(out);
      runCase(s, Case{Coll::AllReduce, precclFloat, kSum, 5003, false, 0, 21});
      r.absorb(s);
      r.ok(precclCommDestroy(out), "CommDestroy");
    }
  });
  reportToCatch("Shrink and Revoke bad input", g);
}
