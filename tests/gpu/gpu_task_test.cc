// The task code on the GPU (exec/task.h run by the CCT's kernel, gpu/gpu_plan.h): a chain of three tasks as
// three blocks (reduceSend -> recvReduceSend -> recvReduceCopy) over FIFOs in device memory gives the host's
// bits for every data type; a sender with nobody downstream counts its stall and stops at the host's flag
// (mapped memory the kernel polls). The CPU suite runs the same tasks on threads (tests/test_task.cc).
// Needs a CUDA device; without one it prints "skipped: ..." and passes.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <type_traits>
#include <vector>

#include "chain_reference.h"
#include "cuda_ok.h"
#include "exec/shared_atomic.h"
#include "exec/task.h"
#include "gpu/gpu_plan.h"
#include "reduce/dtype.h"
#include "reduce/reduce.h"
#include "task_chain.h"

using namespace preccl;

namespace {

template <class T> T* toDevice(const T* v, size_t n) {
  T* d = nullptr;
  static_assert(!std::is_const_v<T>);
  CUDA_OK(cudaMalloc(&d, std::max<size_t>(1, n) * sizeof(T)));
  if (n) CUDA_OK(cudaMemcpy(d, v, n * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

// FIFOs in device memory and their ends, made on the host and copied where the kernel reads them.
struct DevFifos {
  DevFifos(int n, uint32_t nslots, size_t slotBytes) {
    std::vector<FifoProducer> p(n);
    std::vector<FifoConsumer> c(n);
    for (int i = 0; i < n; i++) {
      void* m;
      CUDA_OK(cudaMalloc(&m, fifoBytes(nslots, slotBytes)));
      CUDA_OK(cudaMemset(m, 0, fifoBytes(nslots, slotBytes)));
      mem.push_back(m);
      Fifo f;
      f.attach(m, nslots, slotBytes);
      p[i].attach(f, Waker{});
      c[i].attach(f, Waker{});
    }
    prod = toDevice(p.data(), n);
    cons = toDevice(c.data(), n);
    std::vector<FifoProducer*> ps(n);
    std::vector<FifoConsumer*> cs(n);
    for (int i = 0; i < n; i++) ps[i] = prod + i, cs[i] = cons + i;
    prodAt = toDevice(ps.data(), n);
    consAt = toDevice(cs.data(), n);
  }
  ~DevFifos() {
    for (void* m : mem) cudaFree(m);
    cudaFree(prod);
    cudaFree(cons);
    cudaFree(prodAt);
    cudaFree(consAt);
  }
  std::vector<void*> mem;
  FifoProducer* prod;
  FifoConsumer* cons;
  FifoProducer** prodAt;
  FifoConsumer** consAt;
};

// The plan's tasks as the blocks of one kernel; the tasks' state in mapped memory (the host reads how they
// ended), the VTs' read back. `stop` is mapped memory the host may raise.
struct Result {
  std::vector<TaskRun> tasks;
  std::vector<VtRun> vts;
};
Result runKernel(const Plan& p, DevFifos& f, const RedOp& op, precclDataType_t t, const int* stopDev) {
  const int n = int(p.tasks.size());
  TaskRun* th;
  CUDA_OK(cudaHostAlloc(&th, n * sizeof(TaskRun), cudaHostAllocMapped));
  for (int i = 0; i < n; i++) th[i] = TaskRun{};
  TaskRun* td;
  CUDA_OK(cudaHostGetDevicePointer(&td, th, 0));
  std::vector<VtRun> vts(n);
  VtRun* vd = toDevice(vts.data(), n);
  Step* sd = toDevice(p.steps.data(), p.steps.size());
  Task* kd = toDevice(p.tasks.data(), p.tasks.size());
  Run run = runOf(p, f.prodAt, f.consAt, td, vd, op, t, dtypeSize(t), 3);
  run.steps = sd;
  run.tasks = kd;
  run.startNs = 0;
  CUDA_OK(cudaError_t(gpu::launchPlan(run, stopDev, nullptr)));
  CUDA_OK(cudaDeviceSynchronize());
  Result r{std::vector<TaskRun>(th, th + n), std::vector<VtRun>(n)};
  CUDA_OK(cudaMemcpy(r.vts.data(), vd, n * sizeof(VtRun), cudaMemcpyDeviceToHost));
  cudaFreeHost(th);
  cudaFree(vd);
  cudaFree(sd);
  cudaFree(kd);
  return r;
}

struct MappedFlag {
  MappedFlag() {
    CUDA_OK(cudaHostAlloc(&host, sizeof(int), cudaHostAllocMapped));
    *host = 0;
    CUDA_OK(cudaHostGetDevicePointer(&dev, host, 0));
  }
  ~MappedFlag() { cudaFreeHost(host); }
  int* host = nullptr;
  int* dev = nullptr;
};

void chain(precclDataType_t t, size_t count, std::mt19937& g) {
  const size_t esz = dtypeSize(t), bytes = count * esz, piece = 64 * 1024 / esz * esz;
  std::vector<std::vector<unsigned char>> in(3, std::vector<unsigned char>(bytes));
  for (auto& v : in)
    for (auto& b : v) b = static_cast<unsigned char>(g() % 64);  // small values: no NaN patterns in fp8/half
  RedOp op;
  op.kind = RedKind::Sum;
  op.postDivide = 3;
  const std::vector<unsigned char> want = chainReference(op, t, count, in);
  DevFifos f(2, 4, piece);
  std::vector<const char*> din(3);
  for (int r = 0; r < 3; r++) din[r] = toDevice(reinterpret_cast<const char*>(in[r].data()), bytes);
  char* dout;
  CUDA_OK(cudaMalloc(&dout, bytes));
  MappedFlag stop;
  const Result r = runKernel(chainPlan(din, dout, bytes, piece), f, op, t, stop.dev);
  std::vector<unsigned char> got(bytes);
  CUDA_OK(cudaMemcpy(got.data(), dout, bytes, cudaMemcpyDeviceToHost));
  for (int k = 0; k < 3; k++) EXPECT(r.tasks[k].end == int32_t(Adv::Done), "%s: block %d ended %d", dtypeName(t), k, r.tasks[k].end);
  EXPECT(got == want, "%s: the chain's result differs from the host's", dtypeName(t));
  EXPECT(r.vts[0].bytes == bytes && r.vts[1].bytes == bytes, "%s: bytes sent %llu, %llu of %zu", dtypeName(t),
         (unsigned long long)r.vts[0].bytes, (unsigned long long)r.vts[1].bytes, bytes);
  std::printf("%s: %zu elements through 2 FIFOs; stalls %llu / %llu\n", dtypeName(t), count,
              (unsigned long long)r.vts[0].stalls, (unsigned long long)r.vts[1].stalls);
  for (const char* d : din) cudaFree(const_cast<char*>(d));
  cudaFree(dout);
}

// Nobody downstream: the sender fills its 2 slots and waits; the host raises the flag.
void stuck() {
  const size_t piece = 4096, bytes = 16 * piece;
  DevFifos f(1, 2, piece);
  char* src;
  CUDA_OK(cudaMalloc(&src, bytes));
  Plan p;
  p.edge({1, 0, -1});
  p.begin(0, piece);
  p.add(steps::send(0, src, bytes));
  MappedFlag stop;
  std::thread raiser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    hostVisibleStore(stop.host, 1);
  });
  const Result r = runKernel(p, f, RedOp{}, precclInt8, stop.dev);
  raiser.join();
  EXPECT(r.tasks[0].end == TaskRun::kStopped, "a stuck sender ended %d, want %d", r.tasks[0].end, TaskRun::kStopped);
  EXPECT(r.vts[0].bytes == 2 * piece && r.vts[0].stalls == 1, "sent %llu B with %llu stalls",
         (unsigned long long)r.vts[0].bytes, (unsigned long long)r.vts[0].stalls);
  cudaFree(src);
}

}  // namespace

int main() {
  if (!haveDevice()) return 0;
  std::mt19937 g(99);
  for (int t = 0; t < precclNumTypes; ++t) chain(precclDataType_t(t), 1000003, g);
  stuck();
  std::printf("gpu_task_test: %d failed\n", failures);
  return failures ? 1 : 0;
}
