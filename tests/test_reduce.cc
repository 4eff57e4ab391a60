// Unit tests of src/device: data-type conversions (dtype.h) and the reduction kernel (reduce.h).
// Every kernel result is checked element by element against a reference written here.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "reduce/dtype.h"
#include "reduce/reduce.h"

using namespace preccl;

namespace {

float bitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

bool isLowp(precclDataType_t t) {
  return t == precclFloat16 || t == precclBfloat16 || t == precclFloat8e4m3 || t == precclFloat8e5m2;
}
bool isFloating(precclDataType_t t) { return isLowp(t) || t == precclFloat32 || t == precclFloat64; }

struct OpCase {
  const char* name;
  RedKind kind;
  bool pre;
  bool avg;
};
const OpCase kOps[] = {{"sum", RedKind::Sum, false, false}, {"prod", RedKind::Prod, false, false},
                       {"max", RedKind::Max, false, false}, {"min", RedKind::Min, false, false},
                       {"avg", RedKind::Sum, false, true},  {"premulsum", RedKind::Sum, true, false}};

// ---- reference arithmetic, written plainly from the semantics in reduce.h ----

template <class T> T intCombine(RedKind k, T a, T b) {
  using U = std::make_unsigned_t<T>;
  switch (k) {
    case RedKind::Sum: return T(U(uint64_t(U(a)) + uint64_t(U(b))));
    case RedKind::Prod: return T(U(uint64_t(U(a)) * uint64_t(U(b))));
    case RedKind::Max: return a > b ? a : b;
    case RedKind::Min: return a < b ? a : b;
  }
  return a;
}
template <class T> T floatCombine(RedKind k, T a, T b) {
  switch (k) {
    case RedKind::Sum: return a + b;
    case RedKind::Prod: return a * b;
    case RedKind::Max: return (a > b || std::isnan(a)) ? a : b;
    case RedKind::Min: return (a < b || std::isnan(a)) ? a : b;
  }
  return a;
}

// One reduceCopy call: sources are (local?, recv...), each a byte buffer read at byte offset `off`.
struct Call {
  precclDataType_t t;
  RedOp op;
  bool hasLocal;
  bool applyPost;
  std::vector<const unsigned char*> srcs;  // already offset
};

template <class T> T at(const unsigned char* p, size_t i) {
  T x;
  std::memcpy(&x, p + i * sizeof(T), sizeof(T));
  return x;
}

template <class T> void refNative(const Call& c, size_t i, unsigned char* out) {
  T r = at<T>(c.srcs[0], i);
  T scalar;
  std::memcpy(&scalar, c.op.scalar, sizeof(T));
  const bool pre = c.op.preMul && c.hasLocal;
  const bool post = c.applyPost && c.op.postDivide > 0;
  if constexpr (std::is_integral_v<T>) {
    if (pre) r = intCombine<T>(RedKind::Prod, r, scalar);
    for (size_t k = 1; k < c.srcs.size(); ++k) r = intCombine<T>(c.op.kind, r, at<T>(c.srcs[k], i));
    if (post) r = T(r / c.op.postDivide);  // C++ integer division, as the spec says
  } else {
    if (pre) r = r * scalar;
    for (size_t k = 1; k < c.srcs.size(); ++k) r = floatCombine<T>(c.op.kind, r, at<T>(c.srcs[k], i));
    if (post) r = r / T(c.op.postDivide);
  }
  std::memcpy(out + i * sizeof(T), &r, sizeof(T));
}

// Low-precision types: inputs are chosen so that every intermediate is exact, so exact double math
// rounded once at the end equals the kernel's per-step float rounding.
void refLowp(const Call& c, size_t i, unsigned char* out) {
  double r = loadAsDouble(c.t, c.srcs[0], i);
  if (c.op.preMul && c.hasLocal) r *= loadAsDouble(c.t, c.op.scalar, 0);
  for (size_t k = 1; k < c.srcs.size(); ++k) r = floatCombine<double>(c.op.kind, r, loadAsDouble(c.t, c.srcs[k], i));
  if (c.applyPost && c.op.postDivide > 0) r /= c.op.postDivide;
  storeFromDouble(c.t, out, i, r);
}

void refElement(const Call& c, size_t i, unsigned char* out) {
  switch (c.t) {
    case precclInt8: return refNative<int8_t>(c, i, out);
    case precclUint8: return refNative<uint8_t>(c, i, out);
    case precclInt32: return refNative<int32_t>(c, i, out);
    case precclUint32: return refNative<uint32_t>(c, i, out);
    case precclInt64: return refNative<int64_t>(c, i, out);
    case precclUint64: return refNative<uint64_t>(c, i, out);
    case precclFloat32: return refNative<float>(c, i, out);
    case precclFloat64: return refNative<double>(c, i, out);
    default: return refLowp(c, i, out);
  }
}

// Equal bit for bit, except that any NaN matches any NaN of the type.
bool sameElement(precclDataType_t t, const unsigned char* a, const unsigned char* b, size_t i) {
  const size_t s = dtypeSize(t);
  if (std::memcmp(a + i * s, b + i * s, s) == 0) return true;
  return isFloating(t) && std::isnan(loadAsDouble(t, a, i)) && std::isnan(loadAsDouble(t, b, i));
}

// Fills n elements with values suited to the type and op (see refLowp for the low-precision rule).
void fill(precclDataType_t t, unsigned char* p, size_t n, std::mt19937_64& rng, bool allowNan) {
  const size_t s = dtypeSize(t);
  for (size_t i = 0; i < n; ++i) {
    if (!isFloating(t)) {
      const uint64_t v = rng();
      std::memcpy(p + i * s, &v, s);  // any bit pattern: exercises wrap-around
    } else if (t == precclFloat16 || t == precclBfloat16) {
      static const double kSmall[] = {-2, -1, -0.5, 0, 0.5, 1, 2};
      storeFromDouble(t, p, i, kSmall[rng() % 7]);
    } else if (isLowp(t)) {
      // fp8: small integers, so that sums, products, x2 and /4 of up to three stay exact in e5m2 too.
      storeFromDouble(t, p, i, double(int(rng() % 5) - 2));
    } else {
      double v = double(int64_t(rng() % 20001) - 10000) / 64.0 + double(rng() % 1000) * 1e-7;
      if (allowNan && rng() % 50 == 0) v = std::nan("");
      storeFromDouble(t, p, i, v);
    }
  }
}

// Runs one configuration and checks every element of every output, plus guard bytes around them.
void checkCase(precclDataType_t t, const OpCase& oc, int nrecv, int nout, size_t n, bool hasLocal, int alias,
               std::mt19937_64& rng) {
  const size_t s = dtypeSize(t);
  const size_t off = 1 + rng() % 7;  // odd offsets: kernels must take any alignment
  const size_t bytes = off + n * s + 16;
  const int nsrc = (hasLocal ? 1 : 0) + nrecv;
  std::vector<std::vector<unsigned char>> src(nsrc, std::vector<unsigned char>(bytes, 0xa5));
  std::vector<std::vector<unsigned char>> out(nout, std::vector<unsigned char>(bytes, 0x5a));
  for (auto& b : src) fill(t, b.data() + off, n, rng, !oc.pre);

  RedOp op;
  op.kind = oc.kind;
  if (oc.pre) {
    op.preMul = true;
    if (isLowp(t)) storeFromDouble(t, op.scalar, 0, 2.0);
    else if (isFloating(t)) storeFromDouble(t, op.scalar, 0, 1.5);
    else storeFromDouble(t, op.scalar, 0, double(int(rng() % 1000) - 500));
  }
  if (oc.avg) op.postDivide = isLowp(t) ? 4 : 3;  // /3 truncates negative ints toward zero

  Call c{t, op, hasLocal, true, {}};
  for (auto& b : src) c.srcs.push_back(b.data() + off);
  // Expected values, computed before the call because outputs may alias inputs.
  std::vector<unsigned char> expect(n * s + 1);
  for (size_t i = 0; i < n; ++i) refElement(c, i, expect.data());

  std::vector<const void*> recv;
  for (int k = 0; k < nrecv; ++k) recv.push_back(src[(hasLocal ? 1 : 0) + k].data() + off);
  std::vector<void*> outs;
  for (int o = 0; o < nout; ++o) outs.push_back(out[o].data() + off);
  std::vector<unsigned char>* aliased = nullptr;
  if (alias == 1 && hasLocal) aliased = &src[0];                 // out[0] == local
  if (alias == 2 && nrecv > 0) aliased = &src[hasLocal ? 1 : 0];  // out[0] == recv[0]
  if (aliased) outs[0] = aliased->data() + off;
  const std::vector<unsigned char> before0 = aliased ? *aliased : out[0];

  reduceCopy(op, t, n, hasLocal ? src[0].data() + off : nullptr, recv.empty() ? nullptr : recv.data(), nrecv,
             outs.data(), nout, true);

  INFO("type " << dtypeName(t) << " op " << oc.name << " nrecv " << nrecv << " nout " << nout << " n " << n
               << " local " << hasLocal << " alias " << alias);
  for (int o = 0; o < nout; ++o) {
    const unsigned char* got = static_cast<const unsigned char*>(outs[o]);
    const unsigned char* base = (o == 0 && aliased) ? aliased->data() : out[o].data();
    const std::vector<unsigned char>& orig = (o == 0) ? before0 : out[o];
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!sameElement(t, got, expect.data(), i)) {
        if (bad++ < 3) {
          INFO("out " << o << " element " << i << " got " << loadAsDouble(t, got, i) << " want "
                      << loadAsDouble(t, expect.data(), i));
          CHECK(false);
        }
      }
    }
    CHECK(bad == 0);
    // Bytes before and after the n elements are untouched.
    for (size_t b = 0; b < off; ++b) REQUIRE(base[b] == orig[b]);
    for (size_t b = off + n * s; b < bytes; ++b) REQUIRE(base[b] == orig[b]);
  }
}

}  // namespace

TEST_CASE("reduceCopy: every type x op x shape, element by element", "[reduce]") {
  std::mt19937_64 rng(12345);
  for (int t = 0; t < precclNumTypes; ++t) {
    for (const OpCase& oc : kOps) {
      for (int nrecv = 0; nrecv <= 2; ++nrecv) {
        for (int nout = 1; nout <= 2; ++nout) {
          for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(1000)}) {
            for (int alias = 0; alias <= 2; ++alias) {
              checkCase(precclDataType_t(t), oc, nrecv, nout, n, true, alias, rng);
            }
            if (nrecv > 0) checkCase(precclDataType_t(t), oc, nrecv, nout, n, false, 0, rng);
          }
        }
      }
    }
  }
}

TEST_CASE("reduceCopy: wide shapes use the generic path", "[reduce]") {
  std::mt19937_64 rng(777);
  for (int t : {int(precclInt32), int(precclFloat32), int(precclFloat16), int(precclFloat64), int(precclUint8)}) {
    for (const OpCase& oc : kOps) {
      for (int nrecv : {3, 4}) {
        for (int nout : {1, 3, 4}) {
          for (size_t n : {size_t(5), size_t(513), size_t(2000)}) {
            checkCase(precclDataType_t(t), oc, nrecv, nout, n, true, (nrecv + nout) % 3, rng);
          }
        }
      }
    }
  }
}

TEST_CASE("reduceCopy: post-divide only when asked", "[reduce]") {
  const int32_t a[3] = {-7, 7, 100};
  const int32_t b[3] = {0, 0, 1};
  int32_t r[3] = {};
  RedOp op;
  op.postDivide = 3;
  const void* recv[1] = {b};
  void* outs[1] = {r};
  reduceCopy(op, precclInt32, 3, a, recv, 1, outs, 1, false);
  CHECK(r[0] == -7);
  CHECK(r[2] == 101);
  reduceCopy(op, precclInt32, 3, a, recv, 1, outs, 1, true);
  CHECK(r[0] == -2);  // truncation toward zero
  CHECK(r[1] == 2);
  CHECK(r[2] == 33);
}

TEST_CASE("reduceCopy: low-precision rounding and saturation per step", "[reduce]") {
  RedOp sum;
  // half: 2048 + 1 is a tie between 2048 and 2050 -> even (2048); each step rounds.
  uint16_t h[3] = {floatToHalf(2048.f), floatToHalf(1.f), floatToHalf(1.f)};
  uint16_t hr = 0;
  const void* hrecv[2] = {&h[1], &h[2]};
  void* hout[1] = {&hr};
  reduceCopy(sum, precclFloat16, 1, &h[0], hrecv, 2, hout, 1, false);
  CHECK(hr == floatToHalf(2048.f));  // (2048+1)->2048, (2048+1)->2048: not 2050
  // e4m3: 448 + 448 saturates to 448 (0x7e), never NaN.
  uint8_t e[2] = {0x7e, 0x7e}, er = 0;
  const void* erecv[1] = {&e[1]};
  void* eout[1] = {&er};
  reduceCopy(sum, precclFloat8e4m3, 1, &e[0], erecv, 1, eout, 1, false);
  CHECK(er == 0x7e);
  // e5m2: inf + 1 is inf in float, saturated to 57344 (0x7b) on the way back; NaN stays NaN.
  uint8_t f[2] = {0x7c, 0x3c}, fr = 0;
  const void* frecv[1] = {&f[1]};
  void* fout[1] = {&fr};
  reduceCopy(sum, precclFloat8e5m2, 1, &f[0], frecv, 1, fout, 1, false);
  CHECK(fr == 0x7b);
  f[0] = 0x7e;
  reduceCopy(sum, precclFloat8e5m2, 1, &f[0], frecv, 1, fout, 1, false);
  CHECK(std::isnan(fp8E5M2ToFloat(fr)));
  // max propagates NaN from either side.
  RedOp mx;
  mx.kind = RedKind::Max;
  float x[2] = {1.f, std::nanf("")}, xr = 0;
  const void* xrecv[1] = {&x[1]};
  void* xout[1] = {&xr};
  reduceCopy(mx, precclFloat32, 1, &x[0], xrecv, 1, xout, 1, false);
  CHECK(std::isnan(xr));
  const void* xrecv2[1] = {&x[0]};
  reduceCopy(mx, precclFloat32, 1, &x[1], xrecv2, 1, xout, 1, false);
  CHECK(std::isnan(xr));
}

TEST_CASE("dtype: sizes, names and aliases", "[reduce]") {
  const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  for (int t = 0; t < precclNumTypes; ++t) {
    CHECK(dtypeValid(t));
    CHECK(dtypeSize(precclDataType_t(t)) == sizes[t]);
    precclDataType_t back;
    REQUIRE(dtypeFromName(dtypeName(precclDataType_t(t)), &back));
    CHECK(back == t);
  }
  CHECK_FALSE(dtypeValid(-1));
  CHECK_FALSE(dtypeValid(precclNumTypes));
  CHECK(dtypeSize(precclDataType_t(99)) == 0);
  CHECK(std::string(dtypeName(precclFloat16)) == "half");
  CHECK(std::string(dtypeName(precclFloat8e5m2)) == "f8e5m2");
  const std::pair<const char*, precclDataType_t> aliases[] = {
      {"float32", precclFloat32}, {"fp32", precclFloat32},    {"f32", precclFloat32}, {"half", precclFloat16},
      {"fp16", precclFloat16},    {"bf16", precclBfloat16},   {"int", precclInt32},   {"char", precclInt8},
      {"FLOAT", precclFloat32},   {"fp64", precclFloat64},    {"e4m3", precclFloat8e4m3}};
  for (auto& [name, want] : aliases) {
    precclDataType_t got;
    INFO(name);
    REQUIRE(dtypeFromName(name, &got));
    CHECK(got == want);
  }
  precclDataType_t dummy;
  CHECK_FALSE(dtypeFromName("float128", &dummy));
  CHECK_FALSE(dtypeFromName(nullptr, &dummy));
}

TEST_CASE("dtype: hand-checked rounding bit patterns", "[reduce]") {
  // half
  CHECK(floatToHalf(1.0f + 0x1p-11f) == 0x3c00);        // tie -> even (down)
  CHECK(floatToHalf(1.0f + 3 * 0x1p-11f) == 0x3c02);    // tie -> even (up)
  CHECK(floatToHalf(1.0f + 0x1p-11f + 0x1p-20f) == 0x3c01);
  CHECK(floatToHalf(65504.f) == 0x7bff);
  CHECK(floatToHalf(65519.99f) == 0x7bff);
  CHECK(floatToHalf(65520.f) == 0x7c00);                // rounds to inf
  CHECK(floatToHalf(-INFINITY) == 0xfc00);
  CHECK(floatToHalf(0x1p-24f) == 0x0001);               // smallest subnormal
  CHECK(floatToHalf(0x1p-25f) == 0x0000);               // tie -> even (zero)
  CHECK(floatToHalf(3 * 0x1p-26f) == 0x0001);
  CHECK(floatToHalf(-0.0f) == 0x8000);
  CHECK(floatToHalf(std::nanf("")) == 0x7fff);
  CHECK(halfToFloat(0x0001) == 0x1p-24f);
  CHECK(halfToFloat(0x3555) == 0.333251953125f);
  // bf16
  CHECK(floatToBf16(1.00390625f) == 0x3f80);            // 1 + 2^-8: tie -> even (down)
  CHECK(floatToBf16(1.01171875f) == 0x3f82);            // 1 + 3*2^-8: tie -> even (up)
  CHECK(floatToBf16(bitsToFloat(0x7f7fffff)) == 0x7f80); // FLT_MAX rounds to inf
  CHECK(floatToBf16(std::nanf("")) == 0x7fff);
  CHECK(bf16ToFloat(0x3f80) == 1.0f);
  // fp8 e4m3 (saturating)
  CHECK(floatToFp8E4M3(1000.f) == 0x7e);
  CHECK(floatToFp8E4M3(-1000.f) == 0xfe);
  CHECK(floatToFp8E4M3(464.f) == 0x7e);
  CHECK(floatToFp8E4M3(INFINITY) == 0x7e);
  CHECK(floatToFp8E4M3(std::nanf("")) == 0x7f);
  CHECK(floatToFp8E4M3(-std::nanf("")) == 0xff);
  CHECK(fp8E4M3ToFloat(0x7e) == 448.f);
  CHECK(std::isnan(fp8E4M3ToFloat(0x7f)));
  CHECK(std::isnan(fp8E4M3ToFloat(0xff)));
  CHECK(fp8E4M3ToFloat(0x01) == 0x1p-9f);
  CHECK(fp8E4M3ToFloat(0x38) == 1.0f);
  CHECK(floatToFp8E4M3(1.0625f) == 0x38);               // 1 + 2^-4: tie -> even (down)
  CHECK(floatToFp8E4M3(1.1875f) == 0x3a);               // 1 + 3*2^-4: tie -> even (up)
  CHECK(floatToFp8E4M3(0x1p-10f) == 0x00);              // half the smallest subnormal -> 0
  CHECK(floatToFp8E4M3(3 * 0x1p-11f) == 0x01);
  // fp8 e5m2: inf decodes, and saturates on the way in (SATFINITE)
  CHECK(fp8E5M2ToFloat(0x7c) == INFINITY);
  CHECK(fp8E5M2ToFloat(0xfc) == -INFINITY);
  CHECK(fp8E5M2ToFloat(0x7b) == 57344.f);
  CHECK(std::isnan(fp8E5M2ToFloat(0x7d)));
  CHECK(floatToFp8E5M2(INFINITY) == 0x7b);
  CHECK(floatToFp8E5M2(-INFINITY) == 0xfb);
  CHECK(floatToFp8E5M2(1e6f) == 0x7b);
  CHECK(floatToFp8E5M2(std::nanf("")) == 0x7e);
  CHECK(floatToFp8E5M2(1.125f) == 0x3c);                // 1 + 2^-3: tie -> even (down)
  CHECK(floatToFp8E5M2(0x1p-16f) == 0x01);
}

TEST_CASE("dtype: every 16-bit and 8-bit pattern round-trips", "[reduce]") {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const bool nan = (h & 0x7c00) == 0x7c00 && (h & 0x03ff) != 0;
    const float f = halfToFloat(uint16_t(h));
    REQUIRE(std::isnan(f) == nan);
    if (nan) REQUIRE(std::isnan(halfToFloat(floatToHalf(f))));
    else REQUIRE(floatToHalf(f) == h);
    const bool bnan = (h & 0x7f80) == 0x7f80 && (h & 0x007f) != 0;
    const float g = bf16ToFloat(uint16_t(h));
    REQUIRE(std::isnan(g) == bnan);
    if (bnan) REQUIRE(std::isnan(bf16ToFloat(floatToBf16(g))));
    else REQUIRE(floatToBf16(g) == h);
  }
  for (uint32_t v = 0; v < 0x100; ++v) {
    const float a = fp8E4M3ToFloat(uint8_t(v));
    REQUIRE(std::isnan(a) == ((v & 0x7f) == 0x7f));
    if (std::isnan(a)) REQUIRE(floatToFp8E4M3(a) == v);  // NaN keeps its sign: 0x7f / 0xff
    else REQUIRE(floatToFp8E4M3(a) == v);
    const float b = fp8E5M2ToFloat(uint8_t(v));
    REQUIRE(std::isnan(b) == ((v & 0x7c) == 0x7c && (v & 0x03) != 0));
    if (std::isnan(b)) REQUIRE(std::isnan(fp8E5M2ToFloat(floatToFp8E5M2(b))));
    else if (std::isinf(b)) REQUIRE(floatToFp8E5M2(b) == ((v & 0x80) | 0x7b));  // SATFINITE
    else REQUIRE(floatToFp8E5M2(b) == v);
  }
}

TEST_CASE("dtype: float conversions agree with the independent double rounding", "[reduce]") {
  // storeFromDouble rounds straight from double with a separate algorithm; on float inputs (exact in
  // double) the two must agree everywhere. A stride through all 2^32 patterns plus every pattern
  // around each format's rounding and range boundaries.
  auto checkOne = [](uint32_t u) {
    const float f = bitsToFloat(u);
    uint16_t h, b;
    uint8_t e4, e5;
    storeFromDouble(precclFloat16, &h, 0, f);
    storeFromDouble(precclBfloat16, &b, 0, f);
    storeFromDouble(precclFloat8e4m3, &e4, 0, f);
    storeFromDouble(precclFloat8e5m2, &e5, 0, f);
    INFO("float bits 0x" << std::hex << u);
    REQUIRE(floatToHalf(f) == h);
    REQUIRE(floatToBf16(f) == b);
    REQUIRE(floatToFp8E4M3(f) == e4);
    REQUIRE(floatToFp8E5M2(f) == e5);
  };
  for (uint64_t u = 0; u < (uint64_t(1) << 32); u += 4093) checkOne(uint32_t(u));
  // Every float with exponent in the ranges where these formats round (subnormals of each format up
  // to their overflow), in steps small enough to hit every tie of the 8-bit formats.
  for (uint32_t u = 0x33000000; u < 0x47800000; u += 0x101) {
    checkOne(u);
    checkOne(u | 0x80000000u);
  }
  // Exact ties and their neighbours for half (low 13 bits 0x1000) and bf16 (low 16 bits 0x8000).
  for (uint32_t hi = 0x33000; hi < 0x47800; hi += 7) {
    const uint32_t t = (hi << 13) | 0x1000u;
    checkOne(t - 1);
    checkOne(t);
    checkOne(t + 1);
  }
  for (uint32_t hi = 0; hi < 0x8000; ++hi) checkOne((hi << 16) | 0x8000u);
}

TEST_CASE("dtype: loadAsDouble / storeFromDouble", "[reduce]") {
  unsigned char buf[16] = {};
  storeFromDouble(precclUint8, buf, 0, -1.0);
  CHECK(buf[0] == 255);
  storeFromDouble(precclInt8, buf, 0, 200.0);
  CHECK(loadAsDouble(precclInt8, buf, 0) == -56.0);
  storeFromDouble(precclInt32, buf, 1, -2.7);
  CHECK(loadAsDouble(precclInt32, buf, 1) == -2.0);
  storeFromDouble(precclUint64, buf, 1, 1e30);
  CHECK(loadAsDouble(precclUint64, buf, 1) == 18446744073709551615.0);
  storeFromDouble(precclInt64, buf, 0, std::nan(""));
  CHECK(loadAsDouble(precclInt64, buf, 0) == 0.0);
  // One rounding straight from double: via float this would tie and round to even (0x3c00).
  uint16_t h;
  storeFromDouble(precclFloat16, &h, 0, 1.0 + 0x1p-11 + 0x1p-40);
  CHECK(h == 0x3c01);
  storeFromDouble(precclFloat16, &h, 0, 1e10);
  CHECK(h == 0x7c00);
  uint8_t e;
  storeFromDouble(precclFloat8e4m3, &e, 0, -1e10);
  CHECK(e == 0xfe);
  storeFromDouble(precclFloat8e5m2, &e, 0, -INFINITY);
  CHECK(e == 0xfb);
  double d = 0;
  storeFromDouble(precclFloat64, &d, 0, 0.1);
  CHECK(d == 0.1);
  float f = 0;
  storeFromDouble(precclFloat32, &f, 0, 0.1);
  CHECK(f == 0.1f);
  CHECK(loadAsDouble(precclFloat8e5m2, &e, 0) == -57344.0);
}
