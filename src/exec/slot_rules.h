// What a reader makes of a slot at a FIFO's head that is not its attempt's data (docs/failures.md,
// "Agree"): the task code (exec/task.h, on the host and in kernels) and the agreement (exec/agreement.h)
// apply the same rules. A notice's body: two masks (16 bytes), then the set of ranks, a bit each.
#pragma once
#include <cstdint>
#include <cstring>

#include "base/hd.h"
#include "transport/fifo.h"

namespace preccl {

constexpr size_t kNoticeHead = 16;

// The order of slots in time. An attempt is the number of aborts the communicator had agreed on when it
// started (the same on every rank), so it never goes back, while a retry goes back to the epoch it gave up
// and a deferred commit's abort (DeferredCommit) gives up the epoch after it too: attempt first, then epoch.
// Older slots belong to an attempt that was given up, or to an earlier call.
PRECCL_HD inline bool olderSlot(const SlotHdr& h, uint64_t epoch, uint32_t attempt) {
  return h.attempt < attempt || (h.attempt == attempt && h.epoch < epoch);
}

// What a reader skips at a FIFO's head: the notices of ended attempts (a flood leaves some unread where
// its rank had already heard enough), probes, and the data of aborted attempts (`dropStale`: the
// communicator aborted one before, so such data may be queued).
PRECCL_HD inline bool droppableSlot(const SlotHdr& h, uint64_t epoch, uint32_t attempt, bool dropStale) {
  return h.kind == kSlotProbe || (olderSlot(h, epoch, attempt) && (h.kind != kSlotData || dropStale));
}

// An abort notice of this attempt: the ranks are giving it up.
PRECCL_HD inline bool abortNotice(const SlotHdr& h, uint64_t epoch, uint32_t attempt) {
  return h.kind == kSlotAbort && h.epoch == epoch && h.attempt == attempt;
}

// A rank's deferred commits (docs/failures.md, "Deferred commits"). An attempt whose commit is deferred
// ends when this rank's tasks are done, keeping the call's input, and the next collective settles it: every
// rank must have finished it to take part in that one. Until then it is pending, and two kinds of notice
// cross the boundary between the two calls:
//   deferred  this attempt is such a one (epoch e): a rank already in epoch e + 1 that gives its attempt up
//             (an abort, or a commit naming dead paths) may have found the path that bytes of epoch e were
//             lost on, so a rank still running epoch e gives e up instead;
//   pending   this rank finished (pendingEpoch, pendingAttempt) and runs a later call: an abort of it ends
//             this attempt, since a peer still needs this rank's part of the pending one again.
constexpr uint64_t kNoPending = ~0ull;
struct DeferredCommit {
  bool deferred = false;
  uint64_t pendingEpoch = kNoPending;
  uint32_t pendingAttempt = 0;
};

// A notice of the next epoch's attempt that gives it up, for a deferred attempt still running (the kinds
// that end a running attempt, exec/agreement.h: an abort, or a commit naming dead paths; `dead` is its
// second mask).
PRECCL_HD inline bool nextEpochAlarm(const SlotHdr& h, uint64_t epoch, uint32_t attempt, uint64_t dead) {
  return h.epoch == epoch + 1 && h.attempt == attempt && (h.kind == kSlotAbort || (h.kind == kSlotCommit && dead != 0));
}

// An abort notice of the pending attempt.
PRECCL_HD inline bool pendingAbort(const SlotHdr& h, const DeferredCommit& d) {
  return h.kind == kSlotAbort && d.pendingEpoch != kNoPending && h.epoch == d.pendingEpoch && h.attempt == d.pendingAttempt;
}

// The second mask of a notice (a commit's: the dead paths its committing ranks found).
PRECCL_HD inline uint64_t noticeDead(const SlotHdr& h, const char* body) {
  uint64_t v = 0;
  if (h.bytes >= kNoticeHead) memcpy(&v, body + 8, 8);
  return v;
}

// The last attempt this rank committed, as its final notice had it.
struct LastCommit {
  uint64_t epoch = ~0ull;
  uint32_t attempt = 0;
  const uint64_t* ranks = nullptr;  // `words` words, a bit per rank
  uint32_t words = 0;
};

// A commit notice of the attempt this rank committed last, from a rank that found dead paths and whose set
// is not whole: its notices from this rank may have been lost on such a path, and this rank has moved on.
// The reader answers it with that attempt's final notice before dropping it (Agreement::dropStale).
PRECCL_HD inline bool commitNeedsAnswer(const SlotHdr& h, const char* body, const LastCommit& last) {
  if (!last.ranks || h.kind != kSlotCommit || h.epoch != last.epoch || h.attempt != last.attempt ||
      h.bytes < kNoticeHead + 8 * last.words || noticeDead(h, body) == 0)
    return false;
  for (uint32_t i = 0; i < last.words; i++) {
    uint64_t v;
    memcpy(&v, body + kNoticeHead + 8 * i, 8);
    if ((v | last.ranks[i]) != v) return true;
  }
  return false;
}

}  // namespace preccl
