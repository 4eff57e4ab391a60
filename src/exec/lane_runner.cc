#include "exec/lane_runner.h"

#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "exec/attempt.h"
#include "exec/host_lanes.h"
#include "exec/lane_loop.h"

namespace preccl {

namespace {

constexpr uint64_t kLookNs = 100000000ull;  // how often the edges get a look, as the host runner's

// The lanes' own FIFO ends: copies of the edges', taken before the lanes start and settled back when they
// stop, so that the host's side of an edge (the agreement, the probes) always finds it as the lanes left it.
struct LaneEnds {
  std::vector<FifoProducer> send;
  std::vector<FifoConsumer> recv;
  std::vector<FifoProducer*> sendAt;
  std::vector<FifoConsumer*> recvAt;
  explicit LaneEnds(const Bound& b) : send(b.conns.size()), recv(b.conns.size()), sendAt(b.conns.size()), recvAt(b.conns.size()) {
    for (size_t i = 0; i < b.conns.size(); i++) sendAt[i] = &send[i], recvAt[i] = &recv[i];
  }
  void take(const Bound& b) {
    for (size_t i = 0; i < b.conns.size(); i++) send[i] = b.conns[i]->send, recv[i] = b.conns[i]->recv;
  }
  void settle(const Bound& b) {
    for (size_t i = 0; i < b.conns.size(); i++) {
      if (b.sends[i]) b.conns[i]->send = send[i];
      if (b.recvs[i]) b.conns[i]->recv = recv[i];
    }
  }
};

// How the watch ended.
struct Watched {
  precclResult_t err = precclSuccess;  // the communicator's abort, a broken edge, the watchdog
  bool abortNow = false;               // the attempt must be aborted (a dead path, an abort queued here)
};

// Watches the lanes until none runs, stopping them for what the host sees.
Watched watch(const ExecCtx& ctx, Attempt& a, LaneLauncher& lanes, const Run& run) {
  Watched w;
  bool stopping = false;
  auto stop = [&] {
    lanes.stop();
    stopping = true;
  };
  uint64_t lastLookNs = nowNs(), lastMoveNs = lastLookNs, moves = ~0ull;
  while (lanes.running()) {
    if (stopping) continue;
    const TaskRun* ts = lanes.tasks(run);
    uint64_t m = 0;
    for (int i = 0; i < run.ntasks; i++) {
      const int32_t end = hostVisibleLoad(&ts[i].end);
      // One task cannot go on without the host: the others need not wait it out.
      if (end != 0 && end != int32_t(Adv::Done)) stop();
      m += hostVisibleLoad(&ts[i].moves);
    }
    if (stopping) continue;
    const uint64_t now = nowNs();
    if (m != moves) moves = m, lastMoveNs = now;
    if (ctx.abort->load()) {
      w.err = a.aborted();
      stop();
    } else if (a.peek()) {
      w.abortNow = true;
      stop();
    } else if (now - lastLookNs > kLookNs) {
      lastLookNs = now;
      if ((w.err = a.look(&w.abortNow)) != precclSuccess || w.abortNow) stop();
    } else if (now - lastMoveNs > ctx.timeoutNs) {
      w.err = a.timedOut();
      stop();
    }
  }
  return w;
}

// CPU threads as lanes, one per task (HostLanes), sleeping on the rank's bell when nothing moves.
struct ThreadLanes : HostLanes {
  Bell* bell;
  uint32_t seen = 0;
  explicit ThreadLanes(Bell* b) : bell(b) {}
  void arm() { seen = bell->seq.load(std::memory_order_seq_cst); }
  void relax(int idle) const {
    if (idle < 64) return;
    if (idle < 96) sched_yield();
    else bellWait(bell, seen, 1000);
  }
  // A finished task may be what a later one of its VT waits for (Task::after).
  template <class End> void ended(End a) const {
    if (a == Adv::Done) bellRing(bell);
  }
};

class ThreadLauncher : public LaneLauncher {
 public:
  explicit ThreadLauncher(Bell* bell) : bell_(bell) {}
  ~ThreadLauncher() override { join(); }
  std::string start(const Run& run) override {
    hostVisibleStore(&stop_, 0);
    {
      // Counted before any lane starts: a lane that ends at once must find itself counted.
      std::lock_guard<std::mutex> g(m_);
      running_ = 0;
      for (int i = 0; i < run.ntasks; i++) running_ += run.task[i].end == 0;
    }
    for (int i = 0; i < run.ntasks; i++) {
      if (run.task[i].end != 0) continue;
      threads_.emplace_back([this, &run, i] {
        ThreadLanes lanes(bell_);
        laneLoop(lanes, run, i, &stop_);
        std::lock_guard<std::mutex> g(m_);
        running_--;
        cv_.notify_one();
      });
    }
    return "";
  }
  bool running() override {
    std::unique_lock<std::mutex> lk(m_);
    if (running_ > 0) cv_.wait_for(lk, std::chrono::milliseconds(1));
    return running_ > 0;
  }
  void stop() override {
    hostVisibleStore(&stop_, 1);
    bellRing(bell_);
  }
  std::string collect(const Run&) override {
    join();
    return "";
  }
  const TaskRun* tasks(const Run& run) override { return run.task; }

 private:
  void join() {
    for (auto& t : threads_) t.join();
    threads_.clear();
  }
  Bell* bell_;
  int stop_ = 0;
  std::mutex m_;
  std::condition_variable cv_;
  int running_ = 0;
  std::vector<std::thread> threads_;
};

}  // namespace

precclResult_t runWithLanes(const ExecCtx& ctx, const Plan& plan, const Bound& b, LaneLauncher& lanes, RunOut* out,
                            ExecFault* fault) {
  Attempt a(ctx, plan, b, fault);
  LaneEnds ends(b);
  Run run = a.run();
  run.send = ends.sendAt.data();
  run.recv = ends.recvAt.data();
  precclResult_t res = precclSuccess;
  for (;;) {
    ends.take(b);
    if (std::string why = lanes.start(run); !why.empty()) {
      fault->code = res = lanes.failure();
      fault->what = fmt::format("rank {}: starting the CCT's lanes: {}", ctx.rank, why);
      break;
    }
    const Watched w = watch(ctx, a, lanes, run);
    const std::string lost = lanes.collect(run);
    ends.settle(b);
    if (!lost.empty()) {
      fault->code = res = lanes.failure();
      fault->what = fmt::format("rank {}: reading the CCT's lanes back: {}", ctx.rank, lost);
      break;
    }
    if ((res = w.err) != precclSuccess) break;
    int at = -1;  // a task that stopped at something the host must do
    for (int i = 0; i < run.ntasks && at < 0; i++)
      if (run.task[i].end > int32_t(Adv::Done)) at = i;
    if (at >= 0 && run.task[at].end == int32_t(Adv::BadSlot)) {
      res = a.badSlot(at);
      break;
    }
    if (at >= 0 && run.task[at].end == int32_t(Adv::Answer)) {
      a.agreement().dropStale(b.conns[size_t(run.task[at].waitEdge)]);
      for (int i = 0; i < run.ntasks; i++)
        if (run.task[i].end != int32_t(Adv::Done)) run.task[i].end = 0;  // they go on where they were
      continue;
    }
    if (w.abortNow || at >= 0) a.agreement().abort();  // at: an abort notice at a task's input
    res = a.loop(false);
    break;
  }
  a.results(out);
  return res;
}

precclResult_t runLanes(const ExecCtx& ctx, const Plan& plan, const Bound& b, RunOut* out, ExecFault* fault) {
  ThreadLauncher lanes(ctx.bell);
  return runWithLanes(ctx, plan, b, lanes, out, fault);
}

}  // namespace preccl
