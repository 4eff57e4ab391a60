#include "transport/socket.h"

#include "base/clock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace preccl {

int SockAddr::port() const {
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&ss)->sin_port);
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_port);
  return 0;
}

void SockAddr::setPort(int p) {
  if (ss.ss_family == AF_INET) reinterpret_cast<sockaddr_in*>(&ss)->sin_port = htons(p);
  if (ss.ss_family == AF_INET6) reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port = htons(p);
}

std::string SockAddr::host() const {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (ss.ss_family == AF_INET) inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&ss)->sin_addr, buf, sizeof(buf));
  if (ss.ss_family == AF_INET6) inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_addr, buf, sizeof(buf));
  return buf;
}

std::string SockAddr::str() const {
  if (ss.ss_family == AF_INET) return fmt::format("{}:{}", host(), port());
  if (ss.ss_family == AF_INET6) return fmt::format("[{}]:{}", host(), port());
  return "?";
}

bool parseSockAddr(const std::string& text, SockAddr* out) {
  std::string host, port;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') return false;
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos) return false;
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  char* end = nullptr;
  long p = strtol(port.c_str(), &end, 10);
  if (port.empty() || *end || p <= 0 || p > 65535) return false;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || !res) return false;
  memcpy(&out->ss, res->ai_addr, res->ai_addrlen);
  out->len = res->ai_addrlen;
  freeaddrinfo(res);
  out->setPort(static_cast<int>(p));
  return true;
}

void setNonBlocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

void setNoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int setSocketBuffers(int fd, int bytes) {
  int got = INT32_MAX;
  for (int opt : {SO_SNDBUF, SO_RCVBUF}) {
    setsockopt(fd, SOL_SOCKET, opt, &bytes, sizeof(bytes));
    int v = 0;
    socklen_t len = sizeof(v);
    getsockopt(fd, SOL_SOCKET, opt, &v, &len);
    got = std::min(got, v);
  }
  // The buffers bound the window only through their free space, and an autotuned past leaves the
  // receive threshold high: the clamp makes the peer's data in flight at most `bytes` at once.
  setsockopt(fd, IPPROTO_TCP, TCP_WINDOW_CLAMP, &bytes, sizeof(bytes));
  return got;
}

int segmentBytes(int fd) {
  tcp_info ti{};
  socklen_t len = sizeof(ti);
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0) return 0;
  return static_cast<int>(ti.tcpi_advmss);
}

void closeFd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

int listenOn(SockAddr* addr, int backlog) {
  int fd = socket(addr->ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr->ss), addr->len) != 0 || listen(fd, backlog) != 0) {
    close(fd);
    return -1;
  }
  socklen_t len = sizeof(addr->ss);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr->ss), &len);
  addr->len = len;
  return fd;
}

static int waitFd(int fd, short events, uint64_t deadlineNs) {
  for (;;) {
    uint64_t now = nowNs();
    if (now >= deadlineNs) return 0;
    pollfd p{fd, events, 0};
    int ms = static_cast<int>(std::min<uint64_t>((deadlineNs - now) / 1000000 + 1, 1000));
    int r = poll(&p, 1, ms);
    if (r > 0) return 1;
    if (r < 0 && errno != EINTR) return -1;
  }
}

int connectTo(const SockAddr& peer, const SockAddr* local, uint64_t deadlineNs) {
  uint64_t backoffUs = 1000;
  for (;;) {
    int fd = socket(peer.ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (local) {
      SockAddr l = *local;
      l.setPort(0);
      if (bind(fd, reinterpret_cast<const sockaddr*>(&l.ss), l.len) != 0) {
        close(fd);
        return -1;
      }
    }
    setNonBlocking(fd);
    int r = connect(fd, reinterpret_cast<const sockaddr*>(&peer.ss), peer.len);
    int err = r == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
      if (waitFd(fd, POLLOUT, deadlineNs) <= 0) {
        close(fd);
        return -1;
      }
      socklen_t len = sizeof(err);
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    }
    if (err == 0) {
      setNoDelay(fd);
      return fd;
    }
    close(fd);
    // The peer may not listen yet (a root started by rank 0 at the same time): retry until the deadline.
    if ((err != ECONNREFUSED && err != ETIMEDOUT && err != ECONNRESET && err != EHOSTUNREACH &&
         err != ENETUNREACH) ||
        nowNs() + backoffUs * 1000 >= deadlineNs)
      return -1;
    usleep(backoffUs);
    backoffUs = std::min<uint64_t>(backoffUs * 2, 100000);
  }
}

bool sendAll(int fd, const void* buf, size_t len, uint64_t deadlineNs) {
  const char* p = static_cast<const char*>(buf);
  while (len > 0) {
    ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= n;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      if (waitFd(fd, POLLOUT, deadlineNs) <= 0) return false;
    } else {
      return false;
    }
  }
  return true;
}

bool recvAll(int fd, void* buf, size_t len, uint64_t deadlineNs) {
  char* p = static_cast<char*>(buf);
  while (len > 0) {
    ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= n;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      if (waitFd(fd, POLLIN, deadlineNs) <= 0) return false;
    } else {
      return false;  // EOF or error
    }
  }
  return true;
}

bool secretEqual(const uint8_t* a, const uint8_t* b, size_t n) {
  uint8_t diff = 0;
  for (size_t i = 0; i < n; i++) diff |= a[i] ^ b[i];
  return diff == 0;
}

}  // namespace preccl
