// How the ranks end one attempt of a CCT together (docs/failures.md, "Agree"): it commits when every rank
// has finished its tasks, or aborts with the union of every rank's failed VTs. Both are floods of a set of
// ranks over the attempt's edges, as control slots in the edges' own FIFOs behind the data: a rank
// forwards its set whenever it grows, and ends when the set holds every rank.
//   commit: the set of ranks known to have finished. A rank returns only when every rank finished, so no
//           rank returns success while a peer may still need, in a retry, input that only it holds.
//           A commit also carries the dead paths committing ranks found (setSuspects).
//   abort:  the set of ranks whose report is in, with the union of their failed VTs. Every report is fixed
//           when its rank joins, so the union is the same on every rank once the set is complete.
// A rank that has sent a commit never starts an abort (it only joins one), so an attempt that commits
// anywhere aborts nowhere.
// The flood's graph decides its latency: a commit goes along the dissemination pattern (noticeGraph), so
// that it ends ceil(log2 n) hops after the last rank finished; an abort goes on every edge.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "exec/slot_rules.h"
#include "transport/fifo.h"

namespace preccl {

// The last attempt this rank committed, as its final notice had it (the whole set), kept for a peer that
// is still committing it: that peer's notices from this rank went on a path that died after they left,
// and this rank has moved on. Agreement::dropStale sends it this notice again on the edge its own
// notice came by, which is alive.
struct CommitRecord {
  uint64_t epoch = ~0ull;
  uint32_t attempt = 0;
  uint64_t vts = 0, dead = 0;
  std::vector<uint64_t> ranks;
  // As the task code reads it (exec/slot_rules.h commitNeedsAnswer).
  LastCommit view() const { return LastCommit{epoch, attempt, ranks.data(), uint32_t(ranks.size())}; }
};

// Where one rank's commit notices go and come from, as ring positions: pos + 2^k out and pos - 2^k in,
// for 2^k < n, each peer once (out first), never pos itself. Every position reaches every other along
// `out` edges in at most ceil(log2 n) hops (the distance's binary digits), where the ring's neighbours
// took n/2; a rank sends at most ceil(log2 n) notices each time its set grows.
struct NoticeGraph {
  std::vector<int> out, in;
};
NoticeGraph noticeGraph(int pos, int n);
// The dissemination barrier's schedule for the `out` edges of `order[pos]`: edge k (pos + 2^k) gets this
// rank's commit once it has heard from ring positions pos - 2^k + 1 .. pos, as bit sets of ranks. Sent
// so, once each, every rank hears from every rank in ceil(log2 n) hops with one notice per edge, where
// a flood that sends again on every edge whenever its set grows sends ceil(log2 n) times as many.
std::vector<std::vector<uint64_t>> commitSchedule(int pos, const std::vector<int>& order);

class Agreement {
 public:
  // PendingAborted: an abort of the pending attempt (DeferredCommit) came; this attempt is given up
  // unended, and the rank joins that abort (its notice stays at the head of the FIFO for it).
  enum class Phase { Running, Committing, Aborting, Committed, Aborted, PendingAborted };
  // `edges`: where notices come from (each once); commits go to the first `narrow` of them (one VT's
  // noticeGraph().out edges: every collective commits, so the flood is kept small) until widen(), aborts
  // to all.
  // `dropStale`: slots of older attempts may be queued (the communicator aborted before) and are dropped
  // unread.
  // The last `spare` edges belong to masked VTs: notices use them only once sent everywhere (an abort,
  // or after widen()), as the way round when every live VT's path died.
  // `schedule` (commitSchedule, one per narrow edge; null: none; it must outlive the agreement, as the
  // communicator's NoticeEdges do): a commit goes to narrow edge i once,
  // when the set holds schedule[i], instead of again whenever the set grows. A widened flood, an abort
  // and a commit that carries dead paths (setSuspects) flood as before: a rank that already sent its
  // scheduled notices must still pass a dead path on to the ranks that wait.
  // `defer`: whether this attempt's commit is deferred, and the pending one (exec/slot_rules.h). A deferred
  // attempt never commits: its runner ends it when the tasks are done. Either way an abort of this attempt
  // also drops the next epoch's slots of the same attempt, which ranks sent that went ahead of a deferred
  // commit: they give that attempt up with this one.
  Agreement(int rank, int nranks, uint64_t epoch, uint32_t attempt, std::vector<Conn*> edges, size_t narrow,
            bool dropStale, size_t spare = 0, const CommitRecord* last = nullptr,
            const std::vector<std::vector<uint64_t>>* schedule = nullptr, const DeferredCommit& defer = {});

  Phase phase() const { return phase_; }
  bool ended() const { return phase_ == Phase::Committed || phase_ == Phase::Aborted || phase_ == Phase::PendingAborted; }
  // What this rank would report if it joined an abort now (its failed VTs); kept up to date by the caller.
  // A committing rank that finds a dead path cannot start an abort, but a peer may wait for bytes lost on
  // it: its commits carry the VTs (`dead`, flooded like the set), and a rank still running that sees them
  // starts the abort. That is safe: while a rank runs, no rank can have returned.
  void setSuspects(uint64_t vts);
  // This rank's tasks are done: Running -> Committing. `report`: VTs this rank cannot take back yet (the
  // commit ends with the union of every rank's).
  void finish(uint64_t report);
  // This rank's masked VTs that it cannot take back yet (core/probe.h), kept current by the caller. An
  // abort carries it, fixed when this rank joins, so that when every live VT failed the ranks can agree
  // on masked ones to retry on instead (notReadyVts).
  void setNotReady(uint64_t vts) { notReady_ = vts; }
  // This rank gives the attempt up: Running -> Aborting, reporting its suspects and `also`.
  void abort(uint64_t also = 0);
  // A task stopped at a notice at c's head that ends the attempt (Adv::Abort): this attempt's abort (read by
  // pump()), the next epoch's that a deferred attempt gives way to (its VTs join this rank's report), or
  // the pending attempt's (pump() ends this one: PendingAborted).
  void abortAt(Conn* c);
  // The VTs this rank knows have failed: its suspects, and while aborting the union heard so far, while
  // committing the dead paths committing ranks found. What it reports when it gives this attempt up for
  // the pending one's abort.
  uint64_t failedSeen() const;
  // Sends on every edge from now on (a path of the narrow set died: the flood must go around it).
  void widen();
  // A commit that waits long sends on edges_[0, upTo) too (the dissemination edges both ways), as a flood:
  // only a sender sees a dead path, and a notice this rank waits for may have been lost on a path that
  // died after its sender returned. Sending back on that path lets this rank find it dead and widen, and
  // a peer that moved on answers a notice it gets (dropStale). A straggler's wait costs a flood on
  // 2 ceil(log2 n) edges, where widen() would flood every edge of the plan.
  void reachBack(size_t upTo);
  // Reads the notices queued on the edges (while running, also behind data, for an abort), drops the
  // slots an abort made stale, sends the set where it changed, and ends the phase when it can. Returns
  // whether anything moved.
  bool pump();
  // Once ended, the union of every rank's report: Aborted, the VTs that failed; Committed, the masked VTs
  // that some rank cannot take back yet.
  uint64_t agreedVts() const { return vts_; }
  // Once Aborted, the union of every rank's masked VTs that it cannot take back yet.
  uint64_t notReadyVts() const { return abortNotReady_; }
  const std::vector<Conn*>& edges() const { return edges_; }
  // Once Committed: what the next CCT's agreement answers peers still committing this one with.
  CommitRecord record() const { return CommitRecord{epoch_, attempt_, vts_, dead_, ranks_}; }
  // Drops the slot at c's head, which `droppable` said may go; a commit notice of the attempt this rank
  // last committed, from a rank that found dead paths and whose set is not whole, is answered first with
  // that attempt's final notice.
  void dropStale(Conn* c);
  // For messages: the ranks not yet in the set, and the edge that would bring news of them (one to a
  // missing rank if there is one, else the first edge notices come from).
  std::string missing() const;
  const Conn* quietEdge() const;

  // While a lanes runner's tasks hold the FIFO ends (exec/lane_runner.h): whether an abort of this
  // attempt, or a commit naming dead paths, is queued on some edge (what pump() would find while running),
  // read from the FIFOs' counters and headers without taking anything. The runner then stops its lanes and
  // aborts.
  bool peek() const;

 private:
  bool same(const SlotHdr& h) const { return h.epoch == epoch_ && h.attempt == attempt_; }
  bool merge(const SlotHdr& h, const char* body);  // true if the set grew
  void markAll();
  bool readEdge(Conn* c);
  bool sendPending();
  bool allSent() const;
  bool complete() const;
  bool holds(const std::vector<uint64_t>& ranks) const;
  void unschedule();

  int rank_, nranks_;
  uint64_t epoch_;
  uint32_t attempt_;
  std::vector<Conn*> edges_;
  std::vector<char> dirty_;  // per edge: the set changed since it was last sent there
  std::vector<char> used_;   // per edge: a notice was sent there
  size_t firstSpare_;
  size_t active_;            // notices go to edges_[0, active_)
  bool dropStale_;
  Phase phase_ = Phase::Running;
  uint64_t suspects_ = 0;
  uint64_t vts_ = 0;
  uint64_t dead_ = 0;  // committing: the dead paths committing ranks found
  uint64_t notReady_ = ~0ull, abortNotReady_ = ~0ull;
  std::vector<uint64_t> ranks_;
  const CommitRecord* last_;
  const std::vector<std::vector<uint64_t>>* schedule_;  // null once the commit floods
  DeferredCommit defer_;
};

}  // namespace preccl
