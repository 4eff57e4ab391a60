// The failure rules without sockets: when a path counts as dead (policy/detect.h), and how the ranks of
// one attempt agree on a commit or an abort (exec/agreement.h), over in-memory FIFOs in one thread:
// every rank must end the same way, an abort with the same union of failed VTs everywhere.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "exec/agreement.h"
#include "policy/detect.h"

using namespace preccl;

namespace {

constexpr uint32_t kSlots = 4;
constexpr size_t kSlotBytes = 4096;

// Ranks on a ring, one edge to each neighbour (both directions): FIFO memory in the heap, no wakers.
struct Ring {
  struct Pipe {
    std::unique_ptr<char, void (*)(void*)> mem{nullptr, free};
    Fifo fifo;
  };
  int n;
  std::vector<std::unique_ptr<Pipe>> pipes;           // pipe (a -> b)
  std::vector<std::vector<std::unique_ptr<Conn>>> e;  // e[a][k]: a's edge to its k-th neighbour

  Fifo makeFifo() {
    auto p = std::make_unique<Pipe>();
    void* m = nullptr;
    REQUIRE(posix_memalign(&m, kSlotAlign, fifoBytes(kSlots, kSlotBytes)) == 0);
    memset(m, 0, fifoCtrlBytes());
    new (m) FifoCtrl();
    p->mem.reset(static_cast<char*>(m));
    p->fifo.attach(m, kSlots, kSlotBytes);
    Fifo f = p->fifo;
    pipes.push_back(std::move(p));
    return f;
  }

  explicit Ring(int nranks) : n(nranks), e(nranks) {
    for (int a = 0; a < n; a++)
      for (int k = 0; k < 2; k++) {
        auto c = std::make_unique<Conn>();
        c->peer = (a + (k == 0 ? 1 : n - 1)) % n;
        c->vt = 0;
        e[a].push_back(std::move(c));
      }
    // a's edge to next (k=0) pairs with next's edge to its prev (k=1).
    for (int a = 0; a < n; a++) {
      const int b = (a + 1) % n;
      Fifo ab = makeFifo(), ba = makeFifo();
      e[a][0]->send.attach(ab, Waker{});
      e[b][1]->recv.attach(ab, Waker{});
      e[b][1]->send.attach(ba, Waker{});
      e[a][0]->recv.attach(ba, Waker{});
    }
  }
  std::vector<Conn*> edges(int a) { return {e[a][0].get(), e[a][1].get()}; }
};

// Pumps every rank in a shuffled order until all ended (or a bound of rounds passed).
bool settle(std::vector<std::unique_ptr<Agreement>>& ag, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<size_t> order(ag.size());
  for (size_t i = 0; i < order.size(); i++) order[i] = i;
  for (int round = 0; round < 10000; round++) {
    std::shuffle(order.begin(), order.end(), rng);
    bool all = true;
    for (size_t i : order) {
      ag[i]->pump();
      all &= ag[i]->ended();
    }
    if (all) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("a path is dead only when nothing is acknowledged for the detection time while bytes wait", "[agreement]") {
  CHECK(pathDead({5, 1, 600, 0, 0}, 500));
  CHECK_FALSE(pathDead({0, 3, 5000, 0, 0}, 500));  // nothing outstanding or queued: an idle connection
  CHECK_FALSE(pathDead({5, 0, 5000, 0, 0}, 500));  // the first segment after an idle spell, not yet timed out
  CHECK_FALSE(pathDead({5, 2, 499, 0, 0}, 500));   // acknowledgements still arrive: congestion
  // A closed window: bytes queued, window probes going out.
  CHECK(pathDead({0, 0, 900, 2, 4096}, 500));       // two probes unanswered: the path dropped them
  CHECK_FALSE(pathDead({0, 0, 3000, 1, 4096}, 500)); // a late reader: its kernel answers each probe
  CHECK_FALSE(pathDead({0, 0, 900, 3, 0}, 500));     // nothing queued
}

TEST_CASE("every rank commits when every rank finished", "[agreement]") {
  for (int n : {2, 3, 5, 8})
    for (uint32_t seed = 1; seed <= 5; seed++) {
      Ring ring(n);
      std::vector<std::unique_ptr<Agreement>> ag;
      for (int r = 0; r < n; r++) ag.push_back(std::make_unique<Agreement>(r, n, 7, 0, ring.edges(r), 1, false));
      for (int r = 0; r < n; r++) ag[r]->finish(r == 1 ? 0x4 : 0);
      INFO("n " << n << " seed " << seed);
      REQUIRE(settle(ag, seed));
      for (int r = 0; r < n; r++) {
        CHECK(ag[r]->phase() == Agreement::Phase::Committed);
        CHECK(ag[r]->agreedVts() == 0x4);  // rank 1's report reached everyone
      }
    }
}

TEST_CASE("an abort wins over commits and every rank gets the same union of failed VTs", "[agreement]") {
  for (int n : {2, 3, 5, 8})
    for (uint32_t seed = 1; seed <= 5; seed++) {
      Ring ring(n);
      std::vector<std::unique_ptr<Agreement>> ag;
      for (int r = 0; r < n; r++) ag.push_back(std::make_unique<Agreement>(r, n, 7, 2, ring.edges(r), 2, true));
      // Rank 0 finished; ranks 1 and n-1 find different dead VTs at once; the others are still running
      // and report a suspicion of their own when they join.
      ag[0]->finish(0);
      ag[1]->setSuspects(0x2);
      ag[1]->abort();
      ag[n - 1]->setSuspects(0x8);
      ag[n - 1]->abort();
      for (int r = 2; r < n - 1; r++) ag[r]->setSuspects(r == 2 ? 0x10 : 0);
      INFO("n " << n << " seed " << seed);
      REQUIRE(settle(ag, seed));
      // With two ranks, rank 1 is both, and its report is fixed when it first aborts.
      const uint64_t want = n == 2 ? 0x2 : 0x2 | 0x8 | (n > 3 ? 0x10 : 0);
      for (int r = 0; r < n; r++) {
        CHECK(ag[r]->phase() == Agreement::Phase::Aborted);
        CHECK(ag[r]->agreedVts() == want);
      }
    }
}

// The sender of bytes lost on a dead path may have finished before it saw the path die: it cannot abort
// (a commit never turns into one), so a rank still running must, on its report.
TEST_CASE("a dead path found after committing makes a running rank abort", "[agreement]") {
  for (int n : {2, 3, 5, 8})
    for (uint32_t seed = 1; seed <= 5; seed++) {
      Ring ring(n);
      std::vector<std::unique_ptr<Agreement>> ag;
      for (int r = 0; r < n; r++) ag.push_back(std::make_unique<Agreement>(r, n, 7, 0, ring.edges(r), 1, false));
      // Every rank but the last finished; rank 0 then finds VT 1 dead. The last rank still waits for data.
      for (int r = 0; r < n - 1; r++) ag[r]->finish(0);
      for (int round = 0; round < 3; round++)
        for (auto& a : ag) a->pump();
      ag[0]->setSuspects(0x2);
      INFO("n " << n << " seed " << seed);
      REQUIRE(settle(ag, seed));
      for (int r = 0; r < n; r++) {
        CHECK(ag[r]->phase() == Agreement::Phase::Aborted);
        CHECK(ag[r]->agreedVts() == 0x2);  // rank 0's report, when it joined
      }
    }
}

// A path dies after a rank's last commit notice left it: the rank returned and runs the next CCT, while its
// peer still commits and waits for that notice. The peer finds the path dead and sends its notice (naming
// the dead VTs) on every edge; the rank that moved on answers with the final notice of the attempt it
// committed (ExecCtx::lastCommit), on the edge the peer's notice came by.
TEST_CASE("a rank that committed answers a peer whose last notice from it was lost", "[agreement]") {
  for (bool remember : {true, false}) {
    Ring ring(2);
    Agreement a0(0, 2, 7, 0, ring.edges(0), 1, false), a1(1, 2, 7, 0, ring.edges(1), 1, false);
    a0.finish(0);
    a0.pump();  // rank 0's set {0}, on its narrow edge only
    a1.finish(0x4);
    for (int i = 0; i < 3 && !a1.ended(); i++) a1.pump();
    REQUIRE(a1.phase() == Agreement::Phase::Committed);
    // Rank 1's last notice, on its narrow edge to rank 0, is lost with the path.
    Conn* lostOn = ring.e[0][1].get();
    REQUIRE(lostOn->recv.ready());
    lostOn->recv.release();
    // Rank 1 runs epoch 8, and has already sent a data slot of it on every edge: the answer comes behind
    // it. Rank 0 finds the path dead and widens.
    const CommitRecord last = a1.record();
    Agreement next(1, 2, 8, 0, ring.edges(1), 1, false, 0, remember ? &last : nullptr);
    for (Conn* c : ring.edges(1)) {
      SlotHdr& h = c->send.hdr();
      h = SlotHdr{};
      h.epoch = 8;
      h.kind = kSlotData;
      h.bytes = 64;
      c->send.publish();
    }
    a0.setSuspects(0x1);
    a0.widen();
    for (int i = 0; i < 20 && !a0.ended(); i++) {
      a0.pump();
      next.pump();
    }
    INFO((remember ? "with the record" : "without it"));
    if (remember) {
      CHECK(a0.phase() == Agreement::Phase::Committed);
      CHECK(a0.agreedVts() == 0x4);  // rank 1's report, from its final notice
    } else {
      CHECK(a0.phase() == Agreement::Phase::Committing);  // what happened before: waiting until the timeout
    }
  }
}

TEST_CASE("notices of ended attempts and probes are dropped, older data only after an abort", "[agreement]") {
  SlotHdr h{};
  h.epoch = 5;
  h.attempt = 1;
  h.kind = kSlotCommit;
  CHECK(droppableSlot(h, 5, 2, false));   // a commit notice of an earlier attempt
  CHECK_FALSE(droppableSlot(h, 5, 1, false));
  h.kind = kSlotData;
  CHECK_FALSE(droppableSlot(h, 5, 2, false));  // data: an error unless the communicator aborted
  CHECK(droppableSlot(h, 5, 2, true));
  CHECK_FALSE(droppableSlot(h, 5, 1, true));   // this attempt's data
  h.kind = kSlotProbe;
  CHECK(droppableSlot(h, 9, 0, false));
}
