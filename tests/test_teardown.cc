// Teardown (docs/architecture.md, "Shutting a connection down without loss"): a rank whose call returned
// may destroy its communicator or exit at once without failing a peer that is still in that call; and
// many short communicators over sockets, each rank destroying its communicator the moment its own last
// call returns, with every result checked. A peer that stops without dying: test_failures.cc.
#include <unistd.h>

#include <catch2/catch.hpp>

#include "harness.h"
#include "reference.h"

using namespace ptest;

namespace {

constexpr int kTimeoutEnv = 5;  // PRECCL_TIMEOUT in these tests: a lost byte fails fast, not after 120 s

Env envWithTimeout(Transport t, int nvts, const char* algo = nullptr) {
  Env e = localEnv(t, nvts, algo);
  e.push_back({"PRECCL_TIMEOUT", std::to_string(kTimeoutEnv)});
  return e;
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
