// Every collective x type x op x in-place/out-of-place x sizes, on shared memory and on sockets, with
// ring and tree, for 1..8 ranks. One communicator per group runs its whole matrix; each result is
// checked element by element against tests/reference.
#include <catch2/catch.hpp>
#include <set>
#include <thread>

#include "harness.h"
#include "reference.h"

using namespace ptest;

namespace {

constexpr size_t kLargeBytes = 24u << 20;  // "tens of MiB"

struct Matrix {
  std::vector<Coll> colls = allColls();
  std::vector<precclDataType_t> types = allTypes();
  std::vector<int> ops = {kSum, kProd, kMax, kMin, kAvg, kPreMulSum};
  std::vector<size_t> counts = {0, 1, 7, 1031};  // 1031 (prime): not a multiple of any VT count
  bool medium = true;   // 65537 elements for a few types
  bool large = false;   // tens of MiB for a few combos
  bool grouped = true;  // a few collectives inside one GroupStart/GroupEnd
};

std::vector<int> rootsFor(Coll c, int n) {
  if (!collRooted(c)) return {0};
  std::set<int> s = {0, n - 1};
  return {s.begin(), s.end()};
}

bool has(const std::vector<Coll>& v, Coll c) { return std::find(v.begin(), v.end(), c) != v.end(); }

// The big combos: one per collective, each a different type, both placements represented.
std::vector<Case> largeCases(const Matrix& m, int n) {
  std::vector<Case> out;
  auto add = [&](Coll coll, precclDataType_t t, int op, bool inPlace, size_t totalElems, bool perRank) {
    if (!has(m.colls, coll)) return;
    Case c;
    c.coll = coll;
    c.type = t;
    c.op = op;
    c.inPlace = inPlace;
    c.count = perRank ? totalElems / size_t(n) + 1 : totalElems;  // +1: off the VT grain
    c.root = n - 1;
    out.push_back(c);
  };
  add(Coll::AllReduce, precclFloat, kSum, false, kLargeBytes / 4, false);
  add(Coll::AllReduce, precclFloat16, kSum, true, kLargeBytes / 2, false);
  add(Coll::Broadcast, precclUint8, kCopy, false, kLargeBytes, false);
  add(Coll::Reduce, precclFloat64, kMax, false, kLargeBytes / 8, false);
  add(Coll::AllGather, precclInt32, kCopy, false, kLargeBytes / 4, true);
  add(Coll::ReduceScatter, precclFloat, kSum, false, kLargeBytes / 4, true);
  add(Coll::AlltoAll, precclInt64, kCopy, false, kLargeBytes / 8, true);
  return out;
}

void runMatrix(Rank& r, const Matrix& m) {
  const int n = r.nranks;
  uint32_t seed = 1;
  size_t cases = 0, nonEmpty = 0;  // nonEmpty: ungrouped calls with count > 0 (each must be an epoch)
  const double t0 = nowSeconds();
  for (Coll coll : m.colls)
    for (precclDataType_t t : m.types)
      for (int op : collReduces(coll) ? m.ops : std::vector<int>{kCopy})
        for (size_t count : m.counts)
          for (bool inPlace : {false, true})
            for (int root : rootsFor(coll, n)) {
              Case c{coll, t, op, count, inPlace, root, seed++};
              runCase(r, c);
              ++cases;
              nonEmpty += count > 0;
            }
  if (m.medium)
    for (Coll coll : m.colls)
      for (precclDataType_t t : {precclFloat, precclInt32, precclBfloat16})
        for (bool inPlace : {false, true}) {
          Case c{coll, t, kSum, 65537, inPlace, n - 1, seed++};
          runCase(r, c);
          ++cases;
          ++nonEmpty;
        }
  if (m.grouped && has(m.colls, Coll::AllGather)) {
    // Several collectives issued together at GroupEnd, all checked afterwards.
    Case a{Coll::AllReduce, precclInt32, kSum, 1031, false, 0, seed++};
    Case b{Coll::Broadcast, precclFloat, kCopy, 517, true, n - 1, seed++};
    Case g{Coll::AllGather, precclBfloat16, kCopy, 33, false, 0, seed++};
    CaseRun ra(r, a), rb(r, b), rg(r, g);
    bool ok = r.ok(precclGroupStart(), "grouped: precclGroupStart");
    ok = ra.issue() == precclSuccess && ok;
    ok = rb.issue() == precclSuccess && ok;
    ok = rg.issue() == precclSuccess && ok;
    ok = r.ok(precclGroupEnd(), "grouped: precclGroupEnd") && ok;
    if (ok) {
      ra.check();
      rb.check();
      rg.check();
    }
    cases += 3;
  }
  if (m.large)
    for (Case c : largeCases(m, n)) {
      c.seed = seed++;
      runCase(r, c);
      ++cases;
      ++nonEmpty;
    }
  uint64_t epoch = 0;
  if (r.ok(precclCommGetEpoch(r.comm, &epoch), "precclCommGetEpoch"))
    r.check(epoch >= nonEmpty, "epoch counter " + std::to_string(epoch) + " below the " +
                                   std::to_string(nonEmpty) + " non-empty collectives run");
  if (r.rank == 0)
    r.info(std::to_string(cases) + " cases in " + std::to_string(nowSeconds() - t0) + " s");
}

void matrixGroup(int n, Transport t, int nvts, const char* algo, const Matrix& m, double timeout = 300) {
  GroupOptions opt;
  opt.env = localEnv(t, nvts, algo);
  opt.timeoutSec = timeout;
  std::string title = std::string("matrix ") + transportName(t) + " n=" + std::to_string(n) +
                      " nvts=" + (nvts ? std::to_string(nvts) : "default") + " algo=" + (algo ? algo : "default") +
                      (m.large ? " +large" : "");
  GroupResult g = runGroup(n, opt, [&](Rank& r) { runMatrix(r, m); });
  reportToCatch(title, g);
}

Matrix treeMatrix(bool large) {
  Matrix m;
  m.colls = {Coll::AllReduce, Coll::Broadcast, Coll::Reduce};
  m.grouped = false;
  m.large = large;
  return m;
}

// Recursive doubling takes AllReduce calls within one slot (the counts up to 9001); from 32 KiB (9001
// elements of 4 bytes, 5003 of 8) its exchanges halve and double; the medium count falls back to the
// tree's or the ring's.
Matrix doublingMatrix() {
  Matrix m;
  m.colls = {Coll::AllReduce};
  m.counts = {0, 1, 7, 1031, 5003, 9001};
  m.grouped = false;
  return m;
}

Matrix withLarge(Matrix m) {
  m.large = true;
  return m;
}

}  // namespace

// ---- shared memory ----

TEST_CASE("collectives on 1 rank", "[collectives][shm]") { matrixGroup(1, Transport::Shm, 0, "ring", Matrix{}); }

TEST_CASE("collectives shm 2 ranks ring 3 VTs", "[collectives][shm]") {
  matrixGroup(2, Transport::Shm, 3, "ring", withLarge(Matrix{}));
}
TEST_CASE("collectives shm 3 ranks ring 2 VTs", "[collectives][shm]") {
  matrixGroup(3, Transport::Shm, 2, "ring", Matrix{});
}
TEST_CASE("collectives shm 4 ranks ring", "[collectives][shm]") {
  matrixGroup(4, Transport::Shm, 0, "ring", withLarge(Matrix{}));
}
TEST_CASE("collectives shm 8 ranks ring 3 VTs", "[collectives][shm]") {
  matrixGroup(8, Transport::Shm, 3, "ring", Matrix{}, 480);
}
TEST_CASE("collectives shm tree", "[collectives][shm][tree]") {
  matrixGroup(2, Transport::Shm, 2, "tree", treeMatrix(false));
  matrixGroup(3, Transport::Shm, 3, "tree", treeMatrix(true));
  matrixGroup(4, Transport::Shm, 0, "tree", treeMatrix(false));
  matrixGroup(8, Transport::Shm, 2, "tree", treeMatrix(true), 480);
}

// Powers of two and not (ranks folded in first and served last).
TEST_CASE("collectives shm doubling", "[collectives][shm][doubling]") {
  for (int n : {2, 3, 4, 5, 8}) matrixGroup(n, Transport::Shm, n % 3 + 1, "doubling", doublingMatrix(), 480);
}

// The ring AllReduce's steps against the smallest FIFO: 64 KiB slots, so every piece is the smallest the
// model allows, and 2 or 8 of them. A step that filled the FIFO hung the ring (an earlier chunk grid did):
// each rank's step after a send-only one waited for room that only the next rank's same step makes.
TEST_CASE("ring AllReduce chunks never fill the smallest FIFO", "[collectives][shm]") {
  for (const char* nslots : {"2", "8"})
    for (int n : {2, 3}) {
      GroupOptions opt;
      opt.env = localEnv(Transport::Shm, 3, "ring");
      opt.env.push_back({"PRECCL_SLOT_BYTES", "65536"});
      opt.env.push_back({"PRECCL_NSLOTS", nslots});
      opt.timeoutSec = 120;
      GroupResult g = runGroup(n, opt, [](Rank& r) {
        uint32_t seed = 900;
        for (precclDataType_t t : {precclFloat, precclHalf})
          for (bool inPlace : {false, true})
            runCase(r, Case{Coll::AllReduce, t, kSum, (size_t(24) << 20) / typeSize(t) + 5, inPlace, 0, seed++});
      });
      reportToCatch(std::string("ring AllReduce, 64 KiB slots x ") + nslots + ", n=" + std::to_string(n), g);
    }
}

// ---- sockets only (loopback) ----

TEST_CASE("collectives socket 2 ranks ring 3 VTs", "[collectives][socket]") {
  matrixGroup(2, Transport::Socket, 3, "ring", withLarge(Matrix{}));
}
TEST_CASE("collectives socket 3 ranks ring 2 VTs", "[collectives][socket]") {
  matrixGroup(3, Transport::Socket, 2, "ring", Matrix{});
}
TEST_CASE("collectives socket 4 ranks ring", "[collectives][socket]") {
  matrixGroup(4, Transport::Socket, 0, "ring", Matrix{});
}
TEST_CASE("collectives socket 8 ranks ring 3 VTs", "[collectives][socket]") {
  matrixGroup(8, Transport::Socket, 3, "ring", withLarge(Matrix{}), 480);
}
TEST_CASE("collectives socket tree", "[collectives][socket][tree]") {
  matrixGroup(3, Transport::Socket, 2, "tree", treeMatrix(true));
  matrixGroup(4, Transport::Socket, 3, "tree", treeMatrix(false));
}

TEST_CASE("collectives socket doubling", "[collectives][socket][doubling]") {
  for (int n : {3, 4, 6}) matrixGroup(n, Transport::Socket, 2, "doubling", doublingMatrix());
}

// ---- CommInitAll: 4 ranks, one process, one thread each (in a forked child: a crash stays there) ----

TEST_CASE("CommInitAll 4 ranks in one process", "[collectives][shm]") {
  GroupOptions opt;
  opt.env = localEnv(Transport::Shm, 2);
  opt.initComm = false;
  opt.timeoutSec = 120;
  GroupResult g = runGroup(1, opt, [](Rank& parent) {
    constexpr int kN = 4;
    precclComm_t comms[kN] = {};
    if (!parent.ok(precclCommInitAll(comms, kN, nullptr), "precclCommInitAll")) return;
    // Each thread gets its own Rank view (same pipe) so the checks know their rank and comm.
    std::vector<Rank> views;
    for (int i = 0; i < kN; ++i) views.push_back(parent.view(comms[i]));
    std::vector<std::thread> threads;
    for (int i = 0; i < kN; ++i) {
      Rank& v = views[size_t(i)];
      v.nranks = kN;
      threads.emplace_back([&v, i] {
        int count = -1, rank = -1;
        v.ok(precclCommCount(v.comm, &count), "precclCommCount");
        v.ok(precclCommUserRank(v.comm, &rank), "precclCommUserRank");
        v.check(count == kN, "CommInitAll comm " + std::to_string(i) + ": count " + std::to_string(count));
        v.check(rank == i, "CommInitAll comm " + std::to_string(i) + ": rank " + std::to_string(rank));
        v.rank = rank;
        uint32_t seed = 7;
        for (int op : {int(kSum), int(kMax), int(kAvg)})
          for (size_t cnt : {size_t(1), size_t(1031), size_t(300000)}) runCase(v, Case{Coll::AllReduce, precclFloat, op, cnt, false, 0, seed++});
        runCase(v, Case{Coll::AllGather, precclInt8, kCopy, 77, true, 0, seed++});
      });
    }
    for (auto& t : threads) t.join();
    for (int i = 0; i < kN; ++i) parent.ok(precclCommDestroy(comms[i]), "precclCommDestroy");
    for (auto& v : views) parent.absorb(v);
  });
  reportToCatch("CommInitAll n=4", g);
}
