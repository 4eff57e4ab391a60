#include "core/trace.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/comm.h"
#include "core/debug.h"
#include "base/env.h"
#include "core/probe.h"
#include "reduce/dtype.h"

namespace preccl {

void traceOpen(precclComm* comm) {
  std::string path = envString("TRACE", "");
  if (path.empty()) return;
  comm->traceFd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (comm->traceFd < 0) PRECCL_WARN("PRECCL_TRACE={}: cannot open: {}", path, strerror(errno));
}

void traceClose(precclComm* comm) {
  if (comm->traceFd >= 0) close(comm->traceFd);
  comm->traceFd = -1;
}

void traceCct(precclComm* comm, const CctArgs& a, const Decision& d, const Plan& plan, const RunOut& out) {
  if (comm->traceFd < 0) return;
  const size_t esz = dtypeSize(a.dtype);
  std::string vts;
  for (int v = 0; v < comm->nVTs; v++) {
    const VtCounters& c = comm->vtStats[v];
    const size_t range = v < static_cast<int>(d.al.vt.size()) ? d.al.vt[v].count * esz : 0;
    size_t piece = 0;  // the pipeline piece of the VT's first task
    for (const Task& t : plan.tasks)
      if (t.vt == v) {
        piece = t.piece;
        break;
      }
    int64_t alpha = 0;
    uint64_t betaQ = 0;  // ns per byte << 20 = ns per MiB
    modelParams(comm->policy.model, v, &alpha, &betaQ);
    vts += fmt::format(
        "{}{{\"vt\":{},\"rangeBytes\":{},\"share\":{:.6f},\"sentBytes\":{},\"stalls\":{},\"stallNs\":{},\"elapsedNs\":{},"
        "\"estimateNs\":{},\"alphaNs\":{},\"nsPerMiB\":{},\"pieceBytes\":{},\"state\":\"{}\",\"stateEpoch\":{}}}",
        v ? "," : "", v, range, c.lastShare, c.lastBytes, c.lastStalls, c.lastStallNs, out.vtDoneNs[v],
        modelEstimateNs(comm->policy.model, v, c.lastBytes), alpha, betaQ, piece,
        vtStateName(vtState(comm, v)), comm->vtStateEpoch[v]);
  }
  std::string line = fmt::format(
      "{{\"rank\":{},\"epoch\":{},\"coll\":\"{}\",\"algo\":\"{}\",\"policy\":\"{}\",\"count\":{},\"type\":\"{}\","
      "\"telemetryEpoch\":{},\"decideNs\":{},\"planNs\":{},\"execNs\":{},\"attempts\":{},\"vts\":[{}]}}\n",
      comm->rank, comm->epoch, collName(a.coll), algoName(plan.algo), policyName(comm->cfg.policy), a.count,
      dtypeName(a.dtype), comm->haveTele ? static_cast<int64_t>(comm->tele.epoch) : -1, comm->lastDecideNs,
      comm->lastPlanNs, comm->lastExecNs, comm->lastAttempts, vts);
  ssize_t r = write(comm->traceFd, line.data(), line.size());
  (void)r;
}

}  // namespace preccl
