// The lanes executor: the device executor's code (gpu/dev_task.h) over the compiled plan, one CPU thread
// per task, as the CCT's kernel runs one block per task; the calling thread watches them
// (device/plan_watch.h) as the host watches a kernel.
#include <condition_variable>
#include <mutex>
#include <thread>

#include "exec/executor.h"
#include "exec/plan_watch.h"
#include "exec/dev_task.h"
#include "exec/host_lanes.h"

namespace preccl {

precclResult_t executeLanes(const ExecCtx& ctx, CctPlan& plan, ExecFault* fault) {
  beginCounters(*ctx.vtStats);
  CompiledPlan c;
  compilePlan(plan, ctx.slotBytes, ctx.attempt, static_cast<int>(ctx.vtStats->size()), &c);
  int stop = 0;  // the lanes' abort flag: raised by the watch only
  volatile int* stopFlag = &stop;
  c.dev.abort = stopFlag;
  c.dev.budgetNs = ctx.timeoutNs;
  c.dev.startNs = gpu::HostLanes().nowNs();
  std::mutex m;
  std::condition_variable cv;
  int running = c.dev.ntasks, failed = -1;
  std::vector<std::thread> lanes;
  lanes.reserve(c.dev.ntasks);
  for (int i = 0; i < c.dev.ntasks; i++)
    lanes.emplace_back([&, i] {
      gpu::HostLanes l;
      const gpu::TaskEnd e = gpu::runTask(l, c.dev, i);
      std::lock_guard<std::mutex> g(m);
      c.ends[i] = e;
      if (e.end != 0 && failed < 0) failed = i;
      running--;
      cv.notify_one();
    });
  int failedTask = -1;
  const precclResult_t res = watchPlan(ctx, c, stopFlag, c.progress.data(), [&](int* f) {
    std::unique_lock<std::mutex> lk(m);
    if (running > 0) cv.wait_for(lk, std::chrono::milliseconds(10));
    *f = failed;
    return running > 0;
  }, &failedTask, fault);
  for (auto& t : lanes) t.join();
  return finishPlan(ctx, c, plan, res, failedTask, fault);
}

}  // namespace preccl
