// The device primitives on the GPU (gpu/gpu_prim.h): a chain of three blocks (send -> recvReduceSend ->
// recvReduceCopy) over FIFOs in device memory gives the host's bits for every data type; a sender with
// nobody downstream counts its stall and stops at the abort flag (host memory the kernel polls) or at its
// deadline. Needs a CUDA device; without one it prints "skipped: ..." and passes.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "chain_reference.h"
#include "cuda_ok.h"
#include "reduce/dtype.h"
#include "reduce/reduce.h"
#include "gpu/gpu_prim.h"

using namespace preccl;
using namespace preccl::gpu;

namespace {

// A FIFO in device memory and its two ends, made on the host and copied where the kernel reads them.
struct DevFifo {
  DevFifo(uint32_t nslots, size_t slotBytes) {
    CUDA_OK(cudaMalloc(&mem, fifoBytes(nslots, slotBytes)));
    CUDA_OK(cudaMemset(mem, 0, fifoBytes(nslots, slotBytes)));
    Fifo f;
    f.attach(mem, nslots, slotBytes);
    FifoProducer p;
    FifoConsumer c;
    p.attach(f, Waker{});
    c.attach(f, Waker{});
    CUDA_OK(cudaMalloc(&prod, sizeof(p)));
    CUDA_OK(cudaMalloc(&cons, sizeof(c)));
    CUDA_OK(cudaMemcpy(prod, &p, sizeof(p), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(cons, &c, sizeof(c), cudaMemcpyHostToDevice));
  }
  ~DevFifo() {
    cudaFree(mem);
    cudaFree(prod);
    cudaFree(cons);
  }
  void* mem = nullptr;
  FifoProducer* prod = nullptr;
  FifoConsumer* cons = nullptr;
};

struct Run {
  std::vector<PrimStats> stats;
  std::vector<int> ends;
};

Run run(const std::vector<DevPrim>& prims, const RedOp& op, precclDataType_t t, const volatile int* abort,
        uint64_t budgetNs) {
  const int n = int(prims.size());
  DevPrim* dp;
  PrimStats* ds;
  int* de;
  CUDA_OK(cudaMalloc(&dp, n * sizeof(DevPrim)));
  CUDA_OK(cudaMalloc(&ds, n * sizeof(PrimStats)));
  CUDA_OK(cudaMalloc(&de, n * sizeof(int)));
  CUDA_OK(cudaMemcpy(dp, prims.data(), n * sizeof(DevPrim), cudaMemcpyHostToDevice));
  CUDA_OK(cudaError_t(launchPrims(dp, n, op, t, abort, budgetNs, ds, de, nullptr)));
  CUDA_OK(cudaDeviceSynchronize());
  Run r{std::vector<PrimStats>(n), std::vector<int>(n)};
  CUDA_OK(cudaMemcpy(r.stats.data(), ds, n * sizeof(PrimStats), cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(r.ends.data(), de, n * sizeof(int), cudaMemcpyDeviceToHost));
  cudaFree(dp);
  cudaFree(ds);
  cudaFree(de);
  return r;
}

void chain(precclDataType_t t, size_t count, std::mt19937& g) {
  const size_t esz = dtypeSize(t), bytes = count * esz, piece = 64 * 1024 / esz * esz;
  std::vector<std::vector<unsigned char>> in(3, std::vector<unsigned char>(bytes));
  for (auto& v : in)
    for (auto& b : v) b = static_cast<unsigned char>(g() % 64);  // small values: no NaN patterns in fp8/half
  RedOp op;
  op.kind = RedKind::Sum;
  op.postDivide = 3;
  const std::vector<unsigned char> want = chainReference(op, t, count, in);
  DevFifo f1(4, piece), f2(4, piece);
  std::vector<char*> din(3);
  for (int r = 0; r < 3; r++) {
    CUDA_OK(cudaMalloc(&din[r], bytes));
    CUDA_OK(cudaMemcpy(din[r], in[r].data(), bytes, cudaMemcpyHostToDevice));
  }
  char* dout;
  CUDA_OK(cudaMalloc(&dout, bytes));
  std::vector<DevPrim> p(3);
  p[0].src = din[0];
  p[0].send[0] = f1.prod;
  p[0].nsend = 1;
  p[1].src = din[1];
  p[1].recv[0] = f1.cons;
  p[1].nrecv = 1;
  p[1].send[0] = f2.prod;
  p[1].nsend = 1;
  p[2].src = din[2];
  p[2].recv[0] = f2.cons;
  p[2].nrecv = 1;
  p[2].dst = dout;
  p[2].post = true;
  for (auto& x : p) {
    x.bytes = bytes;
    x.piece = piece;
    x.reduce = true;
    x.epoch = 3;
  }
  int* abortFlag;
  CUDA_OK(cudaMalloc(&abortFlag, sizeof(int)));
  CUDA_OK(cudaMemset(abortFlag, 0, sizeof(int)));
  const Run r = run(p, op, t, abortFlag, 10'000'000'000ull);
  std::vector<unsigned char> got(bytes);
  CUDA_OK(cudaMemcpy(got.data(), dout, bytes, cudaMemcpyDeviceToHost));
  for (int k = 0; k < 3; k++) EXPECT(r.ends[k] == 0, "%s: block %d ended %d", dtypeName(t), k, r.ends[k]);
  EXPECT(got == want, "%s: the chain's result differs from the host's", dtypeName(t));
  EXPECT(r.stats[0].bytes == bytes && r.stats[1].bytes == bytes, "%s: bytes sent %llu, %llu of %zu", dtypeName(t),
         (unsigned long long)r.stats[0].bytes, (unsigned long long)r.stats[1].bytes, bytes);
  std::printf("%s: %zu elements through 2 FIFOs; stalls %llu / %llu\n", dtypeName(t), count,
              (unsigned long long)r.stats[0].stalls, (unsigned long long)r.stats[1].stalls);
  for (auto* d : din) cudaFree(d);
  cudaFree(dout);
  cudaFree(abortFlag);
}

// Nobody downstream: the sender fills its 2 slots and waits; the host raises the flag (or nobody does
// and the deadline ends it).
void stuck(bool raise) {
  const size_t piece = 4096, bytes = 16 * piece;
  DevFifo f(2, piece);
  char* src;
  CUDA_OK(cudaMalloc(&src, bytes));
  int* flag;
  CUDA_OK(cudaHostAlloc(&flag, sizeof(int), cudaHostAllocMapped));
  *flag = 0;
  int* dflag;
  CUDA_OK(cudaHostGetDevicePointer(&dflag, flag, 0));
  std::vector<DevPrim> p(1);
  p[0].src = src;
  p[0].send[0] = f.prod;
  p[0].nsend = 1;
  p[0].bytes = bytes;
  p[0].piece = piece;
  std::thread raiser;
  if (raise)
    raiser = std::thread([flag] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      __atomic_store_n(flag, 1, __ATOMIC_RELEASE);
    });
  const Run r = run(p, RedOp{}, precclInt8, dflag, raise ? 10'000'000'000ull : 50'000'000ull);
  if (raiser.joinable()) raiser.join();
  const int want = int(raise ? PrimEnd::Aborted : PrimEnd::TimedOut);
  EXPECT(r.ends[0] == want, "a stuck sender ended %d, want %d", r.ends[0], want);
  EXPECT(r.stats[0].bytes == 2 * piece && r.stats[0].stalls == 1, "sent %llu B with %llu stalls",
         (unsigned long long)r.stats[0].bytes, (unsigned long long)r.stats[0].stalls);
  cudaFree(src);
  cudaFreeHost(flag);
}

}  // namespace

int main() {
  if (!haveDevice()) return 0;
  std::mt19937 g(99);
  for (int t = 0; t < precclNumTypes; ++t) chain(precclDataType_t(t), 1000003, g);
  stuck(true);
  stuck(false);
  std::printf("gpu_prim_test: %d failed\n", failures);
  return failures ? 1 : 0;
}
