// The GPU's reduceCopy gives the host's bits (docs/gpu.md): every type and op, 1-5 sources with and
// without a local input, 1-2 outputs, PreMulSum and Avg's post-division, odd counts and unaligned
// buffers, inputs that round, subnormals, NaN and infinities. Needs a CUDA device; without one it prints
// "skipped: ..." and passes (ctest marks it skipped).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda_ok.h"
#include "reduce/dtype.h"
#include "reduce/reduce.h"
#include "gpu/gpu_reduce.h"

using namespace preccl;

namespace {

int cases = 0;

// Random bytes with the interesting values of the type mixed in.
void fill(std::vector<unsigned char>& b, precclDataType_t t, std::mt19937& g) {
  for (auto& x : b) x = static_cast<unsigned char>(g());
  const size_t esz = dtypeSize(t);
  if (t == precclFloat32) {
    const float specials[] = {0.1f, 1.0f / 3, -0.0f, 1e-40f, 3.4e38f, __builtin_inff(), __builtin_nanf("")};
    for (size_t i = 0; i + esz <= b.size(); i += esz * 3) memcpy(&b[i], &specials[(i / esz) % 7], esz);
  } else if (t == precclFloat64) {
    const double specials[] = {0.1, 1.0 / 3, -0.0, 4e-320, 1.7e308, __builtin_inf(), __builtin_nan("")};
    for (size_t i = 0; i + esz <= b.size(); i += esz * 3) memcpy(&b[i], &specials[(i / esz) % 7], esz);
  }
}

void one(precclDataType_t t, RedKind kind, int nrecv, bool local, int nout, bool pre, int post, size_t n,
         std::mt19937& g) {
  const size_t esz = dtypeSize(t), bytes = n * esz + 7;  // +7: offsets 1..7 make unaligned buffers
  const int nsrc = (local ? 1 : 0) + nrecv;
  if (nsrc == 0) return;
  std::vector<std::vector<unsigned char>> in(nsrc, std::vector<unsigned char>(bytes));
  for (auto& b : in) fill(b, t, g);
  RedOp op;
  op.kind = kind;
  op.preMul = pre;
  op.postDivide = post;
  std::vector<unsigned char> scalar(esz);
  fill(scalar, t, g);
  memcpy(op.scalar, scalar.data(), esz);
  const size_t off = 1 + g() % 7;
  // Host.
  std::vector<std::vector<unsigned char>> hostOut(nout, std::vector<unsigned char>(bytes, 0xA5));
  std::vector<const void*> hsrc;
  for (auto& b : in) hsrc.push_back(b.data() + off);
  std::vector<void*> hout;
  for (auto& b : hostOut) hout.push_back(b.data() + off);
  reduceCopy(op, t, n, local ? hsrc[0] : nullptr, hsrc.data() + (local ? 1 : 0), nrecv, hout.data(), nout, post > 0);
  // Device.
  std::vector<unsigned char*> dsrcBase(nsrc), doutBase(nout);
  std::vector<const void*> dsrc;
  std::vector<void*> dout;
  for (int k = 0; k < nsrc; ++k) {
    CUDA_OK(cudaMalloc(&dsrcBase[k], bytes));
    CUDA_OK(cudaMemcpy(dsrcBase[k], in[k].data(), bytes, cudaMemcpyHostToDevice));
    dsrc.push_back(dsrcBase[k] + off);
  }
  for (int o = 0; o < nout; ++o) {
    CUDA_OK(cudaMalloc(&doutBase[o], bytes));
    CUDA_OK(cudaMemset(doutBase[o], 0xA5, bytes));
    dout.push_back(doutBase[o] + off);
  }
  CUDA_OK(cudaError_t(gpu::reduceCopy(op, t, n, local ? dsrc[0] : nullptr, dsrc.data() + (local ? 1 : 0), nrecv,
                                      dout.data(), nout, post > 0, nullptr)));
  CUDA_OK(cudaDeviceSynchronize());
  ++cases;
  for (int o = 0; o < nout; ++o) {
    std::vector<unsigned char> got(bytes);
    CUDA_OK(cudaMemcpy(got.data(), doutBase[o], bytes, cudaMemcpyDeviceToHost));
    if (got != hostOut[o]) {
      size_t i = 0;
      while (got[i] == hostOut[o][i]) ++i;
      if (++failures <= 20)
        std::printf("FAILED %s op %d, %d received%s, %d out%s%s, n=%zu: output %d differs from the host's at "
                    "byte %zu\n", dtypeName(t), int(kind), nrecv, local ? " + local" : "", nout,
                    pre ? ", premul" : "", post ? ", avg" : "", n, o, i);
    }
  }
  for (auto* p : dsrcBase) cudaFree(p);
  for (auto* p : doutBase) cudaFree(p);
}

}  // namespace

int main() {
  if (!haveDevice()) return 0;
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("device 0: %s\n", prop.name);
  std::mt19937 g(1234);
  for (int t = 0; t < precclNumTypes; ++t)
    for (int k = 0; k < 4; ++k)
      for (int nrecv = 0; nrecv <= 4; ++nrecv)
        for (int local = 0; local <= 1; ++local)
          for (int nout = 1; nout <= 2; ++nout)
            for (int flags = 0; flags < 4; ++flags)
              one(precclDataType_t(t), RedKind(k), nrecv, local, nout, flags & 1, flags & 2 ? 3 : 0,
                  flags == 3 ? 1000003 : 4099, g);
  std::printf("gpu_reduce_test: %d cases, %d failed\n", cases, failures);
  return failures ? 1 : 0;
}
