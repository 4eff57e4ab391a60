// The plan checker: every rank's plan of every collective built by the planners alone (plan/, no sockets,
// no processes, no communicator) and run together by a small symbolic interpreter of the plan format, in
// which a slot holds the names of the values it carries and FIFOs hold nslots slots. Over n = 1..9 ranks,
// 1..4 VTs, static, skewed and masked allocations, rail affinity with relays, every algorithm, odd counts,
// in place and out of place, it checks that
//   - every send has a receive of the same size on the same edge, in the same order, and nothing is left
//     in a FIFO or waits forever;
//   - every output element is written exactly once (recursive doubling: at least once), and nothing
//     outside the outputs;
//   - every output is what the collective means (a copy of the right rank's element, or a reduction of
//     every rank's element exactly once, each pre-multiplied once and post-divided once at the end);
//   - a reduction's order of operations depends only on the element's index: the same expression, element
//     by element, on every rank and under every allocation, VT count, mask and relay mode.
// And that the checker catches a plan that drops or doubles a piece.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "plan/coll_table.h"
#include "plan_sim.h"
#include "plan/layout.h"
#include "policy/policy.h"
#include "reduce/dtype.h"
#include "topo/topology.h"

using namespace preccl;
using namespace plansim;

namespace {

// ---- a configuration ----

struct Config {
  Coll coll = Coll::AllReduce;
  int n = 1;
  int hosts = 1;        // rank r on host r % hosts (so that the ring order is not the rank order)
  int nics = 2;
  int nVTs = 1;
  bool rail = false;
  RelayMode relay = RelayMode::Auto;
  PlanAlgo algo = PlanAlgo::Ring;
  size_t count = 1;
  precclDataType_t dtype = precclFloat32;
  bool inPlace = false;
  int root = 0;
  uint64_t liveMask = ~0ull;
  int alloc = 0;        // 0 equal (the policy's static split), 1 skewed by hand, 2 skewed with piece caps
  int salt = 0;         // which of the hand-made weights each VT gets
  size_t slotBytes = 256;
  uint32_t nslots = 2;
  std::string name() const {
    std::ostringstream s;
    s << collName(coll) << " n=" << n << " hosts=" << hosts << " vts=" << nVTs << (rail ? " rail" : "")
      << (rail ? (relay == RelayMode::Force ? "(force)" : relay == RelayMode::Off ? "(off)" : "(auto)") : "")
      << " " << algoName(algo) << " count=" << count << " " << dtypeName(dtype) << (inPlace ? " in-place" : "")
      << " root=" << root << " live=" << std::hex << (liveMask & 0xf) << std::dec << " alloc=" << alloc << "/" << salt
      << " slot=" << slotBytes << "x" << nslots;
    return s.str();
  }
  // What must give the same reduction order: everything but the split over VTs and paths.
  std::string orderKey() const {
    std::ostringstream s;
    s << int(coll) << "/" << n << "/" << hosts << "/" << int(algo) << "/" << count << "/" << int(dtype) << "/" << root;
    return s.str();
  }
};

Allocation allocationFor(const Config& c, size_t count, int salt) {
  AllocRequest req;
  req.count = count;
  req.elemBytes = dtypeSize(c.dtype);
  req.nVTs = c.nVTs;
  if (c.alloc == 0) return equalAllocation(req, c.liveMask);
  // By hand: uneven weights, odd boundaries, an empty live VT now and then.
  static const int kWeights[] = {3, 1, 4, 1, 5, 0, 2, 6};
  Allocation al;
  al.vt.resize(size_t(c.nVTs));
  std::vector<int> w(size_t(c.nVTs), 0);
  int total = 0;
  for (int v = 0; v < c.nVTs; v++)
    if (isLive(c.liveMask, v)) total += w[size_t(v)] = kWeights[(v + salt) % 8];
  if (total == 0)
    for (int v = 0; v < c.nVTs; v++)
      if (isLive(c.liveMask, v)) total += w[size_t(v)] = 1;
  size_t at = 0;
  int last = -1;
  for (int v = 0; v < c.nVTs; v++)
    if (w[size_t(v)]) last = v;
  for (int v = 0; v < c.nVTs; v++) {
    al.vt[size_t(v)].offset = at;
    const size_t k = v == last ? count - at : count * size_t(w[size_t(v)]) / size_t(total);
    al.vt[size_t(v)].count = k;
    if (c.alloc == 2) al.vt[size_t(v)].pieceCapBytes = size_t(v + 1) * 3 * dtypeSize(c.dtype) + 1;
    at += k;
  }
  return al;
}

// The calls of every rank, with their buffers' initial values (rank q's input element j: leaf(q, j); for
// point-to-point, send op k's element j: leaf(q, k << 32 | j)).
std::vector<RankCall> makeCalls(const Config& c) {
  const size_t esz = dtypeSize(c.dtype), cnt = c.count, n = size_t(c.n);
  std::vector<RankCall> calls(size_t(c.n));
  for (int r = 0; r < c.n; r++) {
    RankCall& rc = calls[size_t(r)];
    CctArgs& a = rc.args;
    a.coll = c.coll;
    a.count = cnt;
    a.dtype = c.dtype;
    a.root = c.root;
    a.op.kind = RedKind::Sum;
    a.op.preMul = true;
    a.op.postDivide = c.n;
    if (c.coll == Coll::SendRecv) {
      // Each rank sends to r+1 and r+3 (count and count/2+1 elements), receives the matching ones, and
      // sends one to itself.
      int k = 0;
      auto add = [&](bool isSend, int peer, size_t count) {
        P2POp op;
        op.isSend = isSend;
        op.peer = peer;
        op.count = count;
        op.buf = reinterpret_cast<void*>(bufBase(r, 2 + k));
        Buffer& b = rc.bufs[2 + k];
        b.val.assign(count, kPoison);
        b.writes.assign(count, 0);
        if (isSend)
          for (size_t j = 0; j < count; j++) b.val[j] = leaf(r, int64_t(k) << 32 | int64_t(j));
        else
          b.outCount = count;
        a.p2p.push_back(op);
        k++;
      };
      const int nn = c.n;
      add(true, (r + 1) % nn, cnt);
      add(false, (r + nn - 1) % nn, cnt);
      add(true, (r + 3) % nn, cnt / 2 + 1);
      add(false, (r + nn - 3 % nn) % nn, cnt / 2 + 1);
      add(true, r, 5);
      add(false, r, 5);
      continue;
    }
    const bool gathers = c.coll == Coll::AllGather || c.coll == Coll::Gather;
    const bool scatters = c.coll == Coll::ReduceScatter || c.coll == Coll::Scatter;
    const size_t sendElems = scatters || c.coll == Coll::AlltoAll ? n * cnt : cnt;
    const size_t recvElems = gathers || c.coll == Coll::AlltoAll ? n * cnt : cnt;
    // In place, one buffer (NCCL's layouts); AlltoAll in place is staged by the pipeline: out of place here.
    const bool one = c.inPlace && c.coll != Coll::AlltoAll;
    const size_t bufElems = one ? std::max(sendElems, recvElems) : 0;
    size_t sendAt = 0, recvAt = 0;
    if (one && gathers) sendAt = size_t(r) * cnt;
    if (one && scatters) recvAt = size_t(r) * cnt;
    Buffer& in = rc.bufs[kIn];
    in.val.assign(one ? bufElems : sendElems, kPoison);
    in.writes.assign(in.val.size(), 0);
    for (size_t j = 0; j < sendElems; j++) in.val[sendAt + j] = leaf(r, int64_t(j));
    a.sendbuff = reinterpret_cast<const void*>(bufBase(r, kIn) + sendAt * esz);
    Buffer* out = &in;
    if (!one) {
      out = &rc.bufs[kOut];
      out->val.assign(recvElems, kPoison);
      out->writes.assign(recvElems, 0);
    }
    a.recvbuff = reinterpret_cast<void*>(bufBase(r, one ? kIn : kOut) + recvAt * esz);
    const bool hasOutput = !((c.coll == Coll::Reduce || c.coll == Coll::Gather) && r != c.root);
    out->outFirst = recvAt;
    out->outCount = hasOutput ? recvElems : 0;
  }
  return calls;
}

// ---- the checks ----

struct Checker {
  std::map<std::string, std::vector<uint64_t>> orders;  // orderKey -> each output element's expression
  int configs = 0;

  // Whether x is the reduction of every rank's element `idx`, pre-multiplied each, post-divided at the top.
  std::string badReduction(const Val& e, int n, int64_t idx) const {
    if (e.poison) return "never written";
    const uint32_t all = n >= 32 ? ~0u : (1u << n) - 1;
    if (e.mask != all || e.leaves != n) return fmt::format("has {} leaves of ranks {:#x}", e.leaves, e.mask);
    if (e.idx != idx) return fmt::format("mixes elements (index {})", e.idx);
    if (e.pres != n) return fmt::format("{} of {} inputs pre-multiplied", e.pres, n);
    if (!e.post || e.misplacedPost) return "post-division missing or not at the end";
    return "";
  }

  std::string check(const Config& c, const std::function<void(std::vector<Plan>&)>& mutate = {}) {
    configs++;
    const int n = c.n;
    std::vector<RankInfo> infos(static_cast<size_t>(n));
    for (int r = 0; r < n; r++) {
      RankInfo& i = infos[size_t(r)];
      std::memset(&i, 0, sizeof(i));
      std::snprintf(i.hostId, sizeof(i.hostId), "host%d", r % c.hosts);
      i.nNics = c.nics;
      i.nVTs = c.nVTs;
    }
    std::vector<Topology> topo(static_cast<size_t>(n));
    for (int r = 0; r < n; r++) topo[size_t(r)].build(infos, r, false, c.nVTs, c.rail);
    std::vector<RankCall> calls = makeCalls(c);
    std::vector<Plan> plans(static_cast<size_t>(n));
    for (int r = 0; r < n; r++) {
      PlanView v;
      v.rank = r;
      v.nranks = n;
      v.nVTs = c.nVTs;
      v.topo = &topo[size_t(r)];
      v.slotBytes = c.slotBytes;
      v.relay = c.relay;
      v.liveMask = c.liveMask;
      Decision d;
      d.algo = c.algo;
      const CctArgs& a = calls[size_t(r)].args;
      if (c.coll == Coll::SendRecv) {
        // Both ends split an operation alike (core/decide.cc: the same shares for the same size).
        for (const P2POp& op : a.p2p) d.ops.push_back(op.peer == r ? Allocation{} : allocationFor(c, op.count, int(op.count % 5)));
      } else {
        d.al = allocationFor(c, c.count, c.salt);
        if (!d.al.coversExactly(c.count)) return "the test's allocation does not cover the call";
      }
      planCct(v, a, d, &plans[size_t(r)]);
    }
    if (mutate) mutate(plans);
    Sim sim(dtypeSize(c.dtype), c.nslots, c.nVTs, plans, calls);
    if (std::string e = sim.run(); !e.empty()) return e;
    return checkOutputs(c, calls);
  }

  std::string checkOutputs(const Config& c, std::vector<RankCall>& calls) {
    const int n = c.n;
    const size_t cnt = c.count;
    std::vector<uint64_t> order;  // every reduced output
    std::vector<Val> first;       // rank 0's AllReduce output
    for (int r = 0; r < n; r++)
      for (auto& [which, b] : calls[size_t(r)].bufs) {
        for (size_t i = 0; i < b.val.size(); i++) {
          const bool isOut = i >= b.outFirst && i < b.outFirst + b.outCount;
          const int w = b.writes[i];
          // Recursive doubling keeps its partial results in the output (once per exchange).
          if (isOut && (c.algo == PlanAlgo::Doubling ? w < 1 : w != 1)) return fmt::format("rank {}: output element {} written {} times", r, i - b.outFirst, w);
          // An in-place rank's own block may be written onto itself (AllGather, Gather); nothing else.
          if (!isOut && w != 0) return fmt::format("rank {}: element {} of buffer {} outside the output written {} times", r, i, which, w);
        }
        for (size_t k = 0; k < b.outCount; k++) {
          const Val& got = b.val[b.outFirst + k];
          std::string bad;
          const int64_t blk = int64_t(k / std::max<size_t>(cnt, 1)), j = int64_t(k % std::max<size_t>(cnt, 1));
          switch (c.coll) {
            case Coll::AllReduce:
            case Coll::Reduce:
              bad = badReduction(got, n, int64_t(k));
              if (c.coll == Coll::AllReduce && r == 0) first.push_back(got);
              if (c.coll == Coll::AllReduce && r > 0 && got != first[k]) bad = "differs from rank 0's (another order)";
              order.push_back(got.h);
              break;
            case Coll::ReduceScatter:
              bad = badReduction(got, n, int64_t(size_t(r) * cnt + k));
              order.push_back(got.h);
              break;
            case Coll::Broadcast:
              if (got != leaf(c.root, int64_t(k))) bad = "not the root's element";
              break;
            case Coll::AllGather:
            case Coll::Gather:
              if (got != leaf(int(blk), j)) bad = "not that rank's element";
              break;
            case Coll::AlltoAll:
              if (got != leaf(int(blk), int64_t(size_t(r) * cnt) + j)) bad = "not that rank's element for this rank";
              break;
            case Coll::Scatter:
              if (got != leaf(c.root, int64_t(size_t(r) * cnt + k))) bad = "not the root's element for this rank";
              break;
            case Coll::SendRecv: {
              // The op's sender sent its matching op's elements: the receives are ops 1 and 3 and 5, from
              // r-1 (its op 0), r-3 (its op 2) and r itself (op 4).
              const int op = which - 2, from = op == 1 ? (r + n - 1) % n : op == 3 ? (r + n - 3 % n) % n : r;
              if (got != leaf(from, int64_t(op - 1) << 32 | int64_t(k))) bad = "not the sender's element";
              break;
            }
          }
          if (!bad.empty()) return fmt::format("rank {}: output element {} {}", r, k, bad);
        }
      }
    if (!order.empty()) {
      auto [it, added] = orders.try_emplace(c.orderKey(), order);
      if (!added && it->second != order) {
        size_t i = 0;
        while (i < order.size() && it->second[i] == order[i]) i++;
        return fmt::format("the reduction order of output element {} differs from an earlier allocation's", i);
      }
    }
    return "";
  }
};

// Every configuration the planners meet: n = 1..9, 1..4 VTs, algorithms, allocations, masks, relays.
void forEachConfig(const std::function<void(const Config&)>& fn) {
  const Coll colls[] = {Coll::AllReduce, Coll::Broadcast, Coll::Reduce, Coll::AllGather, Coll::ReduceScatter,
                        Coll::AlltoAll, Coll::Gather, Coll::Scatter, Coll::SendRecv};
  for (Coll coll : colls)
    for (int n = 1; n <= 9; n++)
      for (int hosts : std::set<int>{1, 2, 3, n}) {
        if (hosts > n) continue;
        const bool rooted = collRooted(coll);
        const CollRow& row = collRow(coll);
        for (PlanAlgo algo : {PlanAlgo::Ring, PlanAlgo::Tree, PlanAlgo::Doubling}) {
          if ((algo == PlanAlgo::Tree && !row.tree) || (algo == PlanAlgo::Doubling && !row.doubling)) continue;
          for (size_t count : {size_t(1), size_t(77), size_t(4099)}) {
            if (count == 4099 && n > 5 && hosts != 1) continue;  // the large odd count on a few layouts
            for (int alloc = 0; alloc < 3; alloc++)
              for (int vts = 1; vts <= 4; vts++) {
                Config c;
                c.coll = coll, c.n = n, c.hosts = hosts, c.algo = algo, c.count = count, c.alloc = alloc, c.nVTs = vts;
                c.root = rooted ? (n - 1) / 2 : 0;
                c.inPlace = (vts + alloc) % 2 == 1;
                c.dtype = vts == 3 ? precclFloat64 : precclFloat32;
                c.slotBytes = alloc == 1 ? 64 : 256;
                // Doubling runs a call within one slot only (core/decide.cc).
                if (algo == PlanAlgo::Doubling) c.slotBytes = std::max<size_t>(c.slotBytes, (count * dtypeSize(c.dtype) + 63) / 64 * 64);
                c.nslots = vts == 2 ? 4 : 2;
                c.salt = n + vts;
                if (vts >= 2 && alloc == 2) c.liveMask = ~(1ull << (n % vts));  // one VT masked
                fn(c);
                // Rail affinity with relays: several hosts, several ranks each, two NICs.
                if (hosts > 1 && hosts < n && vts >= 2)
                  for (RelayMode m : {RelayMode::Auto, RelayMode::Force, RelayMode::Off}) {
                    Config r = c;
                    r.rail = true;
                    r.relay = m;
                    fn(r);
                  }
              }
          }
        }
      }
}

}  // namespace

TEST_CASE("plan checker: every rank's plans of every collective match up and compute the collective", "[plan]") {
  Checker ck;
  int failed = 0;
  forEachConfig([&](const Config& c) {
    const std::string e = ck.check(c);
    if (!e.empty() && failed++ < 20) FAIL_CHECK(c.name() << ": " << e);
  });
  WARN(ck.configs << " configurations checked");
  CHECK(failed == 0);
  CHECK(ck.configs > 3000);
}

TEST_CASE("plan checker: a plan that drops or doubles a piece fails", "[plan]") {
  Checker ck;
  Config c;
  c.n = 4;
  c.hosts = 2;
  c.nVTs = 2;
  c.count = 4099;
  for (Coll coll : {Coll::AllReduce, Coll::AllGather, Coll::Broadcast, Coll::AlltoAll}) {
    c.coll = coll;
    INFO(c.name());
    REQUIRE(ck.check(c).empty());
    // Dropped: rank 1's first task loses its last step.
    const std::string dropped = ck.check(c, [](std::vector<Plan>& plans) {
      Task& t = plans[1].tasks[0];
      REQUIRE(t.nsteps > 0);
      t.nsteps--;
    });
    CHECK_FALSE(dropped.empty());
    // Doubled: a send of rank 2 goes twice.
    const std::string doubled = ck.check(c, [](std::vector<Plan>& plans) {
      Plan& p = plans[2];
      for (size_t i = 0; i < p.tasks.size(); i++) {
        Task& t = p.tasks[i];
        for (uint32_t k = 0; k < t.nsteps; k++)
          if (p.step(t, k).nsend > 0 && p.step(t, k).bytes > 0) {
            // The task's steps are contiguous: insert the copy right after the original, shifting the rest.
            p.steps.insert(p.steps.begin() + t.firstStep + k, p.step(t, k));
            t.nsteps++;
            for (size_t j = i + 1; j < p.tasks.size(); j++) p.tasks[j].firstStep++;
            return;
          }
      }
    });
    CHECK_FALSE(doubled.empty());
    // A piece shrunk: rank 3's first step of its first task moves one element fewer.
    const std::string shrunk = ck.check(c, [](std::vector<Plan>& plans) {
      for (Step& s : plans[3].steps)
        if (s.bytes >= 8) {
          s.bytes -= 4;
          return;
        }
    });
    CHECK_FALSE(shrunk.empty());
    UNSCOPED_INFO("dropped: " << dropped << "\ndoubled: " << doubled << "\nshrunk: " << shrunk);
  }
}
