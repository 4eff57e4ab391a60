// Deterministic reductions: a float AllReduce, ReduceScatter or Reduce gives the same bits whatever the
// allocation. The same ranks run every case on communicators with 1, 2, 3 and 5 VTs (so every element
// sits in a different VT, at a different offset of its VT's range) and, under the preccl policy, on
// repeated calls whose allocation follows the measured rates; the results must be bit-identical. The
// inputs are not exactly representable (sums and products round at every step), so a reduction order
// that depended on the VT would show; each result is also checked against a double-precision reference
// within the rounding such a reduction can add, so identical garbage fails too.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "harness.h"
#include "reference.h"

using namespace ptest;

namespace {

double orderInput(int op, int rank, size_t i) {
  if (op == kProd) return 1.0 + 0.0371 * double((rank * 7 + i) % 13) / 3.0;  // near 1: no overflow
  return 0.1 * (rank + 1) + 0.0013 * double(i % 1009) / 3.0;
}

std::string exact(double x) {
  char b[40];
  snprintf(b, sizeof(b), "%.17g", x);
  return b;
}

precclRedOp_t redOp(int op) { return op == kProd ? precclProd : op == kAvg ? precclAvg : precclSum; }

// Relative error a reduction of n terms may have in type t, with a generous margin.
double tolerance(precclDataType_t t, int n) {
  const double eps = t == precclDouble ? 1.2e-16 : t == precclFloat ? 6e-8 : t == precclHalf ? 1e-3 : 8e-3;
  return 4.0 * (n + 1) * eps;
}

struct Shape {
  Coll coll;
  size_t count;  // the API's count (ReduceScatter: per rank)
  int root;
};

// One call on `comm`; returns the output bytes (the root's only for Reduce; empty elsewhere).
bool runOnce(Rank& v, precclComm_t comm, const Shape& s, precclDataType_t t, int op, bool inPlace,
             std::vector<uint8_t>* out) {
  const size_t esz = typeSize(t), n = size_t(v.nranks);
  const size_t inCount = s.coll == Coll::ReduceScatter ? s.count * n : s.count;
  const size_t outCount = s.count;
  std::vector<uint8_t> send(inCount * esz), recv(std::max(inCount, outCount) * esz, 0xEE);
  for (size_t i = 0; i < inCount; i++) storeValue(t, send.data(), i, orderInput(op, v.rank, i));
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

// The result's element i (of this rank's output) against the exact reduction, in double.
bool nearReference(Rank& v, const Shape& s, precclDataType_t t, int op, const std::vector<uint8_t>& got,
                   const std::string& what) {
  const size_t base = s.coll == Coll::ReduceScatter ? size_t(v.rank) * s.count : 0;
  for (size_t i = 0; i < s.count; i++) {
    double want = op == kProd ? 1.0 : 0.0;
    for (int q = 0; q < v.nranks; q++) {
      // The inputs as the type holds them: a round trip through the type.
      uint8_t b[8];
      storeValue(t, b, 0, orderInput(op, q, base + i));
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

void orderBody(Rank& r) {
  struct Variant {
    int nvts;
    const char* policy;
    int calls;  // preccl: repeated calls, whose allocation may move between them
  };
  const Variant variants[] = {{2, "static", 1}, {1, "static", 1}, {3, "static", 1}, {5, "static", 1}, {3, "preccl", 4}};
  std::vector<precclComm_t> comms;
  for (const Variant& var : variants) {
    precclConfig_t cfg = PRECCL_CONFIG_INITIALIZER;
    cfg.numVTs = var.nvts;
    cfg.policy = var.policy;
    precclComm_t c = nullptr;
    if (!r.ok(precclCommSplit(r.comm, 0, r.rank, &c, &cfg), "CommSplit with " + std::to_string(var.nvts) + " VTs")) return;
    comms.push_back(c);
  }
  const Shape shapes[] = {{Coll::AllReduce, 1031, 0}, {Coll::AllReduce, 300001, 0}, {Coll::ReduceScatter, 77777, 0},
                          {Coll::Reduce, 300001, 0}, {Coll::Reduce, 4099, 2 % r.nranks}};
  for (const Shape& s : shapes)
    for (precclDataType_t t : {precclFloat, precclDouble, precclHalf, precclBfloat16})
      for (int op : {int(kSum), int(kProd), int(kAvg)})
        for (bool inPlace : {false, true}) {
          if (op == kAvg && t != precclFloat) continue;
          const std::string what = std::string(collName(s.coll)) + " count " + std::to_string(s.count) + " " +
                                   typeName(t) + " " + opName(op) + (inPlace ? " in place" : "");
          std::vector<uint8_t> first, got;
          for (size_t k = 0; k < comms.size(); k++)
            for (int call = 0; call < variants[k].calls; call++) {
              if (!runOnce(r, comms[k], s, t, op, inPlace, &got)) return;
              if (k == 0 && call == 0) {
                first = got;
                if (!first.empty() && !nearReference(r, s, t, op, first, what)) return;
                continue;
              }
              if (got == first) continue;
              size_t i = 0;
              while (i + typeSize(t) <= got.size() && !memcmp(&got[i], &first[i], typeSize(t))) i += typeSize(t);
              r.fail(what + ": with " + std::to_string(variants[k].nvts) + " VTs (" + variants[k].policy + ", call " +
                     std::to_string(call + 1) + ") element " + std::to_string(i / typeSize(t)) + " is " +
                     exact(loadValue(t, got.data(), i / typeSize(t))) + ", with 2 VTs " +
                     exact(loadValue(t, first.data(), i / typeSize(t))));
              return;
            }
        }
  for (precclComm_t c : comms) r.ok(precclCommDestroy(c), "CommDestroy");
}

void orderGroup(int nranks, Transport tr, const char* algo) {
  GroupOptions opt;
  opt.env = localEnv(tr, 2, algo);
  opt.timeoutSec = 400;
  const std::string title = std::string("reduction order ") + transportName(tr) + " " + algo + " " + std::to_string(nranks) + " ranks";
  reportToCatch(title, runGroup(nranks, opt, orderBody));
}

}  // namespace

TEST_CASE("float reductions do not depend on the allocation: ring", "[order]") {
  orderGroup(4, Transport::Shm, "ring");
  orderGroup(3, Transport::Socket, "ring");
}

TEST_CASE("float reductions do not depend on the allocation: tree", "[order]") {
  orderGroup(4, Transport::Shm, "tree");
  orderGroup(3, Transport::Socket, "tree");
}
