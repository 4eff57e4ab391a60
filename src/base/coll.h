// The collectives, named once for the library, its benchmarks (perf/, whose peers link no PReCCL) and its
// tests. What each one does in the library (its planners, its bytes on the wire, how its telemetry
// travels) is the collective table, plan/coll_table.h.
#pragma once
#include <cstdint>
#include <cstring>

namespace preccl {

enum class Coll : uint8_t { AllReduce, Broadcast, Reduce, AllGather, ReduceScatter, AlltoAll, Gather, Scatter, SendRecv };
constexpr int kNumColls = 9;

struct CollNames {
  Coll coll;
  const char* name;  // as NCCL names the call: "AllReduce"
  const char* key;   // as nccl-tests and preccl-perf -t name it: "allreduce"
  bool reduces;      // takes a reduction op
  bool rooted;       // takes a root
};
inline constexpr CollNames kCollNames[kNumColls] = {
    {Coll::AllReduce, "AllReduce", "allreduce", true, false},
    {Coll::Broadcast, "Broadcast", "broadcast", false, true},
    {Coll::Reduce, "Reduce", "reduce", true, true},
    {Coll::AllGather, "AllGather", "allgather", false, false},
    {Coll::ReduceScatter, "ReduceScatter", "reducescatter", true, false},
    {Coll::AlltoAll, "AlltoAll", "alltoall", false, false},
    {Coll::Gather, "Gather", "gather", false, true},
    {Coll::Scatter, "Scatter", "scatter", false, true},
    {Coll::SendRecv, "SendRecv", "sendrecv", false, false},
};

constexpr const CollNames& collNames(Coll c) { return kCollNames[static_cast<int>(c)]; }
constexpr const char* collName(Coll c) { return collNames(c).name; }
constexpr const char* collKey(Coll c) { return collNames(c).key; }
constexpr bool collReduces(Coll c) { return collNames(c).reduces; }
constexpr bool collRooted(Coll c) { return collNames(c).rooted; }
// The inverse of collKey; false for an unknown name.
inline bool collFromKey(const char* key, Coll* out) {
  for (const CollNames& n : kCollNames)
    if (std::strcmp(key, n.key) == 0) {
      *out = n.coll;
      return true;
    }
  return false;
}

static_assert([] {
  for (int i = 0; i < kNumColls; i++)
    if (static_cast<int>(kCollNames[i].coll) != i) return false;
  return true;
}(), "kCollNames is in the enum's order");

}  // namespace preccl
