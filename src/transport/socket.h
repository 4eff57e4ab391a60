// Thin, checked wrappers over TCP sockets: listen, connect with retry and deadline, whole-buffer I/O
// with a deadline. Used by the bootstrap and by the socket transport's connection setup; the data path
// itself is nonblocking and lives in proxy.cc.
#pragma once
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace preccl {

struct SockAddr {
  sockaddr_storage ss{};
  socklen_t len = 0;
  int port() const;
  void setPort(int port);
  std::string str() const;   // "ip:port"
  std::string host() const;  // "ip"
};

// Parses "ip:port", "[ipv6]:port" or "host:port".
bool parseSockAddr(const std::string& text, SockAddr* out);

// Creates a listening socket bound to `addr` (port 0 = ephemeral); fills the bound address back.
int listenOn(SockAddr* addr, int backlog = 1024);
// Connects, retrying refused connections until `deadlineNs`; binds the local side to `local` if given.
int connectTo(const SockAddr& peer, const SockAddr* local, uint64_t deadlineNs);

// Whole-buffer I/O on a blocking or nonblocking socket, waiting with poll until `deadlineNs`.
// Return false on error, EOF or deadline.
bool sendAll(int fd, const void* buf, size_t len, uint64_t deadlineNs);
bool recvAll(int fd, void* buf, size_t len, uint64_t deadlineNs);

void setNonBlocking(int fd);
void setNoDelay(int fd);
// Fixes the socket's send and receive buffers (SO_SNDBUF, SO_RCVBUF; the kernel doubles each for its
// bookkeeping and caps it at net.core.wmem_max / rmem_max) and so ends the kernel's autotuning of them;
// clamps the receive window at `bytes` (TCP_WINDOW_CLAMP), which bounds the peer's data in flight.
// Returns the smaller buffer the kernel reports.
int setSocketBuffers(int fd, int bytes);
// The segment size this end advertised (TCP_INFO's advmss): the most the peer puts in one segment on a
// path whose MTU is the same at both ends. 0 if unknown.
int segmentBytes(int fd);
void closeFd(int& fd);

// Constant-time comparison for secrets.
bool secretEqual(const uint8_t* a, const uint8_t* b, size_t n);

}  // namespace preccl
