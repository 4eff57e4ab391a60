// Fresh connections for the socket edges of a masked VT (docs/failures.md, "Probe and rejoin"). A path
// that returns after a long outage would otherwise wait for TCP's doubled retransmission timer (up to two
// minutes) before its old connection moves again. When a VT is masked, the lower rank of each of its
// socket edges dials the peer's kept listener on the edge's NICs, anew at growing intervals up to
// kMaxDialWaitNs, and the higher rank accepts; both ends take the new connection for the same masking
// (the hello carries its epoch), so it never carries a byte of a live VT's stream. Runs on the proxy
// thread, never blocks.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "transport/auth_accept.h"
#include "transport/conn_hello.h"
#include "transport/socket.h"

namespace preccl {

struct Conn;

constexpr uint64_t kFirstDialWaitNs = 100'000'000;
constexpr uint64_t kMaxDialWaitNs = 1'000'000'000;

class Redialer {
 public:
  // `listenFds`: this rank's listening sockets, one per NIC, now owned here.
  Redialer(int rank, uint64_t commHash, const uint8_t* secret, std::vector<int> listenFds);
  ~Redialer();
  Redialer(const Redialer&) = delete;
  Redialer& operator=(const Redialer&) = delete;

  // A socket edge: this rank dials it (`dials`: the lower rank, as at init) from `local` to the peer's
  // listener at `remote`. Before the proxy starts only.
  void addEdge(Conn* conn, bool dials, const SockAddr& local, const SockAddr& remote);
  // From any thread: the edge's VT is masked from `maskEpoch`; a connection for it is wanted.
  void want(const Conn* conn, uint64_t maskEpoch);
  // From any thread: the connection for the latest masking is in place.
  bool settled(const Conn* conn) const;
  // One round on the proxy thread: `ready(conn, fd, dialed)` takes each new connection (blocking mode,
  // hello exchanged) for the edge to use from now on.
  using Ready = std::function<void(Conn*, int, bool)>;
  void step(const Ready& ready);

 private:
  struct Edge {
    Conn* conn = nullptr;
    bool dials = false;
    SockAddr local, remote;
    std::atomic<uint64_t> want{0}, have{0};
    int fd = -1;  // a dial in progress
    uint64_t startedNs = 0, nextNs = 0, waitNs = kFirstDialWaitNs;
  };
  struct Parked {
    int fd;
    ConnHello hello;
    uint64_t untilNs;
  };
  Edge* find(const Conn* conn) const;
  Edge* find(int peer, int vt, int far) const;
  void dial(Edge& e, uint64_t now, const Ready& ready);
  void giveUp(Edge& e);
  void accept(uint64_t now, const Ready& ready);
  // A hello that arrived is taken, kept until this rank masks the same VT, or refused.
  void offer(Parked p, uint64_t now, const Ready& ready);

  int rank_;
  uint64_t commHash_;
  uint8_t secret_[kSecretBytes];
  std::vector<int> listenFds_;
  std::vector<std::unique_ptr<AuthAcceptor>> acceptors_;
  std::vector<std::unique_ptr<Edge>> edges_;
  std::vector<Parked> parked_;
};

}  // namespace preccl
