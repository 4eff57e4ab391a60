// The failure rules without sockets: when a path counts as dead (policy/detect.h), and how the ranks of
// one attempt agree on a commit or an abort (exec/agreement.h), over in-memory FIFOs in one thread:
// every rank must end the same way, an abort with the same union of failed VTs everywhere.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <tuple>
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
  // Attempts count the aborts agreed before them, so they order first: the next epoch's data of an attempt
  // given up with a deferred commit's abort is older than the retry of the epoch before it.
  h.epoch = 6;
  CHECK(droppableSlot(h, 5, 2, true));
  CHECK_FALSE(droppableSlot(h, 5, 1, true));
  h.kind = kSlotProbe;
  CHECK(droppableSlot(h, 9, 0, false));
}

namespace {

// Ranks joined as the communicator joins them for an agreement (core/run_attempt.cc notifyEdges): on VT 0
// the noticeGraph edges, out first; on VT 1 the ring neighbours' (the ways round once a flood widens).
// Every directed edge is two FIFOs with a wire between them that moves the slots once per round, as a
// socket's two proxies do: a notice takes one round per hop, so the rounds an agreement takes, counted
// from the moment its last rank finished, are its critical path in hops. `ring`: VT 0 gets the ring
// neighbours instead, the flood this design replaced, for comparison.
struct Mesh {
  static constexpr uint32_t kSlots = 4;
  static constexpr size_t kSlotBytes = 512;  // a notice of 1024 ranks is 16 + 128 B
  struct Wire {
    std::unique_ptr<char, void (*)(void*)> a{nullptr, free}, b{nullptr, free};
    FifoConsumer take;  // what the sender published
    FifoProducer give;  // into the receiver's FIFO
    bool dead = false;
    bool lossy = false;  // takes what is published (it left the process) and delivers nothing
  };
  int n;
  std::vector<std::unique_ptr<Wire>> wires;
  std::vector<std::vector<std::unique_ptr<Conn>>> conns;  // per rank
  std::map<std::tuple<int, int, int>, std::pair<Conn*, Wire*>> at;  // (rank, peer, vt) -> its edge, its outgoing wire
  std::vector<std::vector<Conn*>> edges;
  std::vector<size_t> narrow;
  std::vector<size_t> back;  // edges[r][0, back[r]): the VT 0 edges both ways (NoticeEdges::back)
  std::vector<std::vector<std::vector<uint64_t>>> schedule;  // as the communicator gives it (commitSchedule)

  static Fifo fifo(std::unique_ptr<char, void (*)(void*)>& mem) {
    void* m = nullptr;
    REQUIRE(posix_memalign(&m, kSlotAlign, fifoBytes(kSlots, kSlotBytes)) == 0);
    memset(m, 0, fifoCtrlBytes());
    new (m) FifoCtrl();
    mem.reset(static_cast<char*>(m));
    Fifo f;
    f.attach(m, kSlots, kSlotBytes);
    return f;
  }
  Wire* wire(Conn* from, Conn* to) {
    auto w = std::make_unique<Wire>();
    const Fifo a = fifo(w->a), b = fifo(w->b);
    from->send.attach(a, Waker{});
    w->take.attach(a, Waker{});
    w->give.attach(b, Waker{});
    to->recv.attach(b, Waker{});
    wires.push_back(std::move(w));
    return wires.back().get();
  }
  Conn* edge(int a, int b, int vt) {
    if (auto it = at.find({a, b, vt}); it != at.end()) return it->second.first;
    Conn* e[2] = {nullptr, nullptr};
    for (int s = 0; s < 2; s++) {
      auto c = std::make_unique<Conn>();
      c->peer = s == 0 ? b : a;
      c->vt = vt;
      c->stagedSends = true;  // a commit waits until its wire took its last notices
      e[s] = c.get();
      conns[size_t(s == 0 ? a : b)].push_back(std::move(c));
    }
    at[{a, b, vt}] = {e[0], wire(e[0], e[1])};
    at[{b, a, vt}] = {e[1], wire(e[1], e[0])};
    return e[0];
  }
  Mesh(int nranks, bool ring = false, bool flood = false)
      : n(nranks), conns(size_t(nranks)), edges(size_t(nranks)), narrow(size_t(nranks)), back(size_t(nranks)),
        schedule(size_t(nranks)) {
    std::vector<int> order(static_cast<size_t>(nranks));
    for (int r = 0; r < n; r++) order[size_t(r)] = r;
    for (int r = 0; r < n; r++) {
      std::vector<Conn*>& e = edges[size_t(r)];
      auto add = [&](int peer, int vt) {
        if (peer == r) return;
        Conn* c = edge(r, peer, vt);
        if (std::find(e.begin(), e.end(), c) == e.end()) e.push_back(c);
      };
      const NoticeGraph g = noticeGraph(r, n);
      if (ring) {
        add((r + 1) % n, 0);
        add((r + n - 1) % n, 0);
      } else {
        for (int p : g.out) add(p, 0);
      }
      narrow[size_t(r)] = ring ? e.size() : g.out.size();
      if (!ring && !flood) schedule[size_t(r)] = commitSchedule(r, order);
      if (!ring)
        for (int p : g.in) add(p, 0);
      back[size_t(r)] = e.size();
      add((r + 1) % n, 1);
      add((r + n - 1) % n, 1);
    }
  }
  // The wires carry what was published since the last round (a dead one nothing).
  void carry() {
    for (auto& w : wires) {
      if (w->dead) continue;
      if (w->lossy) {
        while (w->take.ready()) w->take.release();
        continue;
      }
      while (w->take.ready() && w->give.hasRoom()) {
        w->give.hdr() = w->take.hdr();
        memcpy(w->give.slot(), w->take.slot(), w->take.hdr().bytes);
        w->give.publish();
        w->take.release();
      }
    }
  }
  // The path between a and b on vt dies both ways: nothing moves (`lossy`: what is sent leaves the
  // process, as into a kernel that will never deliver it).
  void kill(int a, int b, int vt, bool lossy = false) {
    for (Wire* w : {at.at({a, b, vt}).second, at.at({b, a, vt}).second}) (lossy ? w->lossy : w->dead) = true;
  }
  std::vector<std::unique_ptr<Agreement>> agreements() {
    std::vector<std::unique_ptr<Agreement>> ag;
    for (int r = 0; r < n; r++)
      ag.push_back(std::make_unique<Agreement>(r, n, 7, 0, edges[size_t(r)], narrow[size_t(r)], false, 0, nullptr, &schedule[size_t(r)]));
    return ag;
  }
};

int ceilLog2(int n) {
  int k = 0;
  while ((1 << k) < n) k++;
  return k;
}

// One round: every rank pumps once (in a shuffled order), then the wires carry. `before(round)` runs first
// (finishing ranks, faults). Returns the rounds until every rank ended, or -1 past a bound.
template <typename Before>
int rounds(Mesh& m, std::vector<std::unique_ptr<Agreement>>& ag, uint32_t seed, Before before) {
  std::mt19937 rng(seed);
  std::vector<size_t> order(ag.size());
  for (size_t i = 0; i < order.size(); i++) order[i] = i;
  for (int round = 0; round < 4 * m.n + 100; round++) {
    before(round);
    std::shuffle(order.begin(), order.end(), rng);
    bool all = true;
    for (size_t i : order) {
      ag[i]->pump();
      all &= ag[i]->ended();
    }
    if (all) return round;
    m.carry();
  }
  return -1;
}

std::vector<int> scaleSizes() {
  std::vector<int> s;
  for (int n = 2; n <= 33; n++) s.push_back(n);
  for (int n : {63, 64, 65, 100, 127, 128, 129, 255, 256, 257, 511, 512, 513, 1000, 1023, 1024}) s.push_back(n);
  return s;
}

}  // namespace

// The commit ends ceil(log2 n) hops after the last rank finished (the goal: 2 ceil(log2 n) + a constant),
// whatever order the ranks finished in, scheduled or as a flood; an abort, which every rank must join, in
// two floods.
TEST_CASE("the agreement's critical path grows as log2 n, up to 1024 ranks", "[agreement]") {
  for (int n : scaleSizes()) {
    const int lg = ceilLog2(n);
    INFO("n " << n);
    for (bool flood : {false, true}) {  // scheduled, and the flood a rank falls back to without its schedule
      INFO((flood ? "flood" : "scheduled"));
      Mesh m(n, false, flood);
      auto ag = m.agreements();
      std::mt19937 rng{uint32_t(n)};
      std::vector<int> finishAt(static_cast<size_t>(n));
      int last = 0;
      for (int r = 0; r < n; r++) last = std::max(last, finishAt[size_t(r)] = int(rng() % 6));
      const int got = rounds(m, ag, uint32_t(n), [&](int round) {
        for (int r = 0; r < n; r++)
          if (finishAt[size_t(r)] == round) ag[size_t(r)]->finish(r == 1 ? 0x4 : 0);
      });
      REQUIRE(got >= 0);
      CHECK(got - last <= lg + 1);  // the hops, and one round for the wire to take the last notices
      for (auto& a : ag) {
        CHECK(a->phase() == Agreement::Phase::Committed);
        CHECK(a->agreedVts() == 0x4);
      }
    }
    // A rank reports a dead VT while some ranks run and the others are committing; then two at once.
    for (int reporters : {1, 2}) {
      Mesh m(n);
      auto ag = m.agreements();
      for (int r = 0; r < n; r += 2) ag[size_t(r)]->finish(0);
      const int a = n / 3, b = (2 * n) / 3;
      uint64_t want = 0;
      ag[size_t(a)]->setSuspects(0x2);
      ag[size_t(a)]->abort();
      want |= 0x2;
      if (reporters == 2 && b != a) {
        ag[size_t(b)]->setSuspects(0x8);
        ag[size_t(b)]->abort();
        want |= 0x8;
      }
      const int got = rounds(m, ag, uint32_t(n) + 7, [](int) {});
      REQUIRE(got >= 0);
      CHECK(got <= 2 * lg + 2);  // the abort reaches every rank, then every rank's report every rank
      for (auto& x : ag) {
        CHECK(x->phase() == Agreement::Phase::Aborted);
        CHECK(x->agreedVts() == want);
      }
    }
  }
}

// A path of the commit's graph dies during the agreement, both ways: its ends find it dead some rounds
// later (as Attempt::look does), widen, and the flood goes round it. Every rank finished: they commit.
// One rank still waited for data lost on that path: the dead VT travels in the commits, and it aborts
// them all with it.
TEST_CASE("a path that dies during the agreement: the flood goes round it, or a waiting rank aborts", "[agreement]") {
  for (int n : {2, 3, 4, 7, 8, 33, 256, 1024})
    for (bool oneRuns : {false, true}) {
      INFO("n " << n << (oneRuns ? ", one rank still runs" : ", all finished"));
      Mesh m(n);
      auto ag = m.agreements();
      const int x = n / 2, y = (x + 1) % n;  // y is x's first out edge on VT 0
      for (int r = 0; r < n; r++)
        if (!(oneRuns && r == y)) ag[size_t(r)]->finish(0);
      constexpr int kDies = 1, kFound = 4;
      const int got = rounds(m, ag, uint32_t(n), [&](int round) {
        if (round == kDies) m.kill(x, y, 0);
        if (round != kFound) return;
        for (auto [me, peer] : {std::pair{x, y}, std::pair{y, x}}) {
          m.at.at({me, peer, 0}).first->pathDown = true;
          ag[size_t(me)]->setSuspects(0x1);
          ag[size_t(me)]->widen();
        }
      });
      REQUIRE(got >= 0);
      CHECK(got - kFound <= 2 * ceilLog2(n) + 3);
      for (auto& a : ag) {
        if (oneRuns) {
          CHECK(a->phase() == Agreement::Phase::Aborted);
          CHECK(a->agreedVts() == 0x1);
        } else {
          CHECK(a->phase() == Agreement::Phase::Committed);
        }
      }
    }
}

// A commit notice lost on a path that died after its sender handed it over: on the schedule nobody else
// carries it, so the ranks waiting for it (and for what it would have let them send) reach back after the
// detection time (Attempt::look): they flood on their dissemination edges both ways. The path's two ends
// now send on it; the one still committing finds it dead some rounds later (as the transport would:
// Conn::pathDown), widens, and its notices name the dead VT. A rank that committed has moved on to its
// next call, whose agreement (holding the last commit's record) answers such a notice with the final
// one; every rank commits.
TEST_CASE("a commit notice lost on a path that died after it left: the waiting ranks reach back", "[agreement]") {
  for (int n : {2, 3, 4, 8, 33, 256}) {
    INFO("n " << n);
    Mesh m(n);
    auto ag = m.agreements();
    std::vector<CommitRecord> rec(static_cast<size_t>(n));
    std::vector<std::unique_ptr<Agreement>> next(static_cast<size_t>(n));  // the call after, once a rank committed
    const int c = n / 2, b = (c + 1) % n;                      // b is c's first out edge on VT 0
    constexpr int kReach = 6, kFound = 10;
    int waiting = 0, got = -1;
    m.kill(c, b, 0, true);
    for (auto& a : ag) a->finish(0);
    for (int round = 0; round < 200 && got < 0; round++) {
      if (round == kReach)
        for (int r = 0; r < n; r++)
          if (ag[size_t(r)]->phase() == Agreement::Phase::Committing) {
            waiting++;
            ag[size_t(r)]->reachBack(m.back[size_t(r)]);
          }
      if (round == kFound)
        for (auto [me, peer] : {std::pair{c, b}, std::pair{b, c}}) {
          // Only a sender sees a dead path: a rank finds it when something it sent there went unanswered.
          if (ag[size_t(me)]->ended() || m.at.at({me, peer, 0}).second->take.consumed() == 0) continue;
          m.at.at({me, peer, 0}).first->pathDown = true;
          ag[size_t(me)]->setSuspects(0x1);
          ag[size_t(me)]->widen();
        }
      bool all = true;
      for (int r = 0; r < n; r++) {
        Agreement& a = *ag[size_t(r)];
        if (!a.ended()) {
          a.pump();
          if (a.phase() == Agreement::Phase::Committed) {
            rec[size_t(r)] = a.record();
            next[size_t(r)] = std::make_unique<Agreement>(r, n, 8, 0, m.edges[size_t(r)], m.narrow[size_t(r)], false, 0,
                                                          &rec[size_t(r)], &m.schedule[size_t(r)]);
          }
        } else if (next[size_t(r)]) {
          next[size_t(r)]->pump();
        }
        all &= a.ended();
      }
      if (all) got = round;
      m.carry();
    }
    REQUIRE(got >= 0);
    CHECK((n <= 2 || waiting > 0));  // the lost notice held someone up (with 2 ranks it is the only one)
    CHECK(got - kFound <= 2 * ceilLog2(n) + 3);
    for (auto& a : ag) CHECK(a->phase() == Agreement::Phase::Committed);
  }
}

// A deferred commit (exec/slot_rules.h DeferredCommit): epoch 7 ended without a commit on the ranks that
// finished it, and they run epoch 8 with 7 pending, while the others still run 7 (the bytes they wait for
// were lost on a path that died). One rank finds the dead path: a rank ahead, running 8 (it aborts 8) or
// committing 8 (its commits name the dead VT), or a rank still in 7 (it aborts 7). The ranks in 7 give 7
// up when 8 is given up; the ranks ahead, meeting 7's abort, give 8 up unended and join it, reporting
// what they knew had failed. Every rank ends 7 aborted with the same union, the dead VT in it, within
// three floods. Without the deferred rule the ranks in 7 never learn of it (checked on small n).
TEST_CASE("a deferred commit: the ranks that went ahead join the abort of the epoch a peer still runs", "[agreement]") {
  enum Finder { AheadRunning, AheadCommitting, Behind };
  std::vector<int> sizes = {2, 3, 4, 5, 7, 8, 9, 16, 33, 64, 256, 1024};
  for (int n : sizes)
    for (Finder finder : {AheadRunning, AheadCommitting, Behind})
      for (bool rule : {true, false}) {
        if (!rule && (n > 9 || finder == Behind)) continue;
        INFO("n " << n << " finder " << int(finder) << (rule ? "" : ", without the deferred rule"));
        Mesh m(n);
        std::mt19937 rng{uint32_t(n) * 3 + uint32_t(finder)};
        std::vector<char> behind(size_t(n), 0);
        int nBehind = 0;
        for (int r = 0; r < n; r++) nBehind += behind[size_t(r)] = (rng() % 2 == 0);
        if (nBehind == 0) behind[0] = 1;                  // someone still runs 7
        if (nBehind == n) behind[size_t(n - 1)] = 0;      // and someone went ahead
        int ahead = -1, late = -1;
        for (int r = 0; r < n; r++) (behind[size_t(r)] ? late : ahead) = r;
        REQUIRE(ahead >= 0);
        REQUIRE(late >= 0);
        DeferredCommit deferred, pending;
        deferred.deferred = rule;
        pending.pendingEpoch = 7;
        pending.pendingAttempt = 0;
        std::vector<std::unique_ptr<Agreement>> ag;
        for (int r = 0; r < n; r++)
          ag.push_back(std::make_unique<Agreement>(r, n, behind[size_t(r)] ? 7 : 8, 0, m.edges[size_t(r)], m.narrow[size_t(r)],
                                                   false, 0, nullptr, &m.schedule[size_t(r)],
                                                   behind[size_t(r)] ? deferred : pending));
        std::vector<char> joined(size_t(n), 0);
        if (finder == AheadCommitting)
          for (int r = 0; r < n; r++)
            if (!behind[size_t(r)]) ag[size_t(r)]->finish(0);
        const int who = finder == Behind ? late : ahead;
        ag[size_t(who)]->setSuspects(0x2);
        if (finder != AheadCommitting) ag[size_t(who)]->abort();
        int got = -1;
        const int bound = rule ? 6 * ceilLog2(n) + 12 : 4 * n + 40;
        for (int round = 0; round < bound && got < 0; round++) {
          bool all = true;
          for (int r = 0; r < n; r++) {
            Agreement& a = *ag[size_t(r)];
            a.pump();
            if (a.phase() == Agreement::Phase::PendingAborted) {
              REQUIRE_FALSE(behind[size_t(r)]);
              const uint64_t failed = a.failedSeen();
              ag[size_t(r)] = std::make_unique<Agreement>(r, n, 7, 0, m.edges[size_t(r)], m.narrow[size_t(r)], false, 0,
                                                          nullptr, &m.schedule[size_t(r)]);
              ag[size_t(r)]->abort(failed);
              ag[size_t(r)]->pump();
              joined[size_t(r)] = 1;
            }
            all &= ag[size_t(r)]->phase() == Agreement::Phase::Aborted;
          }
          if (all) got = round;
          m.carry();
        }
        if (!rule) {
          CHECK(got < 0);  // the ranks still in 7 wait for bytes that will not come
          continue;
        }
        REQUIRE(got >= 0);
        CHECK(got <= 3 * ceilLog2(n) + 6);
        for (int r = 0; r < n; r++) {
          CHECK(ag[size_t(r)]->phase() == Agreement::Phase::Aborted);
          CHECK(ag[size_t(r)]->agreedVts() == 0x2);
          CHECK(bool(joined[size_t(r)]) == !behind[size_t(r)]);
        }
      }
}

// The hops per call for the doc (docs/failures.md, "Cost"): ./preccl-tests "[.agreement-hops]". The commit
// (every rank finished at once) along the ring neighbours, as a flood on the dissemination edges, and as
// scheduled (commitSchedule); an abort one rank starts.
TEST_CASE("the agreement's hops per call, dissemination against the ring", "[.agreement-hops]") {
  std::printf("%6s %22s %22s %22s %8s\n", "ranks", "ring: hops, notices", "flood: hops, notices", "scheduled: hops, notices", "abort");
  for (int n = 8; n <= 1024; n *= 2) {
    int hops[3];
    double sent[3];
    for (int kind = 0; kind < 3; kind++) {
      Mesh m(n, kind == 0, kind == 1);
      auto ag = m.agreements();
      hops[kind] = rounds(m, ag, 1, [&](int round) {
        if (round == 0)
          for (auto& a : ag) a->finish(0);
      });
      uint64_t total = 0;
      for (auto& w : m.wires) total += w->take.consumed();
      sent[kind] = double(total) / n;
    }
    Mesh m(n);
    auto ag = m.agreements();
    ag[0]->abort();
    const int abortHops = rounds(m, ag, 1, [](int) {});
    std::printf("%6d %14d %7.1f %14d %7.1f %14d %7.1f %8d\n", n, hops[0], sent[0], hops[1], sent[1], hops[2], sent[2], abortHops);
  }
}
