#include "rounding.h"

#include <cmath>
#include <cstdio>
#include <cstring>

namespace ptest {

double roundingInput(int op, int rank, size_t i) {
  if (op == kProd) return 1.0 + 0.0371 * double((rank * 7 + i) % 13) / 3.0;  // near 1: no overflow
  return 0.1 * (rank + 1) + 0.0013 * double(i % 1009) / 3.0;
}

std::string exact(double x) {
  char b[40];
  snprintf(b, sizeof(b), "%.17g", x);
  return b;
}

precclRedOp_t redOp(int op) { return op == kProd ? precclProd : op == kAvg ? precclAvg : precclSum; }

double tolerance(precclDataType_t t, int n) {
  const double eps = t == precclDouble ? 1.2e-16 : t == precclFloat ? 6e-8 : t == precclHalf ? 1e-3 : 8e-3;
  return 4.0 * (n + 1) * eps;
}

bool runRounding(Rank& v, precclComm_t comm, const Shape& s, precclDataType_t t, int op, bool inPlace,
                 std::vector<uint8_t>* out) {
  const size_t esz = typeSize(t), n = size_t(v.nranks);
  const size_t inCount = s.coll == Coll::ReduceScatter ? s.count * n : s.count;
  const size_t outCount = s.count;
  std::vector<uint8_t> send(inCount * esz), recv(std::max(inCount, outCount) * esz, 0xEE);
  for (size_t i = 0; i < inCount; i++) storeValue(t, send.data(), i, roundingInput(op, v.rank, i));
  void* in = send.data();
  void* res = recv.data();
  if (inPlace) {
    memcpy(recv.data(), send.data(), inCount * esz);
    in = recv.data();
    if (s.coll == Coll::ReduceScatter) res = recv.data() + size_t(v.rank) * s.count * esz;
  }
  precclResult_t r = precclSuccess;
  switch (s.coll) {
    case Coll::AllReduce: r = precclAllReduce(in, res, s.count, t, redOp(op), comm, nullptr); break;
    case Coll::ReduceScatter: r = precclReduceScatter(in, res, s.count, t, redOp(op), comm, nullptr); break;
    case Coll::Reduce: r = precclReduce(in, res, s.count, t, redOp(op), s.root, comm, nullptr); break;
    default: break;
  }
  if (!v.ok(r, std::string(collName(s.coll)) + " " + typeName(t) + " " + opName(op))) return false;
  out->clear();
  if (s.coll == Coll::Reduce && v.rank != s.root) return true;
  const uint8_t* p = static_cast<const uint8_t*>(res);
  out->assign(p, p + outCount * esz);
  return true;
}

bool nearReference(Rank& v, const Shape& s, precclDataType_t t, int op, const std::vector<uint8_t>& got,
                   const std::string& what) {
  const size_t base = s.coll == Coll::ReduceScatter ? size_t(v.rank) * s.count : 0;
  for (size_t i = 0; i < s.count; i++) {
    double want = op == kProd ? 1.0 : 0.0;
    for (int q = 0; q < v.nranks; q++) {
      // The inputs as the type holds them: a round trip through the type.
      uint8_t b[8];
      storeValue(t, b, 0, roundingInput(op, q, base + i));
      const double x = loadValue(t, b, 0);
      want = op == kProd ? want * x : want + x;
    }
    if (op == kAvg) want /= v.nranks;
    const double g = loadValue(t, got.data(), i);
    if (!(std::fabs(g - want) <= tolerance(t, v.nranks) * std::fabs(want)))
      return v.check(false, what + ": element " + std::to_string(i) + " is " + exact(g) + ", the exact result " + exact(want));
  }
  return true;
}

}  // namespace ptest
