// CommSplit: colors and keys decide membership and rank order; PRECCL_SPLIT_NOCOLOR gives a NULL
// comm; each new communicator runs checked collectives, interleaved with the parent's.
#include <catch2/catch.hpp>

#include "harness.h"
#include "reference.h"

using namespace ptest;

namespace {

// Runs `fn` with a Rank view of a sub-communicator (same pipe to the parent).
template <class F>
void onComm(Rank& parent, precclComm_t comm, F&& fn) {
  Rank v = parent.view(comm);
  if (v.ok(precclCommCount(comm, &v.nranks), "CommCount(new comm)") &&
      v.ok(precclCommUserRank(comm, &v.rank), "CommUserRank(new comm)"))
    fn(v);
  parent.absorb(v);
}

bool checkedAllReduce(Rank& v, uint32_t seed) {
  bool ok = runCase(v, Case{Coll::AllReduce, precclFloat, kSum, 1031, false, 0, seed});
  ok = runCase(v, Case{Coll::AllReduce, precclInt64, kAvg, 4099, true, 0, seed + 1}) && ok;
  return ok;
}

void splitBody(Rank& r) {
  const int me = r.rank, n = r.nranks;
  {  // color rank%2, key -rank: the highest old rank becomes rank 0
    precclComm_t sub = nullptr;
    if (!r.ok(precclCommSplit(r.comm, me % 2, -me, &sub, nullptr), "CommSplit(rank%2, -rank)")) return;
    if (!r.check(sub != nullptr, "CommSplit(rank%2) gave a NULL comm")) return;
    const int members = (n - me % 2 + 1) / 2;  // ranks with my parity
    std::vector<int> same;
    for (int q = n - 1; q >= 0; --q)
      if (q % 2 == me % 2) same.push_back(q);
    const int wantRank = int(std::find(same.begin(), same.end(), me) - same.begin());
    onComm(r, sub, [&](Rank& v) {
      v.check(v.nranks == members, "split(rank%2): size " + std::to_string(v.nranks) + ", want " + std::to_string(members));
      v.check(v.rank == wantRank, "split(rank%2, -rank): rank " + std::to_string(v.rank) + ", want " + std::to_string(wantRank));
      checkedAllReduce(v, 20);
      runCase(v, Case{Coll::AllGather, precclInt32, kCopy, 513, false, 0, 22});
    });
    // The parent comm still works while the child exists, and the child after that.
    runCase(r, Case{Coll::AllReduce, precclInt32, kSum, 777, false, 0, 23});
    onComm(r, sub, [&](Rank& v) { runCase(v, Case{Coll::Broadcast, precclBfloat16, kCopy, 1001, false, v.nranks - 1, 24}); });
    r.ok(precclCommDestroy(sub), "CommDestroy(split comm)");
  }
  {  // the last rank opts out; the others keep their order (key = rank)
    precclComm_t sub = reinterpret_cast<precclComm_t>(0x1);
    const int color = me == n - 1 ? PRECCL_SPLIT_NOCOLOR : 5;
    if (!r.ok(precclCommSplit(r.comm, color, me, &sub, nullptr), "CommSplit(NOCOLOR for the last rank)")) return;
    if (me == n - 1) {
      r.check(sub == nullptr, "CommSplit(PRECCL_SPLIT_NOCOLOR) did not return a NULL comm");
    } else if (r.check(sub != nullptr, "CommSplit(color 5) gave a NULL comm")) {
      onComm(r, sub, [&](Rank& v) {
        v.check(v.nranks == n - 1, "split(NOCOLOR): size " + std::to_string(v.nranks) + ", want " + std::to_string(n - 1));
        v.check(v.rank == me, "split(NOCOLOR): rank " + std::to_string(v.rank) + ", want " + std::to_string(me));
        checkedAllReduce(v, 30);
      });
      r.ok(precclCommDestroy(sub), "CommDestroy(split comm)");
    }
  }
  {  // one color, equal keys: a duplicate ordered by old rank, with a config
    precclComm_t dup = nullptr;
    precclConfig_t cfg = PRECCL_CONFIG_INITIALIZER;
    cfg.numVTs = 3;
    if (!r.ok(precclCommSplit(r.comm, 0, 0, &dup, &cfg), "CommSplit(dup)")) return;
    onComm(r, dup, [&](Rank& v) {
      v.check(v.nranks == n && v.rank == me, "split(dup): size/rank " + std::to_string(v.nranks) + "/" + std::to_string(v.rank));
      checkedAllReduce(v, 40);
      runCase(v, Case{Coll::ReduceScatter, precclFloat16, kSum, 1031, false, 0, 42});
    });
    runCase(r, Case{Coll::AllReduce, precclFloat, kMax, 1031, true, 0, 43});
    r.ok(precclCommDestroy(dup), "CommDestroy(dup)");
  }
}

void splitGroup(Transport t) {
  GroupOptions opt;
  opt.env = localEnv(t, 2);
  opt.timeoutSec = 120;
  reportToCatch(std::string("CommSplit n=4, ") + transportName(t), runGroup(4, opt, splitBody));
}

}  // namespace

TEST_CASE("CommSplit shm", "[split][shm]") { splitGroup(Transport::Shm); }
TEST_CASE("CommSplit socket", "[split][socket]") { splitGroup(Transport::Socket); }
