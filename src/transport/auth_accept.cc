#include "transport/auth_accept.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "base/clock.h"
#include "base/log.h"
#include "transport/socket.h"

namespace preccl {

// A peer that connected but has not proven itself within this time is dropped.
static constexpr uint64_t kHelloTimeoutNs = 5ull * 1000000000ull;

AuthAcceptor::AuthAcceptor(int listenFd, const uint8_t* secret, size_t helloBytes)
    : listenFd_(listenFd), helloBytes_(helloBytes) {
  memcpy(secret_, secret, kSecretBytes);
}

AuthAcceptor::~AuthAcceptor() {
  for (auto& p : pending_) close(p.fd);
}

static std::string peerName(int fd) {
  SockAddr a;
  a.len = sizeof(a.ss);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&a.ss), &a.len) != 0) return "?";
  return a.str();
}

int AuthAcceptor::next(std::vector<uint8_t>* hello, uint64_t deadlineNs) {
  for (;;) {
    const uint64_t now = nowNs();
    if (now >= deadlineNs) {
      dropSilent(now);
      return -1;
    }
    const int fd = step(hello, static_cast<int>(std::min<uint64_t>((deadlineNs - now) / 1000000 + 1, 200)));
    if (fd == kPollError) return -1;
    if (fd >= 0) return fd;
  }
}

void AuthAcceptor::dropSilent(uint64_t now) {
  for (size_t i = 0; i < pending_.size();) {
    if (now > pending_[i].deadlineNs) {
      PRECCL_WARN("refused connection from {}: no hello within {} s", peerName(pending_[i].fd),
                  kHelloTimeoutNs / 1000000000ull);
      close(pending_[i].fd);
      pending_.erase(pending_.begin() + i);
    } else {
      i++;
    }
  }
}

int AuthAcceptor::step(std::vector<uint8_t>* hello, int timeoutMs) {
  dropSilent(nowNs());
  std::vector<pollfd> fds;
  fds.push_back({listenFd_, POLLIN, 0});
  for (auto& p : pending_) fds.push_back({p.fd, POLLIN, 0});
  int r = poll(fds.data(), fds.size(), timeoutMs);
  if (r < 0 && errno != EINTR) return kPollError;
  if (r <= 0) return -1;
  if (fds[0].revents & POLLIN) {
    int fd = accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd >= 0) pending_.push_back({fd, std::vector<uint8_t>(helloBytes_), 0, nowNs() + kHelloTimeoutNs});
  }
  int done = -1;
  for (size_t i = 1; i < fds.size() && done < 0; i++) {
    if (!fds[i].revents) continue;
    // A connection accepted above was appended after the polled ones: pending_[i-1] is fds[i].
    Pending& p = pending_[i - 1];
    ssize_t n = recv(p.fd, p.buf.data() + p.got, helloBytes_ - p.got, 0);
    bool bad = n <= 0 && !(n < 0 && (errno == EAGAIN || errno == EINTR));
    if (n > 0) p.got += n;
    // Check the secret as soon as its bytes are in: nothing else of a stranger is read.
    if (!bad && p.got >= kSecretBytes && !secretEqual(p.buf.data(), secret_, kSecretBytes)) {
      PRECCL_WARN("refused connection from {}: wrong secret", peerName(p.fd));
      bad = true;
    }
    if (bad) {
      close(p.fd);
      p.fd = -1;
      continue;
    }
    if (p.got == helloBytes_) {
      done = p.fd;
      *hello = std::move(p.buf);
      p.fd = -1;
      int fl = fcntl(done, F_GETFL);
      fcntl(done, F_SETFL, fl & ~O_NONBLOCK);
    }
  }
  std::erase_if(pending_, [](const Pending& q) { return q.fd < 0; });
  return done;
}

}  // namespace preccl
