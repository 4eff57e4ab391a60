// A deferred commit taken again (docs/failures.md, "Deferred commits"): 4 namespaces x 2 NICs, one rank
// each, VT v on NIC v mod 2. Rank 0's NIC 0 stops sending (a tbf whose bucket is smaller than any TCP
// segment drops all it sends; what comes in still arrives). In a small AllReduce (recursive doubling on
// VT 0) rank 0 gets its partners' bytes and returns without a commit, while the ranks that wait for its
// bytes cannot finish. The abort that frees them comes while rank 0 runs its next call: rank 0 must join
// it and run the first call again from its kept input. Both calls must end on every rank with the bits of
// an undisturbed run (float sums whose inputs round), in place and out of place, VT 0 and VT 2 (the same
// NIC) masked everywhere, within a bound. Needs root and `ip netns`.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "harness.h"
#include "netns_bed.h"
#include "reference.h"
#include "rounding.h"

using namespace ptest;

namespace {

constexpr int kHosts = 4, kRails = 2, kVts = 4;
constexpr double kBoundSeconds = 10;  // detection (PRECCL_DETECT_MS, 0.5 s) and two floods, with room
constexpr double kAheadSeconds = 0.25;  // half the detection time

int vtState(Rank& r, int vt) {
  precclVtStats_t st[kVts];
  int nv = kVts;
  if (precclCommGetVtStats(r.comm, st, &nv) != precclSuccess || vt >= nv) return -1;
  return st[vt].state;
}

// The first call: an in-place float sum of inputs that round, within one slot (recursive doubling).
constexpr size_t kFirstCount = 1031;
bool firstCall(Rank& r, std::vector<float>* buf) {
  buf->resize(kFirstCount);
  for (size_t i = 0; i < kFirstCount; i++) (*buf)[i] = float(roundingInput(kSum, r.rank, i));
  return r.ok(precclAllReduce(buf->data(), buf->data(), kFirstCount, precclFloat, precclSum, r.comm, nullptr),
              "the first call");
}

void body(Rank& r) {
  const Shape first{Coll::AllReduce, kFirstCount, 0}, second{Coll::AllReduce, 7, 0};
  std::vector<float> want1, got1;
  std::vector<uint8_t> want2, got2;
  if (!firstCall(r, &want1) ||
      !nearReference(r, first, precclFloat, kSum,
                     std::vector<uint8_t>(reinterpret_cast<uint8_t*>(want1.data()), reinterpret_cast<uint8_t*>(want1.data() + kFirstCount)),
                     "undisturbed first call") ||
      !runRounding(r, r.comm, second, precclDouble, kSum, false, &want2) ||
      !nearReference(r, second, precclDouble, kSum, want2, "undisturbed second call"))
    return;
  if (!r.barrier()) return;
  if (r.rank == 0) {
    std::string log;
    if (!r.check(sh("tc qdisc add dev rail0 root tbf rate 1mbit burst 64 limit 2000", &log) == 0,
                 "cannot stop rail 0 of host 0 sending: " + log))
      return;
  }
  if (!r.barrier()) return;
  const double t0 = nowSeconds();
  if (!firstCall(r, &got1)) return;
  const double t1 = nowSeconds();
  // Rank 0's result is the user's now: running the call again must neither read nor write it.
  std::vector<float> mine = got1;
  if (r.rank == 0) std::fill(got1.begin(), got1.end(), -1.0f);
  // Rank 0 had all it needed and returns at once; the others wait for the dead path to be found.
  if (r.rank == 0)
    r.check(t1 - t0 < kAheadSeconds, "rank 0's first call took " + std::to_string(t1 - t0) + " s: its commit was not deferred");
  else
    r.check(t1 - t0 > kAheadSeconds, "rank " + std::to_string(r.rank) + "'s first call took only " + std::to_string(t1 - t0) + " s");
  if (!runRounding(r, r.comm, second, precclDouble, kSum, false, &got2)) return;
  const double t2 = nowSeconds();
  if (r.rank == 0) {
    std::string log;
    r.check(sh("tc qdisc del dev rail0 root", &log) == 0, "cannot restore rail 0 of host 0: " + log);
  }
  r.info("first call " + std::to_string(t1 - t0) + " s, second " + std::to_string(t2 - t1) + " s");
  r.check(mine == want1, "the first call's bits differ from the undisturbed run's");
  if (r.rank == 0)
    r.check(std::all_of(got1.begin(), got1.end(), [](float x) { return x == -1.0f; }),
            "running the first call again wrote into the buffer it had returned");
  r.check(got2 == want2, "the second call's bits differ from the undisturbed run's");
  r.check(t2 - t0 < kBoundSeconds, "the two calls took " + std::to_string(t2 - t0) + " s");
  for (int v : {0, 2}) r.check(vtState(r, v) == precclVtMasked, "VT " + std::to_string(v) + " is not masked");
  for (int v : {1, 3}) r.check(vtState(r, v) != precclVtMasked, "VT " + std::to_string(v) + " is masked");
  // The communicator goes on: small and large calls, checked.
  uint32_t seed = 5;
  for (size_t count : {size_t(1), size_t(1000), size_t(262147)})
    if (!runCase(r, Case{Coll::AllReduce, precclInt32, kSum, count, seed % 2 == 0, 0, seed++})) return;
}

}  // namespace

TEST_CASE("a rank that went ahead of a deferred commit runs the call again for the ranks that wait", "[netns]") {
  auto bed = testBed(kHosts, kRails);
  if (!bed) return;
  GroupOptions opt;
  opt.env = {{"PRECCL_SOCKET_IFNAME", "rail"}, {"PRECCL_NVTS", std::to_string(kVts)}, {"PRECCL_TIMEOUT", "20"},
             {"PRECCL_CHECK_ALLOC", "1"}, {"PRECCL_DEBUG", "WARN"}};
  opt.timeoutSec = 120;
  opt.beforeInit = [&](int rank) { enterNs(bed->ns(rank)); };
  GroupResult g = runGroup(kHosts, opt, body);
  reportToCatch("a deferred commit taken again", g);
  CHECK(bed->teardown());
}
