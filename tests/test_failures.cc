// Failures: a peer SIGKILLed or SIGSTOPped in the middle of a large AllReduce loop (every survivor's call
// must fail within PRECCL_TIMEOUT + 5 s, naming the edge, the async error must be set, CommAbort must
// return), strangers connecting to the bootstrap root while ranks start (init must still succeed), and
// strangers connecting to the data listeners a socket communicator keeps for masked VTs (calls go on).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include <thread>

#include "harness.h"
#include "reference.h"

using namespace ptest;

namespace {

constexpr double kTimeoutEnv = 5;     // PRECCL_TIMEOUT in these tests
constexpr double kDetectLimit = kTimeoutEnv + 5;  // seconds from the signal to a survivor's error

// The victim signals itself `sig` in the middle of a large AllReduce loop, not between calls: SIGKILL (it
// dies; its sockets close) or SIGSTOP (it keeps its sockets and memory but reads nothing). Every
// survivor's call must fail within kDetectLimit, naming the edge it waited on, and CommAbort return.
// Shared stamps: [0] when the victim signalled itself, [1] its pid, [2] survivors done.
void lostPeerBody(Rank& r, int victim, int sig) {
  // One checked call first, so a failure below is not an init problem.
  if (!runCase(r, Case{Coll::AllReduce, precclFloat, kSum, 1031, false, 0, 3})) return;
  const size_t count = (size_t(16) << 20) / 4;
  std::vector<float> a(count, 1.0f), b(count, 0.0f);
  if (r.rank == victim) {
    __atomic_store_n(&r.shared->stamp[1], int64_t(getpid()), __ATOMIC_RELEASE);
    // Stopped, it must stay stopped: in a process group of its own, whose parent (the harness) is in
    // another group of the session. If the harness's group becomes orphaned (its launching shell exits),
    // the kernel continues that group's stopped members with SIGCONT.
    if (sig == SIGSTOP) setpgid(0, 0);
    std::thread([&r, sig] {
      usleep(300 * 1000);
      __atomic_store_n(&r.shared->stamp[0], nowNs(), __ATOMIC_RELEASE);
      kill(getpid(), sig);
    }).detach();
  }
  const double end = nowSeconds() + 60;
  precclResult_t res = precclSuccess;
  int iters = 0;
  while (nowSeconds() < end && iters < 100000) {
    res = precclAllReduce(a.data(), b.data(), count, precclFloat, precclSum, r.comm, nullptr);
    if (res != precclSuccess) break;
    ++iters;
  }
  if (r.rank == victim) {
    r.fail("the victim ran on after its signal");
    return;
  }
  const int64_t signalledAt = __atomic_load_n(&r.shared->stamp[0], __ATOMIC_ACQUIRE);
  const double dt = signalledAt ? double(nowNs() - signalledAt) * 1e-9 : -1;
  const std::string msg = lastError(r.comm);
  if (r.check(res != precclSuccess, "AllReduce kept succeeding for 60 s after the peer's signal")) {
    r.check(signalledAt != 0, "AllReduce failed (" + resultName(res) + ") before the peer's signal: " + msg);
    r.check(dt < kDetectLimit, "the error came " + std::to_string(dt) + " s after the signal (PRECCL_TIMEOUT=" +
                                   std::to_string(int(kTimeoutEnv)) + ")");
    r.check(res != precclInProgress, "a blocking AllReduce returned precclInProgress");
    // The message names the edge: its peer, its VT and how it travels.
    r.check(msg.find("rank") != std::string::npos && msg.find("VT") != std::string::npos &&
                (msg.find("NIC") != std::string::npos || msg.find("shared memory") != std::string::npos),
            "the error does not name the peer, VT and path: " + msg);
    precclResult_t async = precclSuccess;
    if (r.ok(precclCommGetAsyncError(r.comm, &async), "CommGetAsyncError"))
      r.check(async != precclSuccess && async != precclInProgress,
              "CommGetAsyncError reports " + resultName(async) + " after the peer's signal");
    // A later call fails quickly too instead of hanging on the lost peer.
    const double t1 = nowSeconds();
    precclResult_t again = precclAllReduce(a.data(), b.data(), 1024, precclFloat, precclSum, r.comm, nullptr);
    r.check(again != precclSuccess, "an AllReduce after the failure succeeded");
    r.check(nowSeconds() - t1 < kDetectLimit, "an AllReduce after the failure took " + std::to_string(nowSeconds() - t1) + " s");
    const double t2 = nowSeconds();
    r.ok(precclCommAbort(r.comm), "CommAbort");
    r.check(nowSeconds() - t2 < kDetectLimit, "CommAbort took " + std::to_string(nowSeconds() - t2) + " s");
    r.info("error after " + std::to_string(iters) + " iterations, " + std::to_string(dt) + " s after the signal: " + msg);
    r.comm = nullptr;  // aborted: the harness must not destroy it
  }
  // The last survivor ends a stopped victim.
  if (__atomic_add_fetch(&r.shared->stamp[2], 1, __ATOMIC_ACQ_REL) == r.nranks - 1) {
    const int64_t pid = __atomic_load_n(&r.shared->stamp[1], __ATOMIC_ACQUIRE);
    if (pid > 0) kill(pid_t(pid), SIGKILL);
  }
}

void lostPeer(Transport t, int victim, int sig) {
  GroupOptions opt;
  opt.env = localEnv(t, 2);
  opt.env.push_back({"PRECCL_TIMEOUT", std::to_string(int(kTimeoutEnv))});
  opt.timeoutSec = 90;  // hard limit: the parent kills everything and the test fails
  GroupResult g = runGroup(3, opt, [victim, sig](Rank& r) { lostPeerBody(r, victim, sig); });
  reportToCatch(std::string(sig == SIGKILL ? "killed" : "stopped") + " rank " + std::to_string(victim) + ", " +
                    transportName(t),
                g, [victim](int rank) { return rank == victim; });
  CHECK(g.ranks[size_t(victim)].signal == SIGKILL);
}

// A local peer that finished its part and exited is not a failure while its last slots are still in our
// FIFO: rank 1 sends to rank 0 and exits at once; rank 0, receiving from ranks 1 and 2 in one group, is
// held up by rank 2 (which sends 1.5 s late), so it sleeps on the bell with rank 1 gone. The liveness
// check must look only at edges it still waits on.
TEST_CASE("a local peer that finished and exited is not a failure", "[failures]") {
  GroupOptions opt;
  opt.env = localEnv(Transport::Shm, 2);
  opt.env.push_back({"PRECCL_TIMEOUT", std::to_string(int(kTimeoutEnv))});
  opt.timeoutSec = 60;
  GroupResult g = runGroup(3, opt, [](Rank& r) {
    const size_t count = 1000;
    std::vector<int32_t> buf(2 * count, 0);
    if (r.rank == 0) {
      r.ok(precclGroupStart(), "GroupStart");
      r.ok(precclRecv(buf.data(), count, precclInt32, 1, r.comm, nullptr), "Recv from 1");
      r.ok(precclRecv(buf.data() + count, count, precclInt32, 2, r.comm, nullptr), "Recv from 2");
      if (!r.ok(precclGroupEnd(), "GroupEnd (rank 1 exited after sending: its data was already here)")) return;
      for (size_t i = 0; i < 2 * count; i++)
        if (!r.check(buf[i] == int32_t(i < count ? 1000 + i : 2000 + i - count), "wrong element " + std::to_string(i))) break;
      return;
    }
    for (size_t i = 0; i < count; i++) buf[i] = int32_t(r.rank * 1000 + i);
    if (r.rank == 2) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    r.ok(precclSend(buf.data(), count, precclInt32, 0, r.comm, nullptr), "Send to 0");
    if (r.rank == 1) {
      r.ok(precclCommDestroy(r.comm), "CommDestroy");
      r.comm = nullptr;
      std::fflush(stdout);
      _exit(0);  // gone before rank 0 wakes up
    }
  });
  reportToCatch("a finished local peer exits early", g);
}

// ---- strangers ----

bool decodeRoot(const precclUniqueId& id, sockaddr_storage* ss, socklen_t* len) {
  uint32_t magic;
  uint16_t family, port;
  std::memcpy(&magic, id.internal, 4);
  std::memcpy(&family, id.internal + 4, 2);
  std::memcpy(&port, id.internal + 6, 2);
  if (magic != 0x44495250u) return false;
  std::memset(ss, 0, sizeof *ss);
  if (family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(ss);
    a->sin_family = AF_INET;
    a->sin_port = port;
    std::memcpy(&a->sin_addr, id.internal + 8, 4);
    *len = sizeof *a;
    return true;
  }
  if (family == AF_INET6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = port;
    std::memcpy(&a->sin6_addr, id.internal + 8, 16);
    *len = sizeof *a;
    return true;
  }
  return false;
}

// Connects to the root, retrying for a few seconds (rank 0 may still be setting up); -1 on failure.
int connectRoot(const sockaddr_storage& ss, socklen_t len) {
  const double end = nowSeconds() + 10;
  while (nowSeconds() < end) {
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (connect(fd, reinterpret_cast<const sockaddr*>(&ss), len) == 0) return fd;
    close(fd);
    usleep(20 * 1000);
  }
  return -1;
}

void strangers(Transport t) {
  std::vector<int> fds;
  std::vector<std::string> parentErrors;
  GroupOptions opt;
  opt.env = localEnv(t, 2);
  opt.timeoutSec = 90;
  opt.gateInit = true;  // ranks 1.. start only after the strangers are in
  opt.parentDuringRun = [&](Shared* sh) {
    sockaddr_storage ss;
    socklen_t len = 0;
    if (!decodeRoot(sh->id, &ss, &len)) {
      parentErrors.push_back("cannot decode the root address from the unique id");
      return;
    }
    // 1: 64 garbage bytes. 2: connects and sends nothing (kept open through init). 3: connects and
    // closes at once. 4: a huge length-like prefix then silence.
    std::mt19937 rng(99);
    char junk[64];
    for (char& c : junk) c = char(rng());
    int f1 = connectRoot(ss, len);
    if (f1 < 0) parentErrors.push_back("could not connect to the bootstrap root announced in the unique id");
    if (f1 >= 0) {
      if (write(f1, junk, sizeof junk) != ssize_t(sizeof junk)) parentErrors.push_back("write to root failed");
      fds.push_back(f1);
    }
    int f2 = connectRoot(ss, len);
    if (f2 >= 0) fds.push_back(f2);
    int f3 = connectRoot(ss, len);
    if (f3 >= 0) close(f3);
    int f4 = connectRoot(ss, len);
    if (f4 >= 0) {
      const uint8_t big[16] = {0xff, 0xff, 0xff, 0x7f, 0x50, 0x52, 0x49, 0x44, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1};
      if (write(f4, big, sizeof big) != ssize_t(sizeof big)) parentErrors.push_back("write to root failed");
      fds.push_back(f4);
    }
  };
  GroupResult g = runGroup(3, opt, [](Rank& r) {
    runCase(r, Case{Coll::AllReduce, precclFloat, kSum, 1031, false, 0, 11});
    runCase(r, Case{Coll::AllReduce, precclInt32, kMax, 65537, true, 0, 12});
    runCase(r, Case{Coll::AllGather, precclUint8, kCopy, 999, false, 0, 13});
  });
  for (int fd : fds) close(fd);
  for (const auto& e : parentErrors) FAIL_CHECK("strangers: " << e);
  reportToCatch(std::string("strangers at the bootstrap root, ") + transportName(t), g);
}

// Every listening socket of this process (the communicator's kept data listeners among them).
std::vector<sockaddr_storage> listeningSockets() {
  std::vector<sockaddr_storage> out;
  for (int fd = 0; fd < 1024; fd++) {
    int on = 0;
    socklen_t len = sizeof on;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) != 0 || !on) continue;
    sockaddr_storage ss{};
    len = sizeof ss;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0) out.push_back(ss);
  }
  return out;
}

// Each rank, between checked calls, points strangers at its own listeners: garbage, a hello-sized
// message without the secret, one that connects and closes, one that stays silent through the calls.
void dataListenerStrangers(Rank& r) {
  if (!runCase(r, Case{Coll::AllReduce, precclFloat, kSum, 1031, false, 0, 21})) return;
  const auto listeners = listeningSockets();
  if (!r.check(!listeners.empty(), "a socket communicator keeps no listening socket")) return;
  std::vector<int> silent;
  std::mt19937 rng(7 + r.rank);
  for (const auto& ss : listeners) {
    const socklen_t len = ss.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
    for (int kind = 0; kind < 4; kind++) {
      int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0 || connect(fd, reinterpret_cast<const sockaddr*>(&ss), len) != 0) {
        r.check(false, "cannot connect to a listener of this rank");
        if (fd >= 0) close(fd);
        continue;
      }
      char junk[80];
      for (char& c : junk) c = kind == 1 ? 0 : char(rng());
      if (kind <= 1 && write(fd, junk, sizeof junk) != ssize_t(sizeof junk)) r.check(false, "write to a listener failed");
      if (kind == 3) silent.push_back(fd);
      else close(fd);
    }
  }
  // Enough calls for the proxy to accept and refuse them (it looks every few tens of ms).
  for (uint32_t seed = 22; seed < 22 + 2 * 40 && r.failures() == 0; seed += 2) {
    runCase(r, Case{Coll::AllReduce, precclInt32, kMax, 65537, true, 0, seed});
    runCase(r, Case{Coll::AllGather, precclUint8, kCopy, 999, false, 0, seed + 1});
  }
  for (int fd : silent) close(fd);
}

}  // namespace

TEST_CASE("strangers at a socket communicator's kept data listeners", "[failures]") {
  GroupOptions opt;
  opt.env = localEnv(Transport::Socket, 2);
  opt.timeoutSec = 90;
  reportToCatch("strangers at the data listeners", runGroup(3, opt, dataListenerStrangers));
}

TEST_CASE("killed peer during AllReduce on shared memory", "[failures][shm]") {
  lostPeer(Transport::Shm, 2, SIGKILL);
  lostPeer(Transport::Shm, 0, SIGKILL);  // the rank that hosted the bootstrap root
}
TEST_CASE("killed peer during AllReduce on sockets", "[failures][socket]") {
  lostPeer(Transport::Socket, 2, SIGKILL);
  lostPeer(Transport::Socket, 0, SIGKILL);
}
// A peer that stops reading without dying: only the watchdog can tell (PRECCL_TIMEOUT + 5 s).
TEST_CASE("stopped peer during AllReduce on sockets and shared memory", "[failures]") {
  lostPeer(Transport::Socket, 2, SIGSTOP);
  lostPeer(Transport::Shm, 1, SIGSTOP);
}
TEST_CASE("strangers connecting to the bootstrap root", "[failures]") {
  strangers(Transport::Socket);
  strangers(Transport::Shm);
}
