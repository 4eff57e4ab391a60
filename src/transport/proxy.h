// The socket progress engine: one thread per communicator moves slots between the executor's FIFOs and
// nonblocking TCP sockets (one socket per VT edge, both directions), driven by edge-triggered epoll.
// Like NCCL's proxy thread, it lets the executor treat a socket edge exactly like a shared-memory one.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "transport/doorbell.h"
#include "transport/fifo.h"
#include "transport/redial.h"

namespace preccl {

// A socket's failure (reset, unreachable, end of stream inside a frame) is reported on its edge
// (Conn::fail) and its executor's bell rung; the proxy goes on with the other sockets.
class Proxy {
 public:
  explicit Proxy(Bell* executorBell);
  ~Proxy();
  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;

  // Takes ownership of `fd`, allocates the edge's two FIFOs and attaches both ends. Before start() only.
  void add(int fd, Conn* conn, uint32_t nslots, size_t slotBytes);
  // Fresh connections for masked VTs (redial.h), driven from the proxy thread; `prepare` readies each new
  // socket as the transport readied the first. Before start() only.
  void enableRedial(std::unique_ptr<Redialer> redialer, std::function<void(int)> prepare);
  Redialer* redialer() const { return redial_.get(); }
  // The socket an edge uses now, for a look at its state (-1: none). It changes only while the edge's VT
  // is masked.
  int fdOf(const Conn* conn) const;
  // `threadInit` runs first on the proxy thread (the core pins it near its NICs).
  bool start(std::string* err, std::function<void()> threadInit = nullptr);
  // Stops the thread. The sockets close with the Proxy (after their FIN), or earlier by close().
  void stop();
  // Stops the thread and closes every socket after its FIN. With `lingerNs` > 0, each socket whose edge
  // `needed` names first waits, at most that long, until the peer has acknowledged every byte, discarding
  // what arrives meanwhile (docs/architecture.md, "Shutting a connection down without loss").
  void close(uint64_t lingerNs, const std::function<bool(const Conn&)>& needed);
  bool empty() const { return socks_.empty(); }
  // The executor's thread moves a connection's bytes itself (Transport::driving, drive): while driving,
  // the proxy thread waits on its eventfd only, so neither a publish nor a socket wakes it, and a socket
  // is pumped by one thread at a time.
  void driving(bool on);
  bool drive(const Conn* conn);

 private:
  struct Sock {
    std::atomic<int> fd{-1};
    Conn* conn = nullptr;
    std::unique_ptr<char, void (*)(void*)> mem{nullptr, free};
    FifoConsumer out;      // the other end of conn->send: its slots go on the wire
    size_t sendOff = 0;    // bytes of the current frame (header + payload) already sent
    FifoProducer in;       // the other end of conn->recv: filled from the wire
    size_t recvOff = 0;
    SlotHdr recvHdr{};
    bool readable = true, writable = true, failed = false;
    std::atomic<bool> busy{false};  // a thread pumps it (the proxy's or a driving executor's)
  };
  // Both directions, if no other thread is at it; `tryAll`: whatever the readiness flags say.
  bool pumpBoth(Sock& s, bool tryAll = false);
  void run();
  bool pumpSend(Sock& s);
  bool pumpRecv(Sock& s);
  bool actionable(Sock& s);
  void fail(Sock& s, const std::string& what, int err = 0);
  void redialTick();
  void replace(Conn* conn, int fd, bool dialed);
  void drainRetired();
  static void linger(std::vector<int>& fds, uint64_t deadlineNs);

  Bell* bell_;
  std::vector<std::unique_ptr<Sock>> socks_;
  int epfd_ = -1;
  int efd_ = -1;
  std::atomic<int> sleeping_{0};
  std::atomic<int> driven_{0};
  std::unordered_map<const Conn*, Sock*> byConn_;
  std::atomic<bool> stop_{false};
  std::unique_ptr<Redialer> redial_;
  std::function<void(int)> prepare_;
  uint64_t nextRedialNs_ = 0;
  // Old sockets the dialing end replaced: read and discarded until the peer, having taken the new one,
  // closes its end. Closing them here first would end the peer's old stream before it masked the VT.
  std::vector<int> retired_;
  std::thread thread_;
};

}  // namespace preccl
