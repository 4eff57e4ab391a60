// The arithmetic of every reduction, per data-type family, shared by the host's reduction loops
// (reduce_kernel.h) and the CUDA kernels (src/gpu): one definition, so that both give the same bits.
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "reduce/float_bits.h"
#include "base/hd.h"
#include "reduce/reduce.h"

namespace preccl::red {

// Everything reduceCopy resolved: sources in order (local first when present), outputs, and the
// pre-multiply / post-divide that apply to this call.
struct Args {
  size_t n = 0;
  int nsrc = 0;
  const void* src[5] = {};
  int nout = 0;
  void* out[4] = {};
  RedKind kind = RedKind::Sum;
  bool pre = false;                  // multiply src[0] (the local input) by scalar
  const unsigned char* scalar = nullptr;
  int postDivide = 0;                // > 0: divide the result by this
};

// reduceCopy's call resolved (reduce/reduce.h has the contract): the local input first, then the
// received ones; false when there is nothing to do. The host loops and the CUDA kernel both start here.
PRECCL_HD inline bool resolve(const RedOp& op, size_t n, const void* local, const void* const* recv, int nrecv,
                    void* const* outs, int nout, bool applyPost, Args* a) {
  if (n == 0 || nrecv < 0 || nrecv > 4 || nout <= 0 || nout > 4) return false;
  a->n = n;
  if (local != nullptr) a->src[a->nsrc++] = local;
  for (int k = 0; k < nrecv; ++k) a->src[a->nsrc++] = recv[k];
  if (a->nsrc == 0) return false;
  a->nout = nout;
  for (int o = 0; o < nout; ++o) a->out[o] = outs[o];
  a->kind = op.kind;
  a->pre = op.preMul && local != nullptr;
  a->scalar = op.scalar;
  a->postDivide = applyPost && op.postDivide > 0 ? op.postDivide : 0;
  return true;
}

// ---- arithmetic of each family; S is the storage type ----

// Integers: sum and prod wrap modulo 2^bits (done in the unsigned type); Avg divides like C++ `r / n`.
template <class T> struct IntArith {
  using S = T;
  using U = std::make_unsigned_t<T>;
  using Div = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
  PRECCL_HD static Div makeDiv(int n) { return Div(n); }
  PRECCL_HD static S sum(S a, S b) { return S(U(U(a) + U(b))); }
  PRECCL_HD static S prod(S a, S b) { return S(U(U(a) * U(b))); }
  PRECCL_HD static S max(S a, S b) { return a > b ? a : b; }
  PRECCL_HD static S min(S a, S b) { return a < b ? a : b; }
  PRECCL_HD static S div(S a, Div n) { return S(Div(a) / n); }
};

// float / double: one IEEE operation per step in the type itself; NaN propagates through max/min.
template <class T> struct FloatArith {
  using S = T;
  using Div = T;
  PRECCL_HD static Div makeDiv(int n) { return T(n); }
  PRECCL_HD static S sum(S a, S b) { return a + b; }
  PRECCL_HD static S prod(S a, S b) { return a * b; }
  // (a > b || isnan(a)) ? a : b, written in the form GCC (12) vectorises for both float and double.
  PRECCL_HD static S max(S a, S b) {
    const S t = a > b ? a : b;
    return a != a ? a : t;
  }
  PRECCL_HD static S min(S a, S b) {
    const S t = a < b ? a : b;
    return a != a ? a : t;
  }
  PRECCL_HD static S div(S a, Div n) { return a / n; }
};

// half, bf16, fp8: each operation widens both operands to float, computes in float and rounds back.
template <class Codec> struct LowpArith {
  using S = typename Codec::S;
  using Div = float;
  PRECCL_HD static Div makeDiv(int n) { return float(n); }
  PRECCL_HD static float w(S x) { return Codec::toFloat(x); }
  PRECCL_HD static S r(float x) { return Codec::fromFloat(x); }
  PRECCL_HD static S sum(S a, S b) { return r(w(a) + w(b)); }
  PRECCL_HD static S prod(S a, S b) { return r(w(a) * w(b)); }
  PRECCL_HD static S max(S a, S b) {
    const float x = w(a), y = w(b);
    return r(x != x ? x : (x > y ? x : y));  // NaN propagates
  }
  PRECCL_HD static S min(S a, S b) {
    const float x = w(a), y = w(b);
    return r(x != x ? x : (x < y ? x : y));
  }
  PRECCL_HD static S div(S a, Div n) { return r(w(a) / n); }
};

struct HalfCodec {
  using S = uint16_t;
  PRECCL_HD static float toFloat(S x) { return fp::halfToFloat(x); }
  PRECCL_HD static S fromFloat(float f) { return fp::floatToHalf(f); }
};
struct Bf16Codec {
  using S = uint16_t;
  PRECCL_HD static float toFloat(S x) { return fp::bf16ToFloat(x); }
  PRECCL_HD static S fromFloat(float f) { return fp::floatToBf16(f); }
};
struct E4M3Codec {
  using S = uint8_t;
  PRECCL_HD static float toFloat(S x) { return fp::fp8E4M3ToFloat(x); }
  PRECCL_HD static S fromFloat(float f) { return fp::floatToFp8E4M3(f); }
};
struct E5M2Codec {
  using S = uint8_t;
  PRECCL_HD static float toFloat(S x) { return fp::fp8E5M2ToFloat(x); }
  PRECCL_HD static S fromFloat(float f) { return fp::floatToFp8E5M2(f); }
};

template <class A, RedKind K> PRECCL_HD inline typename A::S apply(typename A::S a, typename A::S b) {
  if constexpr (K == RedKind::Sum) return A::sum(a, b);
  else if constexpr (K == RedKind::Prod) return A::prod(a, b);
  else if constexpr (K == RedKind::Max) return A::max(a, b);
  else return A::min(a, b);
}

}  // namespace preccl::red
