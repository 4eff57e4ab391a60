// Send/Recv: grouped ring and all-pairs exchanges posted in different orders on different ranks,
// unequal sizes per pair, several messages to one peer, self send/recv, ungrouped pairs, and a large
// ring exchange; shared memory and sockets. Every received element is checked.
#include <algorithm>
#include <catch2/catch.hpp>
#include <memory>

#include "harness.h"
#include "reference.h"

using namespace ptest;

namespace {

struct P2POp {
  bool isSend;
  int peer;
  size_t count;
  DataSpec d;  // the sender's pattern; the sender is `isSend ? me : peer`
  GuardedBuffer buf;
};

// Seeds agree on both sides: they depend on the case, the (sender, receiver) pair and the message index.
uint32_t msgSeed(uint32_t caseSeed, int src, int dst, int msg) {
  return caseSeed * 7919u + uint32_t(src) * 131u + uint32_t(dst) * 17u + uint32_t(msg) * 1009u;
}

std::unique_ptr<P2POp> makeOp(Rank& r, bool isSend, int peer, size_t count, precclDataType_t t, uint32_t caseSeed,
                              int msg) {
  auto op = std::make_unique<P2POp>();
  op->isSend = isSend;
  op->peer = peer;
  op->count = count;
  const int src = isSend ? r.rank : peer, dst = isSend ? peer : r.rank;
  op->d = DataSpec{t, kCopy, r.nranks, msgSeed(caseSeed, src, dst, msg)};
  op->buf.resize(count * typeSize(t));
  if (isSend)
    fillInput(op->d, r.rank, op->buf.data(), count);
  else
    op->buf.fill(0xCD);
  return op;
}

// Posts the ops in the given order inside one group (or one by one when !grouped), then checks them.
void runOps(Rank& r, std::vector<std::unique_ptr<P2POp>>& ops, const std::string& what, bool grouped = true) {
  bool ok = true;
  if (grouped) ok = r.ok(precclGroupStart(), what + ": precclGroupStart");
  for (auto& op : ops) {
    const precclDataType_t t = op->d.type;
    precclResult_t res = op->isSend ? precclSend(op->buf.data(), op->count, t, op->peer, r.comm, nullptr)
                                    : precclRecv(op->buf.data(), op->count, t, op->peer, r.comm, nullptr);
    ok = r.ok(res, what + (op->isSend ? ": precclSend to " : ": precclRecv from ") + std::to_string(op->peer)) && ok;
  }
  if (grouped) ok = r.ok(precclGroupEnd(), what + ": precclGroupEnd") && ok;
  if (!ok) return;
  auto report = [&](const std::string& m) { r.fail(m); };
  for (auto& op : ops) {
    GuardedBuffer want(op->count * typeSize(op->d.type));
    fillInput(op->d, op->isSend ? r.rank : op->peer, want.data(), op->count);
    const std::string name = what + (op->isSend ? " send to " : " recv from ") + std::to_string(op->peer) + " " +
                             typeName(op->d.type) + " count=" + std::to_string(op->count);
    compareElements(op->d.type, op->buf.data(), want.data(), op->count, name + (op->isSend ? " (send buffer modified)" : ""),
                    report);
    std::string dmg = op->buf.guardDamage();
    if (!dmg.empty()) r.fail(name + ": " + dmg);
  }
}

// Unequal sizes per ordered pair, derived from a base count.
size_t pairCount(size_t base, int src, int dst) { return base == 0 ? 0 : base + size_t((src * 3 + dst) % 4); }

void runP2P(Rank& r, bool large) {
  const int n = r.nranks, me = r.rank;
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  uint32_t seed = 1;
  const std::vector<precclDataType_t> types = {precclFloat, precclInt8, precclBfloat16, precclInt64, precclFloat8e5m2};
  for (precclDataType_t t : types)
    for (size_t base : {size_t(0), size_t(1), size_t(7), size_t(1031)}) {
      const std::string tag = std::string(typeName(t)) + " base=" + std::to_string(base) + " n=" + std::to_string(n);
      {  // ring: even ranks send first, odd ranks receive first
        std::vector<std::unique_ptr<P2POp>> ops;
        ops.push_back(makeOp(r, true, next, base, t, seed, 0));
        ops.push_back(makeOp(r, false, prev, base, t, seed, 0));
        if (me % 2) std::swap(ops[0], ops[1]);
        runOps(r, ops, "ring " + tag);
        ++seed;
      }
      {  // all pairs, self included; each rank starts at a different peer, odd ranks reversed and
         // with receives before sends
        std::vector<std::unique_ptr<P2POp>> sends, recvs, ops;
        for (int j = 0; j < n; ++j) {
          const int p = (me + j) % n;
          sends.push_back(makeOp(r, true, p, pairCount(base, me, p), t, seed, 0));
          recvs.push_back(makeOp(r, false, p, pairCount(base, p, me), t, seed, 0));
        }
        if (me % 2) {
          std::reverse(sends.begin(), sends.end());
          for (auto& o : recvs) ops.push_back(std::move(o));
          for (auto& o : sends) ops.push_back(std::move(o));
        } else {
          for (int j = 0; j < n; ++j) {
            ops.push_back(std::move(sends[size_t(j)]));
            ops.push_back(std::move(recvs[size_t(n - 1 - j)]));
          }
        }
        runOps(r, ops, "all-pairs " + tag);
        ++seed;
      }
      {  // self only
        std::vector<std::unique_ptr<P2POp>> ops;
        ops.push_back(makeOp(r, false, me, base, t, seed, 0));
        ops.push_back(makeOp(r, true, me, base, t, seed, 0));
        runOps(r, ops, "self " + tag);
        ++seed;
      }
      if (n > 1) {  // three messages to the next rank in one group: matched in posting order
        std::vector<std::unique_ptr<P2POp>> ops;
        for (int m = 0; m < 3; ++m) ops.push_back(makeOp(r, true, next, base + size_t(m), t, seed, m));
        for (int m = 0; m < 3; ++m) ops.push_back(makeOp(r, false, prev, base + size_t(m), t, seed, m));
        if (me % 2) std::rotate(ops.begin(), ops.begin() + 3, ops.end());
        runOps(r, ops, "3 messages " + tag);
        ++seed;
      }
    }
  for (size_t count : {size_t(1), size_t(4099)}) {  // ungrouped blocking pair: 0 sends first, 1 receives first
    if (n >= 2 && me < 2) {
      const int peer = 1 - me;
      std::vector<std::unique_ptr<P2POp>> ops;
      ops.push_back(makeOp(r, true, peer, count, precclInt32, seed, 0));
      ops.push_back(makeOp(r, false, peer, count, precclInt32, seed, 0));
      if (me == 1) std::swap(ops[0], ops[1]);
      runOps(r, ops, "ungrouped count=" + std::to_string(count), false);
    }
    ++seed;  // on every rank, so later seeds agree
  }
  if (large) {  // a 24 MiB ring exchange
    std::vector<std::unique_ptr<P2POp>> ops;
    const size_t count = (size_t(24) << 20) / 4 + 3;
    ops.push_back(makeOp(r, false, prev, count, precclFloat, seed, 0));
    ops.push_back(makeOp(r, true, next, count, precclFloat, seed, 0));
    runOps(r, ops, "large ring");
    ++seed;
  }
}

void p2pGroup(int n, Transport t, int nvts, bool large) {
  GroupOptions opt;
  opt.env = localEnv(t, nvts);
  opt.timeoutSec = 240;
  GroupResult g = runGroup(n, opt, [&](Rank& r) { runP2P(r, large); });
  reportToCatch(std::string("p2p ") + transportName(t) + " n=" + std::to_string(n) + " nvts=" + std::to_string(nvts), g);
}

}  // namespace

TEST_CASE("send/recv shm", "[p2p][shm]") {
  p2pGroup(1, Transport::Shm, 2, false);
  p2pGroup(2, Transport::Shm, 3, true);
  p2pGroup(3, Transport::Shm, 2, false);
  p2pGroup(4, Transport::Shm, 2, true);
  p2pGroup(8, Transport::Shm, 3, false);
}

TEST_CASE("send/recv socket", "[p2p][socket]") {
  p2pGroup(2, Transport::Socket, 2, true);
  p2pGroup(3, Transport::Socket, 3, false);
  p2pGroup(4, Transport::Socket, 2, false);
  p2pGroup(8, Transport::Socket, 2, true);
}
