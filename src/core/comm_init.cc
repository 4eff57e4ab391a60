// Communicator construction: bootstrap exchange, topology, shared-memory and socket connections for every
// (peer, VT) edge, then the proxy thread. Every step is bounded by the init deadline.
#include <errno.h>
#include <unistd.h>

#include <cstring>

#include "core/comm.h"
#include "core/debug.h"
#include "core/env.h"
#include "core/host_id.h"
#include "core/locality.h"
#include "core/trace.h"
#include "core/net_if.h"
#include "core/socket_buffers.h"
#include "core/unique_id.h"
#include "transport/auth_accept.h"

namespace preccl {

namespace {

constexpr uint64_t kMs = 1000000ull;
constexpr uint32_t kConnMagic = 0x4e4e4f43;  // "CONN"

// First bytes on every data socket: proves the secret and names the edge.
struct ConnHello {
  uint8_t secret[kSecretBytes];
  uint32_t magic;
  int32_t src;
  int32_t dst;
  int32_t vt;
  uint64_t commHash;
};

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

precclResult_t setupShm(precclComm* comm, uint64_t deadline) {
  const Topology& t = comm->topo;
  const auto& local = t.hostRanks[t.hostOf[comm->rank]];
  bool any = false;
  for (int r : local) any |= r != comm->rank && t.useShm(comm->rank, r);
  if (!any) {  // keep the same number of bootstrap rounds on every rank
    PRECCL_CHECK(barrier(comm, deadline));
    return barrier(comm, deadline);
  }

  ShmLayout lay{static_cast<uint32_t>(local.size()), static_cast<uint32_t>(comm->nVTs), comm->nslots, comm->slotBytes};
  auto name = [&](int r) { return fmt::format("/preccl-{:016x}-{:x}-r{}", comm->commHash, comm->infos[0].nonce, r); };
  std::string err;
  comm->shmOwn = std::make_unique<ShmSegment>();
  if (!comm->shmOwn->create(name(comm->rank), lay.totalBytes(), &err))
    return PRECCL_ERR(comm, precclSystemError, "rank {}: shared memory: {}", comm->rank, err);
  ShmHeader* hdr = new (comm->shmOwn->header()) ShmHeader();
  hdr->magic = kShmMagic;
  hdr->pid = getpid();
  comm->bell = &hdr->bell;
  for (uint32_t j = 0; j < lay.nLocal; j++)
    for (int v = 0; v < comm->nVTs; v++) new (comm->shmOwn->base() + lay.fifoOffset(j, v)) FifoCtrl();
  PRECCL_CHECK(barrier(comm, deadline));  // every segment exists

  comm->shmPeer.resize(comm->nranks);
  const uint32_t me = t.localIdx[comm->rank];
  for (int r : local) {
    if (r == comm->rank) continue;
    auto seg = std::make_unique<ShmSegment>();
    if (!seg->open(name(r), lay.totalBytes(), &err))
      return PRECCL_ERR(comm, precclSystemError, "rank {}: shared memory of rank {}: {}", comm->rank, r, err);
    Bell* peerBell = &seg->header()->bell;
    const uint32_t pj = t.localIdx[r];
    for (int v = 0; v < comm->nVTs; v++) {
      auto c = std::make_unique<Conn>();
      c->peer = r;
      c->vt = v;
      c->path = "shared memory";
      c->send.attach(seg->base() + lay.fifoOffset(me, v), comm->nslots, comm->slotBytes);
      c->sendConsumer.bell = peerBell;
      c->recv.attach(comm->shmOwn->base() + lay.fifoOffset(pj, v), comm->nslots, comm->slotBytes);
      c->recvProducer.bell = peerBell;
      comm->conns[r][v] = std::move(c);
    }
    comm->shmPeer[r] = std::move(seg);
  }
  PRECCL_CHECK(barrier(comm, deadline));  // every segment is mapped by everyone who needs it
  comm->shmOwn->unlinkName();
  return precclSuccess;
}

// How a socket edge travels, for messages: this rank's NIC and the peer's.
std::string socketPath(const precclComm* comm, int peer, int vt) {
  auto nic = [&](int r) {
    const int k = comm->topo.nicFor(r, vt);
    SockAddr a;
    memcpy(&a.ss, &comm->infos[r].nicAddr[k], sizeof(sockaddr_storage));
    return fmt::format("{} {}", comm->infos[r].nicName[k], a.host());
  };
  return fmt::format("NIC {} -> {}", nic(comm->rank), nic(peer));
}

precclResult_t setupSockets(precclComm* comm, const std::vector<int>& listenFds,
                            const std::vector<std::string>& nicNames, uint64_t deadline) {
  const Topology& t = comm->topo;
  const int me = comm->rank;
  comm->proxy = std::make_unique<Proxy>(comm->bell, [comm](const std::string& msg) {
    comm->raiseAsync(precclRemoteError, fmt::format("rank {}: {}", comm->rank, msg));
  });
  // Lower rank connects, higher accepts: the listen backlog completes connects, so no ordering deadlock.
  int expected[kMaxNics] = {};
  for (int peer = 0; peer < comm->nranks; peer++) {
    if (peer == me || t.useShm(me, peer)) continue;
    for (int v = 0; v < comm->nVTs; v++) {
      if (peer < me) {
        expected[t.nicFor(me, v)]++;
        continue;
      }
      SockAddr local, remote;
      const RankInfo& mi = comm->infos[me];
      const RankInfo& pi = comm->infos[peer];
      int ln = t.nicFor(me, v), rn = t.nicFor(peer, v);
      memcpy(&local.ss, &mi.nicAddr[ln], sizeof(sockaddr_storage));
      local.len = local.ss.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
      memcpy(&remote.ss, &pi.nicAddr[rn], sizeof(sockaddr_storage));
      remote.len = remote.ss.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
      int fd = connectTo(remote, &local, deadline);
      ConnHello h{};
      memcpy(h.secret, comm->secret, kSecretBytes);
      h.magic = kConnMagic;
      h.src = me;
      h.dst = peer;
      h.vt = v;
      h.commHash = comm->commHash;
      if (fd < 0 || !sendAll(fd, &h, sizeof(h), deadline)) {
        if (fd >= 0) close(fd);
        return PRECCL_ERR(comm, precclSystemError, "rank {}: cannot connect VT {} to rank {} at {} from {}", me, v, peer,
                          remote.str(), local.str());
      }
      fixSocketBuffers(comm, fd);
      auto c = std::make_unique<Conn>();
      c->peer = peer;
      c->vt = v;
      c->path = socketPath(comm, peer, v);
      comm->proxy->add(fd, c.get(), comm->nslots, comm->slotBytes);
      comm->conns[peer][v] = std::move(c);
    }
  }
  for (size_t k = 0; k < listenFds.size(); k++) {
    AuthAcceptor acceptor(listenFds[k], comm->secret, sizeof(ConnHello));
    while (expected[k] > 0) {
      std::vector<uint8_t> raw;
      int fd = acceptor.next(&raw, deadline);
      if (fd < 0)
        return PRECCL_ERR(comm, precclRemoteError, "rank {}: {} connection(s) from lower ranks never arrived on NIC {}", me,
                          expected[k], k);
      ConnHello h;
      memcpy(&h, raw.data(), sizeof(h));
      bool ok = h.magic == kConnMagic && h.dst == me && h.src >= 0 && h.src < me && h.vt >= 0 &&
                h.vt < comm->nVTs && h.commHash == comm->commHash && !t.useShm(me, h.src) &&
                !comm->conns[h.src][h.vt];
      if (!ok) {
        PRECCL_WARN("rank {}: refused a data connection with a bad header (src {}, vt {})", me, h.src, h.vt);
        close(fd);
        continue;
      }
      fixSocketBuffers(comm, fd);
      auto c = std::make_unique<Conn>();
      c->peer = h.src;
      c->vt = h.vt;
      c->path = socketPath(comm, h.src, h.vt);
      comm->proxy->add(fd, c.get(), comm->nslots, comm->slotBytes);
      comm->conns[h.src][h.vt] = std::move(c);
      expected[k]--;
    }
  }
  std::string err;
  if (comm->proxy->empty()) {
    comm->proxy.reset();
  } else if (!comm->proxy->start(&err, [nics = nicNames] { bindThreadNearNics(nics); })) {
    return PRECCL_ERR(comm, precclSystemError, "rank {}: proxy: {}", me, err);
  }
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
  const uint64_t deadline = nowNs() + comm->cfg.timeoutMs * kMs;

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
  mine.nslots = comm->cfg.nslots;
  mine.slotBytes = comm->cfg.slotBytes;
  std::vector<int> listenFds;
  auto closeListeners = [&] {
    for (int& fd : listenFds) closeFd(fd);
  };
  for (size_t k = 0; k < nics.size(); k++) {
    SockAddr a;
    a.ss = nics[k].addr;
    a.len = nics[k].addrLen;
    a.setPort(0);
    int fd = listenOn(&a);
    if (fd < 0) {
      closeListeners();
      return PRECCL_ERR(comm, precclSystemError, "rank {}: cannot listen on {} ({})", rank, nics[k].name, a.str());
    }
    listenFds.push_back(fd);
    memcpy(&mine.nicAddr[k], &a.ss, sizeof(sockaddr_storage));
    snprintf(mine.nicName[k], sizeof(mine.nicName[k]), "%s", nics[k].name.c_str());
  }

  std::vector<uint8_t> all;
  precclResult_t res = comm->bootstrap.init(comm, root, comm->secret, rank, nranks, &mine, sizeof(mine), &all, deadline);
  if (res != precclSuccess) {
    closeListeners();
    return res;
  }
  comm->infos.resize(nranks);
  memcpy(comm->infos.data(), all.data(), all.size());
  bool shmDisable = false;
  comm->nVTs = kMaxVTs;
  comm->nslots = kMaxSlots;
  comm->slotBytes = SIZE_MAX;
  for (auto& info : comm->infos) {
    comm->nVTs = std::min(comm->nVTs, static_cast<int>(info.nVTs));
    comm->nslots = std::min(comm->nslots, info.nslots);
    comm->slotBytes = std::min<size_t>(comm->slotBytes, info.slotBytes);
    shmDisable |= info.shmDisable != 0;
  }
  comm->topo.build(comm->infos, rank, shmDisable, comm->nVTs);
  comm->conns.resize(nranks);
  for (auto& row : comm->conns) row.resize(comm->nVTs);
  comm->vtStats.assign(comm->nVTs, VtCounters{});
  // VTs that share a NIC on every host share its bandwidth: the policy treats them as one link.
  comm->policy.vtGroup.assign(comm->nVTs, -1);
  if (comm->topo.sharedNics > 0)
    for (int v = 0; v < comm->nVTs; v++) comm->policy.vtGroup[v] = v % comm->topo.sharedNics;

  res = setupShm(comm, deadline);
  std::vector<std::string> nicNames;
  for (auto& nic : nics) nicNames.push_back(nic.name);
  if (res == precclSuccess) res = setupSockets(comm, listenFds, nicNames, deadline);
  closeListeners();
  if (res == precclSuccess) res = barrier(comm, deadline);
  if (res != precclSuccess) return res;
  traceOpen(comm);
  if (rank == 0) PRECCL_INFO("machine: {}", machineSummary());
  // commName (precclConfig_t) labels the communicator in logs, as NCCL's does.
  PRECCL_INFO("{}rank {}/{}: {} host(s), {} NIC(s) here ({}...), {} VTs, slots {}x{} B{}",
              comm->cfg.commName.empty() ? std::string() : comm->cfg.commName + ": ", rank, nranks,
              comm->topo.nHosts(), nics.size(), nics[0].name, comm->nVTs, comm->nslots, comm->slotBytes,
              shmDisable ? ", shared memory disabled" : "");
  return precclSuccess;
}

}  // namespace preccl
