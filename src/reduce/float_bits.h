// Inline bit-level conversions between float and the 16/8-bit float formats. They live in a header so
// the reduction loops can inline them; dtype.cc exposes the same functions out of line.
//
// Rounding follows NVIDIA's host code in cuda_fp16.hpp / cuda_bf16.hpp / cuda_fp8.hpp:
//   half, bf16: round to nearest even, overflow -> inf, any NaN -> 0x7fff (sign dropped).
//   fp8 (__NV_SATFINITE): round to nearest even, |x| beyond the largest finite value (inf included)
//   -> +-max finite, NaN -> NaN with the input's sign (e4m3: 0x7f, e5m2: 0x7e | top 2 mantissa bits).
#pragma once
#include <bit>
#include <cstdint>

#include "base/hd.h"

namespace preccl::fp {

// All paths are computed and then selected (no branches): the reduction loops convert every element,
// and data-dependent branches (zeros next to normal numbers) would mispredict; selects also let GCC
// vectorise the loops. Wrapped intermediate values of the unused paths are discarded by the selects.

// ---- half (IEEE binary16) ----
PRECCL_HD inline uint16_t floatToHalf(float f) {
  const uint32_t all = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (all >> 16) & 0x8000u;
  const uint32_t x = all & 0x7fffffffu;
  // Normal result: rebias the exponent 127 -> 15 and round half to even on the 13 dropped bits.
  const uint32_t normal = (x + 0xfffu + ((x >> 13) & 1u) - 0x38000000u) >> 13;
  // Below 2^-14 (subnormal or zero): 0.5f has ulp 2^-24, the half subnormal step, so the FPU's own
  // round-to-nearest-even does the rounding (needs the default rounding mode, never changed here).
  const uint32_t sub = std::bit_cast<uint32_t>(std::bit_cast<float>(x) + 0.5f) - 0x3f000000u;
  uint32_t r = x < 0x38800000u ? sub : normal;
  r = x >= 0x477ff000u ? 0x7c00u : r;  // >= 65520 rounds to inf (65504 has an odd mantissa)
  r |= sign;
  return uint16_t(x > 0x7f800000u ? 0x7fffu : r);  // NaN
}

PRECCL_HD inline float halfToFloat(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t o = uint32_t(h & 0x7fffu) << 13;
  const uint32_t exp = o & 0x0f800000u;
  const uint32_t normal = o + 0x38000000u;          // rebias 15 -> 127
  const uint32_t infNan = o + 0x70000000u;          // exponent all ones, payload kept
  // Zero / subnormal: build 2^-14 * (1 + m/1024) and subtract 2^-14 to renormalise through the FPU.
  const uint32_t sub = std::bit_cast<uint32_t>(std::bit_cast<float>(o + 0x38800000u) - 6.103515625e-05f);
  const uint32_t r = exp == 0x0f800000u ? infNan : (exp == 0 ? sub : normal);
  return std::bit_cast<float>(sign | r);
}

// ---- bfloat16 ----
PRECCL_HD inline uint16_t floatToBf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t r = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;  // half to even; overflow carries into inf
  return uint16_t((x & 0x7fffffffu) > 0x7f800000u ? 0x7fffu : r);
}

PRECCL_HD inline float bf16ToFloat(uint16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }

// ---- fp8 e4m3 (e4m3fn: bias 7, no inf, NaN = s.1111.111, max 448) ----
PRECCL_HD inline uint8_t floatToFp8E4M3(float f) {
  const uint32_t all = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (all >> 24) & 0x80u;
  const uint32_t x = all & 0x7fffffffu;
  const uint32_t normal = (x + 0x7ffffu + ((x >> 20) & 1u) - 0x3c000000u) >> 20;  // rebias 127 -> 7
  // Below 2^-6: 2^14 has ulp 2^-9, the e4m3 subnormal step.
  const uint32_t sub = std::bit_cast<uint32_t>(std::bit_cast<float>(x) + 16384.0f) - 0x46800000u;
  uint32_t r = x < 0x3c800000u ? sub : normal;
  r = x > 0x43e00000u ? 0x7eu : r;  // beyond 448 (inf included): saturate
  r = x > 0x7f800000u ? 0x7fu : r;  // NaN keeps the sign
  return uint8_t(sign | r);
}

// ---- fp8 e5m2 (bias 15, inf = s.11111.00, NaN = s.11111.{01,10,11}, max 57344) ----
PRECCL_HD inline uint8_t floatToFp8E5M2(float f) {
  const uint32_t all = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (all >> 24) & 0x80u;
  const uint32_t x = all & 0x7fffffffu;
  const uint32_t normal = (x + 0xfffffu + ((x >> 21) & 1u) - 0x38000000u) >> 21;  // rebias 127 -> 15
  // Below 2^-14: 2^7 has ulp 2^-16, the e5m2 subnormal step.
  const uint32_t sub = std::bit_cast<uint32_t>(std::bit_cast<float>(x) + 128.0f) - 0x43000000u;
  uint32_t r = x < 0x38800000u ? sub : normal;
  r = x > 0x47600000u ? 0x7bu : r;                          // beyond 57344 (inf included): saturate
  r = x > 0x7f800000u ? (0x7eu | ((x >> 21) & 3u)) : r;     // NaN, as cuda_fp8 encodes it
  return uint8_t(sign | r);
}

// fp8 -> float: every value is exact in float; decode by formula (used to build the lookup tables).
PRECCL_HD constexpr float fp8Decode(uint8_t v, int expBits, int manBits, bool hasInf) {
  const int bias = (1 << (expBits - 1)) - 1;
  const uint32_t sign = uint32_t(v & 0x80u) << 24;
  const int e = (v >> manBits) & ((1 << expBits) - 1);
  const uint32_t m = v & ((1u << manBits) - 1);
  const int emax = (1 << expBits) - 1;
  if (hasInf && e == emax) {                           // IEEE-style: inf or NaN
    return std::bit_cast<float>(sign | 0x7f800000u | (m << (23 - manBits)));
  }
  if (!hasInf && e == emax && m == (1u << manBits) - 1) {  // e4m3fn: only s.1111.111 is NaN
    return std::bit_cast<float>(sign | 0x7fc00000u);
  }
  if (e == 0) {                                        // subnormal: m * 2^(1 - bias - manBits)
    float r = float(m);
    for (int i = 0; i < bias - 1 + manBits; ++i) r *= 0.5f;
    return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(r));
  }
  return std::bit_cast<float>(sign | uint32_t(e - bias + 127) << 23 | (m << (23 - manBits)));
}

struct Fp8Table {
  float v[256];
};
constexpr Fp8Table makeFp8Table(int expBits, int manBits, bool hasInf) {
  Fp8Table t{};
  for (int i = 0; i < 256; ++i) t.v[i] = fp8Decode(uint8_t(i), expBits, manBits, hasInf);
  return t;
}
inline constexpr Fp8Table kE4M3 = makeFp8Table(4, 3, false);
inline constexpr Fp8Table kE5M2 = makeFp8Table(5, 2, true);

// A kernel decodes by the formula the tables are built from (host tables are not device memory).
PRECCL_HD inline float fp8E4M3ToFloat(uint8_t v) {
#if defined(__CUDA_ARCH__)
  return fp8Decode(v, 4, 3, false);
#else
  return kE4M3.v[v];
#endif
}
PRECCL_HD inline float fp8E5M2ToFloat(uint8_t v) {
#if defined(__CUDA_ARCH__)
  return fp8Decode(v, 5, 2, true);
#else
  return kE5M2.v[v];
#endif
}

}  // namespace preccl::fp
