#include "transport/proxy.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "base/clock.h"
#include "transport/socket.h"

namespace preccl {

// How often the proxy dials, accepts and drains for masked VTs; an idle proxy wakes this often anyway.
static constexpr uint64_t kRedialTickNs = 50'000'000;

Proxy::Proxy(Bell* executorBell) : bell_(executorBell) {
  epfd_ = epoll_create1(EPOLL_CLOEXEC);
  efd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

Proxy::~Proxy() {
  close(0, nullptr);
  redial_.reset();
  closeFd(epfd_);
  closeFd(efd_);
}

// Every slot a call published is in the kernel by now (the call waited for it: Conn::stagedSends), and
// the kernel sends it before the FIN. shutdown() sends the FIN even if a forked child still holds a copy
// of the descriptor, where close() alone would not.
void Proxy::close(uint64_t lingerNs, const std::function<bool(const Conn&)>& needed) {
  stop();
  std::vector<int> lingering;
  for (auto& s : socks_) {
    int fd = s->fd.exchange(-1);
    if (fd < 0) continue;
    shutdown(fd, SHUT_WR);
    if (lingerNs > 0 && !s->failed && needed && needed(*s->conn))
      lingering.push_back(fd);
    else
      closeFd(fd);
  }
  linger(lingering, nowNs() + lingerNs);
  for (int& fd : retired_) closeFd(fd);
  retired_.clear();
}

// A close with unread bytes in the receive queue is a reset, and a reset throws away whatever of this
// rank's own bytes the peer has not acknowledged yet: the last commit notices a peer still waits for.
// Peers do send bytes that no call here will read (an agreement's late notices, a masked VT's probes),
// so each socket is read and discarded until the peer has acknowledged everything; a reset after that
// loses nothing, since bytes a kernel has acknowledged stay readable there.
void Proxy::linger(std::vector<int>& fds, uint64_t deadlineNs) {
  thread_local char sink[1 << 16];
  while (!fds.empty()) {
    std::erase_if(fds, [](int& fd) {
      ssize_t r;
      while ((r = recv(fd, sink, sizeof(sink), MSG_DONTWAIT)) > 0) {
      }
      int queued = -1;
      const bool gone = r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
      if (!gone && (ioctl(fd, TIOCOUTQ, &queued) != 0 || queued > 0)) return false;
      closeFd(fd);
      return true;
    });
    if (fds.empty() || nowNs() >= deadlineNs) break;
    poll(nullptr, 0, 1);  // acknowledgements wake nothing: look again in a millisecond
  }
  for (int& fd : fds) closeFd(fd);
  fds.clear();
}

void Proxy::add(int fd, Conn* conn, uint32_t nslots, size_t slotBytes) {
  auto s = std::make_unique<Sock>();
  s->fd = fd;
  s->conn = conn;
  size_t one = fifoBytes(nslots, slotBytes);
  void* mem = nullptr;
  if (posix_memalign(&mem, kSlotAlign, 2 * one) != 0) abort();
  memset(mem, 0, fifoCtrlBytes());
  memset(static_cast<char*>(mem) + one, 0, fifoCtrlBytes());
  new (mem) FifoCtrl();
  new (static_cast<char*>(mem) + one) FifoCtrl();
  s->mem.reset(static_cast<char*>(mem));
  Fifo out, in;
  out.attach(mem, nslots, slotBytes);
  in.attach(static_cast<char*>(mem) + one, nslots, slotBytes);
  const Waker proxy{nullptr, efd_, &sleeping_}, executor{bell_};
  conn->send.attach(out, proxy);
  conn->recv.attach(in, proxy);
  s->out.attach(out, executor);
  s->in.attach(in, executor);
  byConn_[conn] = s.get();
  socks_.push_back(std::move(s));
}

void Proxy::enableRedial(std::unique_ptr<Redialer> redialer, std::function<void(int)> prepare) {
  redial_ = std::move(redialer);
  prepare_ = std::move(prepare);
}

int Proxy::fdOf(const Conn* conn) const {
  for (auto& s : socks_)
    if (s->conn == conn) return s->fd.load(std::memory_order_acquire);
  return -1;
}

bool Proxy::start(std::string* err, std::function<void()> threadInit) {
  if (epfd_ < 0 || efd_ < 0) {
    *err = std::string("epoll/eventfd: ") + strerror(errno);
    return false;
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = nullptr;
  epoll_ctl(epfd_, EPOLL_CTL_ADD, efd_, &ev);
  for (auto& s : socks_) {
    setNonBlocking(s->fd);
    epoll_event e{};
    e.events = EPOLLIN | EPOLLOUT | EPOLLET | EPOLLRDHUP;
    e.data.ptr = s.get();
    if (epoll_ctl(epfd_, EPOLL_CTL_ADD, s->fd.load(), &e) != 0) {
      *err = std::string("epoll_ctl: ") + strerror(errno);
      return false;
    }
  }
  thread_ = std::thread([this, init = std::move(threadInit)] {
    if (init) init();
    run();
  });
  return true;
}

void Proxy::stop() {
  if (!thread_.joinable()) return;
  stop_.store(true);
  uint64_t one = 1;
  ssize_t r = write(efd_, &one, sizeof(one));
  (void)r;
  thread_.join();
}

// Errors that a dead path gives, as opposed to a dead peer (reset, end of stream).
static bool pathErrno(int e) {
  return e == ETIMEDOUT || e == EHOSTUNREACH || e == ENETUNREACH || e == ENETDOWN || e == EHOSTDOWN;
}

void Proxy::fail(Sock& s, const std::string& what, int err) {
  if (s.failed) return;
  s.failed = true;
  s.readable = s.writable = false;
  s.conn->fail(what, pathErrno(err));
  bellRing(bell_);
}

// Puts published slots on the wire: header and payload of a slot go out in one writev.
bool Proxy::pumpSend(Sock& s) {
  bool moved = false;
  while (s.writable && !s.failed && s.out.ready()) {
    const SlotHdr& h = s.out.hdr();
    const size_t total = sizeof(SlotHdr) + h.bytes;
    iovec iov[2];
    int n = 0;
    if (s.sendOff < sizeof(SlotHdr)) {
      iov[n++] = {reinterpret_cast<char*>(const_cast<SlotHdr*>(&h)) + s.sendOff, sizeof(SlotHdr) - s.sendOff};
      iov[n++] = {s.out.slot(), h.bytes};
    } else {
      iov[n++] = {s.out.slot() + (s.sendOff - sizeof(SlotHdr)), total - s.sendOff};
    }
    msghdr m{};
    m.msg_iov = iov;
    m.msg_iovlen = n;
    ssize_t r = sendmsg(s.fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (r < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        s.writable = false;
        break;
      }
      if (errno == EINTR) continue;
      fail(s, std::string("socket send failed: ") + strerror(errno), errno);
      break;
    }
    s.sendOff += r;
    moved = true;
    if (s.sendOff == total) {
      s.sendOff = 0;
      s.out.release();
    }
  }
  return moved;
}

// Fills free receive slots from the socket: header first, then exactly its payload.
bool Proxy::pumpRecv(Sock& s) {
  bool moved = false;
  // With no free slot the bytes stay in the socket: TCP's flow control carries the backpressure.
  while (s.readable && !s.failed && s.in.hasRoom()) {
    char* dst;
    size_t want;
    if (s.recvOff < sizeof(SlotHdr)) {
      dst = reinterpret_cast<char*>(&s.recvHdr) + s.recvOff;
      want = sizeof(SlotHdr) - s.recvOff;
    } else {
      dst = s.in.slot() + (s.recvOff - sizeof(SlotHdr));
      want = sizeof(SlotHdr) + s.recvHdr.bytes - s.recvOff;
    }
    ssize_t r = want ? recv(s.fd, dst, want, MSG_DONTWAIT) : 0;
    if (want && r <= 0) {
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        s.readable = false;
        break;
      }
      if (r < 0 && errno == EINTR) continue;
      if (r == 0 && s.recvOff == 0) {
        s.failed = true;
        s.readable = s.writable = false;
        s.conn->close();
        bellRing(bell_);
        break;
      }
      fail(s, r == 0 ? std::string("connection closed by peer") : std::string("socket recv failed: ") + strerror(errno),
           r == 0 ? 0 : errno);
      break;
    }
    s.recvOff += r;
    moved = true;
    if (s.recvOff == sizeof(SlotHdr) && s.recvHdr.bytes > s.in.fifo().slotBytes) {
      fail(s, "protocol error: frame larger than a slot");
      break;
    }
    if (s.recvOff >= sizeof(SlotHdr) && s.recvOff == sizeof(SlotHdr) + s.recvHdr.bytes) {
      s.in.hdr() = s.recvHdr;
      s.recvOff = 0;
      s.in.publish();
    }
  }
  return moved;
}

// The edge's VT is masked on this rank (the redialer takes a connection only then): whatever the old
// socket held belongs to aborted attempts or is a probe, and the readers drop all of it, so the new
// stream starts at a frame boundary at both ends: a half-sent slot goes again whole, a half-received one
// is forgotten.
void Proxy::replace(Conn* conn, int fd, bool dialed) {
  Sock* s = nullptr;
  for (auto& q : socks_)
    if (q->conn == conn) s = q.get();
  if (!s) return closeFd(fd);
  // A driving executor may be at this socket (a spare edge's notices): the switch waits for it.
  while (s->busy.exchange(true, std::memory_order_acquire)) sched_yield();
  struct Release {
    Sock* s;
    ~Release() { s->busy.store(false, std::memory_order_release); }
  } release{s};
  if (prepare_) prepare_(fd);
  setNonBlocking(fd);
  int old = s->fd.load(std::memory_order_relaxed);
  epoll_ctl(epfd_, EPOLL_CTL_DEL, old, nullptr);
  if (dialed)
    retired_.push_back(old);
  else
    closeFd(old);
  s->sendOff = s->recvOff = 0;
  s->failed = false;
  s->readable = s->writable = true;
  s->fd.store(fd, std::memory_order_release);
  epoll_event e{};
  e.events = EPOLLIN | EPOLLOUT | EPOLLET | EPOLLRDHUP;
  e.data.ptr = s;
  if (epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &e) != 0) return fail(*s, std::string("epoll_ctl: ") + strerror(errno));
  conn->revive();
}

void Proxy::drainRetired() {
  thread_local char sink[1 << 16];
  std::erase_if(retired_, [](int& fd) {
    for (;;) {
      ssize_t r = recv(fd, sink, sizeof(sink), MSG_DONTWAIT);
      if (r > 0) continue;
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return false;
      closeFd(fd);
      return true;
    }
  });
}

void Proxy::redialTick() {
  const uint64_t now = nowNs();
  if (now < nextRedialNs_) return;
  nextRedialNs_ = now + kRedialTickNs;
  redial_->step([this](Conn* c, int fd, bool dialed) { replace(c, fd, dialed); });
  drainRetired();
}

bool Proxy::pumpBoth(Sock& s, bool tryAll) {
  if (s.busy.exchange(true, std::memory_order_acquire)) return false;
  if (tryAll && !s.failed) s.readable = s.writable = true;
  const bool moved = pumpSend(s) | pumpRecv(s);
  s.busy.store(false, std::memory_order_release);
  return moved;
}

void Proxy::driving(bool on) {
  if (on) {
    driven_.store(1, std::memory_order_seq_cst);
    return;
  }
  // The proxy waits on its eventfd while driven: wake it to take the sockets back.
  if (driven_.exchange(0, std::memory_order_seq_cst) == 0) return;
  uint64_t one = 1;
  ssize_t r = write(efd_, &one, sizeof(one));
  (void)r;
}

bool Proxy::drive(const Conn* conn) {
  auto it = byConn_.find(conn);
  if (it == byConn_.end()) return false;
  // Its flags may be stale: the proxy saw the last readiness edges, not this thread. Trying costs one
  // syscall each way; only an EAGAIN clears a flag, and the next edge sets it again.
  return pumpBoth(*it->second, true);
}

bool Proxy::actionable(Sock& s) {
  if (s.failed) return false;
  return (s.writable && s.out.ready()) || (s.readable && s.in.hasRoom());
}

void Proxy::run() {
  epoll_event events[64];
  while (!stop_.load()) {
    if (redial_) redialTick();
    if (driven_.load(std::memory_order_seq_cst)) {
      // The executor drives the sockets, and keeps them between its small calls: wait for it to give them
      // back. At each redial tick every socket gets a pass (a masked VT's probes, published during a
      // call on edges the call does not drive).
      pollfd p{efd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(kRedialTickNs / 1000000)) > 0) {
        uint64_t v;
        ssize_t r = read(efd_, &v, sizeof(v));
        (void)r;
      } else {
        for (auto& s : socks_) pumpBoth(*s);
      }
      continue;
    }
    bool moved = false;
    for (auto& s : socks_) moved |= pumpBoth(*s);
    if (moved) continue;
    // Announce the sleep, then look once more: a producer that published before seeing the flag is caught
    // here, one that publishes after it writes the eventfd.
    sleeping_.store(1, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with Waker::wake's fence
    bool work = false;
    for (auto& s : socks_) work = work || actionable(*s);
    // Always ask epoll, even with work pending: it is the only source of "writable again" after EAGAIN.
    int n = epoll_wait(epfd_, events, 64, work ? 0 : static_cast<int>(kRedialTickNs / 1000000));
    sleeping_.store(0, std::memory_order_seq_cst);
    for (int i = 0; i < n; i++) {
      auto* s = static_cast<Sock*>(events[i].data.ptr);
      if (!s) {
        uint64_t v;
        ssize_t r = read(efd_, &v, sizeof(v));
        (void)r;
        continue;
      }
      if (events[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) s->readable = true;
      if (events[i].events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) s->writable = true;
    }
  }
}

}  // namespace preccl
