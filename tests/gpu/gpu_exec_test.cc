// The device executor on a GPU (gpu/gpu_exec.h, docs/gpu.md). Four ranks as threads of one process
// (CommInitAll over shared memory), sharing the one GPU with a stream each:
//  1. every collective, for several types, ops and sizes, on device buffers (the CCT's kernel) and on
//     host buffers (the host runner) through the same communicators: the bytes must be equal;
//  2. 4-rank AllReduce busbw at 64 MiB and 1 GiB on device buffers, beside the device's own copy
//     bandwidth and the host-device copy bandwidth (the FIFOs are mapped host memory), measured here.
// Shared memory with rings and with trees, and sockets over loopback (the proxy path). Needs a CUDA
// device; without one it prints "skipped: ..." and passes.
#include <cuda_runtime.h>

#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "cuda_ok.h"
#include "base/coll.h"
#include "reduce/dtype.h"
#include "gpu/gpu_exec.h"
#include "preccl/preccl.h"

using namespace preccl;

namespace {

constexpr int kRanks = 4;
precclComm_t comms[kRanks];

void onRanks(const std::function<void(int)>& f) {
  std::vector<std::thread> t;
  for (int r = 0; r < kRanks; r++)
    t.emplace_back([&f, r] {
      CUDA_OK(cudaSetDevice(0));
      f(r);
    });
  for (auto& x : t) x.join();
}

using C = Coll;  // the library's collectives (base/coll.h)
size_t inCount(C c, size_t count) { return c == C::ReduceScatter || c == C::AlltoAll ? count * kRanks : count; }
size_t outCount(C c, size_t count) { return c == C::AllGather || c == C::AlltoAll ? count * kRanks : count; }

precclResult_t call(C c, const void* s, void* r, size_t count, precclDataType_t t, precclRedOp_t op, int root, int rank) {
  precclComm_t comm = comms[rank];
  switch (c) {
    case C::AllReduce: return precclAllReduce(s, r, count, t, op, comm, nullptr);
    case C::Broadcast: return precclBroadcast(s, r, count, t, root, comm, nullptr);
    case C::Reduce: return precclReduce(s, r, count, t, op, root, comm, nullptr);
    case C::AllGather: return precclAllGather(s, r, count, t, comm, nullptr);
    case C::ReduceScatter: return precclReduceScatter(s, r, count, t, op, comm, nullptr);
    case C::AlltoAll: return precclAlltoAll(s, r, count, t, comm, nullptr);
    default: return precclInvalidUsage;  // not measured here
  }
  return precclInvalidArgument;
}

// Inputs that round (floats: not exactly representable) or wrap (integers), different on every rank.
std::vector<unsigned char> input(precclDataType_t t, size_t n, int rank) {
  const size_t esz = dtypeSize(t);
  std::vector<unsigned char> v(n * esz);
  for (size_t i = 0; i < n; i++) {
    const uint64_t k = (i * 7919 + uint64_t(rank) * 104729) % 100003;
    const double x = double(k) / 7.0 - 5000.0;
    unsigned char* p = &v[i * esz];
    switch (t) {
      case precclFloat32: { const float f = float(x); memcpy(p, &f, 4); break; }
      case precclFloat64: memcpy(p, &x, 8); break;
      case precclBfloat16: { const float f = float(x); uint32_t b; memcpy(&b, &f, 4); const uint16_t h = uint16_t(b >> 16); memcpy(p, &h, 2); break; }
      default: { const uint64_t w = i * 2654435761u + uint64_t(rank) * 40503u; memcpy(p, &w, esz); break; }
    }
  }
  return v;
}

// One case on host buffers, then on device buffers; every rank's output must be the same bytes.
void oneCase(C c, precclDataType_t t, int opKind, size_t count, int root) {
  const size_t esz = dtypeSize(t), inB = inCount(c, count) * esz, outB = outCount(c, count) * esz;
  std::vector<std::vector<unsigned char>> in(kRanks), host(kRanks), dev(kRanks);
  for (int r = 0; r < kRanks; r++) {
    in[r] = input(t, inCount(c, count), r);
    host[r].assign(outB, 0xEE);
    dev[r].assign(outB, 0xEE);
  }
  precclRedOp_t ops[kRanks];
  for (int r = 0; r < kRanks; r++) {
    ops[r] = precclRedOp_t(opKind);
    if (opKind < 0) {  // PreMulSum by 1/3 in the type
      double third = 1.0 / 3.0;
      float f = float(third);
      uint32_t b;
      memcpy(&b, &f, 4);
      uint16_t h = uint16_t(b >> 16);
      uint64_t i = 3;  // little-endian: its first bytes are 3 in every integer width
      void* scalar = t == precclFloat64 ? static_cast<void*>(&third) : t == precclFloat32 ? static_cast<void*>(&f)
                     : t == precclBfloat16 ? static_cast<void*>(&h) : static_cast<void*>(&i);
      EXPECT(precclRedOpCreatePreMulSum(&ops[r], scalar, t, precclScalarHostImmediate, comms[r]) == precclSuccess, "PreMulSum");
    }
  }
  std::vector<precclResult_t> hostRes(kRanks), devRes(kRanks);
  onRanks([&](int r) {
    hostRes[r] = call(c, in[r].data(), host[r].data(), count, t, ops[r], root, r);
    void *ds = nullptr, *dr = nullptr;
    CUDA_OK(cudaMalloc(&ds, inB + 1));
    CUDA_OK(cudaMalloc(&dr, outB + 1));
    CUDA_OK(cudaMemcpy(ds, in[r].data(), inB, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(dr, dev[r].data(), outB, cudaMemcpyHostToDevice));
    devRes[r] = call(c, ds, dr, count, t, ops[r], root, r);
    CUDA_OK(cudaMemcpy(dev[r].data(), dr, outB, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaFree(ds));
    CUDA_OK(cudaFree(dr));
  });
  for (int r = 0; r < kRanks; r++) {
    if (opKind < 0) precclRedOpDestroy(ops[r], comms[r]);
    EXPECT(hostRes[r] == precclSuccess && devRes[r] == precclSuccess, "%s %s op %d count %zu rank %d: host %d device %d (%s)",
           collName(c), dtypeName(t), opKind, count, r, int(hostRes[r]), int(devRes[r]), precclGetLastError(comms[r]));
    // A rooted Reduce leaves the other ranks' outputs as they were: those compare too.
    size_t wrong = 0;
    for (size_t i = 0; i < outB; i++) wrong += host[r][i] != dev[r][i];
    EXPECT(wrong == 0, "%s %s op %d count %zu rank %d: %zu of %zu bytes differ from the host runner's", collName(c),
           dtypeName(t), opKind, count, r, wrong, outB);
  }
}

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// AllReduce of `bytes` of floats on device buffers, `iters` timed calls after one warm-up; the sum of
// small integers is exact, so every element is checked against it.
void busbw(size_t bytes, int iters) {
  const size_t count = bytes / sizeof(float);
  std::barrier sync(kRanks);
  std::vector<double> secs(kRanks, 0);
  std::vector<size_t> wrong(kRanks, 0);
  onRanks([&](int r) {
    float *s = nullptr, *d = nullptr;
    CUDA_OK(cudaMalloc(&s, bytes));
    CUDA_OK(cudaMalloc(&d, bytes));
    std::vector<float> h(count, float(r + 1));
    CUDA_OK(cudaMemcpy(s, h.data(), bytes, cudaMemcpyHostToDevice));
    EXPECT(precclAllReduce(s, d, count, precclFloat32, precclSum, comms[r], nullptr) == precclSuccess, "warm-up: %s",
           precclGetLastError(comms[r]));
    sync.arrive_and_wait();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; i++)
      EXPECT(precclAllReduce(s, d, count, precclFloat32, precclSum, comms[r], nullptr) == precclSuccess, "%s",
             precclGetLastError(comms[r]));
    secs[r] = secondsSince(t0);
    CUDA_OK(cudaMemcpy(h.data(), d, bytes, cudaMemcpyDeviceToHost));
    const float want = float(kRanks * (kRanks + 1) / 2);
    for (size_t i = 0; i < count; i++) wrong[r] += h[i] != want;
    CUDA_OK(cudaFree(s));
    CUDA_OK(cudaFree(d));
  });
  double t = 0;
  for (int r = 0; r < kRanks; r++) {
    t = std::max(t, secs[r] / iters);
    EXPECT(wrong[r] == 0, "busbw %zu B rank %d: %zu wrong elements", bytes, r, wrong[r]);
  }
  const double algbw = double(bytes) / t, bus = algbw * 2.0 * (kRanks - 1) / kRanks;
  std::printf("RESULT allreduce ranks=%d bytes=%zu time_ms=%.3f algbw_GBps=%.2f busbw_GBps=%.2f\n", kRanks, bytes,
              t * 1e3, algbw / 1e9, bus / 1e9);
}

// GB/s of cudaMemcpy of `bytes` between the two, timed with events over `iters` copies.
double copyRate(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, int iters) {
  cudaEvent_t a, b;
  CUDA_OK(cudaEventCreate(&a));
  CUDA_OK(cudaEventCreate(&b));
  CUDA_OK(cudaMemcpy(dst, src, bytes, kind));
  CUDA_OK(cudaEventRecord(a));
  for (int i = 0; i < iters; i++) CUDA_OK(cudaMemcpyAsync(dst, src, bytes, kind));
  CUDA_OK(cudaEventRecord(b));
  CUDA_OK(cudaEventSynchronize(b));
  float ms = 0;
  CUDA_OK(cudaEventElapsedTime(&ms, a, b));
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return double(bytes) * iters / (ms / 1e3) / 1e9;
}

void copyBandwidth() {
  const size_t bytes = size_t(1) << 30, pinned = size_t(256) << 20;
  void *x = nullptr, *y = nullptr, *h = nullptr;
  CUDA_OK(cudaMalloc(&x, bytes));
  CUDA_OK(cudaMalloc(&y, bytes));
  CUDA_OK(cudaHostAlloc(&h, pinned, cudaHostAllocMapped));
  std::printf("RESULT copy device_to_device_GBps=%.1f host_to_device_GBps=%.1f device_to_host_GBps=%.1f\n",
              copyRate(y, x, bytes, cudaMemcpyDeviceToDevice, 10), copyRate(x, h, pinned, cudaMemcpyHostToDevice, 10),
              copyRate(h, x, pinned, cudaMemcpyDeviceToHost, 10));
  CUDA_OK(cudaFree(x));
  CUDA_OK(cudaFree(y));
  CUDA_OK(cudaFreeHost(h));
}

// Every collective x type x op x size on communicators made with `env` set (they read it at init).
void matrix(const char* label, const std::vector<std::pair<const char*, const char*>>& env, const std::vector<size_t>& counts) {
  for (auto& [k, v] : env) setenv(k, v, 1);
  if (precclCommInitAll(comms, kRanks, nullptr) != precclSuccess) {
    std::printf("FAILED precclCommInitAll (%s): %s\n", label, precclGetLastError(nullptr));
    failures++;
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const int before = failures;
  int cases = 0;
  for (C c : {C::AllReduce, C::Broadcast, C::Reduce, C::AllGather, C::ReduceScatter, C::AlltoAll})
    for (precclDataType_t t : {precclFloat32, precclFloat64, precclBfloat16, precclInt32, precclInt8, precclUint64})
      for (int op : collReduces(c) ? std::vector<int>{precclSum, precclMax, precclAvg, -1} : std::vector<int>{precclSum})
        for (size_t n : counts) {
          if (op == precclAvg && t != precclFloat32 && t != precclFloat64 && t != precclBfloat16) continue;
          oneCase(c, t, op, n, c == C::Broadcast ? 1 : 2);
          cases++;
        }
  std::printf("RESULT collectives %s cases=%d failures=%d seconds=%.1f\n", label, cases, failures - before, secondsSince(t0));
  for (precclComm_t c : comms) precclCommDestroy(c);
  for (auto& [k, v] : env) unsetenv(k);
}

}  // namespace

int main(int argc, char** argv) {
  if (!haveDevice()) return 0;
  const bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  setenv("PRECCL_SOCKET_IFNAME", "lo", 0);
  setenv("PRECCL_TIMEOUT", "60", 0);
  setenv("PRECCL_CHECK_ALLOC", "1", 0);
  setenv("PRECCL_NVTS", "3", 0);
  CUDA_OK(cudaSetDevice(0));
  cudaDeviceProp prop{};
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs, %.1f GiB\n", prop.name, prop.multiProcessorCount, double(prop.totalGlobalMem) / (1 << 30));
  gpu::enableDeviceExecutor();  // before the communicators: they register their FIFOs at init
  const std::vector<size_t> small = {1031}, all = {1, 1031, 300007};
  // Shared memory, ring; the same with trees (AllReduce, Broadcast, Reduce take them); sockets over
  // loopback, whose slots the proxy thread moves between the mapped FIFOs and the wire.
  matrix("shm-ring", {{"PRECCL_ALGO", "ring"}}, quick ? small : all);
  if (!quick) {
    matrix("shm-tree", {{"PRECCL_ALGO", "tree"}}, small);
    matrix("socket-ring", {{"PRECCL_ALGO", "ring"}, {"PRECCL_SHM_DISABLE", "1"}, {"PRECCL_RETRY", "0"}}, small);
    setenv("PRECCL_ALGO", "ring", 1);
    if (precclCommInitAll(comms, kRanks, nullptr) != precclSuccess) {
      std::printf("FAILED precclCommInitAll: %s\n", precclGetLastError(nullptr));
      return 1;
    }
    copyBandwidth();
    busbw(size_t(64) << 20, 10);
    busbw(size_t(1) << 30, 3);
    for (precclComm_t c : comms) precclCommDestroy(c);
  }
  std::printf("%s (%d failures)\n", failures ? "FAILED" : "passed", failures);
  return failures ? 1 : 0;
}
