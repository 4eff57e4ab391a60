// The element loop of reduceCopy for lanes (docs/gpu.md): the resolved call by value, and the loop a set
// of lanes runs over it, lane `first` taking every `stride`-th element. The reduce kernel runs it over a
// grid, the task code over one block (gpu/block_lanes.cuh). The per-element arithmetic is the host's
// (reduce/reduce_arith.h).
#pragma once
#include <cstring>

#include "base/hd.h"
#include "reduce/reduce_arith.h"

namespace preccl::red {

// red::Args by value (a kernel parameter cannot point at the host's scalar).
struct ElemArgs {
  size_t n = 0;
  int nsrc = 0, nout = 0;
  const unsigned char* src[5] = {};
  unsigned char* out[4] = {};
  RedKind kind = RedKind::Sum;
  bool pre = false;
  int postDivide = 0;
  unsigned char scalar[8] = {};
};

PRECCL_HD inline ElemArgs elemArgs(const Args& r, size_t esz) {
  ElemArgs k;
  k.n = r.n;
  k.nsrc = r.nsrc;
  k.nout = r.nout;
  for (int i = 0; i < r.nsrc; ++i) k.src[i] = static_cast<const unsigned char*>(r.src[i]);
  for (int i = 0; i < r.nout; ++i) k.out[i] = static_cast<unsigned char*>(r.out[i]);
  k.kind = r.kind;
  k.pre = r.pre;
  k.postDivide = r.postDivide;
  if (r.pre) memcpy(k.scalar, r.scalar, esz);
  return k;
}

// Buffers have any alignment, as on the host: elements move byte-wise through memcpy.
template <class S> PRECCL_HD inline S loadElem(const unsigned char* p, size_t i) {
  S v;
  memcpy(&v, p + i * sizeof(S), sizeof(S));
  return v;
}
template <class S> PRECCL_HD inline void storeElem(unsigned char* p, size_t i, S v) {
  memcpy(p + i * sizeof(S), &v, sizeof(S));
}

template <class A, RedKind K> PRECCL_HD void reduceElems(const ElemArgs& a, size_t first, size_t stride) {
  using S = typename A::S;
  S scalar;
  memcpy(&scalar, a.scalar, sizeof(S));
  const typename A::Div div = A::makeDiv(a.postDivide > 0 ? a.postDivide : 1);
  for (size_t i = first; i < a.n; i += stride) {
    S r = loadElem<S>(a.src[0], i);
    if (a.pre) r = A::prod(r, scalar);
    for (int k = 1; k < a.nsrc; ++k) r = apply<A, K>(r, loadElem<S>(a.src[k], i));
    if (a.postDivide > 0) r = A::div(r, div);
    for (int o = 0; o < a.nout; ++o) storeElem<S>(a.out[o], i, r);
  }
}

template <class A> PRECCL_HD void reduceOps(const ElemArgs& a, size_t first, size_t stride) {
  switch (a.kind) {
    case RedKind::Sum: return reduceElems<A, RedKind::Sum>(a, first, stride);
    case RedKind::Prod: return reduceElems<A, RedKind::Prod>(a, first, stride);
    case RedKind::Max: return reduceElems<A, RedKind::Max>(a, first, stride);
    case RedKind::Min: return reduceElems<A, RedKind::Min>(a, first, stride);
  }
}

// Every type; false for an invalid one (nothing written).
PRECCL_HD inline bool reduceLanes(precclDataType_t t, const ElemArgs& a, size_t first, size_t stride) {
  switch (t) {
    case precclInt8: reduceOps<IntArith<int8_t>>(a, first, stride); return true;
    case precclUint8: reduceOps<IntArith<uint8_t>>(a, first, stride); return true;
    case precclInt32: reduceOps<IntArith<int32_t>>(a, first, stride); return true;
    case precclUint32: reduceOps<IntArith<uint32_t>>(a, first, stride); return true;
    case precclInt64: reduceOps<IntArith<int64_t>>(a, first, stride); return true;
    case precclUint64: reduceOps<IntArith<uint64_t>>(a, first, stride); return true;
    case precclFloat32: reduceOps<FloatArith<float>>(a, first, stride); return true;
    case precclFloat64: reduceOps<FloatArith<double>>(a, first, stride); return true;
    case precclFloat16: reduceOps<LowpArith<HalfCodec>>(a, first, stride); return true;
    case precclBfloat16: reduceOps<LowpArith<Bf16Codec>>(a, first, stride); return true;
    case precclFloat8e4m3: reduceOps<LowpArith<E4M3Codec>>(a, first, stride); return true;
    case precclFloat8e5m2: reduceOps<LowpArith<E5M2Codec>>(a, first, stride); return true;
    default: return false;
  }
}

}  // namespace preccl::red
