// perf-gloo-allreduce: Gloo's ring-chunked AllReduce (float, sum) over its TCP transport, measured and
// printed like preccl-perf / nccl-tests, as the Gloo reference point of perf/compare_allreduce.sh.
// Ranks rendezvous through a gloo::rendezvous::FileStore directory. With --ifaces a,b one context per
// interface is built and successive operations go round-robin over them, as PyTorch's Gloo backend does.
// Gloo's ring AllReduce only works in place, so "out-of-place" is a copy into the output buffer plus the
// in-place AllReduce (what a caller of Gloo has to do); "in-place" is the AllReduce alone.
// --iter-csv FILE: rank 0 writes one row per timed iteration (its own time; see docs/benchmarks.md).
#include <dirent.h>
#include <getopt.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

namespace {

struct Opts {
  size_t minBytes = 8, maxBytes = size_t(64) << 20, factor = 2;
  int iters = 20, warmup = 5;
  bool check = true;
  int ranks = 0;             // --ranks N: start N local processes
  int rank = -1, size = -1;  // --rank/--size: this process is one rank of a job
  std::string store;         // FileStore directory
  std::vector<std::string> ifaces{"lo"};
  std::string iterCsv;       // --iter-csv FILE
};

bool parseBytes(const char* t, size_t* out) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(t, &end, 10);
  if (errno || end == t || t[0] == '-') return false;
  int shift = 0;
  if (*end == 'K' || *end == 'k') shift = 10, end++;
  else if (*end == 'M' || *end == 'm') shift = 20, end++;
  else if (*end == 'G' || *end == 'g') shift = 30, end++;
  if (*end == 'B' || *end == 'b') end++;
  if (*end) return false;
  *out = size_t(v << shift);
  return true;
}

std::vector<std::string> splitComma(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    if (comma > pos) out.push_back(s.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return out;
}

bool parseOpts(int argc, char** argv, Opts* o) {
  enum { kRanks = 1000, kRank, kSize, kStore, kIfaces, kIterCsv };
  static const option kLong[] = {{"ranks", required_argument, nullptr, kRanks},
                                 {"rank", required_argument, nullptr, kRank},
                                 {"size", required_argument, nullptr, kSize},
                                 {"store", required_argument, nullptr, kStore},
                                 {"ifaces", required_argument, nullptr, kIfaces},
                                 {"iter-csv", required_argument, nullptr, kIterCsv},
                                 {nullptr, 0, nullptr, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "b:e:f:n:w:c:h", kLong, nullptr)) != -1) {
    switch (c) {
      case 'b': if (!parseBytes(optarg, &o->minBytes)) return false; break;
      case 'e': if (!parseBytes(optarg, &o->maxBytes)) return false; break;
      case 'f': o->factor = size_t(std::atol(optarg)); if (o->factor < 2) return false; break;
      case 'n': o->iters = std::atoi(optarg); if (o->iters < 1) return false; break;
      case 'w': o->warmup = std::atoi(optarg); if (o->warmup < 0) return false; break;
      case 'c': o->check = std::atoi(optarg) != 0; break;
      case kRanks: o->ranks = std::atoi(optarg); if (o->ranks < 1) return false; break;
      case kRank: o->rank = std::atoi(optarg); break;
      case kSize: o->size = std::atoi(optarg); break;
      case kStore: o->store = optarg; break;
      case kIfaces: o->ifaces = splitComma(optarg); if (o->ifaces.empty()) return false; break;
      case kIterCsv: o->iterCsv = optarg; break;
      default: return false;
    }
  }
  if (optind < argc || o->minBytes > o->maxBytes) return false;
  const bool job = o->rank >= 0 || o->size >= 0;
  if (job && (o->ranks || o->size < 1 || o->rank < 0 || o->rank >= o->size || o->store.empty())) return false;
  if (!job && !o->ranks) o->ranks = 4;
  return true;
}

void usage(const char* prog) {
  std::fprintf(stderr,
               "usage: %s [-b min] [-e max] [-f factor] [-n iters] [-w warmup] [-c 0|1] [--ifaces lo[,if2...]]\n"
               "          [--iter-csv FILE] [--ranks N [--store DIR]] | [--rank R --size S --store DIR]\n",
               prog);
}

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

const int64_t kProgramStartNs = nowNs();

double unixSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// --iter-csv rows: rank 0's own time of each timed call (a reduction per call would disturb the run).
void iterRow(std::FILE* f, size_t bytes, const char* mode, int iter, int64_t ns, double busFactor) {
  const double us = double(ns) / 1e3, algbw = us > 0 ? double(bytes) / 1e3 / us : 0.0;
  std::fprintf(f, "allreduce,%s,%zu,%d,%.6f,%.6f,%.3f,%.9f,%.9f\n", mode, bytes, iter,
               double(nowNs() - kProgramStartNs) / 1e9, unixSeconds(), us, algbw, algbw * busFactor);
  std::fflush(f);
}

// Small integers: the float sum is exact in any order.
float input(int rank, size_t i) { return float((size_t(rank) * 7 + i * 13 + (i >> 7)) % 128); }

void fill(float* buf, size_t n, int rank) {
  for (size_t i = 0; i < n; i++) buf[i] = input(rank, i);
}

long long countWrong(const float* buf, size_t n, int nranks) {
  long long wrong = 0;
  for (size_t i = 0; i < n; i++) {
    float want = 0;
    for (int r = 0; r < nranks; r++) want += input(r, i);
    if (std::memcmp(&want, &buf[i], sizeof want) != 0) wrong++;
  }
  return wrong;
}

// Reduces one int64 over all ranks in place (max or sum); doubles as a barrier.
void allReduceI64(const std::shared_ptr<gloo::Context>& ctx, int64_t* v, const gloo::ReductionFunction<int64_t>* fn) {
  gloo::AllreduceRing<int64_t> ar(ctx, {v}, 1, fn);
  ar.run();
}

void printMeasure(double us, double algbw, double busbw, long long wrong, bool check) {
  char t[32];
  std::snprintf(t, sizeof t, us >= 10000.0 ? "%7.0f" : us >= 100.0 ? "%7.1f" : "%7.2f", us);
  if (check) std::printf("  %7s  %6.2f  %6.2f  %6lld", t, algbw, busbw, wrong);
  else std::printf("  %7s  %6.2f  %6.2f  %6s", t, algbw, busbw, "N/A");
}

int runRank(const Opts& o, int rank, int nranks) {
  gloo::rendezvous::FileStore store(o.store);
  std::vector<std::shared_ptr<gloo::Context>> ctxs;
  for (size_t k = 0; k < o.ifaces.size(); k++) {
    gloo::transport::tcp::attr attr;
    attr.iface = o.ifaces[k];
    auto dev = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::PrefixStore prefix("ctx" + std::to_string(k), store);
    auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, nranks);
    ctx->setTimeout(std::chrono::seconds(300));
    ctx->connectFullMesh(prefix, dev);
    ctxs.push_back(ctx);
  }
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> iterFile(nullptr, std::fclose);
  if (rank == 0 && !o.iterCsv.empty()) {
    iterFile.reset(std::fopen(o.iterCsv.c_str(), "w"));
    if (!iterFile) std::fprintf(stderr, "perf-gloo-allreduce: cannot write %s\n", o.iterCsv.c_str());
    else std::fprintf(iterFile.get(), "collective,mode,bytes,iter,t_s,unix_s,time_us,algbw,busbw\n");
  }
  const size_t maxN = o.maxBytes / sizeof(float);
  std::vector<float> send(maxN ? maxN : 1, 0.0f), recv(maxN ? maxN : 1, 0.0f);
  if (rank == 0) {
    std::printf("# perf-gloo-allreduce (AllreduceRingChunked, tcp): nRanks %d contexts %zu minBytes %zu maxBytes %zu "
                "step: %zu(factor) warmup iters: %d iters: %d validation: %d\n#\n",
                nranks, ctxs.size(), o.minBytes, o.maxBytes, o.factor, o.warmup, o.iters, o.check ? 1 : 0);
    for (size_t k = 0; k < ctxs.size(); k++) std::printf("#  Context %zu on interface %s\n", k, o.ifaces[k].c_str());
    std::printf("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "",
                "", "", "", "");
    std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size", "count", "type",
                "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
    std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)", "(elements)", "",
                "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  }
  const double factor = 2.0 * (nranks - 1) / nranks;
  long long totalWrong = 0;
  double bwSum = 0;
  int bwCount = 0;
  for (size_t bytes = o.minBytes; bytes <= o.maxBytes;) {
    const size_t n = bytes / sizeof(float);
    // One algorithm instance per context, all on the output buffer (Gloo reduces in place).
    std::vector<std::unique_ptr<gloo::AllreduceRingChunked<float>>> algos;
    for (auto& ctx : ctxs)
      algos.push_back(std::make_unique<gloo::AllreduceRingChunked<float>>(ctx, std::vector<float*>{recv.data()},
                                                                          int(n)));
    size_t next = 0;  // round-robin position over the contexts
    auto once = [&](bool inPlace) {
      if (!inPlace) std::memcpy(recv.data(), send.data(), n * sizeof(float));
      algos[next]->run();
      next = (next + 1) % algos.size();
    };
    double us[2];
    long long wrong[2] = {0, 0};
    for (int ip = 0; ip < 2; ip++) {
      if (o.check) fill(ip ? recv.data() : send.data(), n, rank);
      for (int i = 0; i < o.warmup; i++) once(ip);
      int64_t sync = 0;
      allReduceI64(ctxs[0], &sync, gloo::ReductionFunction<int64_t>::sum);
      const int64_t t0 = nowNs();
      for (int i = 0; i < o.iters; i++) {
        const int64_t ti = nowNs();
        once(ip);
        if (iterFile) iterRow(iterFile.get(), n * sizeof(float), ip ? "ip" : "oop", i, nowNs() - ti, factor);
      }
      int64_t ns = nowNs() - t0;
      allReduceI64(ctxs[0], &ns, gloo::ReductionFunction<int64_t>::max);
      us[ip] = double(ns) / 1e3 / o.iters;
      if (o.check) {  // one more call on fresh inputs, output poisoned first
        std::memset(recv.data(), 0xA5, n * sizeof(float));
        fill(ip ? recv.data() : send.data(), n, rank);
        once(ip);
        int64_t w = countWrong(recv.data(), n, nranks);
        allReduceI64(ctxs[0], &w, gloo::ReductionFunction<int64_t>::sum);
        wrong[ip] = w;
        totalWrong += w;
      }
    }
    if (rank == 0) {
      std::printf("%12zu  %12zu  %8s  %6s  %6d", n * sizeof(float), n, "float", "sum", -1);
      for (int ip = 0; ip < 2; ip++) {
        const double algbw = us[ip] > 0 ? double(n * sizeof(float)) / 1e3 / us[ip] : 0.0;
        printMeasure(us[ip], algbw, algbw * factor, wrong[ip], o.check);
        bwSum += algbw * factor, bwCount++;
      }
      std::printf("\n");
      std::fflush(stdout);
    }
    const size_t step = bytes ? bytes * o.factor : 1;
    if (step <= bytes) break;
    bytes = step;
  }
  if (rank == 0) {
    std::printf("# Out of bounds values : %lld %s\n", totalWrong, totalWrong ? "FAILED" : "OK");
    std::printf("# Avg bus bandwidth    : %g \n#\n", bwCount ? bwSum / bwCount : 0.0);
    std::fflush(stdout);
  }
  return totalWrong ? 1 : 0;
}

int runRankSafe(const Opts& o, int rank, int nranks) {
  try {
    return runRank(o, rank, nranks);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "perf-gloo-allreduce: rank %d: %s\n", rank, e.what());
    return 1;
  }
}

void removeTree(const std::string& dir) {  // the FileStore directory holds plain files only
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..")) ::unlink((dir + "/" + e->d_name).c_str());
    }
    ::closedir(d);
  }
  ::rmdir(dir.c_str());
}

// Forks the ranks, waits for all with a timeout, kills the rest when one fails.
int launchLocal(Opts o) {
  bool ownStore = o.store.empty();
  if (ownStore) {
    char tmpl[] = "/tmp/gloo-perf-XXXXXX";
    if (!::mkdtemp(tmpl)) {
      std::perror("perf-gloo-allreduce: mkdtemp");
      return 1;
    }
    o.store = tmpl;
  } else if (::mkdir(o.store.c_str(), 0700) != 0 && errno != EEXIST) {
    std::perror("perf-gloo-allreduce: mkdir store");
    return 1;
  }
  std::fflush(stdout);
  std::vector<pid_t> pids;
  for (int r = 0; r < o.ranks; r++) {
    pid_t pid = ::fork();
    if (pid == 0) {
      int rc = runRankSafe(o, r, o.ranks);
      std::fflush(stdout);
      _exit(rc);
    }
    if (pid < 0) {
      std::perror("perf-gloo-allreduce: fork");
      break;
    }
    pids.push_back(pid);
  }
  const char* tv = std::getenv("PRECCL_PERF_TIMEOUT");
  const int timeoutS = tv && std::atoi(tv) > 0 ? std::atoi(tv) : 600;
  // After a failure the others get 5 s to finish on their own (a rank with wrong results still exits in
  // order and rank 0 prints its summary); a rank stuck waiting on a dead peer is then killed.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeoutS);
  int failed = int(pids.size()) != o.ranks;
  if (failed) deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  std::vector<bool> done(pids.size(), false);
  size_t left = pids.size();
  while (left > 0) {
    int st = 0;
    pid_t p = ::waitpid(-1, &st, WNOHANG);
    if (p > 0) {
      for (size_t i = 0; i < pids.size(); i++) {
        if (pids[i] != p) continue;
        done[i] = true, left--;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
          std::fprintf(stderr, "perf-gloo-allreduce: rank %zu failed (status 0x%x)\n", i, st);
          if (!failed) deadline = std::min(deadline, std::chrono::steady_clock::now() + std::chrono::seconds(5));
          failed = 1;
        }
      }
    } else if (p < 0 && errno != EINTR) {
      break;
    } else if (std::chrono::steady_clock::now() > deadline) {
      if (!failed) std::fprintf(stderr, "perf-gloo-allreduce: timeout after %d s\n", timeoutS);
      failed = 1;
      break;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  for (size_t i = 0; i < pids.size(); i++) {
    if (done[i]) continue;
    ::kill(pids[i], SIGKILL);
    int st;
    ::waitpid(pids[i], &st, 0);
  }
  if (ownStore) removeTree(o.store);
  return failed;
}

}  // namespace

int main(int argc, char** argv) {
  Opts o;
  if (!parseOpts(argc, argv, &o)) {
    usage(argv[0]);
    return 2;
  }
  if (o.ranks > 0) return launchLocal(o);
  return runRankSafe(o, o.rank, o.size);
}
