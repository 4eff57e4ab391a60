// Communicator construction: bootstrap exchange, topology, shared-memory and socket connections for every
// (peer, VT) edge, then the proxy thread. Every step is bounded by the init deadline.
#include <errno.h>
#include <unistd.h>

#include <cstring>

#include "base/clock.h"
#include "core/comm.h"
#include "core/debug.h"
#include "base/env.h"
#include "topo/host_id.h"
#include "topo/locality.h"
#include "core/trace.h"
#include "topo/net_if.h"
#include "core/socket_buffers.h"
#include "core/unique_id.h"
#include "transport/auth_accept.h"

namespace preccl {

namespace {

constexpr uint64_t kMs = 1000000ull;
uint64_t hashSecret(const uint8_t* s) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < kSecretBytes; i++) {
    h ^= s[i];
    h *= 1099511628211ull;
  }
  return h;
}

precclResult_t barrier(precclComm* comm, uint64_t deadline) {
  uint8_t b = 0;
  std::vector<uint8_t> all;
  return comm->bootstrap.allgather(comm, &b, 1, &all, deadline);
}

// Connects every edge: shared memory to the peers on this host, sockets to the others, then starts the
// socket transport's proxy thread.
precclResult_t connectTransports(precclComm* comm, uint64_t deadline) {
  TransportSetup s;
  s.rank = comm->rank;
  s.nranks = comm->nranks;
  s.nVTs = comm->nVTs;
  s.nslots = comm->nslots;
  s.slotBytes = comm->slotBytes;
  s.topo = &comm->topo;
  s.infos = &comm->infos;
  s.secret = comm->secret;
  s.commHash = comm->commHash;
  s.deadlineNs = deadline;
  s.barrier = [comm, deadline] { return barrier(comm, deadline); };
  std::string err;
  comm->shm = std::make_unique<ShmTransport>();
  precclResult_t res = comm->shm->connect(s, comm->conns, &err);
  if (res != precclSuccess) return PRECCL_ERR(comm, res, "{}", err);
  if (Bell* b = comm->shm->bell()) comm->bell = b;
  s.bell = comm->bell;
  res = comm->net->connect(s, comm->conns, &err);
  if (res == precclSuccess) res = comm->net->start(&err);
  if (res != precclSuccess) return PRECCL_ERR(comm, res, "{}", err);
  return precclSuccess;
}

// The device executor (gpu/gpu_exec.h) registers the edges' FIFO memory now, before any kernel of this
// process runs: a registration made while kernels run may wait for them, and they for this rank.
precclResult_t pinForDevice(precclComm* comm) {
  const DeviceExecutor& d = deviceExecutor();
  if (!d.pin) return precclSuccess;
  std::string err;
  comm->conns.find([&](const Conn& c) {
    for (const Fifo* f : {&c.send.fifo(), &c.recv.fifo()})
      if (f->ctrl && err.empty()) err = d.pin(*f);
    return !err.empty();
  });
  if (!err.empty()) return PRECCL_ERR(comm, precclUnhandledCudaError, "registering the FIFOs with CUDA: {}", err);
  return precclSuccess;
}

}  // namespace

precclResult_t commInit(precclComm* comm, int nranks, const precclUniqueId& id, int rank) {
  SockAddr root;
  uint32_t flags = 0;
  if (!decodeUniqueId(id, &root, comm->secret, &flags))
    return PRECCL_ERR(comm, precclInvalidArgument, "CommInitRank: the unique id is not a PReCCL id (bad magic or fields)");
  comm->rank = rank;
  comm->nranks = nranks;
  comm->commHash = hashSecret(comm->secret);
  const uint64_t deadline = nowNs() + (comm->cfg.timeoutMs + comm->joinSlackMs) * kMs;

  if ((flags & kIdRootOnRank0) && rank == 0) {
    SockAddr at = root;
    int fd = listenOn(&at);
    if (fd < 0)
      return PRECCL_ERR(comm, precclSystemError, "rank 0: cannot listen on PRECCL_COMM_ID address {}: {}", root.str(),
                        strerror(errno));
    startBootstrapRoot(fd, comm->secret);
  }

  std::vector<NetIf> nics = findInterfacesFromEnv(kMaxNics);
  if (nics.empty())
    return PRECCL_ERR(comm, precclSystemError, "rank {}: no usable network interface (PRECCL_SOCKET_IFNAME='{}')", rank,
                      envString("SOCKET_IFNAME", ""));
  RankInfo mine{};
  std::string hostId = hostIdentity();
  mine.hostHash = hostHash(hostId);
  randomBytes(&mine.nonce, sizeof(mine.nonce));
  snprintf(mine.hostId, sizeof(mine.hostId), "%s", hostId.c_str());
  mine.pid = getpid();
  mine.nNics = static_cast<int>(nics.size());
  mine.nVTs = comm->cfg.nVTs > 0 ? comm->cfg.nVTs : std::min(kMaxVTs, 2 * mine.nNics);
  mine.shmDisable = comm->cfg.shmDisable;
  mine.railAffinity = comm->cfg.railAffinity;
  mine.relay = static_cast<int32_t>(comm->cfg.relay);
  mine.nslots = comm->cfg.nslots;
  mine.slotBytes = comm->cfg.slotBytes;
  std::vector<std::string> nicNames;
  for (auto& nic : nics) nicNames.push_back(nic.name);
  mine.nearNics = comm->cfg.railAffinity ? nicsNearCaller(nicNames) : 0;  // read only where it is used
  const int fixedBuffer = comm->cfg.socketBuffer > 0 ? static_cast<int>(comm->cfg.socketBuffer) : 0;
  comm->net = std::make_unique<SocketTransport>(fixedBuffer, [nicNames] { bindThreadNearNics(nicNames); });
  SockAddr shrinkAt;
  shrinkAt.ss = nics[0].addr;
  shrinkAt.len = nics[0].addrLen;
  shrinkAt.setPort(0);
  comm->shrinkListenFd = listenOn(&shrinkAt);
  if (comm->shrinkListenFd < 0)
    return PRECCL_ERR(comm, precclSystemError, "rank {}: cannot listen on {}: {}", rank, nics[0].name, strerror(errno));
  mine.shrinkRoot = shrinkAt.ss;
  std::string err;
  if (comm->net->listen(nics, &mine, &err) != precclSuccess)
    return PRECCL_ERR(comm, precclSystemError, "rank {}: {}", rank, err);

  std::vector<uint8_t> all;
  precclResult_t res = comm->bootstrap.init(comm, root, comm->secret, rank, nranks, &mine, sizeof(mine), &all, deadline);
  if (res != precclSuccess) return res;
  comm->infos.resize(nranks);
  memcpy(comm->infos.data(), all.data(), all.size());
  bool shmDisable = false, railAffinity = true;
  comm->nVTs = kMaxVTs;
  comm->nslots = kMaxSlots;
  comm->slotBytes = SIZE_MAX;
  for (auto& info : comm->infos) {
    comm->nVTs = std::min(comm->nVTs, static_cast<int>(info.nVTs));
    comm->nslots = std::min(comm->nslots, info.nslots);
    comm->slotBytes = std::min<size_t>(comm->slotBytes, info.slotBytes);
    shmDisable |= info.shmDisable != 0;
    railAffinity &= info.railAffinity != 0;
  }
  comm->relay = static_cast<RelayMode>(comm->infos[0].relay);
  comm->topo.build(comm->infos, rank, shmDisable, comm->nVTs, railAffinity);
  comm->conns.resize(nranks, comm->nVTs);
  comm->vtStats.assign(comm->nVTs, VtCounters{});
  comm->liveMask = comm->nVTs >= 64 ? ~0ull : (1ull << comm->nVTs) - 1;
  comm->vtStateEpoch.assign(comm->nVTs, 0);
  // VTs that share a NIC on every host share its bandwidth: the policy treats them as one link.
  comm->policy.vtGroup.assign(comm->nVTs, -1);
  if (comm->topo.sharedNics > 0)
    for (int v = 0; v < comm->nVTs; v++) comm->policy.vtGroup[v] = v % comm->topo.sharedNics;

  res = connectTransports(comm, deadline);
  if (res == precclSuccess) res = pinForDevice(comm);
  if (res == precclSuccess) res = barrier(comm, deadline);
  if (res != precclSuccess) return res;
  traceOpen(comm);
  if (rank == 0) PRECCL_INFO("machine: {}", machineSummary());
  // commName (precclConfig_t) labels the communicator in logs, as NCCL's does.
  PRECCL_INFO("{}rank {}/{}: {} host(s), {} NIC(s) here ({}...), {} VTs, slots {}x{} B{}{}",
              comm->cfg.commName.empty() ? std::string() : comm->cfg.commName + ": ", rank, nranks,
              comm->topo.nHosts(), nics.size(), nics[0].name, comm->nVTs, comm->nslots, comm->slotBytes,
              shmDisable ? ", shared memory disabled" : "",
              comm->topo.rail ? fmt::format(", rail affinity: owns NICs {:#x} (near its CPUs: {:#x})",
                                            comm->topo.ownedNics[rank], mine.nearNics)
                              : std::string());
  return precclSuccess;
}

}  // namespace preccl
