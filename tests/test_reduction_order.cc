// Deterministic reductions: a float AllReduce, ReduceScatter or Reduce gives the same bits whatever the
// allocation. The same ranks run every case on communicators with 1, 2, 3 and 5 VTs (so every element
// sits in a different VT, at a different offset of its VT's range) and, under the preccl policy, on
// repeated calls whose allocation follows the measured rates; the results must be bit-identical. The
// inputs are not exactly representable (sums and products round at every step), so a reduction order
// that depended on the VT would show; each result is also checked against a double-precision reference
// within the rounding such a reduction can add, so identical garbage fails too.
#include <catch2/catch.hpp>
#include <cstring>

#include "harness.h"
#include "reference.h"
#include "rounding.h"

using namespace ptest;

namespace {

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
  const Shape shapes[] = {{Coll::AllReduce, 1031, 0}, {Coll::AllReduce, 9001, 0}, {Coll::AllReduce, 300001, 0}, {Coll::ReduceScatter, 77777, 0},
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
              if (!runRounding(r, comms[k], s, t, op, inPlace, &got)) return;
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

TEST_CASE("float reductions do not depend on the allocation: doubling", "[order]") {
  orderGroup(5, Transport::Shm, "doubling");
  orderGroup(3, Transport::Socket, "doubling");
}

TEST_CASE("float reductions do not depend on the allocation: tree", "[order]") {
  orderGroup(4, Transport::Shm, "tree");
  orderGroup(3, Transport::Socket, "tree");
}

// Recursive doubling's exchanges halve and double from 32 KiB on, with the same pairs in the same order:
// an element's expression is the same either way, so the first elements of a call above the threshold
// have the bits of a call below it (float sum and product, whose inputs round; 1031 and 9001 floats).
TEST_CASE("halving and doubling reduce every element as whole exchanges do", "[order]") {
  for (int n : {4, 5, 8}) {
    GroupOptions opt;
    opt.env = localEnv(Transport::Shm, 2, "doubling");
    reportToCatch("halving against whole exchanges, " + std::to_string(n) + " ranks", runGroup(n, opt, [](Rank& r) {
      for (int op : {int(kSum), int(kProd)}) {
        std::vector<uint8_t> small, large;
        if (!runRounding(r, r.comm, Shape{Coll::AllReduce, 1031, 0}, precclFloat, op, false, &small) ||
            !runRounding(r, r.comm, Shape{Coll::AllReduce, 9001, 0}, precclFloat, op, true, &large))
          return;
        r.check(large.size() >= small.size() && std::memcmp(small.data(), large.data(), small.size()) == 0,
                std::string("op ") + opName(op) + ": the halved exchanges' bits differ from the whole exchanges'");
      }
    }));
  }
}
