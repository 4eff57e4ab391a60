// Communicator lifecycle API: unique id, init (blocking, nonblocking, all-in-one-process), split, finalize,
// destroy, abort, queries.
#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "core/comm.h"
#include "core/debug.h"
#include "base/env.h"
#include "topo/net_if.h"
#include "core/unique_id.h"

using namespace preccl;

namespace {

// Fixed secret for PRECCL_COMM_ID jobs without PRECCL_SECRET: every rank must derive the same id.
constexpr uint8_t kDefaultSecret[kSecretBytes] = {'P', 'R', 'e', 'C', 'C', 'L', '-', 'c', 'o', 'm', 'm', '-', 'i', 'd', '0', '1'};

bool parseHexSecret(const std::string& hex, uint8_t* out) {
  if (hex.size() != 2 * kSecretBytes) return false;
  for (size_t i = 0; i < kSecretBytes; i++) {
    unsigned v;
    if (sscanf(hex.c_str() + 2 * i, "%2x", &v) != 1) return false;
    out[i] = static_cast<uint8_t>(v);
  }
  return true;
}

precclResult_t createRoot(precclUniqueId* id) {
  std::vector<NetIf> ifs = findInterfacesFromEnv(1);
  if (ifs.empty())
    return PRECCL_ERR(nullptr, precclSystemError, "GetUniqueId: no usable network interface for the bootstrap root");
  SockAddr a;
  a.ss = ifs[0].addr;
  a.len = ifs[0].addrLen;
  a.setPort(0);
  int fd = listenOn(&a);
  if (fd < 0) return PRECCL_ERR(nullptr, precclSystemError, "GetUniqueId: cannot listen on {}", ifs[0].name);
  uint8_t secret[kSecretBytes];
  randomBytes(secret, sizeof(secret));
  startBootstrapRoot(fd, secret);
  *id = encodeUniqueId(a, secret, 0);
  return precclSuccess;
}

}  // namespace

namespace preccl {

precclConfig_t inheritedConfig(const precclComm* parent) {
  precclConfig_t cfg = PRECCL_CONFIG_INITIALIZER;
  cfg.numVTs = parent->nVTs;
  return cfg;
}

precclResult_t commCreate(precclComm** out, int nranks, const precclUniqueId& id, int rank, precclConfig_t* config,
                          uint64_t joinSlackMs) {
  if (!out) return PRECCL_ERR(nullptr, precclInvalidArgument, "CommInitRank: comm pointer is NULL");
  *out = nullptr;
  if (nranks < 1) return PRECCL_ERR(nullptr, precclInvalidArgument, "CommInitRank: nranks={} must be >= 1", nranks);
  if (rank < 0 || rank >= nranks)
    return PRECCL_ERR(nullptr, precclInvalidArgument, "CommInitRank: rank {} is not in 0..{}", rank, nranks - 1);
  SockAddr root;
  uint8_t secret[kSecretBytes];
  uint32_t flags;
  if (!decodeUniqueId(id, &root, secret, &flags))
    return PRECCL_ERR(nullptr, precclInvalidArgument, "CommInitRank: the unique id is not a PReCCL id (bad magic or fields)");
  Config cfg;
  PRECCL_CHECK(resolveConfig(config, &cfg));
  auto* comm = new precclComm();
  comm->cfg = cfg;
  comm->joinSlackMs = joinSlackMs;
  registerComm(comm);
  *out = comm;
  if (cfg.blocking) {
    precclResult_t r = commInit(comm, nranks, id, rank);
    comm->initState.store(r);
    if (r != precclSuccess) {
      std::string msg = lastErrorText(comm);
      commFree(comm, true);
      *out = nullptr;
      return setError(nullptr, r, msg);
    }
    return precclSuccess;
  }
  comm->initThread = std::thread([comm, nranks, id, rank] {
    precclResult_t r = commInit(comm, nranks, id, rank);
    if (r != precclSuccess) comm->raiseAsync(r, lastErrorText(comm));
    comm->initState.store(r);
  });
  return precclInProgress;
}

}  // namespace preccl

extern "C" {

precclResult_t precclGetUniqueId(precclUniqueId* id) {
  if (!id) return PRECCL_ERR(nullptr, precclInvalidArgument, "GetUniqueId: id is NULL");
  std::string commId = envString("COMM_ID", "");
  if (commId.empty()) return createRoot(id);
  // NCCL_COMM_ID mode: the id is derived from the environment, the same on every rank; rank 0 hosts the root.
  SockAddr a;
  if (!parseSockAddr(commId, &a))
    return PRECCL_ERR(nullptr, precclInvalidArgument, "PRECCL_COMM_ID='{}' is not <ip>:<port>", commId);
  uint8_t secret[kSecretBytes];
  memcpy(secret, kDefaultSecret, kSecretBytes);
  std::string hex = envString("SECRET", "");
  if (!hex.empty() && !parseHexSecret(hex, secret))
    return PRECCL_ERR(nullptr, precclInvalidArgument, "PRECCL_SECRET must be {} hex digits", 2 * kSecretBytes);
  *id = encodeUniqueId(a, secret, kIdRootOnRank0);
  return precclSuccess;
}

precclResult_t precclCommInitRank(precclComm_t* comm, int nranks, precclUniqueId id, int rank) {
  return commCreate(comm, nranks, id, rank, nullptr);
}

precclResult_t precclCommInitRankConfig(precclComm_t* comm, int nranks, precclUniqueId id, int rank,
                                        precclConfig_t* config) {
  return commCreate(comm, nranks, id, rank, config);
}

precclResult_t precclCommInitRankScalable(precclComm_t* comm, int nranks, int rank, int nId,
                                          precclUniqueId* commIds, precclConfig_t* config) {
  if (nId < 1 || !commIds)
    return PRECCL_ERR(nullptr, precclInvalidArgument, "CommInitRankScalable: {} ids at {}", nId,
                      static_cast<void*>(commIds));
  for (int i = 1; i < nId; i++) {
    SockAddr a;
    uint8_t secret[kSecretBytes];
    uint32_t flags;
    if (!decodeUniqueId(commIds[i], &a, secret, &flags))
      return PRECCL_ERR(nullptr, precclInvalidArgument, "CommInitRankScalable: id {} is not a PReCCL id", i);
  }
  return commCreate(comm, nranks, commIds[0], rank, config);
}

precclResult_t precclCommInitAll(precclComm_t* comms, int ndev, const int* devlist) {
  if (!comms) return PRECCL_ERR(nullptr, precclInvalidArgument, "CommInitAll: comms is NULL");
  if (ndev < 1) return PRECCL_ERR(nullptr, precclInvalidArgument, "CommInitAll: ndev={} must be >= 1", ndev);
  precclUniqueId id;
  PRECCL_CHECK(precclGetUniqueId(&id));
  std::vector<precclResult_t> res(ndev);
  std::vector<std::string> errs(ndev);
  std::vector<std::thread> threads;
  for (int i = 0; i < ndev; i++)
    threads.emplace_back([&, i] {
      res[i] = commCreate(&comms[i], ndev, id, i, nullptr);
      if (res[i] != precclSuccess) errs[i] = lastErrorText(nullptr);
    });
  for (auto& t : threads) t.join();
  for (int i = 0; i < ndev; i++) {
    if (res[i] == precclSuccess) continue;
    for (int j = 0; j < ndev; j++)
      if (comms[j]) commFree(comms[j], true), comms[j] = nullptr;
    return setError(nullptr, res[i], errs[i]);
  }
  return precclSuccess;
}

precclResult_t precclCommSplit(precclComm_t comm, int color, int key, precclComm_t* newcomm, precclConfig_t* config) {
  PRECCL_CHECK(checkComm(comm, "CommSplit"));
  if (!newcomm) return PRECCL_ERR(comm, precclInvalidArgument, "CommSplit: newcomm is NULL");
  if (color < 0 && color != PRECCL_SPLIT_NOCOLOR)
    return PRECCL_ERR(comm, precclInvalidArgument, "CommSplit: color {} must be >= 0 or PRECCL_SPLIT_NOCOLOR", color);
  *newcomm = nullptr;
  const uint64_t deadline = nowNs() + comm->cfg.timeoutMs * 1000000ull;
  // Round 1: everyone's (color, key).
  int32_t ck[2] = {color, key};
  std::vector<uint8_t> all;
  PRECCL_CHECK(comm->bootstrap.allgather(comm, ck, sizeof(ck), &all, deadline));
  std::vector<std::pair<int, int>> members;  // (key, old rank) of my color
  int leader = -1;
  for (int r = 0; r < comm->nranks; r++) {
    int32_t c[2];
    memcpy(c, all.data() + r * sizeof(ck), sizeof(ck));
    if (color != PRECCL_SPLIT_NOCOLOR && c[0] == color) {
      members.push_back({c[1], r});
      if (leader < 0) leader = r;
    }
  }
  std::sort(members.begin(), members.end());
  // Round 2: the lowest old rank of each color creates the new root and publishes its id.
  precclUniqueId mine;
  memset(&mine, 0, sizeof(mine));
  if (leader == comm->rank) PRECCL_CHECK(createRoot(&mine));
  PRECCL_CHECK(comm->bootstrap.allgather(comm, &mine, sizeof(mine), &all, deadline));
  if (color == PRECCL_SPLIT_NOCOLOR) return precclSuccess;
  precclUniqueId id;
  memcpy(&id, all.data() + static_cast<size_t>(leader) * sizeof(id), sizeof(id));
  int newRank = 0;
  while (members[newRank].second != comm->rank) newRank++;
  precclConfig_t cfg = inheritedConfig(comm);
  if (!config) config = &cfg;
  return commCreate(newcomm, static_cast<int>(members.size()), id, newRank, config);
}

precclResult_t precclCommFinalize(precclComm_t comm) {
  if (isLiveComm(comm) && comm->initThread.joinable()) comm->initThread.join();
  PRECCL_CHECK(checkComm(comm, "CommFinalize"));
  if (comm->revoked.load())
    return PRECCL_ERR(comm, precclInvalidUsage, "CommFinalize: the communicator was revoked (destroy it)");
  // Work is synchronous per call or owned by a stream the user synchronises, and every call hands its
  // bytes to the kernel or to the peer's memory before it returns: nothing is left in flight here.
  std::lock_guard<std::mutex> lock(comm->execMutex);
  int e = comm->asyncError.load();
  return e == precclSuccess ? precclSuccess : static_cast<precclResult_t>(e);
}

precclResult_t precclCommDestroy(precclComm_t comm) {
  if (!comm) return PRECCL_ERR(nullptr, precclInvalidArgument, "CommDestroy: comm is NULL");
  if (!isLiveComm(comm))
    return PRECCL_ERR(nullptr, precclInvalidArgument, "CommDestroy: comm is not a live communicator");
  commFree(comm, false);
  return precclSuccess;
}

precclResult_t precclCommAbort(precclComm_t comm) {
  if (!comm) return precclSuccess;  // NCCL accepts NULL
  if (!isLiveComm(comm))
    return PRECCL_ERR(nullptr, precclInvalidArgument, "CommAbort: comm is not a live communicator");
  commFree(comm, true);
  return precclSuccess;
}

precclResult_t precclCommGetAsyncError(precclComm_t comm, precclResult_t* asyncError) {
  if (!isLiveComm(comm))
    return PRECCL_ERR(nullptr, precclInvalidArgument, "CommGetAsyncError: comm is not a live communicator");
  if (!asyncError) return PRECCL_ERR(comm, precclInvalidArgument, "CommGetAsyncError: asyncError is NULL");
  int st = comm->initState.load();
  int e = comm->asyncError.load();
  *asyncError = e != precclSuccess ? static_cast<precclResult_t>(e) : static_cast<precclResult_t>(st);
  return precclSuccess;
}

precclResult_t precclCommCount(const precclComm_t comm, int* count) {
  PRECCL_CHECK(checkComm(comm, "CommCount"));
  if (!count) return PRECCL_ERR(comm, precclInvalidArgument, "CommCount: count is NULL");
  *count = comm->nranks;
  return precclSuccess;
}

precclResult_t precclCommUserRank(const precclComm_t comm, int* rank) {
  PRECCL_CHECK(checkComm(comm, "CommUserRank"));
  if (!rank) return PRECCL_ERR(comm, precclInvalidArgument, "CommUserRank: rank is NULL");
  *rank = comm->rank;
  return precclSuccess;
}

}  // extern "C"
