// What the executor runs. A CCT is a set of Tasks; a Task is one VT's (or one point-to-point edge's)
// sequence of Steps; a Step is one primitive over a byte range, executed slot by slot:
//   out = [reduce] pre(src) (+) recv[0] (+) recv[1], written to dst and to every send FIFO.
// NCCL's send / recv / recvReduceSend / recvReduceCopySend / recvCopySend are all Steps with different
// inputs and outputs present.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "reduce/reduce.h"
#include "plan/stride_map.h"
#include "policy/telemetry.h"
#include "preccl/preccl.h"
#include "transport/fifo.h"

namespace preccl {

// Strided steps (the ring AllReduce's chunks) place their bytes through the StrideMap they are.
struct Step : StrideMap {
  Conn* recv[2] = {nullptr, nullptr};
  int nrecv = 0;
  Conn* send[2] = {nullptr, nullptr};
  int nsend = 0;
  const char* src = nullptr;  // this rank's input, or null
  char* dst = nullptr;        // this rank's output, or null
  size_t bytes = 0;
  bool reduce = false;        // combine with the op (else copy)
  bool post = false;          // apply the op's post-division (Avg) to the result
  // A header-only slot (bytes == 0): carries the telemetry cargo and nothing else. Chains use it to
  // send the last rank's records around the ring (see docs/telemetry.md).
  bool headerOnly = false;
  // A relay's forward (Topology::rail): another rank's slots, passed on with the telemetry they came with
  // and counted in VtCounters::lastRelayed; with `relayIsSend` also as this rank's sends (AlltoAll, where a
  // VT's owner sends its host's whole part of the VT; a ring's forward is its exit rank's send).
  bool relayed = false, relayIsSend = false;
};

struct Task {
  int vt = 0;
  std::vector<Step> steps;
  size_t pieceBytes = 0;  // bytes per slot (core/plan.h pieceBytes; a multiple of the element size); 0: the FIFO's slot
  size_t piece(size_t fifoSlotBytes) const { return pieceBytes ? pieceBytes : fifoSlotBytes; }
  // The telemetry cut (docs/telemetry.md): on reaching step cutStep at byte offset cutOff, the task takes a
  // snapshot of its VT's record, and every slot it sends from then on carries this CCT's own records
  // instead of an older epoch's. Planners put it where enough hops remain for every rank to hear every
  // other before the CCT ends, so the CCT's telemetry is known everywhere when it returns.
  // A relay cut (a tree's down task, whose rank's snapshot its up task took) only switches the headers: a
  // second snapshot of the same rank, later, would be heard by fewer ranks than the first.
  static constexpr size_t kNoCut = SIZE_MAX;
  size_t cutStep = kNoCut;
  size_t cutOff = 0;
  bool cutRelay = false;
  // A shared cut (AlltoAll: a VT's send and receive tasks, one of each per peer): the tasks wait at their
  // cuts until all of them are there (CctPlan::sharedCutsLeft), and the last to arrive takes the one
  // snapshot the sends all carry, so that every peer hears the same record of this rank.
  bool cutShared = false;
  // The plan's tasks [after.first, after.second) must be done before this one starts (two tasks of one VT
  // that share an edge's FIFO: plan_tree.cc). Empty: starts at once.
  std::pair<size_t, size_t> after{0, 0};
  // Progress.
  size_t cur = 0;
  size_t off = 0;
  bool cutTaken = false;
  bool cutArrived = false;  // a shared cut: counted in sharedCutsLeft
  bool stalled = false;
  uint64_t stallStartNs = 0;
  bool done() const { return cur >= steps.size(); }
  bool atCut() const { return cutStep != kNoCut && (cur > cutStep || (cur == cutStep && off >= cutOff)); }
};

struct CctPlan {
  uint64_t epoch = 0;
  uint32_t digest = 0;
  bool checkDigest = false;
  precclDataType_t dtype = precclFloat;
  size_t elemBytes = 4;
  RedOp op;
  std::vector<Task> tasks;
  // In-band telemetry of an earlier epoch riding on this CCT's slots (none when teleEpoch == kNoTele):
  // per VT, the running maximum of every record heard so far; starts as this rank's own record.
  uint64_t teleEpoch = kNoTele;
  std::vector<VtRecord> cargo;
  // This CCT's own records from the cut on (Task::cutStep): per VT, the running maximum of this rank's
  // snapshot and of every one heard. `cuts`: every VT's task has a cut, so they reach every rank.
  std::vector<VtRecord> now;
  bool cuts = false;
  // Per VT: the tasks with a shared cut (Task::cutShared) that have not reached it yet, and whether the
  // last of them takes this rank's snapshot: only where this rank's own sends carry it on from there
  // (a rank whose sends on the VT are a single piece, or none, sends no record, so it keeps none).
  std::vector<uint32_t> sharedCutsLeft;
  std::vector<char> sharedCutSnapshot;
  // Whether the CCT has cuts, decided by the planner from values every rank holds (-1: from the tasks'
  // cuts, all or nothing per rank; core/enqueue.cc settleCuts). Where ranks' tasks differ in size (rail
  // affinity), one rank may have a cut on a VT where another has none: every rank must still agree.
  int cutsRule = -1;
  // Per VT and rank, where the planner knows (AlltoAll): whether the rank sends on the VT in this CCT,
  // to every other rank. Under rail affinity a rank may send nothing on a VT whose owner carries the
  // host's part: its cargo then stays with it (core/enqueue.cc disseminates). Empty: every rank may send.
  std::vector<std::vector<char>> senders;
  // Filled by the executor: per VT, ns from the start of execution until its last task finished.
  std::vector<uint64_t> vtDoneNs;
  static constexpr uint64_t kNoTele = ~0ull;
};

// Per-field maximum: idempotent, so a record heard twice on a ring changes nothing.
inline void maxInto(VtRecord& into, const VtRecord& from) {
  into.bytes = std::max(into.bytes, from.bytes);
  into.elapsedNs = std::max(into.elapsedNs, from.elapsedNs);
  into.stalledNs = std::max(into.stalledNs, from.stalledNs);
  into.stalls = std::max(into.stalls, from.stalls);
}

}  // namespace preccl
