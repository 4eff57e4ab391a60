// Process start-up for preccl-perf: fork-and-pipe for local ranks, environment for job ranks.
#include "perf_launch.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace perf {
namespace {

const char* envOr(const char* a, const char* b) {
  const char* v = std::getenv(a);
  return v ? v : std::getenv(b);
}

bool parseEnvInt(const char* text, int* out) {
  if (!text) return false;
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < 0 || v > (1 << 30)) return false;
  *out = int(v);
  return true;
}

bool writeAll(int fd, const void* buf, size_t n) {
  const char* p = static_cast<const char*>(buf);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w, n -= size_t(w);
  }
  return true;
}

bool readAll(int fd, void* buf, size_t n) {
  char* p = static_cast<char*>(buf);
  while (n > 0) {
    ssize_t r = ::read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;  // EOF: the parent failed before sending the id
    p += r, n -= size_t(r);
  }
  return true;
}

void killAll(const std::vector<pid_t>& pids, std::vector<bool>& done) {
  for (size_t i = 0; i < pids.size(); i++)
    if (!done[i]) ::kill(pids[i], SIGKILL);
  for (size_t i = 0; i < pids.size(); i++) {
    if (done[i]) continue;
    int st;
    while (::waitpid(pids[i], &st, 0) < 0 && errno == EINTR) {
    }
    done[i] = true;
  }
}

int timeoutSeconds() {
  int t = 600;
  const char* v = std::getenv("PRECCL_PERF_TIMEOUT");
  if (v && !parseEnvInt(v, &t)) std::fprintf(stderr, "preccl-perf: ignoring PRECCL_PERF_TIMEOUT='%s'\n", v);
  return t > 0 ? t : 600;
}

}  // namespace

bool jobEnvironmentPresent() {
  return std::getenv("PRECCL_RANK") != nullptr || std::getenv("OMPI_COMM_WORLD_RANK") != nullptr;
}

int launchLocal(int nranks, const RankBody& body) {
  // Local ranks talk over loopback and shared memory only.
  setenv("PRECCL_SOCKET_IFNAME", "lo", 0);
  std::fflush(stdout);
  std::fflush(stderr);

  std::vector<int> writeFds(size_t(nranks), -1);
  std::vector<pid_t> pids;
  std::vector<bool> done;
  // Fork before the library starts any thread (the bootstrap root is a thread of this process).
  for (int r = 0; r < nranks; r++) {
    int fds[2];
    if (::pipe(fds) != 0) {
      std::perror("preccl-perf: pipe");
      killAll(pids, done);
      return 1;
    }
    pid_t pid = ::fork();
    if (pid < 0) {
      std::perror("preccl-perf: fork");
      killAll(pids, done);
      return 1;
    }
    if (pid == 0) {
      ::close(fds[1]);
      for (int w : writeFds)
        if (w >= 0) ::close(w);
      precclUniqueId id;
      if (!readAll(fds[0], &id, sizeof(id))) _exit(3);
      ::close(fds[0]);
      int rc = body(r, nranks, id);
      std::fflush(stdout);
      std::fflush(stderr);
      std::exit(rc);
    }
    ::close(fds[0]);
    writeFds[size_t(r)] = fds[1];
    pids.push_back(pid);
    done.push_back(false);
  }

  precclUniqueId id;
  precclResult_t res = precclGetUniqueId(&id);
  if (res != precclSuccess) {
    std::fprintf(stderr, "preccl-perf: precclGetUniqueId failed: %s (%s)\n", precclGetErrorString(res),
                 precclGetLastError(nullptr));
    for (int w : writeFds) ::close(w);
    killAll(pids, done);
    return 1;
  }
  for (int w : writeFds) {
    if (!writeAll(w, &id, sizeof(id))) std::perror("preccl-perf: write id");
    ::close(w);
  }

  // After the first rank fails, the others get a short grace period: a rank that found wrong results
  // exits 1 after an orderly finish, and rank 0 must be allowed to print its summary. A rank stuck in a
  // collective with a dead peer is killed when the grace period ends.
  using Clock = std::chrono::steady_clock;
  auto deadline = Clock::now() + std::chrono::seconds(timeoutSeconds());
  int failed = 0;
  size_t left = pids.size();
  while (left > 0) {
    int st = 0;
    pid_t p = ::waitpid(-1, &st, WNOHANG);
    if (p > 0) {
      for (size_t i = 0; i < pids.size(); i++) {
        if (pids[i] != p || done[i]) continue;
        done[i] = true;
        left--;
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0) continue;
        if (WIFSIGNALED(st))
          std::fprintf(stderr, "preccl-perf: rank %zu killed by signal %d\n", i, WTERMSIG(st));
        else
          std::fprintf(stderr, "preccl-perf: rank %zu exited with status %d\n", i, WEXITSTATUS(st));
        if (!failed) deadline = std::min(deadline, Clock::now() + std::chrono::seconds(5));
        failed = 1;
      }
      continue;
    }
    if (p < 0 && errno != EINTR) break;  // no children left
    if (Clock::now() > deadline) {
      if (!failed)
        std::fprintf(stderr, "preccl-perf: timeout after %d s (PRECCL_PERF_TIMEOUT); killing all ranks\n",
                     timeoutSeconds());
      failed = 1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (left > 0) {
    if (failed) std::fprintf(stderr, "preccl-perf: killing the remaining %zu rank(s)\n", left);
    killAll(pids, done);
  }
  return failed;
}

int launchFromEnvironment(const RankBody& body) {
  int rank = -1, nranks = -1;
  const char* rankText = envOr("PRECCL_RANK", "OMPI_COMM_WORLD_RANK");
  const char* sizeText = std::getenv("PRECCL_RANK") ? std::getenv("PRECCL_NRANKS")
                                                    : std::getenv("OMPI_COMM_WORLD_SIZE");
  if (!parseEnvInt(rankText, &rank) || !parseEnvInt(sizeText, &nranks) || nranks < 1 || rank >= nranks) {
    std::fprintf(stderr, "preccl-perf: bad job environment (rank '%s', nranks '%s')\n",
                 rankText ? rankText : "", sizeText ? sizeText : "");
    return 1;
  }
  const char* root = std::getenv("PRECCL_ROOT_ADDR");
  if (!root || !*root) {
    std::fprintf(stderr, "preccl-perf: PRECCL_ROOT_ADDR=<ip>:<port> is required in a job (rank %d)\n", rank);
    return 1;
  }
  setenv("PRECCL_COMM_ID", root, 1);
  precclUniqueId id;
  precclResult_t res = precclGetUniqueId(&id);
  if (res != precclSuccess) {
    std::fprintf(stderr, "preccl-perf: rank %d: precclGetUniqueId (PRECCL_COMM_ID=%s) failed: %s (%s)\n", rank,
                 root, precclGetErrorString(res), precclGetLastError(nullptr));
    return 1;
  }
  return body(rank, nranks, id);
}

}  // namespace perf
