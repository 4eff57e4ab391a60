#include "core/bootstrap.h"

#include <poll.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <thread>

#include "base/clock.h"
#include "core/debug.h"

namespace preccl {

namespace {

constexpr uint32_t kHelloMagic = 0x544f4f42;  // "BOOT"
constexpr uint32_t kLeave = 0xffffffffu;
constexpr uint64_t kSec = 1000000000ull;
// How long the root waits for all ranks to arrive; ranks bound their own waits with PRECCL_TIMEOUT.
constexpr uint64_t kRootInitTimeoutNs = 600 * kSec;
constexpr uint32_t kMaxBlob = 1u << 20;

struct Hello {
  uint8_t secret[kSecretBytes];
  uint32_t magic;
  int32_t rank;
  int32_t nranks;
  uint32_t blobBytes;
};

struct Reply {
  int32_t status;  // 0 ok, else a precclResult_t
  int32_t nranks;
  uint32_t blobBytes;
  uint32_t pad;
};

void closeAll(std::vector<int>& fds) {
  for (int& fd : fds) closeFd(fd);
}

// Collects one message from every rank that has not left, then sends the concatenation back.
void rootRounds(std::vector<int>& fds) {
  const int n = static_cast<int>(fds.size());
  std::vector<bool> left(n, false);
  std::vector<std::vector<uint8_t>> msg(n);
  std::vector<bool> have(n, false);
  int nLeft = 0;
  for (;;) {
    if (nLeft == n) return;
    std::vector<pollfd> p;
    std::vector<int> idx;
    for (int r = 0; r < n; r++)
      if (!left[r] && !have[r]) {
        p.push_back({fds[r], POLLIN, 0});
        idx.push_back(r);
      }
    if (poll(p.data(), p.size(), -1) < 0) continue;
    for (size_t i = 0; i < p.size(); i++) {
      if (!p[i].revents) continue;
      int r = idx[i];
      uint32_t len;
      if (!recvAll(fds[r], &len, sizeof(len), nowNs() + 10 * kSec)) {
        PRECCL_INFO("bootstrap root: rank {} disconnected; closing the communicator's bootstrap", r);
        return;
      }
      if (len == kLeave) {
        left[r] = true;
        nLeft++;
        continue;
      }
      if (len > kMaxBlob) return;
      msg[r].resize(len);
      if (!recvAll(fds[r], msg[r].data(), len, nowNs() + 10 * kSec)) return;
      have[r] = true;
    }
    int waiting = 0, ready = 0;
    for (int r = 0; r < n; r++) {
      if (left[r]) continue;
      waiting++;
      if (have[r]) ready++;
    }
    if (ready > 0 && ready == waiting) {
      if (nLeft > 0) return;  // a rank left while the others still run a collective: fail them all
      size_t len = msg[0].size();
      std::vector<uint8_t> all;
      for (int r = 0; r < n; r++) {
        if (msg[r].size() != len) return;
        all.insert(all.end(), msg[r].begin(), msg[r].end());
      }
      for (int r = 0; r < n; r++) {
        uint32_t total = static_cast<uint32_t>(all.size());
        if (!sendAll(fds[r], &total, sizeof(total), nowNs() + 10 * kSec) ||
            !sendAll(fds[r], all.data(), all.size(), nowNs() + 10 * kSec))
          return;
        have[r] = false;
      }
    }
  }
}

void rootMain(int listenFd, std::array<uint8_t, kSecretBytes> secret) {
  AuthAcceptor acceptor(listenFd, secret.data(), sizeof(Hello));
  const uint64_t deadline = nowNs() + kRootInitTimeoutNs;
  int nranks = -1;
  uint32_t blobBytes = 0;
  std::vector<int> fds;
  std::vector<std::vector<uint8_t>> blobs;
  int joined = 0;
  while (nranks < 0 || joined < nranks) {
    std::vector<uint8_t> raw;
    int fd = acceptor.next(&raw, deadline);
    if (fd < 0) {
      PRECCL_WARN("bootstrap root: only {} of {} ranks arrived in time", joined, nranks);
      closeAll(fds);
      close(listenFd);
      return;
    }
    Hello h;
    memcpy(&h, raw.data(), sizeof(h));
    Reply bad{static_cast<int32_t>(precclInvalidArgument), 0, 0, 0};
    bool ok = h.magic == kHelloMagic && h.nranks > 0 && h.rank >= 0 && h.rank < h.nranks &&
              h.blobBytes <= kMaxBlob && (nranks < 0 || (h.nranks == nranks && h.blobBytes == blobBytes)) &&
              (nranks < 0 || fds[h.rank] < 0);
    if (!ok) {
      PRECCL_WARN("bootstrap root: refused rank {} of {} (mismatched or duplicate)", h.rank, h.nranks);
      sendAll(fd, &bad, sizeof(bad), nowNs() + kSec);
      close(fd);
      continue;
    }
    if (nranks < 0) {
      nranks = h.nranks;
      blobBytes = h.blobBytes;
      fds.assign(nranks, -1);
      blobs.resize(nranks);
    }
    blobs[h.rank].resize(blobBytes);
    if (!recvAll(fd, blobs[h.rank].data(), blobBytes, nowNs() + 10 * kSec)) {
      close(fd);
      continue;
    }
    fds[h.rank] = fd;
    joined++;
  }
  close(listenFd);
  Reply ok{0, nranks, blobBytes, 0};
  for (int r = 0; r < nranks; r++) {
    bool sent = sendAll(fds[r], &ok, sizeof(ok), nowNs() + 10 * kSec);
    for (int q = 0; q < nranks && sent; q++) sent = sendAll(fds[r], blobs[q].data(), blobBytes, nowNs() + 10 * kSec);
    if (!sent) {
      closeAll(fds);
      return;
    }
  }
  rootRounds(fds);
  closeAll(fds);
}

}  // namespace

void startBootstrapRoot(int listenFd, const uint8_t* secret) {
  std::array<uint8_t, kSecretBytes> s;
  memcpy(s.data(), secret, kSecretBytes);
  std::thread(rootMain, listenFd, s).detach();
}

precclResult_t Bootstrap::init(precclComm* comm, const SockAddr& root, const uint8_t* secret, int rank,
                               int nranks, const void* blob, size_t bytes, std::vector<uint8_t>* all,
                               uint64_t deadlineNs) {
  fd_ = connectTo(root, nullptr, deadlineNs);
  if (fd_ < 0) return PRECCL_ERR(comm, precclSystemError, "rank {}: cannot reach the bootstrap root at {}", rank, root.str());
  Hello h{};
  memcpy(h.secret, secret, kSecretBytes);
  h.magic = kHelloMagic;
  h.rank = rank;
  h.nranks = nranks;
  h.blobBytes = static_cast<uint32_t>(bytes);
  Reply r{};
  if (!sendAll(fd_, &h, sizeof(h), deadlineNs) || !sendAll(fd_, blob, bytes, deadlineNs) ||
      !recvAll(fd_, &r, sizeof(r), deadlineNs)) {
    closeFd(fd_);
    return PRECCL_ERR(comm, precclRemoteError,
                      "rank {}: bootstrap with root {} failed (did every rank of {} start, with the same id?)", rank,
                      root.str(), nranks);
  }
  if (r.status != 0) {
    closeFd(fd_);
    return PRECCL_ERR(comm, precclInvalidUsage,
                      "rank {}: the bootstrap root refused this rank (nranks mismatch or rank used twice)", rank);
  }
  all->resize(static_cast<size_t>(nranks) * bytes);
  if (!recvAll(fd_, all->data(), all->size(), deadlineNs)) {
    closeFd(fd_);
    return PRECCL_ERR(comm, precclRemoteError, "rank {}: bootstrap exchange broke", rank);
  }
  nranks_ = nranks;
  return precclSuccess;
}

precclResult_t Bootstrap::allgather(precclComm* comm, const void* mine, size_t bytes, std::vector<uint8_t>* all,
                                    uint64_t deadlineNs) {
  if (fd_ < 0) return PRECCL_ERR(comm, precclInvalidUsage, "bootstrap connection is closed");
  uint32_t len = static_cast<uint32_t>(bytes), total = 0;
  if (!sendAll(fd_, &len, sizeof(len), deadlineNs) || !sendAll(fd_, mine, bytes, deadlineNs) ||
      !recvAll(fd_, &total, sizeof(total), deadlineNs) || total != bytes * nranks_) {
    closeFd(fd_);
    return PRECCL_ERR(comm, precclRemoteError, "bootstrap allgather failed: a rank left or timed out");
  }
  all->resize(total);
  if (!recvAll(fd_, all->data(), total, deadlineNs)) {
    closeFd(fd_);
    return PRECCL_ERR(comm, precclRemoteError, "bootstrap allgather broke");
  }
  return precclSuccess;
}

void Bootstrap::leave() {
  if (fd_ < 0) return;
  uint32_t bye = kLeave;
  sendAll(fd_, &bye, sizeof(bye), nowNs() + kSec);
  closeFd(fd_);
}

}  // namespace preccl
