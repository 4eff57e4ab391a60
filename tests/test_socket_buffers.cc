// The kernel's socket buffers on data sockets (core/socket_buffers.h, transport/socket.h): the rule that
// sizes them from a flow's modelled rate, and that setting them really bounds what the kernel queues.
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>
#include <vector>

#include "base/clock.h"
#include "core/socket_buffers.h"
#include "policy/model.h"
#include "transport/socket.h"

using namespace preccl;

TEST_CASE("socket buffers follow a flow's modelled rate on slow paths only", "[sockets]") {
  const size_t slot = 512 << 10;
  // betaQ for a rate in bytes per second.
  auto beta = [](double bytesPerSec) { return static_cast<uint64_t>(1e9 / bytesPerSec * (1 << kBetaShift)); };
  const int at5MBs = flowBuffer(beta(5e6), 1, slot, kMinFlowBuffer, 0);  // 25 ms of 5 MB/s
  CHECK(at5MBs >= 120 << 10);
  CHECK(at5MBs <= 126 << 10);
  CHECK(at5MBs % 1024 == 0);
  CHECK(flowBuffer(beta(10e6), 2, slot, kMinFlowBuffer, 0) == at5MBs);    // two flows share the VT's rate
  CHECK(flowBuffer(beta(1e5), 1, slot, kMinFlowBuffer, 0) == kMinFlowBuffer);  // a floor on very slow paths
  CHECK(flowBuffer(0, 1, slot, kMinFlowBuffer, 0) == 0);                  // no measured rate: autotuned stays autotuned
  CHECK(flowBuffer(0, 1, slot, kMinFlowBuffer, 65536) == 65536);          // ... and a set buffer stays as it is
  CHECK(flowBuffer(beta(1e9), 1, slot, kMinFlowBuffer, 0) == 0);          // a fast path keeps the autotuning
  CHECK(flowBuffer(beta(1e9), 1, slot, kMinFlowBuffer, 65536) == int(slot));  // was slow, is fast: up to the slot
  CHECK(flowBuffer(beta(5.5e6), 1, slot, kMinFlowBuffer, at5MBs) == at5MBs);  // 10 % faster: not worth a change
  CHECK(flowBuffer(beta(10e6), 1, slot, kMinFlowBuffer, at5MBs) > at5MBs);    // twice as fast: twice the buffer
  CHECK(flowBuffer(beta(1e6), 1, slot, kMinFlowBuffer, at5MBs) == at5MBs);    // slower: never down (a window-limited
                                                              // flow measures slower: a spiral)
  // The floor is a few of the connection's segments where that is more than kMinFlowBuffer (loopback's
  // 64 KiB segment), and never more than the slot.
  CHECK(flowBufferFloor(0) == kMinFlowBuffer);
  CHECK(flowBufferFloor(1448) == kMinFlowBuffer);  // Ethernet: the floor of a shaped link stays
  const int lo = flowBufferFloor(65483);
  CHECK(lo >= kMinFlowSegments * 65483);
  CHECK(lo % 1024 == 0);
  CHECK(flowBuffer(beta(1e5), 1, slot, lo, 0) == lo);
  CHECK(flowBuffer(beta(1e5), 1, 64 << 10, lo, 0) == 0);  // a floor of a slot or more: the autotuning
}

namespace {

struct Loopback {
  int lfd = -1, cfd = -1, afd = -1;
  Loopback() {
    SockAddr at;
    REQUIRE(parseSockAddr("127.0.0.1:1", &at));
    at.setPort(0);  // any free port
    lfd = listenOn(&at);
    REQUIRE(lfd >= 0);
    cfd = connectTo(at, nullptr, nowNs() + 5'000'000'000ull);
    REQUIRE(cfd >= 0);
    afd = accept(lfd, nullptr, nullptr);
    REQUIRE(afd >= 0);
    fcntl(cfd, F_SETFL, fcntl(cfd, F_GETFL) & ~O_NONBLOCK);  // connectTo leaves it nonblocking
  }
  ~Loopback() {
    closeFd(cfd);
    closeFd(afd);
    closeFd(lfd);
  }
  // Moves `bytes` from cfd to afd (blocking sockets, a reader thread); false if either end failed.
  bool transfer(size_t bytes) {
    size_t got = 0, sent = 0;
    std::thread reader([&] {
      std::vector<char> buf(1 << 20);
      while (got < bytes) {
        ssize_t n = recv(afd, buf.data(), buf.size(), 0);
        if (n <= 0) return;
        got += static_cast<size_t>(n);
      }
    });
    std::vector<char> chunk(1 << 20, 'x');
    while (sent < bytes) {
      ssize_t n = send(cfd, chunk.data(), std::min(chunk.size(), bytes - sent), MSG_NOSIGNAL);
      if (n <= 0) {
        shutdown(cfd, SHUT_WR);  // the reader sees the end instead of waiting for bytes that never come
        break;
      }
      sent += static_cast<size_t>(n);
    }
    reader.join();
    return sent == bytes && got == bytes;
  }
};

}  // namespace

TEST_CASE("the rule never clamps a live connection's window or buffers below the sender's segment", "[sockets]") {
  // Below one segment a live connection crawls: the sender, whose segment size was set while the window
  // was large, either waits for its persist timer's window probes or has its segments dropped by a
  // receive buffer too small to hold one, and resends them on its retransmission timer (docs/architecture.md).
  Loopback l;
  REQUIRE(l.transfer(32u << 20));  // the autotuning grows the window and the sender's segment with it
  // The slowest rate the rule can see, on both ends, as sizeSocketBuffers sets it.
  const int want = flowBuffer(1ull << 62, 1, 512 << 10, flowBufferFloor(segmentBytes(l.afd)), 0);
  REQUIRE(want > 0);
  setSocketBuffers(l.afd, want);
  setSocketBuffers(l.cfd, want);
  tcp_info ti{};
  socklen_t len = sizeof(ti);
  REQUIRE(getsockopt(l.cfd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0);
  int clamp = 0, rcvbuf = 0;
  len = sizeof(int);
  REQUIRE(getsockopt(l.afd, IPPROTO_TCP, TCP_WINDOW_CLAMP, &clamp, &len) == 0);
  REQUIRE(getsockopt(l.afd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, &len) == 0);
  INFO("rule's buffer " << want << " B; sender's segment " << ti.tcpi_snd_mss << " B; receiver's window clamp "
                        << clamp << " B and buffer " << rcvbuf << " B (with the kernel's bookkeeping)");
  CHECK(clamp >= kMinFlowSegments * static_cast<int>(ti.tcpi_snd_mss));
  CHECK(rcvbuf / 2 >= kMinFlowSegments * static_cast<int>(ti.tcpi_snd_mss));
  REQUIRE(l.transfer(4u << 20));  // and the connection still carries data
}

TEST_CASE("set socket buffers bound what the kernel queues for a reader that does not read", "[sockets]") {
  Loopback l;
  const int cfd = l.cfd, afd = l.afd;
  const int want = 16 << 10;
  const int got = setSocketBuffers(afd, want);
  CHECK(got >= want);  // the kernel doubles it, unless net.core.rmem_max/wmem_max is below
  int clamp = 0;
  socklen_t len = sizeof(clamp);
  REQUIRE(getsockopt(afd, IPPROTO_TCP, TCP_WINDOW_CLAMP, &clamp, &len) == 0);
  CHECK(clamp == want);
  // The writer pushes until its own buffers are full; the reader's queue is what its buffer allows.
  setNonBlocking(cfd);
  std::vector<char> chunk(64 << 10, 'x');
  size_t sent = 0;
  for (int i = 0; i < 400 && sent < (8u << 20); i++) {
    ssize_t n = send(cfd, chunk.data(), chunk.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) sent += static_cast<size_t>(n);
    else usleep(2000);
  }
  int queued = 0;
  REQUIRE(ioctl(afd, FIONREAD, &queued) == 0);
  INFO("sent " << sent << " B, queued at the reader " << queued << " B, its buffer " << got << " B");
  CHECK(queued > 0);
  CHECK(queued <= got);
  CHECK(sent < (8u << 20));  // the writer was stopped: flow control, not an unbounded queue
}
