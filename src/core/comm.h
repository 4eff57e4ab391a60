// The communicator: identity, settings, topology, connections and the state that outlives one CCT
// (epoch counter, per-VT telemetry, user reduction ops, errors).
#pragma once
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/bootstrap.h"
#include "core/config.h"
#include "core/deferred.h"
#include "core/run_attempt.h"
#include "topo/topology.h"
#include "exec/executor.h"
#include "reduce/reduce.h"
#include "policy/allocation.h"
#include "policy/policy.h"
#include "policy/telemetry.h"
#include "preccl/preccl.h"
#include "transport/shm_transport.h"
#include "transport/socket_transport.h"
#include "transport/transport.h"

namespace preccl {

// A buffer the user registered (CommRegister) or made a window of (CommWindowRegister). On the CPU build
// it changes nothing in how bytes move: its address is the handle, kept so that it can be checked and
// given back.
struct Registration {
  int winFlags = -1;  // -1: a CommRegister handle; otherwise a window's flags
};

struct UserOp {
  bool live = false;
  precclDataType_t dtype = precclFloat;
  RedOp op;
};

}  // namespace preccl

struct precclComm {
  int rank = -1;
  int nranks = 0;
  uint8_t secret[preccl::kSecretBytes] = {};
  uint64_t commHash = 0;
  preccl::Config cfg;
  preccl::Bootstrap bootstrap;
  preccl::Topology topo;
  std::vector<preccl::RankInfo> infos;
  int nVTs = 0;
  preccl::RelayMode relay = preccl::RelayMode::Auto;  // rank 0's PRECCL_RELAY (with topo.rail)
  uint32_t nslots = 0;
  size_t slotBytes = 0;

  // Every (peer, VT) edge, and the transports that connect and move them (destroyed before the table).
  preccl::ConnTable conns;
  std::unique_ptr<preccl::ShmTransport> shm;
  std::unique_ptr<preccl::SocketTransport> net;
  preccl::Bell heapBell;
  preccl::Bell* bell = &heapBell;  // this rank's executor sleeps here (in its shared memory when it has local peers)

  // Execution state. One CCT at a time runs on a communicator.
  std::mutex execMutex;
  uint64_t epoch = 0;  // number of collectives completed
  std::vector<preccl::VtCounters> vtStats;
  // Telemetry (docs/telemetry.md): this rank's records of its last collective, waiting to ride on the next
  // one, and the newest epoch whose records every rank holds identically.
  uint64_t pendingEpoch = preccl::kNoTeleEpoch;
  std::vector<preccl::VtRecord> pendingRec;
  // Per VT and rank: whose records of pendingEpoch may be other than zero (Plan::senders of that CCT;
  // empty: every rank's).
  std::vector<std::vector<char>> pendingSenders;
  // In-place AlltoAll stages its input here, and so do in-place reductions when a retry may need their
  // input (kept across calls: grown, never shrunk, freed with the comm).
  std::unique_ptr<char, void (*)(void*)> staging{nullptr, free};
  size_t stagingBytes = 0;
  // Partial failures (docs/failures.md): the VTs not masked (bit v = VT v), how many attempts were
  // aborted on this communicator, and since when every abort named every live VT (0: not so).
  uint64_t liveMask = ~0ull;
  uint64_t aborts = 0;
  preccl::CommitRecord lastCommit;  // the last attempt committed (exec/agreement.h)
  preccl::PendingCct pending;       // the call whose commit is deferred (core/deferred.h)
  preccl::KeptBuffer kept[2];       // its kept input, and the next deferred call's
  preccl::KeptBuffer keptOut;       // where it writes when it runs again after it returned
  preccl::CallState call;           // the current call's decision, plan, binding and run (core/cct.cc)
  preccl::NoticeEdges notice;       // the agreement's edges for noticeMask (core/run_attempt.cc)
  uint64_t noticeMask = 0;
  bool noticeBuilt = false;
  uint64_t noVtLeftSinceNs = 0;
  std::vector<uint64_t> vtStateEpoch;  // per VT: the epoch its live/masked state last changed at
  preccl::EpochTelemetry tele;
  bool haveTele = false;
  preccl::PolicyState policy;
  // What the socket buffers were last sized from (core/socket_buffers.cc): (model version, flows per VT).
  // Nothing else moves them, so a call that changes neither skips the sizing.
  uint64_t buffersModelVersion = ~0ull;
  int buffersFlows = 0;
  int traceFd = -1;  // PRECCL_TRACE
  // The last collective's time in the policy (model update and allocation) and in execution, on this
  // rank: the control path's own cost against the call's, for the trace (docs/telemetry.md, Cost);
  // measured only while tracing.
  uint64_t lastDecideNs = 0, lastPlanNs = 0, lastExecNs = 0;
  uint32_t lastAttempts = 1;  // runs of the last collective: 1 + its retries after agreed aborts
  std::vector<preccl::UserOp> userOps;
  std::mutex opsMutex;
  // CommRegister handles and CommWindowRegister windows not yet given back (core/api_mem.cc), under opsMutex.
  std::vector<std::unique_ptr<preccl::Registration>> registrations;

  // Errors and abort.
  std::atomic<int> abortFlag{0};
  std::atomic<int> asyncError{precclSuccess};
  std::mutex errMutex;
  std::string lastError;  // under errMutex: set by raiseAsync, which any thread may call

  // CommShrink: the listener this rank would host the new communicator's bootstrap root on, made at
  // init so that the survivors know it without asking anyone (a dead rank may have hosted the old root).
  int shrinkListenFd = -1;
  bool shrunk = false;
  // How much later than this rank the others may start init: for a shrunk communicator, the watchdog's
  // bound, since a survivor may learn of the loss that much later than another (0 for a plain init).
  uint64_t joinSlackMs = 0;
  // CommRevoke: no more calls, only Split, Shrink, Destroy and Abort.
  std::atomic<bool> revoked{false};

  // Nonblocking init.
  std::atomic<int> initState{precclInProgress};
  std::thread initThread;

  void raiseAsync(precclResult_t code, const std::string& msg);
  std::string errorText();  // lastError, read under its lock
};

namespace preccl {
// Every communicator the library created and has not destroyed. A destroyed (freed) pointer is found
// out without reading its memory.
void registerComm(precclComm* comm);
bool isLiveComm(const precclComm* comm);
// A usable communicator pointer (not null, not destroyed, init finished); otherwise an error result.
precclResult_t checkComm(precclComm* comm, const char* fn);
precclResult_t commInit(precclComm* comm, int nranks, const precclUniqueId& id, int rank);
// The whole of CommInitRankConfig: checks, config, then commInit (blocking, or on its own thread).
precclResult_t commCreate(precclComm** out, int nranks, const precclUniqueId& id, int rank, precclConfig_t* config,
                          uint64_t joinSlackMs = 0);
// A config for a communicator made from `parent` (Split, Shrink without a config): the parent's VT count.
precclConfig_t inheritedConfig(const precclComm* parent);
// Returns when no CCT runs on comm; with `abort`, the calls in flight see the abort flag and return first.
void commQuiesce(precclComm* comm, bool abort);
void commFree(precclComm* comm, bool abort);
}  // namespace preccl
