// Element sizes, names and scalar conversions of the collective data types.
#include "reduce/dtype.h"

#include <cmath>
#include <cstring>
#include <strings.h>

#include "reduce/float_bits.h"

namespace preccl {

namespace {

constexpr size_t kSizes[precclNumTypes] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
constexpr const char* kNames[precclNumTypes] = {"int8",  "uint8", "int32",  "uint32",   "int64",  "uint64",
                                                "half",  "float", "double", "bfloat16", "f8e4m3", "f8e5m2"};

struct Alias {
  const char* name;
  precclDataType_t type;
};
// nccl-tests' names come first (from kNames); these are the other spellings people type.
constexpr Alias kAliases[] = {
    {"char", precclInt8},          {"i8", precclInt8},           {"u8", precclUint8},
    {"int", precclInt32},          {"i32", precclInt32},         {"unsigned", precclUint32},
    {"u32", precclUint32},         {"long", precclInt64},        {"i64", precclInt64},
    {"u64", precclUint64},         {"float16", precclFloat16},   {"fp16", precclFloat16},
    {"f16", precclFloat16},        {"float32", precclFloat32},   {"fp32", precclFloat32},
    {"f32", precclFloat32},        {"float64", precclFloat64},   {"fp64", precclFloat64},
    {"f64", precclFloat64},        {"bf16", precclBfloat16},     {"bfloat", precclBfloat16},
    {"fp8e4m3", precclFloat8e4m3}, {"e4m3", precclFloat8e4m3},   {"float8e4m3", precclFloat8e4m3},
    {"f8e4m3fn", precclFloat8e4m3}, {"fp8e5m2", precclFloat8e5m2}, {"e5m2", precclFloat8e5m2},
    {"float8e5m2", precclFloat8e5m2},
};

// A small binary float format as seen from double (for storeFromDouble's single rounding).
struct SmallFormat {
  int expBits, manBits;
  bool saturate;  // fp8 (SATFINITE): overflow -> max finite; half/bf16: overflow -> inf
  bool e4m3fn;    // the top exponent holds normal numbers, only mantissa all-ones is NaN
};

uint32_t roundDoubleToSmall(double v, const SmallFormat& f) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  const uint32_t sign = uint32_t(bits >> 63) << (f.expBits + f.manBits);
  const int bias = (1 << (f.expBits - 1)) - 1;
  const int emin = 1 - bias;
  const uint32_t expAllOnes = (1u << f.expBits) - 1;
  const uint32_t manMask = (1u << f.manBits) - 1;
  const uint32_t infBits = expAllOnes << f.manBits;
  const uint32_t maxBits = f.e4m3fn ? (infBits | (manMask - 1)) : (infBits - 1);
  if (std::isnan(v)) {
    if (!f.saturate) return (1u << (f.expBits + f.manBits)) - 1;           // half/bf16: 0x7fff
    if (f.e4m3fn) return sign | infBits | manMask;                         // 0x7f
    return sign | infBits | 2u | uint32_t((bits >> 50) & 3u);              // e5m2: 0x7e | top bits
  }
  const double a = std::fabs(v);
  const uint32_t over = f.saturate ? (sign | maxBits) : (sign | infBits);
  if (std::isinf(a)) return over;
  if (a == 0) return sign;
  int e = std::ilogb(a);
  if (e < emin) e = emin;
  const double q = std::nearbyint(std::ldexp(a, f.manBits - e));  // exact scaling, then one rounding
  if (q == 0) return sign;
  const double r = std::ldexp(q, e - f.manBits);
  int er = std::ilogb(r);
  if (er < emin) return sign | uint32_t(std::ldexp(r, f.manBits - emin));  // subnormal: count of steps
  const uint32_t biased = uint32_t(er + bias);
  const uint32_t man = uint32_t(std::ldexp(r, f.manBits - er)) & manMask;
  const uint32_t out = (biased << f.manBits) | man;
  if (biased > expAllOnes || out > maxBits) return over;
  return sign | out;
}

constexpr SmallFormat kHalfFmt{5, 10, false, false};
constexpr SmallFormat kBf16Fmt{8, 7, false, false};
constexpr SmallFormat kE4M3Fmt{4, 3, true, true};
constexpr SmallFormat kE5M2Fmt{5, 2, true, false};

// Integer store: truncate toward zero, then wrap modulo 2^bits (the integer kernels' arithmetic).
uint64_t doubleToWrappedBits(double v) {
  if (std::isnan(v)) return 0;
  v = std::trunc(v);
  if (v >= 18446744073709551616.0) return ~uint64_t(0);
  if (v >= 9223372036854775808.0) return uint64_t(v);
  if (v < -9223372036854775808.0) return uint64_t(1) << 63;
  return uint64_t(int64_t(v));
}

template <class T>
T loadAt(const void* buf, size_t i) {
  T x;
  std::memcpy(&x, static_cast<const unsigned char*>(buf) + i * sizeof(T), sizeof(T));
  return x;
}
template <class T>
void storeAt(void* buf, size_t i, T x) {
  std::memcpy(static_cast<unsigned char*>(buf) + i * sizeof(T), &x, sizeof(T));
}

}  // namespace

bool dtypeValid(int t) { return t >= 0 && t < precclNumTypes; }

size_t dtypeSize(precclDataType_t t) { return dtypeValid(t) ? kSizes[t] : 0; }

const char* dtypeName(precclDataType_t t) { return dtypeValid(t) ? kNames[t] : "invalid"; }

bool dtypeFromName(const char* name, precclDataType_t* out) {
  if (name == nullptr) return false;
  for (int t = 0; t < precclNumTypes; ++t) {
    if (strcasecmp(name, kNames[t]) == 0) {
      if (out) *out = precclDataType_t(t);
      return true;
    }
  }
  for (const Alias& a : kAliases) {
    if (strcasecmp(name, a.name) == 0) {
      if (out) *out = a.type;
      return true;
    }
  }
  return false;
}

uint16_t floatToHalf(float f) { return fp::floatToHalf(f); }
float halfToFloat(uint16_t h) { return fp::halfToFloat(h); }
uint16_t floatToBf16(float f) { return fp::floatToBf16(f); }
float bf16ToFloat(uint16_t b) { return fp::bf16ToFloat(b); }
uint8_t floatToFp8E4M3(float f) { return fp::floatToFp8E4M3(f); }
float fp8E4M3ToFloat(uint8_t v) { return fp::fp8E4M3ToFloat(v); }
uint8_t floatToFp8E5M2(float f) { return fp::floatToFp8E5M2(f); }
float fp8E5M2ToFloat(uint8_t v) { return fp::fp8E5M2ToFloat(v); }

double loadAsDouble(precclDataType_t t, const void* buf, size_t i) {
  switch (t) {
    case precclInt8: return loadAt<int8_t>(buf, i);
    case precclUint8: return loadAt<uint8_t>(buf, i);
    case precclInt32: return loadAt<int32_t>(buf, i);
    case precclUint32: return loadAt<uint32_t>(buf, i);
    case precclInt64: return double(loadAt<int64_t>(buf, i));
    case precclUint64: return double(loadAt<uint64_t>(buf, i));
    case precclFloat16: return fp::halfToFloat(loadAt<uint16_t>(buf, i));
    case precclFloat32: return loadAt<float>(buf, i);
    case precclFloat64: return loadAt<double>(buf, i);
    case precclBfloat16: return fp::bf16ToFloat(loadAt<uint16_t>(buf, i));
    case precclFloat8e4m3: return fp::fp8E4M3ToFloat(loadAt<uint8_t>(buf, i));
    case precclFloat8e5m2: return fp::fp8E5M2ToFloat(loadAt<uint8_t>(buf, i));
    default: return std::nan("");
  }
}

void storeFromDouble(precclDataType_t t, void* buf, size_t i, double v) {
  switch (t) {
    case precclInt8: storeAt<int8_t>(buf, i, int8_t(doubleToWrappedBits(v))); break;
    case precclUint8: storeAt<uint8_t>(buf, i, uint8_t(doubleToWrappedBits(v))); break;
    case precclInt32: storeAt<int32_t>(buf, i, int32_t(doubleToWrappedBits(v))); break;
    case precclUint32: storeAt<uint32_t>(buf, i, uint32_t(doubleToWrappedBits(v))); break;
    case precclInt64: storeAt<int64_t>(buf, i, int64_t(doubleToWrappedBits(v))); break;
    case precclUint64: storeAt<uint64_t>(buf, i, doubleToWrappedBits(v)); break;
    case precclFloat16: storeAt<uint16_t>(buf, i, uint16_t(roundDoubleToSmall(v, kHalfFmt))); break;
    case precclFloat32: storeAt<float>(buf, i, float(v)); break;
    case precclFloat64: storeAt<double>(buf, i, v); break;
    case precclBfloat16: storeAt<uint16_t>(buf, i, uint16_t(roundDoubleToSmall(v, kBf16Fmt))); break;
    case precclFloat8e4m3: storeAt<uint8_t>(buf, i, uint8_t(roundDoubleToSmall(v, kE4M3Fmt))); break;
    case precclFloat8e5m2: storeAt<uint8_t>(buf, i, uint8_t(roundDoubleToSmall(v, kE5M2Fmt))); break;
    default: break;
  }
}

}  // namespace preccl
