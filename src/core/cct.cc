#include "core/cct.h"

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "base/clock.h"
#include "core/comm.h"
#include "core/debug.h"
#include "core/decide.h"
#include "core/deferred.h"
#include "core/probe.h"
#include "core/run_attempt.h"
#include "core/settle.h"
#include "core/socket_buffers.h"
#include "exec/bind.h"
#include "plan/coll_table.h"
#include "reduce/dtype.h"

namespace preccl {

namespace {

// Copies the input into the communicator's staging buffer and points the call at the copy.
precclResult_t stageInput(precclComm* comm, CctArgs& a, size_t bytes) {
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

// Whether the call's buffers are device memory, to run on the GPU (where the program enabled the device
// executor, gpu/gpu_exec.h): all of them or none.
precclResult_t deviceBuffers(precclComm* comm, const CctArgs& a, bool* dev) {
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
  if (*dev && collRow(a.coll).stagesInPlace && a.sendbuff == a.recvbuff && a.count > 0 && comm->nranks > 1)
    return PRECCL_ERR(comm, precclInvalidUsage, "{}: in place on device memory is not supported yet", collName(a.coll));
  return precclSuccess;
}

// A group's sends to this rank itself must pair with its receives from itself, in order and size.
precclResult_t checkSelfPairs(precclComm* comm, const CctArgs& a) {
  std::vector<const P2POp*> sends, recvs;
  for (const P2POp& op : a.p2p)
    if (op.peer == comm->rank) (op.isSend ? sends : recvs).push_back(&op);
  if (sends.size() != recvs.size())
    return PRECCL_ERR(comm, precclInvalidUsage, "rank {}: {} send(s) to itself but {} receive(s) from itself in one group",
                      comm->rank, sends.size(), recvs.size());
  for (size_t i = 0; i < sends.size(); i++)
    if (sends[i]->count != recvs[i]->count)
      return PRECCL_ERR(comm, precclInvalidUsage, "rank {}: send to itself of {} elements matched with a receive of {}",
                        comm->rank, sends[i]->count, recvs[i]->count);
  return precclSuccess;
}

// What the call needs before its first attempt. Every rank runs a collective, so all can agree on how it
// ends; a group of sends and receives involves only some, so a failed path fails it. Only network paths
// fail apart from their ranks: a communicator within one host's shared memory has nothing to retry and
// skips the commit's latency. Calls on device memory run without the agreement (every rank's buffers are
// device memory, or none's): their input is not staged for a retry.
precclResult_t prepareCct(precclComm* comm, const CctArgs& args, Cct* c) {
  const CollRow& row = collRow(args.coll);
  c->a = args;
  CctArgs& a = c->a;
  PRECCL_CHECK(deviceBuffers(comm, a, &c->onDevice));
  if (!row.collective) PRECCL_CHECK(checkSelfPairs(comm, a));
  c->agree = !c->onDevice && comm->cfg.retry && row.collective && comm->nranks > 1 &&
             (comm->topo.nHosts() > 1 || comm->topo.shmDisabled);
  c->deferred = defersCommit(comm, a, c->agree);
  const size_t esz = dtypeSize(a.dtype);
  if (c->deferred) {
    PRECCL_CHECK(keepInput(comm, c));
  } else {
    if (row.stagesInPlace && a.sendbuff == a.recvbuff && comm->nranks > 1 && a.count > 0)
      PRECCL_CHECK(stageInput(comm, a, a.count * comm->nranks * esz));
    if (size_t b = c->agree ? row.overwrites(a, comm->rank, comm->nranks) : 0; b > 0) PRECCL_CHECK(stageInput(comm, a, b));
  }
  if (c->agree) probeMasked(comm);
  return precclSuccess;
}

// This rank's plan of the attempt; a tree's sockets are sized for it (only a tree's: its flows run apart on
// autotuned buffers; rings and chains gain little from the bound, and a flow with a bounded window loses
// its share of a link to another tenant's TCP flows: docs/architecture.md).
void planAttempt(precclComm* comm, const CctArgs& a, const Decision& d, Plan* plan) {
  const bool timed = comm->traceFd >= 0;
  const uint64_t t0 = timed ? nowNs() : 0;
  planCct(planView(comm), a, d, plan);
  if (timed) comm->lastPlanNs = nowNs() - t0;
  if (plan->algo == PlanAlgo::Tree) sizeSocketBuffers(comm, static_cast<int>(allocKey(comm, a, true).wireNum));
}

precclResult_t bindAttempt(precclComm* comm, const CctArgs& a, const Plan& plan, Bound* b) {
  std::string why;
  if (!bindPlan(plan, comm->conns, b, &why))
    return PRECCL_ERR(comm, precclInternalError, "rank {}: {}: {}", comm->rank, collName(a.coll), why);
  return precclSuccess;
}

precclResult_t recoverPending(precclComm* comm, const Bound& b, const ExecFault& gaveUp);

// The attempts of c until one ends well. An attempt is numbered by the aborts the communicator agreed on
// before it (the same on every rank). An agreed abort masks the failed VTs and goes round again; an abort
// of the pending call first takes that call again.
precclResult_t runCct(precclComm* comm, const Cct& c, CallState* s, ExecFault* fault) {
  Decision* d = &s->decision;
  Plan* plan = &s->plan;
  Bound& b = s->bound;
  RunOut* out = &s->out;
  for (uint32_t tries = 1;; tries++) {
    decideCct(comm, c.a, d);
    if (collRow(c.a.coll).collective && !d->al.coversExactly(c.a.count))
      return PRECCL_ERR(comm, precclInternalError, "{}: the allocation does not cover {} elements", collName(c.a.coll), c.a.count);
    plan->clear();
    planAttempt(comm, c.a, *d, plan);
    PRECCL_CHECK(bindAttempt(comm, c.a, *plan, &b));
    *fault = ExecFault{};
    const uint32_t attempt = static_cast<uint32_t>(comm->aborts);
    const precclResult_t res = runAttempt(comm, c, *plan, b, attempt, out, fault);
    comm->lastAttempts = tries;
    if (res == precclSuccess) {
      settlePending(comm, c, attempt);
      return precclSuccess;
    }
    if (fault->pendingAborted) PRECCL_CHECK(recoverPending(comm, b, *fault));
    else PRECCL_CHECK(recoverAttempt(comm, *fault, attempt, res));
  }
}

// A peer still needs this rank's part of the pending call: this rank gave its own attempt up, joins the
// pending one's abort, masks what every rank masks, and runs the pending call again from its kept input, as
// the peers run their retry of it. Its output goes to scratch: this rank returned that result already,
// and the retry has the same bits.
precclResult_t recoverPending(precclComm* comm, const Bound& b, const ExecFault& gaveUp) {
  const PendingCct p = comm->pending;
  Cct pc;
  pc.a = p.args;
  pc.agree = true;
  pc.deferred = true;
  pc.keptBuf = p.buf;
  pc.rerun = true;
  PRECCL_WARN("rank {}: epoch {}, which this rank finished, is being aborted: joining, then running it again", comm->rank,
              p.epoch);
  ExecFault joined;
  const precclResult_t res = joinPendingAbort(comm, pc, b, gaveUp.failedVts, &joined);
  if (res != precclSuccess) {
    const uint64_t epoch = comm->epoch;
    comm->epoch = p.epoch;  // the abort, and its messages, are of the pending epoch
    const precclResult_t r = recoverAttempt(comm, joined, p.attempt, res);
    comm->epoch = epoch;
    PRECCL_CHECK(r);
  }
  const size_t outBytes = pc.a.count * dtypeSize(pc.a.dtype);
  pc.a.recvbuff = comm->keptOut.grow(outBytes);
  if (!pc.a.recvbuff)
    return PRECCL_ERR(comm, precclSystemError, "AllReduce: cannot allocate {} B to run epoch {} again", outBytes, p.epoch);
  const uint64_t epoch = comm->epoch;
  comm->epoch = p.epoch;
  comm->pending.active = false;  // the pending call itself has none before it
  CallState again;  // the call this rank gave up still uses the communicator's
  ExecFault fault;
  const precclResult_t r = runCct(comm, pc, &again, &fault);
  comm->epoch = epoch;
  comm->pending.args.recvbuff = p.args.recvbuff;
  return r;
}

}  // namespace

precclResult_t launchCct(precclComm* comm, const CctArgs& args) {
  std::lock_guard<std::mutex> lock(comm->execMutex);
  if (int e = comm->asyncError.load(); e != precclSuccess)
    return setError(comm, static_cast<precclResult_t>(e), fmt::format("communicator has failed earlier: {}", comm->errorText()));
  Cct c;
  PRECCL_CHECK(prepareCct(comm, args, &c));
  CallState& s = comm->call;
  ExecFault fault;
  PRECCL_CHECK(runCct(comm, c, &s, &fault));
  settleCct(comm, c.a, s.decision, s.plan, s.out, fault, c.agree && !fault.deferred);
  return precclSuccess;
}

}  // namespace preccl
