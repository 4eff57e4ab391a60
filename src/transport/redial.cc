#include "transport/redial.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "base/clock.h"
#include "base/log.h"
#include "transport/fifo.h"

namespace preccl {

// A fresh connection whose peer has not masked its VT yet waits this long for it; the ranks agree on the
// masking within one call, so only a connection from a rank that then died waits this long.
static constexpr uint64_t kParkNs = 30'000'000'000ull;

Redialer::Redialer(int rank, uint64_t commHash, const uint8_t* secret, std::vector<int> listenFds)
    : rank_(rank), commHash_(commHash), listenFds_(std::move(listenFds)) {
  memcpy(secret_, secret, kSecretBytes);
  for (int fd : listenFds_) acceptors_.push_back(std::make_unique<AuthAcceptor>(fd, secret_, sizeof(ConnHello)));
}

Redialer::~Redialer() {
  acceptors_.clear();
  for (auto& e : edges_) closeFd(e->fd);
  for (auto& p : parked_) closeFd(p.fd);
  for (int& fd : listenFds_) closeFd(fd);
}

void Redialer::addEdge(Conn* conn, bool dials, const SockAddr& local, const SockAddr& remote) {
  auto e = std::make_unique<Edge>();
  e->conn = conn;
  e->dials = dials;
  e->local = local;
  e->local.setPort(0);
  e->remote = remote;
  edges_.push_back(std::move(e));
}

Redialer::Edge* Redialer::find(const Conn* conn) const {
  for (auto& e : edges_)
    if (e->conn == conn) return e.get();
  return nullptr;
}

Redialer::Edge* Redialer::find(int peer, int vt, int far) const {
  for (auto& e : edges_)
    if (e->conn->peer == peer && e->conn->vt == vt && e->conn->far == far) return e.get();
  return nullptr;
}

void Redialer::want(const Conn* conn, uint64_t maskEpoch) {
  if (Edge* e = find(conn)) e->want.store(maskEpoch, std::memory_order_release);
}

bool Redialer::settled(const Conn* conn) const {
  const Edge* e = find(conn);
  return !e || e->have.load(std::memory_order_acquire) >= e->want.load(std::memory_order_acquire);
}

void Redialer::step(const Ready& ready) {
  const uint64_t now = nowNs();
  for (auto& e : edges_)
    if (e->dials) dial(*e, now, ready);
  accept(now, ready);
}

void Redialer::giveUp(Edge& e) {
  closeFd(e.fd);
  e.nextNs = e.startedNs + e.waitNs;
  e.waitNs = std::min(2 * e.waitNs, kMaxDialWaitNs);
}

// A dial that neither connects nor fails within its wait is dropped and made anew: a fresh SYN at once,
// where the kernel would resend the lost one only after a second and then at doubling intervals.
void Redialer::dial(Edge& e, uint64_t now, const Ready& ready) {
  const uint64_t want = e.want.load(std::memory_order_acquire);
  if (want <= e.have.load(std::memory_order_relaxed)) return;
  if (e.fd < 0) {
    if (now < e.nextNs) return;
    e.startedNs = now;
    e.fd = socket(e.remote.ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    const bool started = e.fd >= 0 && bind(e.fd, reinterpret_cast<const sockaddr*>(&e.local.ss), e.local.len) == 0 &&
                         (connect(e.fd, reinterpret_cast<const sockaddr*>(&e.remote.ss), e.remote.len) == 0 ||
                          errno == EINPROGRESS);
    if (!started) return giveUp(e);
  }
  pollfd p{e.fd, POLLOUT, 0};
  if (poll(&p, 1, 0) != 1) {
    if (now - e.startedNs >= e.waitNs) giveUp(e);
    return;
  }
  int err = 0;
  socklen_t len = sizeof(err);
  ConnHello h{};
  memcpy(h.secret, secret_, kSecretBytes);
  h.magic = kConnMagic;
  h.src = rank_;
  h.dst = e.conn->peer;
  h.vt = e.conn->vt;
  h.far = e.conn->far;
  h.commHash = commHash_;
  h.maskEpoch = want;
  // A fresh connection's send buffer takes the whole hello at once.
  if (getsockopt(e.fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0 ||
      send(e.fd, &h, sizeof(h), MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof(h)))
    return giveUp(e);
  fcntl(e.fd, F_SETFL, fcntl(e.fd, F_GETFL) & ~O_NONBLOCK);
  PRECCL_INFO("rank {}: a fresh connection for masked VT {} to rank {} ({})", rank_, h.vt, h.dst, e.remote.str());
  ready(e.conn, e.fd, true);
  e.fd = -1;
  e.have.store(want, std::memory_order_release);
  e.nextNs = 0;
  e.waitNs = kFirstDialWaitNs;
}

void Redialer::accept(uint64_t now, const Ready& ready) {
  std::vector<Parked> waiting;
  waiting.swap(parked_);
  for (auto& p : waiting) offer(p, now, ready);
  for (auto& a : acceptors_) {
    std::vector<uint8_t> raw;
    for (int fd; (fd = a->step(&raw, 0)) >= 0;) {
      Parked p{fd, {}, now + kParkNs};
      memcpy(&p.hello, raw.data(), sizeof(ConnHello));
      offer(p, now, ready);
    }
  }
}

void Redialer::offer(Parked p, uint64_t now, const Ready& ready) {
  const ConnHello& h = p.hello;
  Edge* e = h.magic == kConnMagic && h.dst == rank_ && h.commHash == commHash_ && h.maskEpoch > 0 ? find(h.src, h.vt, h.far)
                                                                                                   : nullptr;
  if (!e || e->dials) {
    PRECCL_WARN("rank {}: refused a connection with a bad header (src {}, vt {})", rank_, h.src, h.vt);
    return closeFd(p.fd);
  }
  const uint64_t want = e->want.load(std::memory_order_acquire);
  if (h.maskEpoch == want && want > e->have.load(std::memory_order_relaxed)) {
    PRECCL_INFO("rank {}: a fresh connection for masked VT {} from rank {}", rank_, h.vt, h.src);
    ready(e->conn, p.fd, false);
    e->have.store(want, std::memory_order_release);
    return;
  }
  if (h.maskEpoch > want && now < p.untilNs) return parked_.push_back(p);
  PRECCL_INFO("rank {}: closed a connection for VT {} from rank {} made for a masking this rank is past", rank_, h.vt,
              h.src);
  closeFd(p.fd);
}

}  // namespace preccl
