#include "core/deferred.h"

#include <cstring>

#include "core/comm.h"
#include "core/debug.h"
#include "core/decide.h"
#include "core/run_attempt.h"
#include "reduce/dtype.h"

namespace preccl {

char* KeptBuffer::grow(size_t n) {
  if (bytes < n || !mem) {
    mem.reset(static_cast<char*>(malloc(std::max<size_t>(n, 1))));
    bytes = mem ? n : 0;
  }
  return mem.get();
}

bool defersCommit(const precclComm* comm, const CctArgs& a, bool agree) {
  return agree && comm->cfg.deferCommit && !comm->cfg.lanes && chooseAlgo(comm, a) == PlanAlgo::Doubling;
}

precclResult_t keepInput(precclComm* comm, Cct* c) {
  const size_t bytes = c->a.count * dtypeSize(c->a.dtype);  // an AllReduce's input (doubling is AllReduce's)
  const int k = comm->pending.active && comm->pending.buf == 0 ? 1 : 0;
  char* buf = comm->kept[k].grow(bytes);
  if (!buf) return PRECCL_ERR(comm, precclSystemError, "AllReduce: cannot allocate {} B to keep the input for a retry", bytes);
  memmove(buf, c->a.sendbuff, bytes);
  c->a.sendbuff = buf;
  c->keptBuf = k;
  return precclSuccess;
}

void settlePending(precclComm* comm, const Cct& c, uint32_t attempt) {
  if (!c.agree) return;  // a call without the agreement says nothing of the others'
  if (!c.deferred) {
    comm->pending.active = false;
    return;
  }
  PendingCct& p = comm->pending;
  p.active = true;
  p.epoch = comm->epoch;
  p.attempt = attempt;
  p.args = c.a;
  p.buf = c.keptBuf;
}

}  // namespace preccl
