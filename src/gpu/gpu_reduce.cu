// reduceCopy on the GPU: the device element loop (reduce/reduce_lanes.h) over a grid. Compiled with
// --fmad=false (CMakeLists.txt): a fused multiply-add would round a PreMulSum differently from the host,
// which never fuses (-ffp-contract=off).
#include <cuda_runtime.h>

#include "reduce/dtype.h"
#include "reduce/reduce_lanes.h"
#include "gpu/gpu_reduce.h"

namespace preccl::gpu {

namespace {

__global__ void reduceKernel(precclDataType_t t, red::ElemArgs a) {
  red::reduceLanes(t, a, size_t(blockIdx.x) * blockDim.x + threadIdx.x, size_t(gridDim.x) * blockDim.x);
}

}  // namespace

int reduceCopy(const RedOp& op, precclDataType_t t, size_t n, const void* local, const void* const* recv,
               int nrecv, void* const* outs, int nout, bool applyPost, void* stream) {
  red::Args a;
  if (!red::resolve(op, n, local, recv, nrecv, outs, nout, applyPost, &a)) return cudaSuccess;
  const size_t esz = dtypeSize(t);
  if (esz == 0) return cudaErrorInvalidValue;
  constexpr int kThreads = 256;
  const size_t want = (n + kThreads - 1) / kThreads;
  const unsigned blocks = unsigned(want < 4096 ? want : 4096);
  reduceKernel<<<blocks, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(t, red::elemArgs(a, esz));
  return cudaGetLastError();
}

}  // namespace preccl::gpu
