// CommShrink and CommRevoke: how a job drops a dead rank and goes on (docs/failures.md, "Dropping a rank").
// The survivors agree on nothing over the network: the exclude list, the same on all of them, fixes the
// new ranks, the leader (the lowest survivor) and the new secret; the leader hosts the new bootstrap root on
// the listener it made at init, whose address every rank already holds.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/comm.h"
#include "core/debug.h"
#include "core/unique_id.h"

using namespace preccl;

namespace {

// The new communicator's secret: the parent's, mixed with the exclude list, so that ranks which disagree on
// the list cannot join one communicator (the root refuses them) and strangers cannot derive it.
void shrinkSecret(const uint8_t* parent, const std::vector<int>& excluded, uint8_t* out) {
  uint64_t h[2] = {1469598103934665603ull, 0x9e3779b97f4a7c15ull};
  auto mix = [&](uint8_t b) {
    for (uint64_t& x : h) {
      x ^= b;
      x *= 1099511628211ull;
    }
    h[1] ^= h[0] >> 29;
  };
  for (size_t i = 0; i < kSecretBytes; i++) mix(parent[i]);
  for (int r : excluded)
    for (int k = 0; k < 4; k++) mix(static_cast<uint8_t>(static_cast<uint32_t>(r) >> (8 * k)));
  memcpy(out, h, kSecretBytes);
}

}  // namespace

extern "C" {

precclResult_t precclCommShrink(precclComm_t comm, int* excludeRanks, int excludeCount, precclComm_t* newcomm,
                                precclConfig_t* config, int shrinkFlags) {
  PRECCL_CHECK(checkComm(comm, "CommShrink"));
  if (!newcomm) return PRECCL_ERR(comm, precclInvalidArgument, "CommShrink: newcomm is NULL");
  *newcomm = nullptr;
  if (shrinkFlags != PRECCL_SHRINK_DEFAULT && shrinkFlags != PRECCL_SHRINK_ABORT)
    return PRECCL_ERR(comm, precclInvalidArgument, "CommShrink: unknown flags {:#x}", shrinkFlags);
  if (excludeCount < 0 || (excludeCount > 0 && !excludeRanks))
    return PRECCL_ERR(comm, precclInvalidArgument, "CommShrink: {} excluded ranks at {}", excludeCount,
                      static_cast<void*>(excludeRanks));
  std::vector<int> excluded(excludeRanks, excludeRanks + excludeCount);
  std::sort(excluded.begin(), excluded.end());
  for (size_t i = 0; i < excluded.size(); i++) {
    if (excluded[i] < 0 || excluded[i] >= comm->nranks)
      return PRECCL_ERR(comm, precclInvalidArgument, "CommShrink: excluded rank {} is not in 0..{}", excluded[i],
                        comm->nranks - 1);
    if (i > 0 && excluded[i] == excluded[i - 1])
      return PRECCL_ERR(comm, precclInvalidArgument, "CommShrink: rank {} is excluded twice", excluded[i]);
  }
  if (std::binary_search(excluded.begin(), excluded.end(), comm->rank))
    return PRECCL_ERR(comm, precclInvalidArgument, "CommShrink: rank {} excludes itself (only survivors call it)",
                      comm->rank);
  if (comm->shrunk)
    return PRECCL_ERR(comm, precclInvalidUsage,
                      "CommShrink: this communicator was shrunk already (shrink the new one instead)");
  comm->shrunk = true;
  if (shrinkFlags == PRECCL_SHRINK_ABORT) commQuiesce(comm, true);

  int leader = 0, newRank = 0;
  while (std::binary_search(excluded.begin(), excluded.end(), leader)) leader++;
  for (int r = 0; r < comm->rank; r++)
    if (!std::binary_search(excluded.begin(), excluded.end(), r)) newRank++;
  uint8_t secret[kSecretBytes];
  shrinkSecret(comm->secret, excluded, secret);
  if (comm->rank == leader) {
    startBootstrapRoot(comm->shrinkListenFd, secret);  // the root's thread owns the listener now
    comm->shrinkListenFd = -1;
  }
  SockAddr root;
  root.ss = comm->infos[leader].shrinkRoot;
  root.len = root.ss.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  precclConfig_t cfg = inheritedConfig(comm);
  PRECCL_INFO("rank {}: shrinking {} ranks to {} (leader rank {}), rank {} in the new communicator", comm->rank,
              comm->nranks, comm->nranks - excludeCount, leader, newRank);
  const precclResult_t r = commCreate(newcomm, comm->nranks - excludeCount, encodeUniqueId(root, secret, 0), newRank,
                                      config ? config : &cfg, comm->cfg.timeoutMs);
  // The parent may hold an older error of its own, which GetLastError(parent) would answer with.
  if (r != precclSuccess && r != precclInProgress) return PRECCL_ERR(comm, r, "CommShrink: {}", lastErrorText(nullptr));
  return r;
}

precclResult_t precclCommRevoke(precclComm_t comm, int revokeFlags) {
  PRECCL_CHECK(checkComm(comm, "CommRevoke"));
  if (revokeFlags != PRECCL_REVOKE_DEFAULT)
    return PRECCL_ERR(comm, precclInvalidArgument, "CommRevoke: flags {:#x} must be PRECCL_REVOKE_DEFAULT",
                      revokeFlags);
  comm->revoked.store(true);
  commQuiesce(comm, true);
  // Quiescent: as in NCCL, the state reads success again, so that Split and Shrink may follow.
  comm->asyncError.store(precclSuccess);
  return precclSuccess;
}

}  // extern "C"
