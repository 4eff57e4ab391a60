#include "harness.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

namespace ptest {

int64_t nowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}
double nowSeconds() { return double(nowNs()) * 1e-9; }

std::string lastError(precclComm_t comm) {
  const char* e = precclGetLastError(comm);
  return e ? std::string(e) : std::string("(null)");
}

std::string resultName(precclResult_t r) {
  const char* s = precclGetErrorString(r);
  return std::to_string(int(r)) + " (" + (s ? s : "null") + ")";
}

Env localEnv(Transport t, int nvts, const char* algo) {
  Env e = {{"PRECCL_SOCKET_IFNAME", "lo"},
           {"PRECCL_TIMEOUT", "20"},
           {"PRECCL_CHECK_ALLOC", "1"},
           {"PRECCL_DEBUG", "WARN"},
           {"PRECCL_SHM_DISABLE", t == Transport::Socket ? "1" : "0"}};
  if (nvts > 0) e.push_back({"PRECCL_NVTS", std::to_string(nvts)});
  if (algo) e.push_back({"PRECCL_ALGO", algo});
  return e;
}

const char* transportName(Transport t) { return t == Transport::Shm ? "shm" : "socket"; }

// ---- Rank ----

void Rank::send(char kind, const std::string& what) {
  if (fd_ < 0) return;
  std::string line(1, kind);
  line += what.substr(0, 1500);
  for (char& c : line)
    if (c == '\n') c = ' ';
  line += '\n';
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t w = write(fd_, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    p += w;
    left -= size_t(w);
  }
}

void Rank::fail(const std::string& what) {
  ++failures_;
  __atomic_add_fetch(&shared->failed, 1, __ATOMIC_RELEASE);
  if (sent_ < kMaxMessages) {
    ++sent_;
    send('F', what);
  } else if (sent_ == kMaxMessages) {
    ++sent_;
    send('F', "(further failures of this rank not shown)");
  }
}

void Rank::info(const std::string& what) { send('I', what); }

bool Rank::ok(precclResult_t r, const std::string& what) {
  if (r == precclSuccess) return true;
  fail(what + " returned " + resultName(r) + ": " + lastError(comm));
  return false;
}

bool Rank::barrier(double seconds) {
  // Sense-reversing barrier on the shared page; nranks processes, bounded wait.
  const int gen = __atomic_load_n(&shared->barrierGen, __ATOMIC_ACQUIRE);
  if (__atomic_add_fetch(&shared->barrierCount, 1, __ATOMIC_ACQ_REL) == nranks) {
    __atomic_store_n(&shared->barrierCount, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&shared->barrierGen, gen + 1, __ATOMIC_RELEASE);
    return true;
  }
  const double end = nowSeconds() + seconds;
  while (__atomic_load_n(&shared->barrierGen, __ATOMIC_ACQUIRE) == gen) {
    if (nowSeconds() > end) {
      fail("harness barrier timed out");
      return false;
    }
    usleep(200);
  }
  return true;
}

// ---- the child side ----

namespace {

bool waitFlag(volatile int* flag, double seconds) {
  const double end = nowSeconds() + seconds;
  while (!__atomic_load_n(flag, __ATOMIC_ACQUIRE)) {
    if (nowSeconds() > end) return false;
    usleep(500);
  }
  return true;
}

[[noreturn]] void childMain(int rank, int nranks, int fd, Shared* sh, const GroupOptions& opt,
                            const std::function<void(Rank&)>& body) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the test binary
  Rank r;
  r.rank = rank;
  r.nranks = nranks;
  r.shared = sh;
  r.fd_ = fd;
  try {
    for (auto& [k, v] : opt.env) setenv(k.c_str(), v.c_str(), 1);
    if (opt.rankEnv)
      for (auto& [k, v] : opt.rankEnv(rank)) setenv(k.c_str(), v.c_str(), 1);
    if (opt.beforeInit) opt.beforeInit(rank);
    if (opt.initComm) {
      if (rank == 0) {
        precclUniqueId id;
        if (!r.ok(precclGetUniqueId(&id), "precclGetUniqueId")) _exit(3);
        sh->id = id;
        __atomic_store_n(&sh->idReady, 1, __ATOMIC_RELEASE);
      } else if (!waitFlag(&sh->idReady, 60)) {
        r.fail("no unique id from rank 0 within 60 s");
        _exit(3);
      }
      if (opt.gateInit && rank > 0 && !waitFlag(&sh->go, 60)) {
        r.fail("parent never opened the init gate");
        _exit(3);
      }
      precclUniqueId id = sh->id;
      if (!r.ok(precclCommInitRank(&r.comm, nranks, id, rank), "precclCommInitRank")) _exit(3);
    }
    body(r);
    if (r.comm && opt.destroyComm) r.ok(precclCommDestroy(r.comm), "precclCommDestroy");
  } catch (const std::exception& e) {
    r.fail(std::string("exception: ") + e.what());
  } catch (...) {
    r.fail("unknown exception");
  }
  _exit(r.failures() ? 1 : 0);
}

}  // namespace

// ---- the parent side ----

GroupResult runGroup(int nranks, const GroupOptions& opt, const std::function<void(Rank&)>& body) {
  GroupResult res;
  res.ranks.resize(size_t(nranks));
  void* mem = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    res.failures.push_back("harness: mmap failed");
    return res;
  }
  Shared* sh = new (mem) Shared{};
  fflush(stdout);
  fflush(stderr);
  const double start = nowSeconds();
  std::vector<pid_t> pids(size_t(nranks), -1);
  std::vector<int> fds(size_t(nranks), -1);
  for (int r = 0; r < nranks; ++r) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) {
      res.failures.push_back("harness: pipe failed");
      break;
    }
    pid_t pid = fork();
    if (pid == 0) {
      close(p[0]);
      for (int q = 0; q < r; ++q) close(fds[size_t(q)]);
      childMain(r, nranks, p[1], sh, opt, body);
    }
    close(p[1]);
    if (pid < 0) {
      close(p[0]);
      res.failures.push_back("harness: fork failed");
      break;
    }
    pids[size_t(r)] = pid;
    fds[size_t(r)] = p[0];
  }

  const double deadline = start + opt.timeoutSec;
  if (opt.parentDuringRun && opt.initComm) {
    if (waitFlag(&sh->idReady, std::min(60.0, opt.timeoutSec)))
      opt.parentDuringRun(sh);
    else
      res.failures.push_back("harness: rank 0 never published the unique id");
    __atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
  }

  // Read every rank's messages until all pipes close or the deadline passes.
  std::vector<std::string> partial(static_cast<size_t>(nranks));
  int open = 0;
  for (int fd : fds) open += fd >= 0;
  while (open > 0) {
    const double left = deadline - nowSeconds();
    // At the deadline, what the ranks said so far is still read (a failure explains the overrun).
    if (left <= 0) res.timedOut = true;
    std::vector<pollfd> pf;
    std::vector<int> who;
    for (int r = 0; r < nranks; ++r)
      if (fds[size_t(r)] >= 0) {
        pf.push_back({fds[size_t(r)], POLLIN, 0});
        who.push_back(r);
      }
    int n = poll(pf.data(), pf.size(), res.timedOut ? 0 : int(std::min(left, 1.0) * 1000) + 1);
    if (n <= 0 && res.timedOut) break;
    if (n <= 0) continue;
    for (size_t i = 0; i < pf.size(); ++i) {
      if (!pf[i].revents) continue;
      const int r = who[i];
      char buf[4096];
      ssize_t got = read(pf[i].fd, buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        close(fds[size_t(r)]);
        fds[size_t(r)] = -1;
        --open;
        continue;
      }
      partial[size_t(r)].append(buf, size_t(got));
      size_t nl;
      while ((nl = partial[size_t(r)].find('\n')) != std::string::npos) {
        std::string line = partial[size_t(r)].substr(0, nl);
        partial[size_t(r)].erase(0, nl + 1);
        if (line.empty()) continue;
        std::string msg = "rank " + std::to_string(r) + ": " + line.substr(1);
        (line[0] == 'F' ? res.failures : res.infos).push_back(msg);
      }
    }
  }
  // Reap; whatever is still running at the deadline is killed.
  for (int r = 0; r < nranks; ++r) {
    pid_t pid = pids[size_t(r)];
    if (pid <= 0) continue;
    int status = 0;
    pid_t w = 0;
    while ((w = waitpid(pid, &status, WNOHANG)) == 0 && nowSeconds() < deadline) usleep(2000);
    if (w == 0) {
      res.timedOut = true;
      kill(pid, SIGKILL);
      w = waitpid(pid, &status, 0);
    }
    if (w == pid) {
      auto& o = res.ranks[size_t(r)];
      o.exited = WIFEXITED(status);
      o.exitCode = o.exited ? WEXITSTATUS(status) : -1;
      o.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    }
  }
  for (int fd : fds)
    if (fd >= 0) close(fd);
  res.seconds = nowSeconds() - start;
  munmap(mem, sizeof(Shared));
  return res;
}

void reportToCatch(const std::string& title, const GroupResult& g,
                   const std::function<bool(int rank)>& allowAbnormal) {
  INFO(title);
  for (const auto& m : g.infos) UNSCOPED_INFO(m);
  for (const auto& f : g.failures) FAIL_CHECK(title << ": " << f);
  int badRanks = 0;
  for (size_t r = 0; r < g.ranks.size(); ++r) {
    const auto& o = g.ranks[r];
    if (allowAbnormal && allowAbnormal(int(r))) continue;
    if (!(o.exited && o.exitCode == 0)) {
      ++badRanks;
      FAIL_CHECK(title << ": rank " << r << " ended badly (exit code " << o.exitCode << ", signal " << o.signal << ")");
    }
  }
  // The summary assertions (so a passing group still counts its checks).
  CHECK_FALSE(g.timedOut);
  CHECK(g.failures.size() == 0);
  CHECK(badRanks == 0);
  std::printf("  %-60s %6.1f s%s\n", title.c_str(), g.seconds, g.failures.empty() && !g.timedOut ? "" : "  FAILED");
  for (const auto& m : g.infos) std::printf("    %s\n", m.c_str());
  std::fflush(stdout);
}

double nicShare(Rank& r, int nic) {
  precclVtStats_t st[64];
  int nvt = 64;
  double share = 0;
  if (r.ok(precclCommGetVtStats(r.comm, st, &nvt), "CommGetVtStats"))
    for (int v = 0; v < std::min(nvt, 64); ++v)
      if (st[v].nic == nic) share += st[v].share;
  return share;
}

uint64_t lastRelayedBytes(Rank& r) {
  precclVtStats_t st[64];
  int nvt = 64;
  uint64_t n = 0;
  if (r.ok(precclCommGetVtStats(r.comm, st, &nvt), "CommGetVtStats"))
    for (int v = 0; v < std::min(nvt, 64); ++v) n += st[v].lastRelayedBytes;
  return n;
}

}  // namespace ptest
