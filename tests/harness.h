// Multi-process test harness: forks one process per rank, gives every rank the same unique id, and
// collects each rank's failure messages through a pipe so the parent (the Catch2 process) can turn them
// into Catch2 failures. Catch2 macros are never used in the forked children.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "preccl/preccl.h"

namespace ptest {

using Env = std::vector<std::pair<std::string, std::string>>;

enum class Transport { Shm, Socket };
// The environment every local test uses: loopback, PRECCL_TIMEOUT=20, allocation digest on.
// nvts = 0 keeps the library's default VT count; algo = nullptr keeps its default algorithm.
Env localEnv(Transport t, int nvts = 0, const char* algo = nullptr);
const char* transportName(Transport t);

// Memory shared by the parent and all ranks of one group (MAP_SHARED, set up before the forks).
struct Shared {
  volatile int idReady;       // rank 0 published `id`
  volatile int go;            // parent released the gate (GroupOptions::gateInit)
  precclUniqueId id;
  volatile int barrierCount;  // ranks' cross-process barrier
  volatile int barrierGen;
  volatile int64_t stamp[16];  // free slots for tests (e.g. the kill time, CLOCK_MONOTONIC ns)
  volatile int failed;         // failures reported by any rank so far (a parent acting during the run stops)
};

// The view a forked rank has of itself.
class Rank {
 public:
  int rank = 0;
  int nranks = 1;
  precclComm_t comm = nullptr;
  Shared* shared = nullptr;

  // Report a failure (sent to the parent; after kMaxMessages only counted).
  void fail(const std::string& what);
  void info(const std::string& what);
  bool check(bool ok, const std::string& what) {
    if (!ok) fail(what);
    return ok;
  }
  // Checks that a call returned precclSuccess; on error reports it with the last error message.
  bool ok(precclResult_t r, const std::string& what);
  int failures() const { return failures_; }
  // A copy for a sub-communicator or a thread: same pipe, own counters; absorb() folds them back.
  Rank view(precclComm_t c) const {
    Rank v = *this;
    v.comm = c;
    v.failures_ = v.sent_ = 0;
    return v;
  }
  void absorb(const Rank& v) {
    failures_ += v.failures_;
    sent_ += v.sent_;
  }
  // Cross-process barrier over the group's ranks, bounded by `seconds` (reports a failure on timeout).
  bool barrier(double seconds = 60);

  static constexpr int kMaxMessages = 25;
  int fd_ = -1;  // write end of the pipe to the parent
 private:
  void send(char kind, const std::string& what);
  int failures_ = 0;
  int sent_ = 0;
};

struct GroupOptions {
  Env env;                                  // set in each child before anything else
  std::function<Env(int rank)> rankEnv;     // per-rank additions (optional)
  bool initComm = true;                     // false: the body gets comm == nullptr and no id exchange
  bool destroyComm = true;                  // CommDestroy after the body (skipped when the body nulls comm)
  double timeoutSec = 180;                  // the parent kills every rank after this
  std::function<void(int rank)> beforeInit; // in the child, after env, before GetUniqueId (e.g. setns)
  bool gateInit = false;                    // ranks > 0 wait for `go` before CommInitRank
  // Runs in the parent once rank 0 published the id; must set shared->go when gateInit is used.
  std::function<void(Shared*)> parentDuringRun;
};

struct RankOutcome {
  bool exited = false;   // exited normally (see exitCode) rather than by a signal
  int exitCode = -1;
  int signal = 0;
};

struct GroupResult {
  std::vector<std::string> failures;  // "rank r: message"
  std::vector<std::string> infos;
  std::vector<RankOutcome> ranks;
  bool timedOut = false;
  double seconds = 0;
};

GroupResult runGroup(int nranks, const GroupOptions& opt, const std::function<void(Rank&)>& body);

// Turns a group's outcome into Catch2 results: one failure per message, a failure for a timeout and
// for every rank that did not exit 0 (unless `allowAbnormal` says that rank may die).
void reportToCatch(const std::string& title, const GroupResult& g,
                   const std::function<bool(int rank)>& allowAbnormal = nullptr);

double nowSeconds();   // CLOCK_MONOTONIC
int64_t nowNs();

// The message of the last error, never null (for failure messages).
std::string lastError(precclComm_t comm);

// From precclCommGetVtStats after the last call (failures reported through the rank): the share of its
// allocation on the VTs of NIC `nic`, and the bytes this rank forwarded for another rank (every VT).
double nicShare(Rank& r, int nic);
uint64_t lastRelayedBytes(Rank& r);
std::string resultName(precclResult_t r);

}  // namespace ptest
