#include "gpu/gpu_exec.h"

#include <cuda_runtime.h>

#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/log.h"
#include "exec/lane_runner.h"
#include "exec/shared_atomic.h"
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

std::string cudaWhy(const char* what, cudaError_t e) {
  return fmt::format("{}: {} ({})", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

// One device allocation for the run's arrays: laid out first (add), allocated, filled (at) and copied in
// before the kernel; read back after it. Everything goes through the calling thread's stream: the legacy
// default stream, cudaMalloc and cudaFree would wait for the other ranks' kernels, which may be waiting for
// this rank.
struct DeviceArrays {
  cudaStream_t stream = cudaStreamPerThread;
  char* base = nullptr;
  std::vector<char> host;
  ~DeviceArrays() { release(); }
  void release() {
    if (base) cudaFreeAsync(base, stream);
    base = nullptr;
    host.clear();
  }
  size_t add(size_t bytes) {
    const size_t at = (host.size() + 63) / 64 * 64;
    host.resize(at + bytes);
    return at;
  }
  template <class T> size_t add(const T* v, size_t n) {
    const size_t at = add(n * sizeof(T));
    if (n) memcpy(host.data() + at, v, n * sizeof(T));
    return at;
  }
  cudaError_t allocate() { return cudaMallocAsync(reinterpret_cast<void**>(&base), std::max<size_t>(host.size(), 64), stream); }
  template <class T> T* dev(size_t off) const { return reinterpret_cast<T*>(base + off); }
  template <class T> T* staged(size_t off) { return reinterpret_cast<T*>(host.data() + off); }
  cudaError_t upload() { return cudaMemcpyAsync(base, host.data(), host.size(), cudaMemcpyHostToDevice, stream); }
  template <class T> cudaError_t back(size_t off, T* into, size_t n) const {
    if (n == 0) return cudaSuccess;
    return cudaMemcpyAsync(into, base + off, n * sizeof(T), cudaMemcpyDeviceToHost, stream);
  }
};

// What the host and the kernel share while it runs, in mapped host memory: the stop flag the blocks poll
// and the tasks' state (TaskRun: their progress and how they stopped). One block per thread, kept, and
// large enough for any plan the device can hold (residentPlanBlocks): mapping memory while kernels run may
// wait for them.
struct Mapped {
  static constexpr int kTasks = 8192;
  char* host = nullptr;
  char* dev = nullptr;
  Mapped() {
    const unsigned flags = cudaHostAllocMapped | cudaHostAllocPortable;  // any device the thread may drive
    if (cudaHostAlloc(reinterpret_cast<void**>(&host), 64 + kTasks * sizeof(TaskRun), flags) == cudaSuccess)
      cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev), host, 0);
  }
  int* stop() const { return reinterpret_cast<int*>(host); }
  const int* stopDev() const { return reinterpret_cast<const int*>(dev); }
  TaskRun* tasks() const { return reinterpret_cast<TaskRun*>(host + 64); }
  TaskRun* tasksDev() const { return reinterpret_cast<TaskRun*>(dev + 64); }
};

// The CCT's kernel as a lanes runner's lanes (exec/lane_runner.h): one block per task.
class KernelLauncher : public LaneLauncher {
 public:
  KernelLauncher(const Bound& b, size_t nVts) : b_(b), nVts_(nVts) {}

  std::string start(const Run& run) override {
    static thread_local Mapped mapped;
    m_ = &mapped;
    if (!m_->dev) return cudaWhy("allocating mapped memory", cudaErrorMemoryAllocation);
    if (run.ntasks > Mapped::kTasks) return fmt::format("the CCT has {} tasks, more than {}", run.ntasks, int(Mapped::kTasks));
    // The kernel runs on the device that holds the buffers (a group's worker thread, or a program that
    // drives several GPUs from one thread, may have another current).
    for (size_t i = 0; i < stepsOf(run); i++) {
      const Step& s = run.steps[i];
      if (const void* buf = s.dst ? static_cast<const void*>(s.dst) : s.src) {
        cudaPointerAttributes a{};
        if (cudaPointerGetAttributes(&a, buf) == cudaSuccess && a.device >= 0)
          if (cudaError_t e = cudaSetDevice(a.device); e != cudaSuccess) return cudaWhy("selecting the buffers' device", e);
        break;
      }
    }
    if (const int resident = residentPlanBlocks(); resident > 0 && run.ntasks > resident)
      return fmt::format("the CCT has {} tasks, and the device holds at most {} of its blocks at once, which must all "
                         "run together: use fewer VTs (PRECCL_NVTS)",
                         run.ntasks, resident);
    for (Conn* c : b_.conns) {
      if (cudaError_t e = pins().pin(c->send.fifo()); e != cudaSuccess) return cudaWhy("registering a FIFO with CUDA", e);
      if (cudaError_t e = pins().pin(c->recv.fifo()); e != cudaSuccess) return cudaWhy("registering a FIFO with CUDA", e);
    }
    hostVisibleStore(m_->stop(), 0);
    memcpy(static_cast<void*>(m_->tasks()), run.task, size_t(run.ntasks) * sizeof(TaskRun));
    // The run's arrays, its FIFO ends (copies the blocks advance) and the pointers to them.
    const size_t nEdges = b_.conns.size();
    d_.release();
    std::vector<FifoProducer> sends(nEdges);
    std::vector<FifoConsumer> recvs(nEdges);
    for (size_t i = 0; i < nEdges; i++) sends[i] = *run.send[i], recvs[i] = *run.recv[i];
    oSteps_ = d_.add(run.steps, stepsOf(run));
    oTasks_ = d_.add(run.tasks, size_t(run.ntasks));
    oSends_ = d_.add(sends.data(), nEdges);
    oRecvs_ = d_.add(recvs.data(), nEdges);
    const size_t oSendAt = d_.add(nEdges * sizeof(FifoProducer*)), oRecvAt = d_.add(nEdges * sizeof(FifoConsumer*));
    oVts_ = d_.add(run.vt, nVts_);
    const size_t oLast = d_.add(run.last.ranks, run.last.words);
    if (cudaError_t e = d_.allocate(); e != cudaSuccess) return cudaWhy("allocating the run on the device", e);
    for (size_t i = 0; i < nEdges; i++) {
      d_.staged<FifoProducer*>(oSendAt)[i] = d_.dev<FifoProducer>(oSends_) + i;
      d_.staged<FifoConsumer*>(oRecvAt)[i] = d_.dev<FifoConsumer>(oRecvs_) + i;
    }
    if (cudaError_t e = d_.upload(); e != cudaSuccess) return cudaWhy("copying the run to the device", e);
    Run dev = run;
    dev.steps = d_.dev<Step>(oSteps_);
    dev.tasks = d_.dev<Task>(oTasks_);
    dev.send = d_.dev<FifoProducer*>(oSendAt);
    dev.recv = d_.dev<FifoConsumer*>(oRecvAt);
    dev.task = m_->tasksDev();
    dev.vt = d_.dev<VtRun>(oVts_);
    dev.last.ranks = run.last.ranks ? d_.dev<uint64_t>(oLast) : nullptr;
    dev.startNs = 0;  // the kernel's clock
    // The calling thread's stream, so that ranks on threads of one process run their kernels side by side.
    if (cudaError_t e = cudaError_t(launchPlan(dev, m_->stopDev(), d_.stream)); e != cudaSuccess)
      return cudaWhy("launching the CCT's kernel", e);
    kernel_ = cudaSuccess;
    return "";
  }

  bool running() override {
    const cudaError_t q = cudaStreamQuery(d_.stream);
    if (q == cudaErrorNotReady) {
      // A kernel wakes nobody: the proxies and the peers' host runners that sleep get woken here.
      for (Conn* c : b_.conns) c->send.wake(), c->recv.wake();
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      return true;
    }
    kernel_ = q;
    return false;
  }

  void stop() override {
    hostVisibleStore(m_->stop(), 1);
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }

  std::string collect(const Run& run) override {
    if (kernel_ != cudaSuccess) return cudaWhy("running the CCT's kernel", kernel_);
    const size_t nEdges = b_.conns.size();
    std::vector<FifoProducer> sends(nEdges);
    std::vector<FifoConsumer> recvs(nEdges);
    for (cudaError_t e : {d_.back(oSends_, sends.data(), nEdges), d_.back(oRecvs_, recvs.data(), nEdges),
                          d_.back(oVts_, run.vt, nVts_), cudaStreamSynchronize(d_.stream)})
      if (e != cudaSuccess) return cudaWhy("reading the CCT's run back", e);
    for (size_t i = 0; i < nEdges; i++) *run.send[i] = sends[i], *run.recv[i] = recvs[i];
    memcpy(static_cast<void*>(run.task), m_->tasks(), size_t(run.ntasks) * sizeof(TaskRun));
    d_.release();
    return "";
  }

  const TaskRun* tasks(const Run&) override { return m_->tasks(); }
  precclResult_t failure() const override { return precclUnhandledCudaError; }

 private:
  static size_t stepsOf(const Run& run) {
    size_t n = 0;
    for (int i = 0; i < run.ntasks; i++) n = std::max<size_t>(n, run.tasks[i].firstStep + run.tasks[i].nsteps);
    return n;
  }

  const Bound& b_;
  Mapped* m_ = nullptr;
  DeviceArrays d_;
  size_t nVts_;
  size_t oSteps_ = 0, oTasks_ = 0, oSends_ = 0, oRecvs_ = 0, oVts_ = 0;
  cudaError_t kernel_ = cudaSuccess;
};

}  // namespace

precclResult_t executeDevice(const ExecCtx& ctx, const Plan& plan, const Bound& b, RunOut* out, ExecFault* fault) {
  KernelLauncher lanes(b, ctx.vtStats->size());
  return runWithLanes(ctx, plan, b, lanes, out, fault);
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
