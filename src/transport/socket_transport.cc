#include "transport/socket_transport.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <tuple>

#include "base/log.h"
#include "policy/detect.h"
#include "transport/auth_accept.h"
#include "transport/conn_hello.h"
#include "transport/socket.h"

namespace preccl {

namespace {

SockAddr nicAddr(const RankInfo& info, int nic) {
  SockAddr a;
  memcpy(&a.ss, &info.nicAddr[nic], sizeof(sockaddr_storage));
  a.len = a.ss.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  return a;
}

// How a socket edge travels, for messages: this rank's NIC and the peer's.
std::string socketPath(const TransportSetup& s, int peer, int vt, int far) {
  auto nic = [&](int r) {
    const int k = s.topo->nicFor(r, vt);
    return fmt::format("{} {}", (*s.infos)[r].nicName[k], nicAddr((*s.infos)[r], k).host());
  };
  return fmt::format("NIC {} -> {}{}", nic(s.rank), nic(peer), far < 0 ? "" : fmt::format(" (relay for rank {})", far));
}

struct EdgeKey {
  int peer, vt, far;
  bool operator<(const EdgeKey& o) const { return std::tie(peer, vt, far) < std::tie(o.peer, o.vt, o.far); }
};

// Every socket edge of this rank: one per (peer on another host, VT), and under rail affinity the relay
// edges (Conn::far), from a rail's relay on one host to every rank on the others, one per rank it relays for.
std::vector<EdgeKey> socketEdges(const TransportSetup& s) {
  const Topology& t = *s.topo;
  const int me = s.rank;
  std::vector<EdgeKey> e;
  for (int peer = 0; peer < s.nranks; peer++) {
    if (peer == me || t.useShm(me, peer)) continue;
    for (int v = 0; v < s.nVTs; v++) e.push_back({peer, v, -1});
  }
  if (!t.rail) return e;
  for (int x = 0; x < s.nranks; x++)
    for (int v = 0; v < s.nVTs; v++) {
      const int m = t.relayFor(x, v);
      if (m == x) continue;
      if (m == me) {
        for (int y = 0; y < s.nranks; y++)
          if (!t.sameHost(y, me)) e.push_back({y, v, x});
      } else if (!t.sameHost(x, me)) {
        e.push_back({m, v, x});
      }
    }
  return e;
}

}  // namespace

SocketTransport::SocketTransport(int fixedBufferBytes, std::function<void()> threadInit)
    : fixedBufferBytes_(fixedBufferBytes), threadInit_(std::move(threadInit)) {}

SocketTransport::~SocketTransport() {
  stop();
  for (int& fd : listenFds_) closeFd(fd);
}

precclResult_t SocketTransport::listen(const std::vector<NetIf>& nics, RankInfo* mine, std::string* err) {
  for (size_t k = 0; k < nics.size(); k++) {
    SockAddr a;
    a.ss = nics[k].addr;
    a.len = nics[k].addrLen;
    a.setPort(0);
    int fd = listenOn(&a);
    if (fd < 0) {
      *err = fmt::format("cannot listen on {} ({})", nics[k].name, a.str());
      return precclSystemError;
    }
    listenFds_.push_back(fd);
    memcpy(&mine->nicAddr[k], &a.ss, sizeof(sockaddr_storage));
    snprintf(mine->nicName[k], sizeof(mine->nicName[k]), "%s", nics[k].name.c_str());
  }
  return precclSuccess;
}

void SocketTransport::prepare(int fd, int rank) const {
  // Both ends: an accepted socket does not inherit it, and Nagle's wait for an acknowledgement that the
  // peer delays holds back every frame smaller than a segment (small pieces, header-only slots).
  setNoDelay(fd);
  if (fixedBufferBytes_ > 0) {
    const int got = setSocketBuffers(fd, fixedBufferBytes_);
    if (got < 2 * fixedBufferBytes_)
      PRECCL_INFO("rank {}: a data socket's buffer is {} B, not {} B (net.core.rmem_max, wmem_max)", rank, got,
                  2 * fixedBufferBytes_);
  }
}

precclResult_t SocketTransport::add(const TransportSetup& s, ConnTable& table, int fd, int peer, int vt, int far) {
  prepare(fd, s.rank);
  auto c = std::make_unique<Conn>();
  c->peer = peer;
  c->vt = vt;
  c->far = far;
  c->nic = s.topo->nicFor(s.rank, vt);
  c->path = socketPath(s, peer, vt, far);
  c->owner = this;
  c->stagedSends = true;
  if (!proxy_) proxy_ = std::make_unique<Proxy>(s.bell);
  proxy_->add(fd, c.get(), s.nslots, s.slotBytes);
  Socket sock;
  sock.conn = c.get();
  sock.fd = fd;
  socks_.emplace_back(vt, sock);
  table.put(std::move(c));
  return precclSuccess;
}

precclResult_t SocketTransport::connect(const TransportSetup& s, ConnTable& table, std::string* err) {
  const Topology& t = *s.topo;
  hostOf_ = t.hostOf;
  const int me = s.rank;
  auto closeListeners = [&] {
    for (int& fd : listenFds_) closeFd(fd);
    listenFds_.clear();
  };
  // Lower rank connects, higher accepts: the listen backlog completes connects, so no ordering deadlock.
  int expected[kMaxNics] = {};
  std::set<EdgeKey> accepts;
  for (const EdgeKey& k : socketEdges(s)) {
    const int peer = k.peer, v = k.vt;
    if (peer < me) {
      expected[t.nicFor(me, v)]++;
      accepts.insert(k);
      continue;
    }
    const SockAddr local = nicAddr((*s.infos)[me], t.nicFor(me, v));
    const SockAddr remote = nicAddr((*s.infos)[peer], t.nicFor(peer, v));
    int fd = connectTo(remote, &local, s.deadlineNs);
    ConnHello h{};
    memcpy(h.secret, s.secret, kSecretBytes);
    h.magic = kConnMagic;
    h.src = me;
    h.dst = peer;
    h.vt = v;
    h.far = k.far;
    h.commHash = s.commHash;
    h.maskEpoch = 0;
    if (fd < 0 || !sendAll(fd, &h, sizeof(h), s.deadlineNs)) {
      if (fd >= 0) ::close(fd);
      closeListeners();
      *err = fmt::format("rank {}: cannot connect VT {} to rank {} at {} from {}", me, v, peer, remote.str(), local.str());
      return precclSystemError;
    }
    add(s, table, fd, peer, v, k.far);
  }
  for (size_t k = 0; k < listenFds_.size(); k++) {
    AuthAcceptor acceptor(listenFds_[k], s.secret, sizeof(ConnHello));
    while (expected[k] > 0) {
      std::vector<uint8_t> raw;
      int fd = acceptor.next(&raw, s.deadlineNs);
      if (fd < 0) {
        *err = fmt::format("rank {}: {} connection(s) from lower ranks never arrived on NIC {}", me, expected[k], k);
        closeListeners();
        return precclRemoteError;
      }
      ConnHello h;
      memcpy(&h, raw.data(), sizeof(h));
      bool ok = h.magic == kConnMagic && h.dst == me && h.commHash == s.commHash && h.maskEpoch == 0 &&
                accepts.count(EdgeKey{h.src, h.vt, h.far}) != 0 && !table.has(h.src, h.vt, h.far);
      if (!ok) {
        PRECCL_WARN("rank {}: refused a data connection with a bad header (src {}, vt {}, far {})", me, h.src, h.vt, h.far);
        ::close(fd);
        continue;
      }
      add(s, table, fd, h.src, h.vt, h.far);
      expected[k]--;
    }
  }
  if (!proxy_) {
    closeListeners();
    return precclSuccess;
  }
  // The listeners stay open for the fresh connections of masked VTs.
  auto redialer = std::make_unique<Redialer>(me, s.commHash, s.secret, std::move(listenFds_));
  listenFds_.clear();
  for (auto& [vt, sock] : socks_) {
    const Conn& c = *sock.conn;
    redialer->addEdge(sock.conn, c.peer > me, nicAddr((*s.infos)[me], t.nicFor(me, vt)),
                      nicAddr((*s.infos)[c.peer], t.nicFor(c.peer, vt)));
  }
  proxy_->enableRedial(std::move(redialer), [this, me](int fd) { prepare(fd, me); });
  return precclSuccess;
}

precclResult_t SocketTransport::start(std::string* err) {
  if (!proxy_) return precclSuccess;
  if (!proxy_->start(err, threadInit_)) return precclSystemError;
  return precclSuccess;
}

void SocketTransport::stop() {
  if (proxy_) proxy_->stop();
}

void SocketTransport::close(uint64_t lingerNs, const std::function<bool(const Conn&)>& needed) {
  if (proxy_) proxy_->close(lingerNs, needed);
}

int SocketTransport::fdOf(const Conn& c) const { return proxy_ ? proxy_->fdOf(&c) : -1; }

void SocketTransport::redial(Conn& c, uint64_t maskEpoch) {
  if (proxy_ && proxy_->redialer()) proxy_->redialer()->want(&c, maskEpoch);
}

void SocketTransport::driving(bool on) {
  if (proxy_) proxy_->driving(on);
}

bool SocketTransport::drive(Conn& c) { return proxy_ && proxy_->drive(&c); }

// The edge runs on the connection made for its VT's latest masking, the proxy handed every slot to the
// kernel, and the kernel's send queue (unsent and unacknowledged bytes) is empty.
bool SocketTransport::pathClear(Conn& c) {
  if (proxy_ && proxy_->redialer() && !proxy_->redialer()->settled(&c)) return false;
  const int fd = fdOf(c);
  int queued = -1;
  return c.state() == Conn::Live && c.send.released() == c.send.published() && fd >= 0 &&
         ioctl(fd, TIOCOUTQ, &queued) == 0 && queued == 0;
}

// Whether another socket between this rank's NIC `nic` and the host of `peer` had an acknowledgement
// within `ms`: then the path between the two NICs delivers, and an edge on it that went silent is one
// flow starved in a crowded queue (its retransmissions dropped, its timer backed off), not a dead path.
bool SocketTransport::pathAnswers(const Conn& c, uint32_t ms) const {
  for (const auto& [vt, sock] : socks_) {
    const Conn& o = *sock.conn;
    if (&o == &c || o.nic != c.nic || o.state() != Conn::Live || hostOf_.empty() ||
        hostOf_[size_t(o.peer)] != hostOf_[size_t(c.peer)])
      continue;
    tcp_info ti{};
    socklen_t len = sizeof(ti);
    const int fd = fdOf(o);
    if (fd >= 0 && getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 && ti.tcpi_last_ack_recv < ms) return true;
  }
  return false;
}

void SocketTransport::checkPath(Conn& c, uint32_t detectMs) {
  const int fd = fdOf(c);
  tcp_info ti{};
  socklen_t len = sizeof(ti);
  if (fd < 0 || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0) return;
  int queued = 0;
  if (ioctl(fd, TIOCOUTQ, &queued) != 0) queued = 0;
  PathSample p;
  p.unacked = ti.tcpi_unacked;
  p.timeouts = ti.tcpi_retransmits;
  p.msSinceAck = ti.tcpi_last_ack_recv;
  p.probes = ti.tcpi_probes;
  p.queued = static_cast<uint32_t>(std::max(queued, 0));
  c.pathDown = pathDead(p, detectMs) && !pathAnswers(c, detectMs);
  if (c.pathDown)
    c.pathWhy = fmt::format(
        "no acknowledgement for {} ms with {} segments outstanding after {} retransmission timeouts, {} B queued after {} "
        "unanswered window probes",
        p.msSinceAck, p.unacked, p.timeouts, p.queued, p.probes);
}

void SocketTransport::forEachSocket(int vt, const std::function<void(Socket&)>& fn) {
  for (auto& [v, sock] : socks_) {
    if (v != vt) continue;
    // A fresh connection (redial.h) starts with the kernel's autotuning, like the first.
    const int fd = fdOf(*sock.conn);
    if (fd != sock.fd) sock = Socket{sock.conn, fd};
    fn(sock);
  }
}

}  // namespace preccl
