#include "exec/agreement.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/log.h"

namespace preccl {

NoticeGraph noticeGraph(int pos, int n) {
  NoticeGraph g;
  auto add = [&](std::vector<int>& to, int q) {
    if (q == pos) return;
    for (const std::vector<int>* l : {&g.out, &g.in})
      if (std::find(l->begin(), l->end(), q) != l->end()) return;
    to.push_back(q);
  };
  for (int d = 1; d < n; d *= 2) add(g.out, (pos + d) % n);
  for (int d = 1; d < n; d *= 2) add(g.in, ((pos - d) % n + n) % n);
  return g;
}

std::vector<std::vector<uint64_t>> commitSchedule(int pos, const std::vector<int>& order) {
  const int n = int(order.size());
  std::vector<std::vector<uint64_t>> s;
  for (int d = 1; d < n; d *= 2) {
    std::vector<uint64_t> need((size_t(n) + 63) / 64, 0);
    for (int j = 0; j < d; j++) {
      const int r = order[size_t(((pos - j) % n + n) % n)];
      need[size_t(r) / 64] |= 1ull << (r % 64);
    }
    s.push_back(std::move(need));
  }
  return s;
}

Agreement::Agreement(int rank, int nranks, uint64_t epoch, uint32_t attempt, std::vector<Conn*> edges, size_t narrow,
                     bool dropStale, size_t spare, const CommitRecord* last,
                     const std::vector<std::vector<uint64_t>>* schedule, const DeferredCommit& defer)
    : rank_(rank),
      nranks_(nranks),
      epoch_(epoch),
      attempt_(attempt),
      edges_(std::move(edges)),
      dirty_(edges_.size(), 0),
      used_(edges_.size(), 0),
      firstSpare_(edges_.size() - std::min(spare, edges_.size())),
      active_(std::min(std::max<size_t>(narrow, 1), firstSpare_)),
      dropStale_(dropStale),
      ranks_((nranks + 63) / 64, 0),
      last_(last),
      schedule_(schedule),
      defer_(defer) {
  if (schedule_ && schedule_->size() != active_) schedule_ = nullptr;  // one per narrow edge, or none
}

bool Agreement::holds(const std::vector<uint64_t>& ranks) const {
  for (size_t i = 0; i < ranks.size() && i < ranks_.size(); i++)
    if ((ranks_[i] & ranks[i]) != ranks[i]) return false;
  return true;
}

// Scheduled, a commit marks a narrow edge once, when the set first holds the edge's part of the schedule.
void Agreement::markAll() {
  if (!schedule_ || phase_ != Phase::Committing) {
    std::fill(dirty_.begin(), dirty_.end(), 1);
    return;
  }
  for (size_t i = 0; i < schedule_->size(); i++)
    if (!used_[i] && holds((*schedule_)[i])) dirty_[i] = 1;
}

void Agreement::unschedule() {
  if (!schedule_) return;
  schedule_ = nullptr;
  if (phase_ == Phase::Committing) markAll();
}

void Agreement::reachBack(size_t upTo) {
  upTo = std::min(upTo, firstSpare_);
  if (phase_ != Phase::Committing || upTo <= active_) return;
  schedule_ = nullptr;
  active_ = upTo;
  markAll();
}

void Agreement::widen() {
  unschedule();
  if (active_ == edges_.size()) return;
  active_ = edges_.size();
  if (phase_ == Phase::Committing || phase_ == Phase::Aborting) markAll();
}

void Agreement::finish(uint64_t report) {
  if (phase_ != Phase::Running) return;
  phase_ = Phase::Committing;
  std::fill(ranks_.begin(), ranks_.end(), 0);
  ranks_[rank_ / 64] |= 1ull << (rank_ % 64);
  vts_ = report;
  dead_ = 0;
  markAll();
}

void Agreement::setSuspects(uint64_t vts) {
  suspects_ = vts;
  if (phase_ == Phase::Committing && (dead_ | vts) != dead_) {
    dead_ |= vts;
    schedule_ = nullptr;
    markAll();
  }
}

void Agreement::abort(uint64_t also) {
  if (phase_ == Phase::Aborting || ended()) return;
  // A committing rank's set meant "finished"; from here on it means "reported".
  phase_ = Phase::Aborting;
  std::fill(ranks_.begin(), ranks_.end(), 0);
  ranks_[rank_ / 64] |= 1ull << (rank_ % 64);
  vts_ = suspects_ | also;
  abortNotReady_ = notReady_;
  active_ = edges_.size();  // rare, and it must get through whatever else died
  schedule_ = nullptr;
  markAll();
}

// The VTs a notice gives up on: an abort's first mask, a commit's second (its dead paths).
static uint64_t noticeFailed(const SlotHdr& h, const char* body) {
  uint64_t v = 0;
  if (h.kind == kSlotCommit) return noticeDead(h, body);
  if (h.bytes >= kNoticeHead) memcpy(&v, body, 8);
  return v;
}

void Agreement::abortAt(Conn* c) {
  FifoConsumer& r = c->recv;
  if (!r.ready() || pendingAbort(r.hdr(), defer_)) return;
  if (defer_.deferred && nextEpochAlarm(r.hdr(), epoch_, attempt_, noticeDead(r.hdr(), r.slot()))) {
    abort(noticeFailed(r.hdr(), r.slot()));
    return;
  }
  abort();
}

uint64_t Agreement::failedSeen() const {
  return suspects_ | (phase_ == Phase::Aborting ? vts_ : phase_ == Phase::Committing ? dead_ : 0);
}

// A notice's body (exec/slot_rules.h): the VTs (abort: failed; commit: not ready to rejoin), a second mask
// (commit: the dead paths committing ranks found; abort: the masked VTs not ready to rejoin), then the set
// of ranks.

bool Agreement::merge(const SlotHdr& h, const char* body) {
  const size_t words = std::min<size_t>(ranks_.size(), h.bytes >= kNoticeHead ? (h.bytes - kNoticeHead) / 8 : 0);
  bool grew = false;
  uint64_t v;
  if (h.bytes >= kNoticeHead) {
    memcpy(&v, body, 8);
    grew |= (vts_ | v) != vts_;
    vts_ |= v;
    v = noticeDead(h, body);
    uint64_t& second = phase_ == Phase::Aborting ? abortNotReady_ : dead_;
    grew |= (second | v) != second;
    // A dead path found by a committing rank: passed on everywhere (a rank may wait for bytes lost on it).
    if (phase_ == Phase::Committing && (second | v) != second) schedule_ = nullptr;
    second |= v;
  }
  for (size_t i = 0; i < words; i++) {
    memcpy(&v, body + kNoticeHead + 8 * i, 8);
    grew |= (ranks_[i] | v) != ranks_[i];
    ranks_[i] |= v;
  }
  if (grew) markAll();
  return grew;
}

bool Agreement::readEdge(Conn* c) {
  FifoConsumer& r = c->recv;
  bool moved = false;
  if (phase_ == Phase::Running) {
    while (r.ready() && !pendingAbort(r.hdr(), defer_) && droppableSlot(r.hdr(), epoch_, attempt_, dropStale_)) {
      dropStale(c);
      moved = true;
    }
    // An abort may wait behind data this rank has not read yet: it decides the attempt, so look for it.
    const uint64_t n = r.waiting();
    for (uint64_t i = 0; i < n; i++) {
      const SlotHdr& h = r.hdrAt(i);
      if (pendingAbort(h, defer_)) {
        phase_ = Phase::PendingAborted;
        return true;
      }
      if (defer_.deferred && nextEpochAlarm(h, epoch_, attempt_, noticeDead(h, r.slotAt(i)))) {
        PRECCL_WARN("rank {}: a rank gave up epoch {} attempt {} (VT mask {:#x}) while this rank still runs epoch {}, "
                    "whose commit was deferred: aborting it",
                    rank_, h.epoch, h.attempt, noticeFailed(h, r.slotAt(i)), epoch_);
        abort(noticeFailed(h, r.slotAt(i)));
        return true;
      }
      if (same(h) && h.kind == kSlotAbort) {
        abort();
        merge(h, r.slotAt(i));
        return true;
      }
      if (same(h) && h.kind == kSlotCommit && noticeDead(h, r.slotAt(i)) != 0) {
        PRECCL_WARN("rank {}: a finished rank found VT mask {:#x} dead in epoch {} attempt {} while this rank still "
                    "runs: aborting the attempt",
                    rank_, noticeDead(h, r.slotAt(i)), epoch_, attempt_);
        abort();
        return true;
      }
    }
    return moved;
  }
  while (r.ready()) {
    const SlotHdr& h = r.hdr();
    if (pendingAbort(h, defer_)) {
      phase_ = Phase::PendingAborted;
      return true;
    }
    if (phase_ == Phase::Aborting && h.attempt == attempt_ && h.epoch == epoch_ + 1) {
      r.release();  // a rank that went ahead of a deferred commit: its next attempt goes with this one
      moved = true;
      continue;
    }
    if (olderSlot(h, epoch_, attempt_)) {
      // Old data is not ours to drop unless an abort made it stale: the executor's timeout names it.
      if (!droppableSlot(h, epoch_, attempt_, dropStale_) && phase_ != Phase::Aborting) break;
      dropStale(c);
      moved = true;
      continue;
    } else if (!same(h)) {
      // The peer's next attempt or CCT: it ended this one, and its last notice came before, unless that
      // was lost on a path that died and the peer answered later (dropStale), behind its next CCT's data.
      if (phase_ == Phase::Committing) {
        const uint64_t n = r.waiting();
        for (uint64_t i = 1; i < n; i++)
          if (same(r.hdrAt(i)) && r.hdrAt(i).kind == kSlotCommit) moved |= merge(r.hdrAt(i), r.slotAt(i));
      }
      break;
    } else if (h.kind == kSlotAbort) {
      abort();
      merge(h, r.slot());
    } else if (h.kind == kSlotCommit) {
      if (phase_ == Phase::Committing) merge(h, r.slot());
    } else if (phase_ != Phase::Aborting) {
      break;  // data after this rank finished: the ranks' plans differ; the executor's timeout names it
    }
    r.release();
    moved = true;
  }
  return moved;
}

// Puts one notice on c's send FIFO; false when it has no room (or the slot is too small, which no slot
// size the config allows makes happen).
static bool sendNotice(Conn* c, uint64_t epoch, uint32_t attempt, uint16_t kind, uint64_t vts, uint64_t second,
                       const std::vector<uint64_t>& ranks) {
  const uint32_t bytes = static_cast<uint32_t>(kNoticeHead + 8 * ranks.size());
  if (c->state() != Conn::Live || !c->send.hasRoom() || bytes > c->send.fifo().slotBytes) return false;
  SlotHdr& h = c->send.hdr();
  h = SlotHdr{};
  h.epoch = epoch;
  h.attempt = attempt;
  h.kind = kind;
  h.bytes = bytes;
  h.teleEpoch = kNoTeleEpoch;
  char* body = c->send.slot();
  memcpy(body, &vts, 8);
  memcpy(body + 8, &second, 8);
  memcpy(body + kNoticeHead, ranks.data(), 8 * ranks.size());
  c->send.publish();
  return true;
}

void Agreement::dropStale(Conn* c) {
  FifoConsumer& r = c->recv;
  // Answered once per notice; a full FIFO leaves it unanswered, and the peer's next notice asks again.
  if (last_ && commitNeedsAnswer(r.hdr(), r.slot(), last_->view()) &&
      sendNotice(c, last_->epoch, last_->attempt, kSlotCommit, last_->vts, last_->dead, last_->ranks))
    PRECCL_WARN("rank {}: rank {} is still committing epoch {} attempt {}, which this rank committed: sent it the "
                "final notice again ({})",
                rank_, c->peer, last_->epoch, last_->attempt, c->path);
  r.release();
}

bool Agreement::peek() const {
  for (const Conn* c : edges_) {
    const Fifo& f = c->recv.fifo();
    const uint64_t head = counterLoad(f.ctrl->head), tail = counterLoad(f.ctrl->tail);
    for (uint64_t i = head; i < tail; i++) {
      const SlotHdr h = f.hdr(i);
      const uint64_t dead = h.kind == kSlotCommit ? noticeDead(h, f.slot(i)) : 0;
      // The slot was read whole only if its reader has not released it since (then its producer may be
      // writing the next one there): what is read must be checked against the head read again.
      std::atomic_thread_fence(std::memory_order_acquire);
      if (counterLoad(f.ctrl->head) > i) break;
      if (same(h) && (h.kind == kSlotAbort || (h.kind == kSlotCommit && dead != 0))) return true;
    }
  }
  return false;
}

bool Agreement::sendPending() {
  bool moved = false;
  const uint16_t kind = phase_ == Phase::Committing ? kSlotCommit : kSlotAbort;
  for (size_t i = 0; i < active_; i++) {
    Conn* c = edges_[i];
    if (!dirty_[i]) continue;
    const uint64_t second = phase_ == Phase::Committing ? dead_ : abortNotReady_;
    if (!sendNotice(c, epoch_, attempt_, kind, vts_, second, ranks_)) continue;
    dirty_[i] = 0;
    used_[i] = 1;
    moved = true;
  }
  return moved;
}

// Sent on every edge that can carry it: a silent path is left out, the flood reaches its far end
// through the others.
bool Agreement::allSent() const {
  for (size_t i = 0; i < active_; i++) {
    const Conn* c = edges_[i];
    if (dirty_[i] && c->state() == Conn::Live && !c->pathDown) return false;
  }
  return true;
}

// A word at a time: it is asked on every pump, and a set of 1024 ranks is 16 words.
bool Agreement::complete() const {
  const size_t full = size_t(nranks_) / 64;
  for (size_t i = 0; i < full; i++)
    if (ranks_[i] != ~0ull) return false;
  const int rest = nranks_ % 64;
  const uint64_t last = (1ull << rest) - 1;  // bits past the last rank (a peer's garbage) do not count
  return rest == 0 || (ranks_[full] & last) == last;
}

bool Agreement::pump() {
  if (ended()) return false;
  bool moved = false;
  for (Conn* c : edges_) {
    moved |= readEdge(c);
    if (ended()) return true;  // the pending attempt's abort
  }
  if (phase_ == Phase::Running) return moved;
  moved |= sendPending();
  if (!complete() || !allSent()) return moved;
  if (phase_ == Phase::Aborting) {
    phase_ = Phase::Aborted;
    return true;
  }
  // Committing: the last notices must have left this process, since a peer may still need them to
  // return and this rank may exit as soon as it does.
  for (size_t i = 0; i < edges_.size(); i++) {  // every edge: the plan's data too (a spare one's old bytes are no one's)
    Conn* c = edges_[i];
    if (i >= firstSpare_ && !used_[i]) continue;
    if (c->stagedSends && c->state() == Conn::Live && !c->pathDown && c->send.released() != c->send.published())
      return moved;
  }
  phase_ = Phase::Committed;
  return true;
}

std::string Agreement::missing() const {
  std::vector<int> m;
  for (int r = 0; r < nranks_ && m.size() < 8; r++)
    if (!((ranks_[r / 64] >> (r % 64)) & 1)) m.push_back(r);
  return m.empty() ? std::string("none") : fmt::format("{}", fmt::join(m, ","));
}

const Conn* Agreement::quietEdge() const {
  for (const Conn* c : edges_)
    if (!((ranks_[size_t(c->peer) / 64] >> (c->peer % 64)) & 1)) return c;
  return edges_.empty() ? nullptr : edges_[0];
}

}  // namespace preccl
