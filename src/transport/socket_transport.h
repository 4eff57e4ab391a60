// The TCP socket transport: ranks on other hosts. One socket per (peer, VT), bound to NIC `vt mod K` on
// both ends, and under rail affinity one per relay edge (Conn::far); the executor writes into FIFOs in this process's heap and the proxy thread (proxy.h) moves
// slots between them and the sockets.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "topo/net_if.h"
#include "transport/proxy.h"
#include "transport/transport.h"

namespace preccl {

class SocketTransport : public Transport {
 public:
  // `fixedBufferBytes` > 0 fixes every data socket's buffers and window at that size (PRECCL_SOCKET_BUFFER);
  // otherwise the kernel autotunes them until someone sizes them (forEachSocket). `threadInit` runs first
  // on the proxy thread (the core pins it near its NICs).
  SocketTransport(int fixedBufferBytes, std::function<void()> threadInit);
  ~SocketTransport() override;
  const char* name() const override { return "socket"; }
  // Before the bootstrap: one listening socket per NIC; their addresses and names go into `mine`.
  precclResult_t listen(const std::vector<NetIf>& nics, RankInfo* mine, std::string* err);
  // Lower rank connects, higher accepts; the listeners stay open for fresh connections (redial.h).
  precclResult_t connect(const TransportSetup& s, ConnTable& table, std::string* err) override;
  precclResult_t start(std::string* err) override;
  void stop() override;
  void close(uint64_t lingerNs, const std::function<bool(const Conn&)>& needed) override;
  void checkPath(Conn& c, uint32_t detectMs) override;
  bool pathClear(Conn& c) override;
  void redial(Conn& c, uint64_t maskEpoch) override;
  void driving(bool on) override;
  bool drive(Conn& c) override;
  bool empty() const { return socks_.empty(); }

  // The kernel's buffers of one data socket (core/socket_buffers.cc sizes them from the model).
  // Only while the socket's VT is live: a masked VT's edge may get a fresh socket at any moment.
  struct Socket {
    Conn* conn = nullptr;
    int fd = -1;           // owned by the proxy
    int bufferBytes = 0;   // SO_SNDBUF and SO_RCVBUF set last; 0: the kernel's autotuning
    int bufferFloor = 0;   // the least the rule may set (flowBufferFloor); 0: not read yet
  };
  void forEachSocket(int vt, const std::function<void(Socket&)>& fn);

 private:
  precclResult_t add(const TransportSetup& s, ConnTable& table, int fd, int peer, int vt, int far);
  int fdOf(const Conn& c) const;
  bool pathAnswers(const Conn& c, uint32_t ms) const;
  void prepare(int fd, int rank) const;

  int fixedBufferBytes_;
  std::vector<int> hostOf_;  // rank -> host (Topology::hostOf), for checkPath
  std::function<void()> threadInit_;
  std::vector<int> listenFds_;
  std::vector<std::pair<int, Socket>> socks_;  // (vt, socket)
  std::unique_ptr<Proxy> proxy_;
};

}  // namespace preccl
