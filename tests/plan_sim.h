// The plan checker's symbolic interpreter (tests/test_plan_check.cc): every rank's plan run together, a
// slot holding the names of the values it carries (a hash of each expression, the order of its operations
// included, and what it holds) and a FIFO holding nslots slots, over fake buffers whose addresses name
// (rank, buffer, byte offset). Its own reading of the plan format, not the runners' task code.
#pragma once
#include <fmt/format.h>

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "plan/plan.h"

namespace plansim {

using namespace preccl;

// ---- symbolic values ----

// An element of a rank's input, or an operation on others: a hash of the expression (the order of its
// operations included), and what it holds: which ranks' leaves, how many, how many were pre-multiplied,
// whether the post-division was applied (at the top only), and the leaves' common element index.
struct Val {
  uint64_t h = 0;
  uint32_t mask = 0;
  uint16_t leaves = 0, pres = 0;
  bool post = false, misplacedPost = false, poison = true;
  int64_t idx = -1;  // -2 when the leaves' indices differ
  bool operator==(const Val& o) const { return h == o.h && poison == o.poison; }
  bool operator!=(const Val& o) const { return !(*this == o); }
};

inline uint64_t mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

inline const Val kPoison{};

inline Val leaf(int rank, int64_t idx) {
  Val v;
  v.h = mix(mix(uint64_t(rank) + 1) ^ uint64_t(idx));
  v.mask = 1u << rank, v.leaves = 1, v.idx = idx, v.poison = false;
  return v;
}
inline Val pre(Val x) {
  x.h = mix(x.h ^ 0x70726521ull);
  x.pres++;
  return x;
}
inline Val post(Val x) {
  x.h = mix(x.h ^ 0x706f7374ull);
  x.post = true;
  return x;
}
inline Val combine(const Val& x, const Val& y) {  // x (+) y: not commutative here, as floats are not associative
  if (x.poison || y.poison) return kPoison;
  Val v;
  v.h = mix(mix(x.h) * 31 + y.h);
  v.mask = x.mask | y.mask, v.leaves = uint16_t(x.leaves + y.leaves), v.pres = uint16_t(x.pres + y.pres);
  v.misplacedPost = x.post || y.post || x.misplacedPost || y.misplacedPost;
  v.idx = x.idx == y.idx ? x.idx : -2;
  v.poison = false;
  return v;
}

// ---- fake buffers: every pointer names (rank, buffer, byte offset) ----

constexpr int kShift = 36;
inline uintptr_t bufBase(int rank, int which) { return (uintptr_t(rank + 1) << kShift) + (uintptr_t(which) << 32); }
struct Where {
  int rank, which;
  size_t byte;
};
inline Where where(const void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  return Where{int(a >> kShift) - 1, int((a >> 32) & 0xf), size_t(a & 0xffffffffu)};
}

// A rank's buffers: kIn and kOut (the same one in place), or one per point-to-point operation.
constexpr int kIn = 0, kOut = 1;

struct Buffer {
  std::vector<Val> val;
  std::vector<int> writes;
  size_t outFirst = 0, outCount = 0;  // the rank's output, in elements of this buffer
};

struct RankCall {
  CctArgs args;
  std::map<int, Buffer> bufs;
};

// ---- the interpreter ----

struct SimSlot {
  size_t bytes = 0;
  bool header = false;
  std::vector<Val> vals;
};

class Sim {
 public:
  // `esz`: the element's bytes; FIFOs of `nslots` slots; `nVTs` VTs.
  Sim(size_t esz, uint32_t nslots, int nVTs, std::vector<Plan>& plans, std::vector<RankCall>& calls)
      : nslots_(nslots), plans_(plans), calls_(calls), esz_(esz) {
    for (size_t r = 0; r < plans.size(); r++) {
      state_.emplace_back(plans[r].tasks.size());
      std::vector<uint32_t> left = plans[r].sharedCuts;
      left.resize(size_t(nVTs), 0);
      sharedLeft_.push_back(left);
      // Each edge's two FIFOs, as this rank sends and receives on them.
      sendQ_.emplace_back();
      recvQ_.emplace_back();
      for (const EdgeName& e : plans[r].edges) {
        sendQ_.back().push_back(&fifos_[sendKey(int(r), e)]);
        recvQ_.back().push_back(&fifos_[recvKey(int(r), e)]);
      }
    }
  }

  // "" when every task finished and every FIFO is empty, else what went wrong.
  std::string run() {
    for (;;) {
      bool moved = false, all = true;
      for (size_t r = 0; r < plans_.size(); r++)
        for (size_t t = 0; t < plans_[r].tasks.size(); t++) {
          moved |= advance(int(r), int(t));
          if (!err_.empty()) return err_;
          all &= state_[r][t].done;
        }
      if (all) break;
      if (!moved) return "deadlock: " + stuck();
    }
    for (auto& [key, q] : fifos_)
      if (!q.empty())
        return fmt::format("rank {} -> rank {} on VT {} (far {}): {} slot(s) never received", std::get<0>(key),
                           std::get<1>(key), std::get<2>(key), std::get<3>(key), q.size());
    return "";
  }

 private:
  struct TaskState {
    uint32_t cur = 0;
    size_t off = 0;
    bool started = false, done = false, arrived = false, cutTaken = false;
  };
  using Key = std::tuple<int, int, int, int>;  // sender, receiver, VT, far

  Key sendKey(int r, const EdgeName& e) const { return {r, e.peer, e.vt, e.far}; }
  Key recvKey(int r, const EdgeName& e) const { return {e.peer, r, e.vt, e.far}; }

  std::string stuck() const {
    std::string s;
    for (size_t r = 0; r < plans_.size() && s.size() < 400; r++)
      for (size_t t = 0; t < plans_[r].tasks.size(); t++)
        if (!state_[r][t].done)
          s += fmt::format("[rank {} task {} VT {} step {}/{}] ", r, t, plans_[r].tasks[t].vt, state_[r][t].cur,
                           plans_[r].tasks[t].nsteps);
    return s;
  }

  Val* at(int rank, const void* p, size_t k, bool write) {
    const Where w = where(static_cast<const char*>(p) + k * esz_);
    if (w.rank != rank) {
      err_ = fmt::format("rank {} touches rank {}'s memory", rank, w.rank);
      return nullptr;
    }
    auto it = calls_[size_t(rank)].bufs.find(w.which);
    if (it == calls_[size_t(rank)].bufs.end() || w.byte % esz_ != 0 || w.byte / esz_ >= it->second.val.size()) {
      err_ = fmt::format("rank {}: an access outside its buffers (buffer {}, byte {})", rank, w.which, w.byte);
      return nullptr;
    }
    if (write) it->second.writes[w.byte / esz_]++;
    return &it->second.val[w.byte / esz_];
  }

  bool advance(int r, int ti) {
    const Plan& p = plans_[size_t(r)];
    const Task& t = p.tasks[size_t(ti)];
    TaskState& me = state_[size_t(r)][size_t(ti)];
    bool moved = false;
    if (me.done) return false;
    if (!me.started) {
      for (uint32_t i = t.afterFirst; i < t.afterLast; i++)
        if (!state_[size_t(r)][i].done) return false;
      me.started = true;
    }
    for (;;) {
      if (me.cur >= t.nsteps) {
        me.done = true;
        return true;
      }
      const bool atCut = t.cutStep != Task::kNoCut && (me.cur > t.cutStep || (me.cur == t.cutStep && me.off >= t.cutOff));
      if (!me.cutTaken && atCut) {
        if (t.cutShared) {
          uint32_t& left = sharedLeft_[size_t(r)][size_t(t.vt)];
          if (!me.arrived) {
            me.arrived = true;
            left--;
            moved = true;
          }
          if (left != 0) return moved;
        }
        me.cutTaken = true;
      }
      const Step& s = p.step(t, me.cur);
      if (s.bytes == 0 && !s.headerOnly) {
        me.cur++;
        continue;
      }
      const size_t piece = s.headerOnly ? 0 : std::min(t.piece, s.bytes - me.off);
      if (piece % esz_ != 0 || s.bytes % esz_ != 0 || t.piece == 0) {
        err_ = fmt::format("rank {} task {}: a piece of {} B in a step of {} B (element {} B)", r, ti, piece, s.bytes, esz_);
        return false;
      }
      std::deque<SimSlot>* in[2] = {};
      for (int i = 0; i < s.nrecv; i++) {
        in[i] = recvQ_[size_t(r)][size_t(s.recv[i])];
        if (in[i]->empty()) return moved;
      }
      for (int i = 0; i < s.nsend; i++)
        if (sendQ_[size_t(r)][size_t(s.send[i])]->size() >= nslots_) return moved;
      for (int i = 0; i < s.nrecv; i++) {
        const SimSlot& got = in[i]->front();
        if (got.bytes != piece || got.header != s.headerOnly) {
          const EdgeName& e = p.edges[size_t(s.recv[i])];
          err_ = fmt::format("rank {} task {} step {} ({}): from rank {} on VT {} (far {}) came a slot of {} B{}, "
                             "expected {} B{}",
                             r, ti, me.cur, primName(primOf(s)), e.peer, e.vt, e.far, got.bytes, got.header ? " (header)" : "",
                             piece, s.headerOnly ? " (header)" : "");
          return false;
        }
      }
      SimSlot out;
      out.bytes = piece;
      out.header = s.headerOnly;
      const size_t k = piece / esz_;
      out.vals.resize(k);
      for (size_t j = 0; j < k; j++) {
        const size_t mem = s.memOffset(me.off + j * esz_) / esz_;
        Val v;
        if (s.src) {
          const Val* x = at(r, s.src, mem, false);
          if (!x) return false;
          v = *x;
        } else {
          v = in[0]->front().vals[j];
        }
        if (s.reduce && s.srcLast) {
          const Val mine = v;
          v = in[0]->front().vals[j];
          for (int i = 1; i < s.nrecv; i++) v = combine(v, in[i]->front().vals[j]);
          v = combine(v, mine);
          if (s.post && !v.poison) v = post(v);
        } else if (s.reduce) {
          if (s.src && !s.srcPlain && !v.poison) v = pre(v);
          for (int i = s.src ? 0 : 1; i < s.nrecv; i++) v = combine(v, in[i]->front().vals[j]);
          if (s.post && !v.poison) v = post(v);
        }
        if (s.dst) {
          Val* d = at(r, s.dst, mem, true);
          if (!d) return false;
          *d = v;
        }
        out.vals[j] = v;
      }
      for (int i = 0; i < s.nsend; i++) sendQ_[size_t(r)][size_t(s.send[i])]->push_back(out);
      for (int i = 0; i < s.nrecv; i++) in[i]->pop_front();
      moved = true;
      me.off += piece;
      if (me.off == s.bytes) {
        me.off = 0;
        me.cur++;
      }
    }
  }

  uint32_t nslots_;
  std::vector<Plan>& plans_;
  std::vector<RankCall>& calls_;
  size_t esz_;
  std::vector<std::vector<TaskState>> state_;
  std::vector<std::vector<uint32_t>> sharedLeft_;
  std::map<Key, std::deque<SimSlot>> fifos_;
  std::vector<std::vector<std::deque<SimSlot>*>> sendQ_, recvQ_;  // [rank][plan edge]
  std::string err_;
};

}  // namespace plansim
