#include "core/group.h"

#include <algorithm>
#include <thread>
#include <vector>

#include "core/comm.h"
#include "core/debug.h"
#include "core/cct.h"
#include "core/decide.h"
#include "core/stream.h"

namespace preccl {

namespace {

struct Batch {
  precclComm* comm = nullptr;
  precclStream_t stream = nullptr;
  std::vector<CctArgs> collectives;  // in call order
  CctArgs p2p;                       // all sends and receives, in call order
};

struct GroupState {
  int depth = 0;
  std::vector<Batch> batches;  // one per communicator, in order of first use
};

thread_local GroupState tls;

precclResult_t runBatch(const Batch& b) {
  for (const CctArgs& a : b.collectives) PRECCL_CHECK(launchCct(b.comm, a));
  if (!b.p2p.p2p.empty()) PRECCL_CHECK(launchCct(b.comm, b.p2p));
  return precclSuccess;
}

}  // namespace

int groupDepth() { return tls.depth; }

precclResult_t groupStart() {
  tls.depth++;
  return precclSuccess;
}

precclResult_t groupAdd(precclComm* comm, precclStream_t stream, CctArgs a) {
  Batch* b = nullptr;
  for (auto& x : tls.batches)
    if (x.comm == comm) b = &x;
  if (!b) {
    tls.batches.emplace_back();
    b = &tls.batches.back();
    b->comm = comm;
    b->stream = stream;
    b->p2p.coll = Coll::SendRecv;
    b->p2p.dtype = precclInt8;
  }
  if (a.coll == Coll::SendRecv) b->p2p.p2p.insert(b->p2p.p2p.end(), a.p2p.begin(), a.p2p.end());
  else b->collectives.push_back(std::move(a));
  return precclSuccess;
}

// Closes one level of the group; *batches gets the group's calls when it was the outermost level (else
// stays empty: nothing to issue yet).
static precclResult_t closeGroup(const char* fn, std::vector<Batch>* batches) {
  if (tls.depth == 0) return PRECCL_ERR(nullptr, precclInvalidUsage, "{} without a matching GroupStart", fn);
  if (--tls.depth > 0) return precclSuccess;
  *batches = std::move(tls.batches);
  tls.batches.clear();
  return precclSuccess;
}

precclResult_t groupEnd() {
  std::vector<Batch> batches;
  PRECCL_CHECK(closeGroup("GroupEnd", &batches));
  std::vector<Batch*> now;
  for (auto& b : batches) {
    if (b.stream) {
      PRECCL_CHECK(streamEnqueue(b.stream, [b] { return runBatch(b); }));
    } else {
      now.push_back(&b);
    }
  }
  if (now.size() == 1) return runBatch(*now[0]);
  // Several communicators in one thread: each needs its own executor, or they would wait on each other.
  std::vector<precclResult_t> res(now.size(), precclSuccess);
  std::vector<std::string> errs(now.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < now.size(); i++)
    threads.emplace_back([&, i] {
      res[i] = runBatch(*now[i]);
      if (res[i] != precclSuccess) errs[i] = lastErrorText(now[i]->comm);
    });
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < now.size(); i++)
    if (res[i] != precclSuccess) return setError(now[i]->comm, res[i], errs[i]);
  return precclSuccess;
}

precclResult_t groupSimulateEnd(double* estimatedUs) {
  *estimatedUs = -1;
  const bool outermost = tls.depth == 1;
  std::vector<Batch> batches;
  PRECCL_CHECK(closeGroup("GroupSimulateEnd", &batches));
  if (!outermost) return precclSuccess;
  // The communicators would run concurrently: the slowest one's calls, one after another, set the time.
  uint64_t worst = 0;
  for (const Batch& b : batches) {
    uint64_t ns = 0, t = 0;
    for (const CctArgs& a : b.collectives) {
      if (!estimateCctNs(b.comm, a, &t)) return precclSuccess;  // unknown
      ns += t;
    }
    if (!b.p2p.p2p.empty()) {
      if (!estimateCctNs(b.comm, b.p2p, &t)) return precclSuccess;
      ns += t;
    }
    worst = std::max(worst, ns);
  }
  *estimatedUs = static_cast<double>(worst) / 1000.0;
  return precclSuccess;
}

}  // namespace preccl
