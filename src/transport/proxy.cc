#include "transport/proxy.h"

#include <errno.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "transport/socket.h"

namespace preccl {

Proxy::Proxy(Bell* executorBell, ErrorFn onError) : bell_(executorBell), onError_(std::move(onError)) {}

Proxy::~Proxy() {
  stop();
  // Every slot a call published is in the kernel by now (the call waited for it: Conn::stagedSends), and
  // the kernel sends it before the FIN. shutdown() sends the FIN even if a forked child still holds a
  // copy of the descriptor, where close() alone would not.
  for (auto& s : socks_) {
    if (s->fd >= 0) shutdown(s->fd, SHUT_WR);
    closeFd(s->fd);
  }
  closeFd(epfd_);
  closeFd(efd_);
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
  conn->viaSocket = true;
  conn->stagedSends = true;
  conn->fd = fd;
  conn->send.attach(mem, nslots, slotBytes);
  conn->recv.attach(static_cast<char*>(mem) + one, nslots, slotBytes);
  socks_.push_back(std::move(s));
}

bool Proxy::start(std::string* err, std::function<void()> threadInit) {
  epfd_ = epoll_create1(EPOLL_CLOEXEC);
  efd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
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
    s->conn->sendConsumer = Waker{nullptr, efd_, &sleeping_};
    s->conn->recvProducer = Waker{nullptr, efd_, &sleeping_};
    epoll_event e{};
    e.events = EPOLLIN | EPOLLOUT | EPOLLET | EPOLLRDHUP;
    e.data.ptr = s.get();
    if (epoll_ctl(epfd_, EPOLL_CTL_ADD, s->fd, &e) != 0) {
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

void Proxy::fail(Sock& s, const std::string& what) {
  if (s.failed) return;
  s.failed = true;
  s.readable = s.writable = false;
  onError_(what + " (peer rank " + std::to_string(s.conn->peer) + ", VT " + std::to_string(s.conn->vt) + ", " +
           s.conn->path + ")");
  bellRing(bell_);
}

// Puts published slots on the wire: header and payload of a slot go out in one writev.
bool Proxy::pumpSend(Sock& s) {
  bool moved = false;
  Fifo& f = s.conn->send;
  while (s.writable && !s.failed) {
    uint64_t tail = f.ctrl->tail.load(std::memory_order_acquire);
    if (s.sendIdx == tail) break;
    const SlotHdr& h = f.hdr(s.sendIdx);
    const size_t total = sizeof(SlotHdr) + h.bytes;
    iovec iov[2];
    int n = 0;
    if (s.sendOff < sizeof(SlotHdr)) {
      iov[n++] = {reinterpret_cast<char*>(const_cast<SlotHdr*>(&h)) + s.sendOff, sizeof(SlotHdr) - s.sendOff};
      iov[n++] = {f.slot(s.sendIdx), h.bytes};
    } else {
      iov[n++] = {f.slot(s.sendIdx) + (s.sendOff - sizeof(SlotHdr)), total - s.sendOff};
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
      fail(s, std::string("socket send failed: ") + strerror(errno));
      break;
    }
    s.sendOff += r;
    moved = true;
    if (s.sendOff == total) {
      s.sendOff = 0;
      s.sendIdx++;
      f.ctrl->head.store(s.sendIdx, std::memory_order_release);
      bellRing(bell_);
    }
  }
  return moved;
}

// Fills free receive slots from the socket: header first, then exactly its payload.
bool Proxy::pumpRecv(Sock& s) {
  bool moved = false;
  Fifo& f = s.conn->recv;
  while (s.readable && !s.failed) {
    uint64_t head = f.ctrl->head.load(std::memory_order_acquire);
    if (s.recvIdx - head >= f.nslots) break;  // no free slot: leave the bytes in the socket (backpressure)
    char* dst;
    size_t want;
    if (s.recvOff < sizeof(SlotHdr)) {
      dst = reinterpret_cast<char*>(&s.recvHdr) + s.recvOff;
      want = sizeof(SlotHdr) - s.recvOff;
    } else {
      dst = f.slot(s.recvIdx) + (s.recvOff - sizeof(SlotHdr));
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
        s.conn->closed.store(true);
        bellRing(bell_);
        break;
      }
      fail(s, r == 0 ? std::string("connection closed by peer") : std::string("socket recv failed: ") + strerror(errno));
      break;
    }
    s.recvOff += r;
    moved = true;
    if (s.recvOff == sizeof(SlotHdr) && s.recvHdr.bytes > f.slotBytes) {
      fail(s, "protocol error: frame larger than a slot");
      break;
    }
    if (s.recvOff >= sizeof(SlotHdr) && s.recvOff == sizeof(SlotHdr) + s.recvHdr.bytes) {
      f.hdr(s.recvIdx) = s.recvHdr;
      s.recvIdx++;
      s.recvOff = 0;
      f.ctrl->tail.store(s.recvIdx, std::memory_order_release);
      bellRing(bell_);
    }
  }
  return moved;
}

bool Proxy::actionable(const Sock& s) const {
  if (s.failed) return false;
  if (s.writable && s.conn->send.ctrl->tail.load(std::memory_order_seq_cst) != s.sendIdx) return true;
  if (s.readable && s.recvIdx - s.conn->recv.ctrl->head.load(std::memory_order_seq_cst) < s.conn->recv.nslots)
    return true;
  return false;
}

void Proxy::run() {
  epoll_event events[64];
  while (!stop_.load()) {
    bool moved = false;
    for (auto& s : socks_) {
      moved |= pumpSend(*s);
      moved |= pumpRecv(*s);
    }
    if (moved) continue;
    // Announce the sleep, then look once more: a producer that published before seeing the flag is caught
    // here, one that publishes after it writes the eventfd.
    sleeping_.store(1, std::memory_order_seq_cst);
    bool work = false;
    for (auto& s : socks_) work = work || actionable(*s);
    // Always ask epoll, even with work pending: it is the only source of "writable again" after EAGAIN.
    int n = epoll_wait(epfd_, events, 64, work ? 0 : 100);
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
