// Closing a socket edge without loss (docs/architecture.md, "Shutting a connection down without loss"),
// on one loopback connection: the proxy at one end, a raw socket as the peer at the other. The peer has
// sent bytes the proxy's side will never read (a flood's late notices do that), so a plain close is a
// reset, and a reset throws away the proxy side's last bytes that the peer has not acknowledged yet.
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "transport/proxy.h"
#include "transport/socket.h"

using namespace preccl;

namespace {

constexpr uint32_t kSlots = 4;
constexpr size_t kSlotBytes = 64 << 10;
constexpr int kFrames = 4;           // sent by the proxy's side: more than the peer's receive buffer holds
constexpr int kUnreadFrames = 8;     // sent by the peer: more than the proxy's receive FIFO holds
constexpr size_t kFrameBytes = sizeof(SlotHdr) + kSlotBytes;

uint64_t monoNs() {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

struct Edge {
  Bell bell;
  Proxy proxy{&bell};
  Conn conn;
  int peer = -1;

  Edge() {
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    REQUIRE(bind(lfd, reinterpret_cast<sockaddr*>(&a), len) == 0);
    REQUIRE(listen(lfd, 1) == 0);
    REQUIRE(getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    peer = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int small = 64 << 10;  // the peer's window: the proxy side's last bytes wait in its own kernel
    setsockopt(peer, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    REQUIRE(connect(peer, reinterpret_cast<sockaddr*>(&a), len) == 0);
    int fd = accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
    REQUIRE(fd >= 0);
    close(lfd);
    const int big = 1 << 20;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
    setNonBlocking(fd);
    proxy.add(fd, &conn, kSlots, kSlotBytes);
    std::string err;
    REQUIRE(proxy.start(&err));
  }
  ~Edge() {
    proxy.close(0, nullptr);
    if (peer >= 0) close(peer);
  }

  // The peer's frames: the proxy fills its receive FIFO, which nobody here reads, and leaves the rest
  // in the kernel.
  void peerSendsUnread() {
    std::vector<char> f(sizeof(SlotHdr) + 1024, 0);
    SlotHdr h{};
    h.bytes = 1024;
    memcpy(f.data(), &h, sizeof(h));
    for (int i = 0; i < kUnreadFrames; i++) REQUIRE(send(peer, f.data(), f.size(), 0) == ssize_t(f.size()));
  }

  // The proxy side's frames, numbered, until the proxy handed all of them to the kernel (as a call does
  // before it returns); some are still unacknowledged, since the peer reads nothing yet.
  void sendFrames() {
    const uint64_t deadline = monoNs() + 10'000'000'000ull;
    for (int i = 0; i < kFrames; i++) {
      while (!conn.send.hasRoom() && monoNs() < deadline) {
      }
      REQUIRE(conn.send.hasRoom());
      SlotHdr& h = conn.send.hdr();
      h = SlotHdr{};
      h.bytes = kSlotBytes;
      h.epoch = uint64_t(i);
      memset(conn.send.slot(), 'a' + i, kSlotBytes);
      conn.send.publish();
    }
    while (conn.send.released() != conn.send.published() && monoNs() < deadline) {
    }
    REQUIRE(conn.send.released() == conn.send.published());
    int queued = 0;
    REQUIRE(ioctl(proxy.fdOf(&conn), TIOCOUTQ, &queued) == 0);
    REQUIRE(queued > 0);  // what the close must not lose
  }

  // Reads until the end of the stream or an error: the whole frames that arrived intact.
  int peerReadsAll(bool* reset) {
    std::vector<char> buf(kFrames * kFrameBytes + 1);
    size_t got = 0;
    *reset = false;
    for (;;) {
      ssize_t r = recv(peer, buf.data() + got, buf.size() - got, 0);
      if (r == 0) break;
      if (r < 0) {
        *reset = true;
        break;
      }
      got += size_t(r);
    }
    int whole = 0;
    for (int i = 0; i < kFrames && (size_t(i) + 1) * kFrameBytes <= got; i++) {
      SlotHdr h;
      memcpy(&h, buf.data() + size_t(i) * kFrameBytes, sizeof(h));
      const char* p = buf.data() + size_t(i) * kFrameBytes + sizeof(SlotHdr);
      if (h.epoch != uint64_t(i) || h.bytes != kSlotBytes || p[0] != 'a' + i || p[kSlotBytes - 1] != 'a' + i) break;
      whole++;
    }
    return whole;
  }
};

const auto kAll = [](const Conn&) { return true; };

}  // namespace

TEST_CASE("a closed socket edge's last bytes reach a peer that reads them later", "[teardown]") {
  SECTION("lingering: every frame arrives, then a clean end of stream") {
    Edge e;
    e.peerSendsUnread();
    e.sendFrames();
    std::thread closer([&] { e.proxy.close(10'000'000'000ull, kAll); });
    bool reset = false;
    const int whole = e.peerReadsAll(&reset);
    closer.join();
    CHECK(whole == kFrames);
    CHECK_FALSE(reset);
  }
  SECTION("without lingering (an aborted communicator) the close is a reset: the case above is real") {
    Edge e;
    e.peerSendsUnread();
    e.sendFrames();
    e.proxy.close(0, kAll);
    bool reset = false;
    const int whole = e.peerReadsAll(&reset);
    CHECK(reset);
    CHECK(whole < kFrames);
  }
  SECTION("a peer that never reads holds the close no longer than the linger") {
    Edge e;
    e.peerSendsUnread();
    e.sendFrames();
    const uint64_t t0 = monoNs();
    e.proxy.close(300'000'000ull, kAll);
    const double waited = double(monoNs() - t0) * 1e-9;
    CHECK(waited >= 0.29);
    CHECK(waited < 5.0);
  }
}
