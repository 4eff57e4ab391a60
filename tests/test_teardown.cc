// Teardown and stalls (docs/architecture.md, "Shutting a connection down without loss" and "Which waits
// the watchdog covers"): a rank whose call returned may destroy its communicator or exit at once without
// failing a peer that is still in that call; a peer that stops reading without dying (SIGSTOP) makes the
// others fail within PRECCL_TIMEOUT; and many short communicators over sockets, each rank destroying its
// communicator the moment its own last call returns, with every result checked.
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <thread>

#include "harness.h"
#include "reference.h"

using namespace ptest;

namespace {

constexpr int kTimeoutEnv = 5;           // PRECCL_TIMEOUT in these tests
constexpr double kDetectLimit = kTimeoutEnv + 5;  // seconds from the stop to a survivor's error

Env envWithTimeout(Transport t, int nvts, const char* algo = nullptr) {
  Env e = localEnv(t, nvts, algo);
  e.push_back({"PRECCL_TIMEOUT", std::to_string(kTimeoutEnv)});
  return e;
}

// ---- a peer that stops without dying ----

// Shared stamps: [0] when the victim stopped, [1] its pid, [2] survivors done.
void stoppedPeerBody(Rank& r, int victim) {
  if (!runCase(r, Case{Coll::AllReduce, precclFloat, kSum, 1031, false, 0, 3})) return;
  const size_t count = (size_t(16) << 20) / 4;
  std::vector<float> a(count, 1.0f), b(count, 0.0f);
  if (r.rank == victim) {
    __atomic_store_n(&r.shared->stamp[1], int64_t(getpid()), __ATOMIC_RELEASE);
    // Stop inside the loop, not between calls: the process keeps its sockets and memory but reads nothing.
    // In a process group of its own, whose parent (the harness) is in another group of the session: if
    // the harness's group becomes orphaned (its launching shell exits), the kernel continues that
    // group's stopped members with SIGCONT, and the victim must not be one of them.
    setpgid(0, 0);
    std::thread([&r] {
      usleep(300 * 1000);
      __atomic_store_n(&r.shared->stamp[0], nowNs(), __ATOMIC_RELEASE);
      kill(getpid(), SIGSTOP);
    }).detach();
  }
  const double end = nowSeconds() + 60;
  precclResult_t res = precclSuccess;
  int iters = 0;
  while (nowSeconds() < end && iters < 100000 && res == precclSuccess) {
    res = precclAllReduce(a.data(), b.data(), count, precclFloat, precclSum, r.comm, nullptr);
    iters += res == precclSuccess;
  }
  if (r.rank == victim) {
    r.fail("the victim ran on after its SIGSTOP");
    return;
  }
  const int64_t stoppedAt = __atomic_load_n(&r.shared->stamp[0], __ATOMIC_ACQUIRE);
  const double dt = stoppedAt ? double(nowNs() - stoppedAt) * 1e-9 : -1;
  const std::string msg = lastError(r.comm);
  if (r.check(res != precclSuccess, "AllReduce kept succeeding for 60 s after the peer stopped")) {
    r.check(stoppedAt != 0, "AllReduce failed (" + resultName(res) + ") before the peer stopped: " + msg);
    r.check(dt < kDetectLimit, "the error came " + std::to_string(dt) + " s after the stop (PRECCL_TIMEOUT=" +
                                   std::to_string(kTimeoutEnv) + ")");
    // The message names the edge: its peer, its VT and how it travels.
    r.check(msg.find("rank") != std::string::npos && msg.find("VT") != std::string::npos &&
                (msg.find("NIC") != std::string::npos || msg.find("shared memory") != std::string::npos),
            "the error does not name the peer, VT and NIC: " + msg);
    precclResult_t async = precclSuccess;
    if (r.ok(precclCommGetAsyncError(r.comm, &async), "CommGetAsyncError"))
      r.check(async != precclSuccess && async != precclInProgress,
              "CommGetAsyncError reports " + resultName(async) + " after the peer stopped");
    const double t = nowSeconds();
    r.ok(precclCommAbort(r.comm), "CommAbort");
    r.check(nowSeconds() - t < 5, "CommAbort took " + std::to_string(nowSeconds() - t) + " s");
    r.comm = nullptr;
    r.info("error after " + std::to_string(iters) + " calls, " + std::to_string(dt) + " s after the stop: " + msg);
  }
  // The last survivor ends the stopped victim.
  if (__atomic_add_fetch(&r.shared->stamp[2], 1, __ATOMIC_ACQ_REL) == r.nranks - 1) {
    const int64_t pid = __atomic_load_n(&r.shared->stamp[1], __ATOMIC_ACQUIRE);
    if (pid > 0) kill(pid_t(pid), SIGKILL);
  }
}

void stoppedPeer(Transport t, int victim) {
  GroupOptions opt;
  opt.env = envWithTimeout(t, 2);
  opt.timeoutSec = 90;
  GroupResult g = runGroup(3, opt, [victim](Rank& r) { stoppedPeerBody(r, victim); });
  reportToCatch(std::string("stopped rank ") + std::to_string(victim) + ", " + transportName(t), g,
                [victim](int rank) { return rank == victim; });
  CHECK(g.ranks[size_t(victim)].signal == SIGKILL);
}

// ---- a peer that exits right after its last call ----

// Rank `leaver` returns from the last call and leaves at once, without destroying its communicator;
// the others are still in that call (a chain's root, a tree's leaf, a Scatter's root finish early) and
// must get every byte. They enter it late, so that the leaver's last slots are still queued when it
// returns: its FIFOs and the kernel's buffers full. `last` names the last call.
void exitAfterLastCall(Transport t, Coll last) {
  constexpr int kN = 3, kLeaver = 0;  // rank 0 also hosts the bootstrap root
  GroupOptions opt;
  opt.env = envWithTimeout(t, 2);
  opt.timeoutSec = 120;
  GroupResult g = runGroup(kN, opt, [last](Rank& r) {
    if (!runCase(r, Case{Coll::AllReduce, precclFloat, kSum, 65537, false, 0, 1})) return;
    const int root = last == Coll::Reduce ? kN - 1 : kLeaver;  // the leaver as a Reduce's leaf
    // More than the FIFOs at both ends and the kernel's socket buffers hold.
    const size_t count = (size_t(48) << 20) / 4 / (last == Coll::AllGather || last == Coll::Scatter ? kN : 1);
    Case c{last, precclInt32, last == Coll::Reduce ? int(kSum) : int(kCopy), count, false, root, 2};
    if (r.rank != kLeaver) usleep(500 * 1000);
    CaseRun run(r, c);
    const bool ok = r.ok(run.issue(), run.name());
    if (r.rank == kLeaver) _exit(ok && r.failures() == 0 ? 0 : 1);  // no check, no CommDestroy: gone with the call
    if (ok) run.check();
  });
  reportToCatch(std::string("rank 0 exits right after its last call (") + ptest::collName(last) + "), " +
                    transportName(t),
                g);
}

// ---- many short communicators ----

// One short communicator: checked calls of every collective (types, ops, placements and roots varied):
// many small ones first, as a user's first steps are, then larger ones that one rank enters late (a
// straggler: the others' time on the VTs grows, the model sees slow paths, and the socket-buffer rule
// clamps a tree's sockets), then a last call that some ranks finish before others (a chain's root, a
// tree's leaf, a Scatter's root), after which each rank destroys its communicator at once and only then
// checks its result. `g` varies it from group to group.
void shortCommBody(Rank& r, int g) {
  const std::vector<Coll> colls = allColls();
  const precclDataType_t types[] = {precclFloat, precclInt32, precclBfloat16, precclUint8, precclFloat64, precclFloat16};
  const int ops[] = {kSum, kMax, kProd, kMin, kAvg};
  const size_t smallCounts[] = {1, 7, 1031}, largerCounts[] = {65537, 1 << 18};
  const int n = r.nranks, kSmall = 24, kLarger = 6;
  uint32_t seed = 1000u * uint32_t(g) + 1;
  for (int i = 0; i <= kSmall + kLarger; i++) {
    const bool last = i == kSmall + kLarger;
    Case c;
    c.coll = colls[size_t(last ? g : g + i) % colls.size()];
    c.type = types[size_t(g + 5 * i) % 6];
    c.op = collReduces(c.coll) ? ops[size_t(g + i) % 5] : int(kCopy);
    c.count = last ? (size_t(24) << 20) / typeSize(c.type) : i < kSmall ? smallCounts[size_t(i) % 3] : largerCounts[size_t(i) % 2];
    if (c.coll == Coll::AllGather || c.coll == Coll::ReduceScatter || c.coll == Coll::AlltoAll ||
        c.coll == Coll::Gather || c.coll == Coll::Scatter)
      c.count = c.count / size_t(n) + 1;
    c.inPlace = (g + i) % 2 == 1;
    c.root = (g + i) % n;
    c.seed = seed++;
    if (i >= kSmall && r.rank == (g + i) % n) usleep(50 * 1000);
    if (!last) {
      if (!runCase(r, c)) return;
      continue;
    }
    CaseRun run(r, c);
    const bool ok = r.ok(run.issue(), run.name());
    r.ok(precclCommDestroy(r.comm), "CommDestroy right after the last call");
    r.comm = nullptr;
    if (ok) run.check();
  }
}

}  // namespace

TEST_CASE("a peer that stops reading without dying: the others fail within PRECCL_TIMEOUT", "[teardown]") {
  stoppedPeer(Transport::Socket, 2);
  stoppedPeer(Transport::Shm, 1);
}

TEST_CASE("a peer that exits right after its last call fails nobody", "[teardown]") {
  for (Transport t : {Transport::Socket, Transport::Shm})
    for (Coll last : {Coll::Broadcast, Coll::Reduce, Coll::Scatter, Coll::AllGather}) exitAfterLastCall(t, last);
}

TEST_CASE("short communicators over sockets, destroyed the moment their last call returns", "[teardown]") {
  int g = 0;
  for (int n = 2; n <= 5; n++)
    for (const char* algo : {"ring", "tree"})
      for (int nvts = 1; nvts <= 4; nvts++, g++) {
        GroupOptions opt;
        opt.env = envWithTimeout(Transport::Socket, nvts, algo);
        opt.timeoutSec = 60;  // a group takes seconds: a minute is a connection crawling or hung
        GroupResult res = runGroup(n, opt, [g](Rank& r) { shortCommBody(r, g); });
        reportToCatch("short communicator n=" + std::to_string(n) + " " + algo + " nvts=" + std::to_string(nvts), res);
      }
}
