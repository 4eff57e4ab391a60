// reduceCopy on the GPU: one grid-stride kernel per (type family, op), whose per-element steps are the
// host loops' own (device/reduce_arith.h), in the same order: pre-multiply the local input, combine the
// sources left to right, post-divide. Compiled with --fmad=false (CMakeLists.txt): a fused multiply-add
// would round a PreMulSum differently from the host, which never fuses (-ffp-contract=off).
#include <cuda_runtime.h>

#include <cstring>

#include "device/reduce_arith.h"
#include "gpu/gpu_reduce.h"

namespace preccl::gpu {

namespace {

// The resolved call by value (kernel parameters live in constant memory).
struct KernelArgs {
  size_t n;
  int nsrc, nout;
  const unsigned char* src[5];
  unsigned char* out[4];
  bool pre;
  int postDivide;
  unsigned char scalar[8];
};

// Buffers have any alignment, as on the host: elements move byte-wise through memcpy.
template <class S> __device__ inline S load(const unsigned char* p, size_t i) {
  S v;
  memcpy(&v, p + i * sizeof(S), sizeof(S));
  return v;
}
template <class S> __device__ inline void store(unsigned char* p, size_t i, S v) {
  memcpy(p + i * sizeof(S), &v, sizeof(S));
}

template <class A, RedKind K> __global__ void reduceKernel(KernelArgs a) {
  using S = typename A::S;
  S scalar;
  memcpy(&scalar, a.scalar, sizeof(S));
  const typename A::Div div = A::makeDiv(a.postDivide > 0 ? a.postDivide : 1);
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < a.n; i += stride) {
    S r = load<S>(a.src[0], i);
    if (a.pre) r = A::prod(r, scalar);
    for (int k = 1; k < a.nsrc; ++k) r = red::apply<A, K>(r, load<S>(a.src[k], i));
    if (a.postDivide > 0) r = A::div(r, div);
    for (int o = 0; o < a.nout; ++o) store<S>(a.out[o], i, r);
  }
}

template <class A> cudaError_t launchType(const red::Args& r, cudaStream_t stream) {
  KernelArgs k{};
  k.n = r.n;
  k.nsrc = r.nsrc;
  k.nout = r.nout;
  for (int i = 0; i < r.nsrc; ++i) k.src[i] = static_cast<const unsigned char*>(r.src[i]);
  for (int i = 0; i < r.nout; ++i) k.out[i] = static_cast<unsigned char*>(r.out[i]);
  k.pre = r.pre;
  k.postDivide = r.postDivide;
  if (r.pre) memcpy(k.scalar, r.scalar, sizeof(typename A::S));
  constexpr int kThreads = 256;
  const size_t want = (r.n + kThreads - 1) / kThreads;
  const unsigned blocks = unsigned(want < 4096 ? want : 4096);
  switch (r.kind) {
    case RedKind::Sum: reduceKernel<A, RedKind::Sum><<<blocks, kThreads, 0, stream>>>(k); break;
    case RedKind::Prod: reduceKernel<A, RedKind::Prod><<<blocks, kThreads, 0, stream>>>(k); break;
    case RedKind::Max: reduceKernel<A, RedKind::Max><<<blocks, kThreads, 0, stream>>>(k); break;
    case RedKind::Min: reduceKernel<A, RedKind::Min><<<blocks, kThreads, 0, stream>>>(k); break;
  }
  return cudaGetLastError();
}

}  // namespace

int reduceCopy(const RedOp& op, precclDataType_t t, size_t n, const void* local, const void* const* recv,
               int nrecv, void* const* outs, int nout, bool applyPost, void* stream) {
  red::Args a;
  if (!red::resolve(op, n, local, recv, nrecv, outs, nout, applyPost, &a)) return cudaSuccess;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  using namespace red;
  switch (t) {
    case precclInt8: return launchType<IntArith<int8_t>>(a, s);
    case precclUint8: return launchType<IntArith<uint8_t>>(a, s);
    case precclInt32: return launchType<IntArith<int32_t>>(a, s);
    case precclUint32: return launchType<IntArith<uint32_t>>(a, s);
    case precclInt64: return launchType<IntArith<int64_t>>(a, s);
    case precclUint64: return launchType<IntArith<uint64_t>>(a, s);
    case precclFloat32: return launchType<FloatArith<float>>(a, s);
    case precclFloat64: return launchType<FloatArith<double>>(a, s);
    case precclFloat16: return launchType<LowpArith<HalfCodec>>(a, s);
    case precclBfloat16: return launchType<LowpArith<Bf16Codec>>(a, s);
    case precclFloat8e4m3: return launchType<LowpArith<E4M3Codec>>(a, s);
    case precclFloat8e5m2: return launchType<LowpArith<E5M2Codec>>(a, s);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace preccl::gpu
