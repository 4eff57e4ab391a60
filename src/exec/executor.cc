#include "exec/executor.h"

#include "exec/attempt.h"

namespace preccl {

precclResult_t runHost(const ExecCtx& ctx, const Plan& plan, const Bound& b, RunOut* out, ExecFault* fault) {
  Attempt a(ctx, plan, b, fault);
  const precclResult_t res = a.loop(true);
  a.results(out);
  return res;
}

namespace {
DeviceExecutor gDevice;  // set once, before any communicator runs a CCT
}  // namespace

void setDeviceExecutor(const DeviceExecutor& d) { gDevice = d; }
const DeviceExecutor& deviceExecutor() { return gDevice; }

}  // namespace preccl
