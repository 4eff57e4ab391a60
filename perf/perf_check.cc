// Input patterns and the local reference for preccl-perf's check mode.
#include "perf_check.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "reduce/dtype.h"

namespace perf {
namespace {

constexpr unsigned char kPoison = 0xA5;
// Reducing collectives repeat their input pattern with this period, so that the reference is a table
// (cheap to check 64 MiB buffers on every rank). It is prime: a misplaced block shifted by any power-of-
// two chunk size never lands on an identical copy of itself.
constexpr size_t kPeriod = 65521;

uint64_t mix(uint64_t x) {  // splitmix64 finaliser: cheap, well spread
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
uint64_t hashOf(int rank, size_t k) { return mix((uint64_t(rank) << 40) ^ uint64_t(k) ^ 0x5eedull); }

bool reduces(Coll c) { return collReduces(c); }

bool isSignedType(precclDataType_t t) {
  return t != precclUint8 && t != precclUint32 && t != precclUint64;
}

// Largest B such that every integer in [-B, B] (signed) or [0, B] is exact in the type.
int64_t exactBound(precclDataType_t t) {
  switch (t) {
    case precclInt8: return 127;
    case precclUint8: return 255;
    case precclHalf: return 2048;
    case precclBfloat16: return 256;
    case precclFloat8e4m3: return 16;
    case precclFloat8e5m2: return 8;
    default: return int64_t(1) << 20;  // 32/64-bit ints, float, double: far from their limits
  }
}

// Value of element k of rank q's input for the reducing collectives.
double reduceInput(const CheckSpec& s, int q, size_t k) {
  k %= kPeriod;
  const uint64_t h = hashOf(q, k);
  const int64_t n = s.nranks;
  const int64_t B = exactBound(s.type);
  const bool sgn = isSignedType(s.type);
  const bool negate = sgn && ((h >> 32) & 1);
  switch (s.op) {
    case precclProd: {
      // Up to 6 ranks per element contribute +-2, the rest +-1: |product| <= 64 in every type.
      const int64_t twos = std::min<int64_t>(n, 6);
      const bool two = int64_t((k + size_t(q)) % size_t(n)) < twos && (h & 3) != 0;
      const double v = two ? 2.0 : 1.0;
      return ((h >> 33) & 1) && sgn ? -v : v;
    }
    case precclMax:
    case precclMin: {
      const int64_t m = std::min<int64_t>(B, 1000);
      return sgn ? double(int64_t(h % uint64_t(2 * m + 1)) - m) : double(h % uint64_t(m + 1));
    }
    default: {  // sum, avg: S contributors of magnitude <= M keep every partial sum within B
      const int64_t S = std::min<int64_t>(n, B);
      const int64_t M = std::min<int64_t>(B / S, 100);
      if (int64_t((k + size_t(q)) % size_t(n)) >= S) return 0.0;
      const double v = double(h % uint64_t(M + 1));
      return negate ? -v : v;
    }
  }
}

// Writes element k of rank q's input to dst (data-moving collectives: raw hashed bytes).
void writeBytes(size_t ts, int q, size_t k, unsigned char* dst) {
  uint64_t h = hashOf(q, k);
  for (size_t b = 0; b < ts; b++) {
    if (b % 8 == 0 && b) h = mix(h);
    dst[b] = static_cast<unsigned char>(h >> (8 * (b % 8)));
  }
}

// The exact reduction of element k over all ranks, then avg's single division as the library does it.
double reduceExpected(const CheckSpec& s, size_t k) {
  double r = reduceInput(s, 0, k);
  for (int q = 1; q < s.nranks; q++) {
    const double v = reduceInput(s, q, k);
    switch (s.op) {
      case precclProd: r *= v; break;
      case precclMax: r = std::max(r, v); break;
      case precclMin: r = std::min(r, v); break;
      default: r += v; break;
    }
  }
  if (s.op != precclAvg) return r;
  switch (s.type) {
    case precclDouble: return r / double(s.nranks);
    case precclFloat:
    case precclHalf:
    case precclBfloat16:
    case precclFloat8e4m3:
    case precclFloat8e5m2: return double(float(r) / float(s.nranks));  // computed in float, rounded once
    default: return double(int64_t(r) / int64_t(s.nranks));          // C++ truncating division
  }
}

// Element j of the table is element (first + j) mod kPeriod of rank q's input (q >= 0) or of the
// expected reduction (q < 0), stored in the type.
std::vector<unsigned char> patternTable(const CheckSpec& s, size_t ts, int q, size_t first, size_t n) {
  std::vector<unsigned char> tab(n * ts);
  for (size_t j = 0; j < n; j++) {
    const size_t k = (first + j) % kPeriod;
    preccl::storeFromDouble(s.type, tab.data() + j * ts, 0, q >= 0 ? reduceInput(s, q, k) : reduceExpected(s, k));
  }
  return tab;
}

bool inputMatters(const CheckSpec& s) {
  if (s.coll == Coll::Broadcast || s.coll == Coll::Scatter) return s.rank == s.root;
  return true;
}

bool receives(const CheckSpec& s) {
  if (s.coll == Coll::Reduce || s.coll == Coll::Gather) return s.rank == s.root;
  return true;
}

// Which rank's input element lands at output element m (data-moving collectives).
void sourceOf(const CheckSpec& s, size_t m, int* q, size_t* k) {
  const size_t c = s.count;
  switch (s.coll) {
    case Coll::AllGather:
    case Coll::Gather: *q = int(m / c), *k = m % c; break;
    case Coll::AlltoAll: *q = int(m / c), *k = size_t(s.rank) * c + m % c; break;
    case Coll::Broadcast: *q = s.root, *k = m; break;
    case Coll::Scatter: *q = s.root, *k = size_t(s.rank) * c + m; break;
    default: *q = (s.rank + s.nranks - 1) % s.nranks, *k = m; break;  // SendRecv: from rank-1
  }
}

}  // namespace

void fillInput(const CheckSpec& s, const Geometry& g, void* send) {
  const size_t ts = preccl::dtypeSize(s.type);
  auto* p = static_cast<unsigned char*>(send);
  if (!reduces(s.coll)) {
    for (size_t k = 0; k < g.sendElems; k++) writeBytes(ts, s.rank, k, p + k * ts);
    return;
  }
  const size_t period = std::min(kPeriod, g.sendElems);
  const std::vector<unsigned char> tab = patternTable(s, ts, s.rank, 0, period);
  for (size_t k = 0; k < g.sendElems; k += period)
    std::memcpy(p + k * ts, tab.data(), std::min(period, g.sendElems - k) * ts);
}

void prepareCheck(const CheckSpec& s, const Geometry& g, bool inPlace, void* sendAlloc, void* recvAlloc,
                  void* send) {
  const size_t ts = preccl::dtypeSize(s.type);
  std::memset(recvAlloc, kPoison, g.recvElems * ts);
  // In-place ReduceScatter/Scatter receive inside the send allocation.
  if (inPlace && send == sendAlloc) std::memset(sendAlloc, kPoison, g.sendElems * ts);
  if (inputMatters(s)) fillInput(s, g, send);
}

int64_t countWrong(const CheckSpec& s, const Geometry& g, const void* recv) {
  if (!receives(s)) return 0;
  const size_t ts = preccl::dtypeSize(s.type);
  const auto* out = static_cast<const unsigned char*>(recv);
  const size_t rsBase = s.coll == Coll::ReduceScatter ? size_t(s.rank) * s.count : 0;
  int64_t wrong = 0;
  if (reduces(s.coll)) {
    const size_t period = std::min(kPeriod, g.recvElems);
    const std::vector<unsigned char> tab = patternTable(s, ts, -1, rsBase, period);
    for (size_t m = 0, j = 0; m < g.recvElems; m++, j = j + 1 == period ? 0 : j + 1)
      if (std::memcmp(tab.data() + j * ts, out + m * ts, ts) != 0) wrong++;
    return wrong;
  }
  unsigned char want[16];
  for (size_t m = 0; m < g.recvElems; m++) {
    int q;
    size_t k;
    sourceOf(s, m, &q, &k);
    writeBytes(ts, q, k, want);
    if (std::memcmp(want, out + m * ts, ts) != 0) wrong++;
  }
  return wrong;
}

}  // namespace perf
