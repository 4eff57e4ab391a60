#include "core/enqueue.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "base/clock.h"
#include "core/comm.h"
#include "core/debug.h"
#include "core/group.h"
#include "core/probe.h"
#include "core/socket_buffers.h"
#include "core/stream.h"
#include "core/trace.h"
#include "reduce/dtype.h"
#include "exec/executor.h"
#include "transport/socket.h"

namespace preccl {

const char* collName(Coll c) {
  switch (c) {
    case Coll::AllReduce: return "AllReduce";
    case Coll::Broadcast: return "Broadcast";
    case Coll::Reduce: return "Reduce";
    case Coll::AllGather: return "AllGather";
    case Coll::ReduceScatter: return "ReduceScatter";
    case Coll::AlltoAll: return "AlltoAll";
    case Coll::Gather: return "Gather";
    case Coll::Scatter: return "Scatter";
    case Coll::P2P: return "SendRecv";
  }
  return "?";
}

Conn* connTo(precclComm* comm, int peer, int vt) { return comm->conns.at(peer, vt); }

Conn* railEdge(precclComm* comm, int from, int to, int vt) {
  const Topology& t = comm->topo;
  const int relay = t.relayFor(from, vt);
  if (relay == from || t.sameHost(from, to)) return connTo(comm, from == comm->rank ? to : from, vt);
  return from == comm->rank ? comm->conns.relay(relay, vt, to) : comm->conns.relay(relay, vt, from);
}

bool useTree(precclComm* comm, const CctArgs& a) {
  if (comm->cfg.algo == Algo::Tree) return true;
  if (comm->cfg.algo == Algo::Ring) return false;
  // Auto: the tree's log(n) latency wins for small AllReduce; the ring's bandwidth for the rest.
  return a.coll == Coll::AllReduce && comm->nranks > 2 && a.count * dtypeSize(a.dtype) <= comm->cfg.treeMaxBytes;
}

// Bytes a VT's busiest rank sends per element of its range: converts a range into the bytes the model was
// fitted on (telemetry records what each rank sent).
static AllocKey allocKey(precclComm* comm, const CctArgs& a, bool tree) {
  const uint32_t n = comm->nranks;
  AllocKey k;
  k.coll = static_cast<uint8_t>(a.coll);
  k.algo = tree ? 1 : 0;
  switch (a.coll) {
    case Coll::AllReduce:
      // A tree's busiest rank sends its range up once and down to each child: 2 of them at 4 ranks, 3
      // from 5 on (a fixed 3 overstated 4 ranks' bytes 1.5x against the fit, shrinking alpha's weight).
      if (tree) k.wireNum = treeMaxSends(n, true, true);
      else k.wireNum = 2 * (n - 1), k.wireDen = n;
      break;
    case Coll::AllGather:
    case Coll::ReduceScatter: k.wireNum = n - 1; break;
    case Coll::Broadcast: k.wireNum = tree ? treeMaxSends(n, false, true) : 1; break;
    case Coll::Reduce: k.wireNum = 1; break;  // up the tree or along the chain: every rank sends once
    case Coll::AlltoAll:
      // Under rail affinity a VT's owner sends its whole host's part of the VT: its own and its relays'.
      k.wireNum = (n - 1) * (comm->topo.rail ? static_cast<uint32_t>(comm->topo.hostRanks[comm->topo.hostOf[comm->rank]].size()) : 1u);
      break;
    default: k.wireNum = n - 1; break;
  }
  if (n == 1) k.wireNum = k.wireDen = 1;
  return k;
}

static Allocation allocate(precclComm* comm, const CctArgs& a, bool tree) {
  AllocRequest req;
  req.count = a.count;
  req.elemBytes = dtypeSize(a.dtype);
  req.nVTs = comm->nVTs;
  // The policies shift ranges of the ring and tree families and of AlltoAll (one range per VT, cut from
  // every peer's block alike); Gather and Scatter stay equal (Send/Recv: plan_p2p.cc).
  const bool shifts = a.coll == Coll::AllReduce || a.coll == Coll::AllGather || a.coll == Coll::ReduceScatter ||
                      a.coll == Coll::Broadcast || a.coll == Coll::Reduce || a.coll == Coll::AlltoAll;
  if (!shifts || comm->cfg.policy == PolicyKind::Static) return equalAllocation(req, comm->liveMask);
  return decide(comm->cfg.policy, comm->policy, req, allocKey(comm, a, tree), comm->haveTele ? &comm->tele : nullptr,
                comm->liveMask);
}

bool estimateCctNs(precclComm* comm, const CctArgs& a, uint64_t* ns) {
  *ns = 0;
  std::lock_guard<std::mutex> lock(comm->execMutex);  // the policy state changes under it
  const bool p2p = a.coll == Coll::P2P;
  size_t count = a.count;
  if (p2p) {  // what this rank sends, in bytes (a group's P2P counts are bytes)
    count = 0;
    for (const P2POp& op : a.p2p)
      if (op.isSend) count += op.count * dtypeSize(a.dtype);
  }
  if (count == 0 || comm->nranks == 1) return true;  // nothing crosses a VT
  const bool tree = !p2p && useTree(comm, a);
  AllocRequest req;
  req.count = count;
  req.elemBytes = p2p ? 1 : dtypeSize(a.dtype);
  req.nVTs = comm->nVTs;
  const AllocKey key = p2p ? AllocKey{} : allocKey(comm, a, tree);
  const Allocation al = comm->cfg.policy == PolicyKind::Static || p2p
                            ? equalAllocation(req, comm->liveMask)
                            : currentShares(comm->policy, req, key, comm->liveMask);
  for (int v = 0; v < comm->nVTs && v < static_cast<int>(al.vt.size()); v++) {
    const uint64_t bytes = al.vt[v].count * req.elemBytes * key.wireNum / key.wireDen;
    if (bytes == 0) continue;
    const uint64_t t = modelEstimateNs(comm->policy.model, v, bytes);
    if (t == 0) return false;  // nothing known yet
    *ns = std::max(*ns, t);
  }
  return true;
}

static bool liveVt(const precclComm* comm, int v) { return isLive(comm->liveMask, v); }

// Whether this CCT's slots carry every rank's cargo to every rank on VT v: a ring AllReduce whose range
// holds a part of every chunk (n-1 hops of cumulative maxima), a ring AllGather/ReduceScatter or a tree AllReduce
// with any bytes on v (up to the root, whose last slots down hold everything), a Broadcast/Reduce
// whose telemetry tail ran, an AlltoAll in which every rank that sent on v in the cargo's epoch sends on
// v (CctPlan::senders).
// Every rank computes the same answer from the same allocation, so all agree on whether the epoch's
// telemetry is complete.
static bool disseminates(precclComm* comm, const CctArgs& a, bool tree, const VtRange& range, const CctPlan& plan, int v) {
  if (comm->nranks == 1) return true;
  if (!plan.senders.empty()) {
    // An AlltoAll: every rank whose record of the cargo's epoch may be other than zero (it sent on v
    // then) sends on v now, to every rank; a rank that sent nothing holds a zero record, which changes
    // no maximum.
    for (int r = 0; r < comm->nranks; r++)
      if ((comm->pendingSenders.empty() || comm->pendingSenders[size_t(v)][size_t(r)]) && !plan.senders[size_t(v)][size_t(r)])
        return false;
    return true;
  }
  const size_t vtCount = range.count;
  switch (a.coll) {
    case Coll::AllReduce: {
      if (tree) return vtCount > 0;
      return ringEveryChunk(range.offset, vtCount, comm->nranks, ringBlockElems(dtypeSize(a.dtype)));
    }
    case Coll::AllGather:
    case Coll::ReduceScatter: return vtCount > 0;
    case Coll::Broadcast:
    case Coll::Reduce: return teleTailRuns(a, a.count * dtypeSize(a.dtype), comm->nranks);
    default: return false;
  }
}

// The cut is all or nothing: a VT without one would leave its records of this CCT unknown somewhere, and
// on VTs with one the older cargo stops riding at the cut, so it would not be complete either. Every rank
// gets the same answer (the planners decide from the allocation).
static void settleCuts(precclComm* comm, CctPlan& plan) {
  if (plan.cutsRule >= 0) {
    plan.cuts = comm->nranks > 1 && plan.cutsRule == 1;
    if (!plan.cuts)
      for (Task& t : plan.tasks) t.cutStep = Task::kNoCut;
    return;
  }
  std::vector<char> cut(comm->nVTs, 0);
  for (int v = 0; v < comm->nVTs; v++) cut[v] = !liveVt(comm, v);  // a masked VT carries no records
  for (const Task& t : plan.tasks)
    if (t.cutStep != Task::kNoCut && t.vt >= 0 && t.vt < comm->nVTs) cut[t.vt] = 1;
  plan.cuts = comm->nranks > 1 && std::all_of(cut.begin(), cut.end(), [](char c) { return c != 0; });
  if (!plan.cuts)
    for (Task& t : plan.tasks) t.cutStep = Task::kNoCut;
}

// Known everywhere: epoch's records become the latest telemetry, one row of per-VT maxima over all ranks
// (the model uses the slowest rank's elapsed time and the largest byte count, so the maxima are its input).
static void setLatestTelemetry(precclComm* comm, uint64_t epoch, const std::vector<VtRecord>& maxima) {
  comm->tele.reset(epoch, 1, comm->nVTs);
  // A masked VT's row holds only what this rank saw: empty everywhere, so that every rank holds the same.
  for (int v = 0; v < comm->nVTs; v++) comm->tele.at(0, v) = liveVt(comm, v) ? maxima[v] : VtRecord{};
  comm->haveTele = true;
}

// After a collective whose plan had cuts, its own records are known everywhere: they are the latest
// telemetry, and older cargo is superseded. Otherwise the epoch whose cargo rode on it becomes known
// everywhere (if it was complete), and this CCT's own records wait for the next collective. A CCT that
// could not complete the cargo (a small sync between large calls, a Gather) keeps carrying the older
// epoch instead, with what it heard added: its own records matter less than the large call's, and
// dropping those would cost the policy a CCT.
static void collectTelemetry(precclComm* comm, const CctArgs& a, bool tree, const Allocation& al, const CctPlan& plan) {
  if (plan.cuts) {
    setLatestTelemetry(comm, plan.epoch, plan.now);
    comm->pendingEpoch = CctPlan::kNoTele;
    comm->pendingRec.clear();
    comm->pendingSenders.clear();
    return;
  }
  if (plan.teleEpoch != CctPlan::kNoTele) {
    bool complete = true;
    for (int v = 0; v < comm->nVTs; v++) complete &= !liveVt(comm, v) || disseminates(comm, a, tree, al.vt[v], plan, v);
    if (complete) {
      setLatestTelemetry(comm, plan.teleEpoch, plan.cargo);
    } else if (plan.senders.empty()) {
      comm->pendingRec = plan.cargo;  // pendingEpoch stays
      comm->pendingSenders.clear();   // what every rank heard is in its cargo now
      return;
    }
    // An AlltoAll whose senders could not carry the older epoch (rail affinity: a rank that sent on a VT
    // then sends nothing there now) drops it, and its own records ride on the next CCT instead: they
    // matter as much, and the ranks that would carry the older ones may never send on that VT again.
  }
  comm->pendingEpoch = plan.epoch;
  comm->pendingSenders = plan.senders;
  comm->pendingRec.assign(comm->nVTs, VtRecord{});
  for (int v = 0; v < comm->nVTs; v++) {
    const VtCounters& c = comm->vtStats[v];
    VtRecord& r = comm->pendingRec[v];
    r.bytes = c.lastBytes;
    r.elapsedNs = c.lastBytes ? plan.vtDoneNs[v] : 0;
    r.stalledNs = c.lastStallNs;
    r.stalls = static_cast<uint32_t>(std::min<uint64_t>(c.lastStalls, UINT32_MAX));
  }
}

// The tasks of masked VTs go (a planner may add a header-only tail on a VT without bytes); `after` ranges
// name tasks of one VT, so they stay contiguous and only move.
static void dropMaskedTasks(precclComm* comm, CctPlan& plan) {
  if (std::all_of(plan.tasks.begin(), plan.tasks.end(), [&](const Task& t) { return liveVt(comm, t.vt); })) return;
  std::vector<size_t> newIndex(plan.tasks.size() + 1);
  std::vector<Task> kept;
  for (size_t i = 0; i < plan.tasks.size(); i++) {
    newIndex[i] = kept.size();
    if (liveVt(comm, plan.tasks[i].vt)) kept.push_back(std::move(plan.tasks[i]));
  }
  newIndex[plan.tasks.size()] = kept.size();
  for (Task& t : kept) t.after = {newIndex[t.after.first], newIndex[t.after.second]};
  plan.tasks = std::move(kept);
}

// One attempt's plan under the current mask.
static precclResult_t buildPlan(precclComm* comm, const CctArgs& a, bool tree, CctPlan& plan, Allocation& al) {
  plan.epoch = comm->epoch;
  plan.dtype = a.dtype;
  plan.elemBytes = dtypeSize(a.dtype);
  plan.op = a.op;
  const bool timed = comm->traceFd >= 0;  // the clock reads are for the trace: none on the common path
  if (a.coll != Coll::P2P && comm->pendingEpoch != CctPlan::kNoTele) {
    plan.teleEpoch = comm->pendingEpoch;
    plan.cargo = comm->pendingRec;
  }
  if (a.coll == Coll::P2P) {
    std::string why;
    if (!planP2P(comm, a, &plan, &why)) return PRECCL_ERR(comm, precclInvalidUsage, "{}", why);
    dropMaskedTasks(comm, plan);
    return precclSuccess;
  }
  const uint64_t t0 = timed ? nowNs() : 0;
  al = allocate(comm, a, tree);
  if (timed) comm->lastDecideNs = nowNs() - t0;
  if (!al.coversExactly(a.count))
    return PRECCL_ERR(comm, precclInternalError, "{}: the allocation does not cover {} elements", collName(a.coll), a.count);
  const uint64_t tPlan = timed ? nowNs() : 0;
  plan.digest = al.digest() ^ static_cast<uint32_t>(a.coll) * 0x9e3779b9u ^ static_cast<uint32_t>(a.root);
  plan.checkDigest = comm->cfg.checkAlloc;
  switch (a.coll) {
    case Coll::AllReduce:
      tree ? planTreeAllReduce(comm, a, al, &plan) : planRingAllReduce(comm, a, al, &plan);
      break;
    case Coll::Broadcast:
      tree ? planTreeBroadcast(comm, a, al, &plan) : planRingBroadcast(comm, a, al, &plan);
      break;
    case Coll::Reduce:
      tree ? planTreeReduce(comm, a, al, &plan) : planRingReduce(comm, a, al, &plan);
      break;
    case Coll::AllGather: planRingAllGather(comm, a, al, &plan); break;
    case Coll::ReduceScatter: planRingReduceScatter(comm, a, al, &plan); break;
    case Coll::AlltoAll: planAlltoAll(comm, a, al, &plan); break;
    case Coll::Gather: planGather(comm, a, al, &plan); break;
    case Coll::Scatter: planScatter(comm, a, al, &plan); break;
    case Coll::P2P: break;
  }
  dropMaskedTasks(comm, plan);
  settleCuts(comm, plan);
  if (timed) comm->lastPlanNs = nowNs() - tPlan;
  // Only a tree's sockets are sized (on up to its sends per rank, allocKey's wireNum): its flows run
  // apart on autotuned buffers. Rings and chains gain little from the bound, and a flow with a bounded
  // window loses its share of a link to another tenant's TCP flows (docs/results-archive.md, "Every row at the
  // current code").
  if (tree) sizeSocketBuffers(comm, static_cast<int>(allocKey(comm, a, true).wireNum));
  return precclSuccess;
}

// The bytes of the caller's input that the CCT itself overwrites before every rank is done with them
// (in-place reductions), so that a retry would not find them: 0 when there are none.
static size_t overwrittenInputBytes(const precclComm* comm, const CctArgs& a) {
  const size_t esz = dtypeSize(a.dtype);
  switch (a.coll) {
    case Coll::AllReduce: return a.sendbuff == a.recvbuff ? a.count * esz : 0;
    case Coll::Reduce: return a.sendbuff == a.recvbuff && comm->rank == a.root ? a.count * esz : 0;
    case Coll::ReduceScatter:
      return static_cast<const char*>(a.sendbuff) + comm->rank * a.count * esz == a.recvbuff ? comm->nranks * a.count * esz : 0;
    default: return 0;
  }
}

// Copies the input into the communicator's staging buffer and points the call at the copy.
static precclResult_t stageInput(precclComm* comm, CctArgs& a, size_t bytes) {
  if (comm->stagingBytes < bytes) {
    comm->staging.reset(static_cast<char*>(malloc(bytes)));
    comm->stagingBytes = comm->staging ? bytes : 0;
    if (!comm->staging)
      return PRECCL_ERR(comm, precclSystemError, "{}: cannot allocate {} B to stage an in-place input", collName(a.coll), bytes);
  }
  memcpy(comm->staging.get(), a.sendbuff, bytes);
  a.sendbuff = comm->staging.get();
  return precclSuccess;
}

// The ring neighbours' edges on the live VTs (`live`) or on the masked ones, the lowest VT's first: every
// rank reaches every other through them on any one VT.
static std::vector<Conn*> notifyEdges(precclComm* comm, bool live) {
  std::vector<Conn*> e;
  const int next = comm->topo.ringNext(comm->rank), prev = comm->topo.ringPrev(comm->rank);
  for (int v = 0; v < comm->nVTs; v++) {
    if (liveVt(comm, v) != live) continue;
    for (int peer : {next, prev})
      if (Conn* c = peer != comm->rank ? connTo(comm, peer, v) : nullptr; c && std::find(e.begin(), e.end(), c) == e.end())
        e.push_back(c);
  }
  return e;
}

static std::string vtList(uint64_t mask) {
  std::vector<int> vts;
  for (int v = 0; v < 64; v++)
    if ((mask >> v) & 1) vts.push_back(v);
  return fmt::format("{}", fmt::join(vts, ","));
}

// After an agreed abort: masks the failed VTs, or, when none would be left, keeps them for another try
// until PRECCL_TIMEOUT has passed since the first such abort (a host whose every NIC blinks recovers).
static precclResult_t afterAbort(precclComm* comm, const ExecFault& fault, uint32_t attempt) {
  comm->aborts++;
  const uint64_t failed = fault.agreedVts & comm->liveMask;
  if (failed != 0 && failed != comm->liveMask) {
    mask(comm, failed);
    comm->noVtLeftSinceNs = 0;
    PRECCL_WARN("rank {}: epoch {} attempt {} aborted; masking VT(s) {} (dead paths), retrying on VT(s) {}", comm->rank,
                comm->epoch, attempt, vtList(failed), vtList(comm->liveMask));
    return precclSuccess;
  }
  // Every live VT failed, but masked ones may answer again on every rank (a rail that returned while the
  // other died): the retry runs on those.
  // (They rejoin before `failed` leaves, so that only VTs masked earlier can come back.)
  if (failed != 0) {
    if (const uint64_t back = rejoin(comm, fault.notReadyVts, comm->epoch); back != 0) {
      mask(comm, failed);
      comm->noVtLeftSinceNs = 0;
      PRECCL_WARN("rank {}: epoch {} attempt {} aborted; masking VT(s) {} (dead paths), retrying on VT(s) {}, which "
                  "answer again",
                  comm->rank, comm->epoch, attempt, vtList(failed), vtList(back));
      return precclSuccess;
    }
  }
  const uint64_t now = nowNs();
  if (comm->noVtLeftSinceNs == 0) comm->noVtLeftSinceNs = now;
  if (now - comm->noVtLeftSinceNs > comm->cfg.timeoutMs * 1000000ull) {
    const std::string msg = fmt::format(
        "rank {}: no VT is left: every live VT ({}) has a dead path, for more than PRECCL_TIMEOUT={} s; epoch {} attempt {}",
        comm->rank, vtList(comm->liveMask), comm->cfg.timeoutMs / 1000, comm->epoch, attempt);
    setError(comm, precclRemoteError, msg);
    comm->raiseAsync(precclRemoteError, msg);
    return precclRemoteError;
  }
  PRECCL_WARN("rank {}: epoch {} attempt {} aborted; every live VT ({}) has a dead path: trying them again", comm->rank,
              comm->epoch, attempt, vtList(comm->liveMask));
  return precclSuccess;
}

// Whether the call's buffers are device memory, to run on the GPU (where the program enabled the device
// executor, gpu/gpu_exec.h): all of them or none.
static precclResult_t deviceBuffers(precclComm* comm, const CctArgs& a, bool* dev) {
  *dev = false;
  const DeviceExecutor& d = deviceExecutor();
  if (!d.run) return precclSuccess;
  std::vector<const void*> bufs = {a.sendbuff, a.recvbuff};
  for (const P2POp& op : a.p2p) bufs.push_back(op.buf);
  int device = 0, host = 0;
  for (const void* b : bufs)
    if (b) (d.isDevice(b) ? device : host)++;
  if (device > 0 && host > 0)
    return PRECCL_ERR(comm, precclInvalidArgument, "{}: {} of the call's buffers are device memory and {} are not",
                      collName(a.coll), device, host);
  *dev = device > 0;
  if (*dev && a.coll == Coll::AlltoAll && a.sendbuff == a.recvbuff && a.count > 0 && comm->nranks > 1)
    return PRECCL_ERR(comm, precclInvalidUsage, "AlltoAll: in place on device memory is not supported yet");
  return precclSuccess;
}

precclResult_t launchCct(precclComm* comm, const CctArgs& args) {
  std::lock_guard<std::mutex> lock(comm->execMutex);
  if (int e = comm->asyncError.load(); e != precclSuccess)
    return setError(comm, static_cast<precclResult_t>(e), fmt::format("communicator has failed earlier: {}", comm->errorText()));
  CctArgs a = args;
  // Every rank runs a collective, so all can agree on how it ends; a group of sends and receives involves
  // only some, so a failed path fails it. Only network paths fail apart from their ranks: a communicator
  // within one host's shared memory has nothing to retry and skips the commit's latency.
  // The device and lanes executors have no agreement: where the host executor would agree, a call on
  // device memory runs without it (every rank's buffers are device memory, or none's), and the lanes
  // executor leaves the CCT to the host executor.
  bool onDevice = false;
  PRECCL_CHECK(deviceBuffers(comm, a, &onDevice));
  const bool agree = !onDevice && comm->cfg.retry && a.coll != Coll::P2P && comm->nranks > 1 &&
                     (comm->topo.nHosts() > 1 || comm->topo.shmDisabled);
  // In-place AlltoAll: stage the input, since block q is overwritten by rank q while still being sent.
  if (a.coll == Coll::AlltoAll && a.sendbuff == a.recvbuff && comm->nranks > 1 && a.count > 0)
    PRECCL_CHECK(stageInput(comm, a, a.count * comm->nranks * dtypeSize(a.dtype)));
  if (size_t b = agree ? overwrittenInputBytes(comm, a) : 0; b > 0) PRECCL_CHECK(stageInput(comm, a, b));
  const bool tree = a.coll != Coll::P2P && useTree(comm, a);
  const bool timed = comm->traceFd >= 0;
  if (agree) probeMasked(comm);
  CctPlan plan;
  ExecFault fault;
  Allocation al;
  for (uint32_t attempt = 0;; attempt++) {
    plan = CctPlan{};
    PRECCL_CHECK(buildPlan(comm, a, tree, plan, al));
    const uint64_t tExec = timed ? nowNs() : 0;
    ExecCtx ctx;
    ctx.rank = comm->rank;
    ctx.nranks = comm->nranks;
    ctx.slotBytes = comm->slotBytes;
    ctx.timeoutNs = comm->cfg.timeoutMs * 1000000ull;
    ctx.bell = comm->bell;
    ctx.abort = &comm->abortFlag;
    ctx.vtStats = &comm->vtStats;
    ctx.edges = &comm->conns;
    ctx.agree = agree;
    ctx.attempt = attempt;
    ctx.dropStale = comm->aborts > 0;
    ctx.liveMask = comm->liveMask;
    ctx.detectMs = comm->cfg.detectMs;
    ctx.lastCommit = &comm->lastCommit;
    if (agree) {
      ctx.notify = notifyEdges(comm, true);
      ctx.spare = notifyEdges(comm, false);
      ctx.notifyNarrow = std::min<size_t>(ctx.notify.size(), comm->topo.ringNext(comm->rank) == comm->topo.ringPrev(comm->rank) ? 1 : 2);
      ctx.report = [comm] {
        probeMasked(comm);  // what arrived on the masked edges during the call goes, so theirs can clear
        return maskedNotReady(comm);
      };
    }
    fault = ExecFault{};
    precclResult_t res = onDevice                    ? deviceExecutor().run(ctx, plan, &fault)
                         : comm->cfg.lanes && !agree ? executeLanes(ctx, plan, &fault)
                                                     : execute(ctx, plan, &fault);
    if (timed) comm->lastExecNs = nowNs() - tExec;
    comm->lastAttempts = attempt + 1;
    if (res == precclSuccess) {
      if (agree) comm->lastCommit = std::move(fault.committed);
      break;
    }
    if (fault.aborted) {
      PRECCL_CHECK(afterAbort(comm, fault, attempt));
      continue;
    }
    // The FIFOs may hold a half-finished CCT, so later calls must fail fast.
    setError(comm, res, fault.what);
    comm->raiseAsync(res, fault.what);
    return res;
  }
  comm->noVtLeftSinceNs = 0;
  if (agree) rejoin(comm, fault.agreedVts, comm->epoch + 1);
  if (a.coll != Coll::P2P) {
    collectTelemetry(comm, a, tree, al, plan);
    const size_t total = std::max<size_t>(1, al.total());
    for (int v = 0; v < comm->nVTs && v < static_cast<int>(al.vt.size()); v++)
      comm->vtStats[v].lastShare = static_cast<double>(al.vt[v].count) / total;
    traceCct(comm, a, tree, al, plan);
    comm->epoch++;
  }
  return precclSuccess;
}

precclResult_t submit(precclComm* comm, precclStream_t stream, CctArgs a) {
  if (groupDepth() > 0) return groupAdd(comm, stream, std::move(a));
  if (stream) return streamEnqueue(stream, [comm, a = std::move(a)] { return launchCct(comm, a); });
  return launchCct(comm, a);
}

}  // namespace preccl
