// Accepts connections on a listening socket and keeps only those whose first bytes prove they know the
// communicator's secret. A stranger (wrong secret, garbage, or silence) is logged and closed without
// holding up the others: pending connections are read concurrently, each with its own deadline.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace preccl {

constexpr size_t kSecretBytes = 16;

class AuthAcceptor {
 public:
  // Every hello is exactly `helloBytes` long and begins with the secret.
  AuthAcceptor(int listenFd, const uint8_t* secret, size_t helloBytes);
  ~AuthAcceptor();
  AuthAcceptor(const AuthAcceptor&) = delete;
  AuthAcceptor& operator=(const AuthAcceptor&) = delete;
  // The next authenticated connection (blocking fd) with its hello, or -1 at the deadline.
  int next(std::vector<uint8_t>* hello, uint64_t deadlineNs);
  // One round of next(), waiting at most `timeoutMs` (0: not at all): an authenticated connection, -1 for
  // none yet, kPollError if the listening socket cannot be polled.
  static constexpr int kPollError = -2;
  int step(std::vector<uint8_t>* hello, int timeoutMs);

 private:
  struct Pending {
    int fd;
    std::vector<uint8_t> buf;
    size_t got;
    uint64_t deadlineNs;
  };
  void dropSilent(uint64_t now);

  int listenFd_;
  uint8_t secret_[kSecretBytes];
  size_t helloBytes_;
  std::vector<Pending> pending_;
};

}  // namespace preccl
