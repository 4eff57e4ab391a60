// Internal to src/device: the templated reduction loops behind reduceCopy (reduce.h). Each data-type
// family (reduce_int.cc, reduce_float.cc, reduce_lowp.cc) instantiates them for its types, so the three
// translation units compile in parallel and each stays small.
//
// Speed: the hot shapes (1 or 2 sources into 1 or 2 outputs; the pre-multiply and post-divide fixed at
// compile time) are plain loops over restrict pointers, written as fixed-size blocks plus a tail so that
// GCC vectorises them at -O2 (whose "very cheap" cost model only takes loops with a known trip count)
// as well as at -O3. Every other shape runs through a tile buffer with the same per-element steps.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "reduce/reduce.h"
#include "reduce/reduce_arith.h"

namespace preccl::red {

void runInt(precclDataType_t t, const Args& a);
void runFloat(precclDataType_t t, const Args& a);
void runLowp(precclDataType_t t, const Args& a);

// Buffers have arbitrary alignment and may hold any type's bytes: elements are moved with memcpy, which
// GCC turns into (vector) unaligned loads and stores.
template <class S> inline S ld(const unsigned char* p, size_t i) {
  S v;
  std::memcpy(&v, p + i * sizeof(S), sizeof(S));
  return v;
}
template <class S> inline void st(unsigned char* p, size_t i, S v) { std::memcpy(p + i * sizeof(S), &v, sizeof(S)); }
using Bytes = unsigned char;

// Block length of the fixed-trip inner loops (a multiple of every vector width).
constexpr size_t kBlock = 64;
// Tile length of the generic path, in elements (a 4 KiB stack buffer at most).
constexpr size_t kTile = 512;

// One element of the fused kernels: optional pre-multiply of the first source, the reduction with the
// second source (NSRC == 2), optional post-divide.
template <class A, RedKind K, int NSRC, bool PRE, bool POST>
inline typename A::S element(typename A::S x0, typename A::S x1, typename A::S scalar, typename A::Div div) {
  typename A::S r = x0;
  if constexpr (PRE) r = A::prod(r, scalar);
  if constexpr (NSRC == 2) r = apply<A, K>(r, x1);
  if constexpr (POST) r = A::div(r, div);
  return r;
}

// out0 (and out1 when NOUT == 2) = post(pre(src0) (+) src1). The pointers are restrict *parameters*
// (GCC only trusts restrict there without runtime alias checks). Outputs may alias a source at the same
// index: every element's loads come before its stores, which is all such aliasing needs.
// noinline: inlined into its caller, GCC merges the four flag variants and loses track of the accesses.
template <class A, RedKind K, int NSRC, int NOUT, bool PRE, bool POST>
__attribute__((noinline)) void fusedLoop(size_t n, const Bytes* __restrict s0, const Bytes* __restrict s1, Bytes* __restrict d0,
               Bytes* __restrict d1, typename A::S scalar, typename A::Div div) {
  using S = typename A::S;
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (size_t j = 0; j < kBlock; ++j) {  // counted from 0: the form GCC -O2 vectorises
      const S r = element<A, K, NSRC, PRE, POST>(ld<S>(s0, i + j), NSRC == 2 ? ld<S>(s1, i + j) : S{}, scalar, div);
      st<S>(d0, i + j, r);
      if constexpr (NOUT == 2) st<S>(d1, i + j, r);
    }
  }
  for (; i < n; ++i) {
    const S r = element<A, K, NSRC, PRE, POST>(ld<S>(s0, i), NSRC == 2 ? ld<S>(s1, i) : S{}, scalar, div);
    st<S>(d0, i, r);
    if constexpr (NOUT == 2) st<S>(d1, i, r);
  }
}

template <class A, RedKind K, int NSRC, int NOUT, bool PRE, bool POST>
void fused(const Args& a) {
  using S = typename A::S;
  S scalar{};
  if constexpr (PRE) std::memcpy(&scalar, a.scalar, sizeof(S));
  const typename A::Div div = A::makeDiv(a.postDivide > 0 ? a.postDivide : 1);
  fusedLoop<A, K, NSRC, NOUT, PRE, POST>(a.n, static_cast<const Bytes*>(a.src[0]),
                                         static_cast<const Bytes*>(NSRC == 2 ? a.src[1] : nullptr),
                                         static_cast<Bytes*>(a.out[0]),
                                         static_cast<Bytes*>(NOUT == 2 ? a.out[1] : nullptr), scalar, div);
}

// Any shape (up to 5 sources, 4 outputs) one tile at a time: all of a tile's loads happen before its
// stores, so outputs may alias sources at the same index.
template <class A, RedKind K> void generic(const Args& a) {
  using S = typename A::S;
  S scalar{};
  if (a.pre) std::memcpy(&scalar, a.scalar, sizeof(S));
  const bool post = a.postDivide > 0;
  const typename A::Div div = A::makeDiv(post ? a.postDivide : 1);
  S acc[kTile];
  for (size_t base = 0; base < a.n; base += kTile) {
    const size_t m = a.n - base < kTile ? a.n - base : kTile;
    const Bytes* s0 = static_cast<const Bytes*>(a.src[0]) + base * sizeof(S);
    if (a.pre) {
      for (size_t j = 0; j < m; ++j) acc[j] = A::prod(ld<S>(s0, j), scalar);
    } else {
      std::memcpy(acc, s0, m * sizeof(S));
    }
    for (int k = 1; k < a.nsrc; ++k) {
      const Bytes* sk = static_cast<const Bytes*>(a.src[k]) + base * sizeof(S);
      for (size_t j = 0; j < m; ++j) acc[j] = apply<A, K>(acc[j], ld<S>(sk, j));
    }
    if (post) {
      for (size_t j = 0; j < m; ++j) acc[j] = A::div(acc[j], div);
    }
    for (int o = 0; o < a.nout; ++o) std::memcpy(static_cast<Bytes*>(a.out[o]) + base * sizeof(S), acc, m * sizeof(S));
  }
}

template <class A, RedKind K, int NSRC, int NOUT> void fusedFlags(const Args& a) {
  const bool post = a.postDivide > 0;
  if (a.pre) {
    if (post) fused<A, K, NSRC, NOUT, true, true>(a);
    else fused<A, K, NSRC, NOUT, true, false>(a);
  } else {
    if (post) fused<A, K, NSRC, NOUT, false, true>(a);
    else fused<A, K, NSRC, NOUT, false, false>(a);
  }
}

template <class A, RedKind K> void runShape(const Args& a) {
  // With one source the op never applies: those kernels are shared by all ops (instantiated for Sum).
  if (a.nsrc == 1 && a.nout == 1) return fusedFlags<A, RedKind::Sum, 1, 1>(a);
  if (a.nsrc == 1 && a.nout == 2) return fusedFlags<A, RedKind::Sum, 1, 2>(a);
  if (a.nsrc == 2 && a.nout == 1) return fusedFlags<A, K, 2, 1>(a);
  if (a.nsrc == 2 && a.nout == 2) return fusedFlags<A, K, 2, 2>(a);
  generic<A, K>(a);
}

// Entry of one data type: picks the op.
template <class A> void runType(const Args& a) {
  switch (a.kind) {
    case RedKind::Sum: return runShape<A, RedKind::Sum>(a);
    case RedKind::Prod: return runShape<A, RedKind::Prod>(a);
    case RedKind::Max: return runShape<A, RedKind::Max>(a);
    case RedKind::Min: return runShape<A, RedKind::Min>(a);
  }
}

}  // namespace preccl::red
