// A CCT's plan: plain data, the same for the host's task runner and the CUDA kernel (exec/task.h). A plan
// is a set of Tasks; a Task is one VT's (or one point-to-point edge's) sequence of Steps; a Step is one
// primitive over a byte range, executed slot by slot (plan/steps.h names them):
//   out = [reduce] pre(src) (+) recv[0] (+) recv[1], written to dst and to every send FIFO.
// Edges are names, (peer, VT, far end of a relay), indices into Plan::edges; binding them to FIFO ends is
// the executor's (exec/bind.h). Nothing here changes while the plan runs: progress is the run's state.
#pragma once
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "base/coll.h"
#include "plan/stride_map.h"
#include "preccl/preccl.h"
#include "reduce/reduce.h"

namespace preccl {

// This rank's edge to `peer` on VT `vt`. `far` >= 0 names a relay edge (topo/topology.h Topology::rail):
// the rank at the far end of the relayed path, whose bytes the edge carries or for which it carries them.
struct EdgeName {
  int32_t peer = -1;
  int32_t vt = -1;
  int32_t far = -1;
  bool operator==(const EdgeName&) const = default;
};

// What a Step does, in NCCL's words: its shape's name (primOf). Planners write steps through plan/steps.h.
// The algorithms a collective may run (plan/coll_table.h names each collective's planner of each).
//   Ring:     bandwidth: every VT's range around the ring (chains for the rooted collectives).
//   Tree:     log n latency with pipelining: the double binary tree.
//   Doubling: the fewest hops for a call within one slot: recursive doubling on one VT, no policy.
enum class PlanAlgo : uint8_t { Ring, Tree, Doubling };
const char* algoName(PlanAlgo a);

enum class Prim : uint8_t {
  Copy,                // src -> dst
  ReduceCopy,          // pre(src) -> dst, post (a reduction on one rank)
  Send,                // src -> send
  ReduceSend,          // pre(src) -> send (a reduction's first hop)
  CopySend,            // src -> dst and send (a broadcast's root)
  Recv,                // recv -> dst
  RecvSend,            // recv -> send, with the telemetry it came with (a relay's forward)
  RecvCopySend,        // recv -> dst and send
  RecvReduceSend,      // pre(src) (+) recv... -> send
  RecvReduceCopy,      // pre(src) (+) recv... -> dst, post
  RecvReduceCopySend,  // pre(src) (+) recv... -> dst and send, post
  Header,              // one header-only slot, recv -> send: telemetry and nothing else
};
const char* primName(Prim p);

// Strided steps (the ring AllReduce's chunks) place their bytes through the StrideMap they are.
struct Step : StrideMap {
  uint8_t nrecv = 0, nsend = 0;
  int32_t recv[2] = {-1, -1};  // Plan::edges
  int32_t send[2] = {-1, -1};
  const char* src = nullptr;   // this rank's input, or null
  char* dst = nullptr;         // this rank's output, or null
  size_t bytes = 0;
  bool reduce = false;         // combine with the op (else copy)
  bool post = false;           // apply the op's post-division (Avg) to the result
  // The reduction's operand order and pre-multiply: by default pre(src) (+) recv...; `srcPlain`: src (+)
  // recv... (src is a partial result, already pre-multiplied); `srcLast`: recv... (+) src, src plain.
  // Recursive doubling needs both so that the two ranks of a pair compute the same expression.
  bool srcPlain = false, srcLast = false;
  bool headerOnly = false;     // one slot of no bytes (Prim::Header)
  // A relay's forward: another rank's slots, passed on with the telemetry they came with and counted as
  // relayed bytes; with `relayIsSend` also as this rank's sends (AlltoAll, where a VT's owner sends its
  // host's whole part of the VT; a ring's forward is its exit rank's send).
  bool relayed = false, relayIsSend = false;
};

Prim primOf(const Step& s);

struct Task {
  static constexpr uint32_t kNoCut = UINT32_MAX;
  int32_t vt = 0;
  uint32_t firstStep = 0, nsteps = 0;  // Plan::steps
  size_t piece = 0;                    // bytes per slot: a multiple of the element size, at most the FIFO's slot
  // The telemetry cut (docs/telemetry.md): on reaching step cutStep (of the task's own) at byte offset
  // cutOff, the task takes a snapshot of its VT's record, and every slot it sends from then on carries
  // this CCT's own records instead of an older epoch's. Planners put it where enough hops remain for every
  // rank to hear every other before the CCT ends.
  // A relay cut (a tree's down task, whose rank's snapshot its up task took) only switches the headers: a
  // second snapshot of the same rank, later, would be heard by fewer ranks than the first.
  // A shared cut (AlltoAll: a VT's send and receive tasks, one of each per peer): the tasks wait at their
  // cuts until all of them are there (Plan::sharedCuts), and the last to arrive takes the one snapshot the
  // sends all carry, so that every peer hears the same record of this rank.
  uint32_t cutStep = kNoCut;
  size_t cutOff = 0;
  bool cutRelay = false, cutShared = false;
  // The plan's tasks [afterFirst, afterLast) must be done before this one starts (two tasks of one VT
  // that share an edge's FIFO: plan/tree.cc).
  uint32_t afterFirst = 0, afterLast = 0;
};

struct Plan {
  Coll coll = Coll::AllReduce;
  PlanAlgo algo = PlanAlgo::Ring;  // whose planner made it
  precclDataType_t dtype = precclFloat;
  size_t esz = 4;
  RedOp op;
  uint32_t digest = 0;  // of the allocation; in every slot header, checked with checkDigest
  bool checkDigest = false;
  std::vector<EdgeName> edges;
  std::vector<Step> steps;
  std::vector<Task> tasks;
  // Whether every VT's tasks have cuts, so that this CCT's records reach every rank (all or nothing:
  // plan/finish.cc); decided from values every rank holds.
  bool cuts = false;
  // Per VT: the tasks with a shared cut, and whether the last of them takes this rank's snapshot (only
  // where this rank's own sends carry it on from there: a rank whose sends on the VT are a single piece,
  // or none, sends no record, so it keeps none).
  std::vector<uint32_t> sharedCuts;
  std::vector<char> sharedCutSnapshot;
  // Per VT and rank, where the planner knows (AlltoAll): whether the rank sends on the VT in this CCT, to
  // every other rank. Under rail affinity a rank may send nothing on a VT whose owner carries the host's
  // part: its cargo then stays with it (core/settle.cc). Empty: every rank may send.
  std::vector<std::vector<char>> senders;
  // How the planner decided `cuts`: -1 from the tasks' cuts (each VT must have one); 0 or 1 as given,
  // where ranks' tasks differ in size (rail affinity) and one rank may have a cut where another has none.
  int cutsRule = -1;

  // Empty again, keeping the memory: a communicator plans every call into the same Plan.
  void clear();
  // Building: begin() starts a task, add() appends a step to the task begun last.
  int32_t edge(const EdgeName& e);
  Task& begin(int vt, size_t piece);
  void add(const Step& s);
  Task& last() { return tasks.back(); }
  const Step& step(const Task& t, uint32_t k) const { return steps[t.firstStep + k]; }

 private:
  // The edges by name, once there are more than a few (a scan finds fewer faster).
  static constexpr size_t kScanEdges = 16;
  std::unordered_map<uint64_t, int32_t> edgeIndex_;
};

}  // namespace preccl
