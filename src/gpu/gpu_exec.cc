#include "gpu/gpu_exec.h"

#include <cuda_runtime.h>

#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/log.h"
#include "exec/plan_watch.h"
#include "gpu/gpu_plan.h"

namespace preccl::gpu {

namespace {

bool isDevicePtr(const void* p) {
  if (!p) return false;
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();  // host memory CUDA never saw: not an error to keep
    return false;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

// The FIFO memory of the plans' edges, registered with CUDA as mapped host memory (with unified
// addressing the kernel uses the host's pointers): shared-memory segments and the proxy's heap FIFOs
// alike. Once per FIFO for the process, at communicator init (DeviceExecutor::pin), until the
// communicator is destroyed (DeviceExecutor::forget): a registration may wait for the kernels running on
// the device. A call only looks its edges up, registering those of a communicator made before the
// program enabled the executor.
class Pins {
 public:
  cudaError_t pin(const Fifo& f) {
    std::lock_guard<std::mutex> g(m_);
    if (pinned_.count(f.ctrl)) return cudaSuccess;
    const cudaError_t e = cudaHostRegister(f.ctrl, fifoBytes(f.nslots, f.slotBytes), cudaHostRegisterMapped | cudaHostRegisterPortable);
    if (e != cudaSuccess && e != cudaErrorHostMemoryAlreadyRegistered) return e;
    cudaGetLastError();
    pinned_[f.ctrl] = e == cudaSuccess;  // registered by someone else: theirs to undo
    return cudaSuccess;
  }
  void forget(const void* base) {
    std::lock_guard<std::mutex> g(m_);
    auto it = pinned_.find(base);
    if (it == pinned_.end()) return;
    if (it->second) cudaHostUnregister(const_cast<void*>(base));
    pinned_.erase(it);
  }

 private:
  std::mutex m_;
  std::unordered_map<const void*, bool> pinned_;
};

Pins& pins() {
  static Pins p;
  return p;
}

// One device allocation for the plan's arrays, copied in before the kernel and the counters read back.
// Everything goes through the calling thread's stream: the legacy default stream, cudaMalloc and cudaFree
// would wait for the other ranks' kernels, which may be waiting for this rank.
struct DeviceArrays {
  cudaStream_t stream = cudaStreamPerThread;
  char* base = nullptr;
  size_t used = 0;
  std::vector<char> host;
  ~DeviceArrays() {
    if (base) cudaFreeAsync(base, stream);
  }
  template <class T> size_t add(const std::vector<T>& v) {
    used = (used + 63) / 64 * 64;
    const size_t at = used;
    host.resize(used + v.size() * sizeof(T));
    if (!v.empty()) memcpy(host.data() + at, v.data(), v.size() * sizeof(T));
    used += v.size() * sizeof(T);
    return at;
  }
  cudaError_t upload() {
    if (cudaError_t e = cudaMallocAsync(reinterpret_cast<void**>(&base), std::max<size_t>(used, 64), stream); e != cudaSuccess)
      return e;
    return cudaMemcpyAsync(base, host.data(), used, cudaMemcpyHostToDevice, stream);
  }
  template <class T> T* at(size_t off) const { return reinterpret_cast<T*>(base + off); }
  template <class T> cudaError_t back(size_t off, std::vector<T>& v) const {
    if (v.empty()) return cudaSuccess;
    if (cudaError_t e = cudaMemcpyAsync(v.data(), base + off, v.size() * sizeof(T), cudaMemcpyDeviceToHost, stream); e != cudaSuccess)
      return e;
    return cudaStreamSynchronize(stream);
  }
};

// What the host and the kernel share while it runs, in mapped host memory: the abort the blocks poll,
// the failure a block raises, the tasks' progress (DevPlan::progress). One block per thread, kept, and
// large enough for any plan the device can hold (residentPlanBlocks): mapping memory while kernels run
// may wait for them.
struct Mapped {
  static constexpr int kTasks = 8192;
  int* host = nullptr;
  int* dev = nullptr;
  Mapped() {
    const unsigned flags = cudaHostAllocMapped | cudaHostAllocPortable;  // any device the thread may drive
    if (cudaHostAlloc(reinterpret_cast<void**>(&host), (2 + kTasks) * sizeof(int), flags) == cudaSuccess)
      cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev), host, 0);
  }
};

precclResult_t cudaFailed(const ExecCtx& ctx, ExecFault* fault, const char* what, cudaError_t e) {
  fault->code = precclUnhandledCudaError;
  fault->what = fmt::format("rank {}: {}: {} ({})", ctx.rank, what, cudaGetErrorString(e), cudaGetErrorName(e));
  return fault->code;
}

}  // namespace

precclResult_t executeDevice(const ExecCtx& ctx, CctPlan& plan, ExecFault* fault) {
  beginCounters(*ctx.vtStats);
  CompiledPlan c;
  compilePlan(plan, ctx.slotBytes, ctx.attempt, static_cast<int>(ctx.vtStats->size()), &c);
  auto failed = [&](const char* what, cudaError_t e) {
    endCounters(*ctx.vtStats);
    return cudaFailed(ctx, fault, what, e);
  };
  // The kernel runs on the device that holds the buffers (a group's worker thread, or a program that
  // drives several GPUs from one thread, may have another current).
  for (const DevStep& s : c.steps)
    if (const void* buf = s.dst ? static_cast<const void*>(s.dst) : s.src) {
      cudaPointerAttributes a{};
      if (cudaPointerGetAttributes(&a, buf) == cudaSuccess && a.device >= 0) {
        if (cudaError_t e = cudaSetDevice(a.device); e != cudaSuccess) return failed("selecting the buffers' device", e);
      }
      break;
    }
  if (const int resident = residentPlanBlocks(); resident > 0 && c.dev.ntasks > resident) {
    endCounters(*ctx.vtStats);
    fault->code = precclInvalidUsage;
    fault->what = fmt::format("rank {}: the CCT has {} tasks, and the device holds at most {} of its blocks at once, "
                              "which must all run together: use fewer VTs (PRECCL_NVTS)",
                              ctx.rank, c.dev.ntasks, resident);
    return fault->code;
  }
  for (const FifoProducer& p : c.sends)
    if (cudaError_t e = pins().pin(p.fifo()); e != cudaSuccess) return failed("registering a FIFO with CUDA", e);
  for (const FifoConsumer& r : c.recvs)
    if (cudaError_t e = pins().pin(r.fifo()); e != cudaSuccess) return failed("registering a FIFO with CUDA", e);
  static thread_local Mapped shared;
  if (!shared.dev) return failed("allocating mapped memory", cudaErrorMemoryAllocation);
  if (c.dev.ntasks > Mapped::kTasks) return failed("the CCT's tasks", cudaErrorInvalidValue);
  shared.host[0] = shared.host[1] = 0;
  int* progress = shared.host + 2;
  for (int i = 0; i < c.dev.ntasks; i++) progress[i] = DevPlan::kNotStarted;
  DeviceArrays d;
  const size_t oSteps = d.add(c.steps), oTasks = d.add(c.tasks), oSends = d.add(c.sends), oRecvs = d.add(c.recvs),
               oVts = d.add(c.vts), oEnds = d.add(c.ends);
  if (cudaError_t e = d.upload(); e != cudaSuccess) return failed("copying the plan to the device", e);
  DevPlan dp = c.dev;
  dp.steps = d.at<DevStep>(oSteps);
  dp.tasks = d.at<DevTask>(oTasks);
  dp.sends = d.at<FifoProducer>(oSends);
  dp.recvs = d.at<FifoConsumer>(oRecvs);
  dp.vts = d.at<DevVt>(oVts);
  dp.ends = d.at<TaskEnd>(oEnds);
  dp.abort = shared.dev;
  dp.failed = shared.dev + 1;
  dp.progress = shared.dev + 2;
  dp.budgetNs = ctx.timeoutNs;
  dp.startNs = 0;  // the kernel's clock
  // The calling thread's stream, so that ranks on threads of one process run their kernels side by side.
  // The call waits for its kernel; the input must be ready when it is made (docs/gpu.md, "Streams").
  if (cudaError_t e = cudaError_t(launchPlan(dp, d.stream)); e != cudaSuccess) return failed("launching the CCT's kernel", e);
  cudaError_t kernel = cudaSuccess;
  volatile int* stop = shared.host;            // the abort the blocks poll
  volatile int* blockFailed = shared.host + 1;  // raised by a block whose task ended without finishing
  int failedTask = -1;
  const precclResult_t res = watchPlan(ctx, c, stop, progress, [&](int* f) {
    const cudaError_t q = cudaStreamQuery(d.stream);
    if (q == cudaErrorNotReady) {
      if (*blockFailed) *f = 0;  // some block failed: which one is read back after the kernel
      // A kernel wakes nobody: the proxies and the peers' host executors that sleep get woken here.
      for (Conn* e : c.sendEdges) e->send.wake();
      for (Conn* e : c.recvEdges) e->recv.wake();
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      return true;
    }
    kernel = q;
    return false;
  }, &failedTask, fault);
  if (kernel != cudaSuccess) return failed("running the CCT's kernel", kernel);
  for (cudaError_t e : {d.back(oSends, c.sends), d.back(oRecvs, c.recvs), d.back(oVts, c.vts), d.back(oEnds, c.ends)})
    if (e != cudaSuccess) return failed("reading the CCT's results back", e);
  if (failedTask >= 0 || *blockFailed) {
    failedTask = -1;
    for (int i = 0; i < c.dev.ntasks && failedTask < 0; i++)
      if (c.ends[i].end != 0 && c.ends[i].end != int(PrimEnd::Aborted)) failedTask = i;
    for (int i = 0; i < c.dev.ntasks && failedTask < 0; i++)
      if (c.ends[i].end != 0) failedTask = i;
  }
  return finishPlan(ctx, c, plan, res, failedTask, fault);
}

void enableDeviceExecutor() {
  DeviceExecutor d;
  d.isDevice = isDevicePtr;
  d.run = executeDevice;
  d.pin = [](const Fifo& f) {
    const cudaError_t e = pins().pin(f);
    return e == cudaSuccess ? std::string() : std::string(cudaGetErrorString(e));
  };
  d.forget = [](const void* fifoMem) { pins().forget(fifoMem); };
  setDeviceExecutor(d);
}

}  // namespace preccl::gpu
