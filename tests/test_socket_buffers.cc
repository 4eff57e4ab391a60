// The kernel's socket buffers on data sockets (core/socket_buffers.h, transport/socket.h): the rule that
// sizes them from a flow's modelled rate, and that setting them really bounds what the kernel queues.
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

#include "core/socket_buffers.h"
#include "policy/model.h"
#include "transport/socket.h"

using namespace preccl;

TEST_CASE("socket buffers follow a flow's modelled rate on slow paths only", "[sockets]") {
  const size_t slot = 512 << 10;
  // betaQ for a rate in bytes per second.
  auto beta = [](double bytesPerSec) { return static_cast<uint64_t>(1e9 / bytesPerSec * (1 << kBetaShift)); };
  const int at5MBs = flowBuffer(beta(5e6), 1, slot, 0);  // 25 ms of 5 MB/s
  CHECK(at5MBs >= 120 << 10);
  CHECK(at5MBs <= 126 << 10);
  CHECK(at5MBs % 1024 == 0);
  CHECK(flowBuffer(beta(10e6), 2, slot, 0) == at5MBs);    // two flows share the VT's rate
  CHECK(flowBuffer(beta(1e5), 1, slot, 0) == kMinFlowBuffer);  // a floor on very slow paths
  CHECK(flowBuffer(0, 1, slot, 0) == 0);                  // no measured rate: autotuned stays autotuned
  CHECK(flowBuffer(0, 1, slot, 65536) == 65536);          // ... and a set buffer stays as it is
  CHECK(flowBuffer(beta(1e9), 1, slot, 0) == 0);          // a fast path keeps the autotuning
  CHECK(flowBuffer(beta(1e9), 1, slot, 65536) == int(slot));  // was slow, is fast: up to the slot
  CHECK(flowBuffer(beta(5.5e6), 1, slot, at5MBs) == at5MBs);  // 10 % faster: not worth a change
  CHECK(flowBuffer(beta(10e6), 1, slot, at5MBs) > at5MBs);    // twice as fast: twice the buffer
  CHECK(flowBuffer(beta(1e6), 1, slot, at5MBs) == at5MBs);    // slower: never down (a window-limited
                                                              // flow measures slower: a spiral)
}

TEST_CASE("set socket buffers bound what the kernel queues for a reader that does not read", "[sockets]") {
  SockAddr at;
  REQUIRE(parseSockAddr("127.0.0.1:1", &at));
  at.setPort(0);  // any free port
  int lfd = listenOn(&at);
  REQUIRE(lfd >= 0);
  int cfd = connectTo(at, nullptr, nowNs() + 5'000'000'000ull);
  REQUIRE(cfd >= 0);
  int afd = accept(lfd, nullptr, nullptr);
  REQUIRE(afd >= 0);
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
  close(cfd);
  close(afd);
  close(lfd);
}
