// perf-gloo: Gloo's collectives (float, sum) over its TCP transport, measured and printed like preccl-perf
// / nccl-tests, as the Gloo reference point of the bed and of perf/compare_allreduce.sh. Ranks rendezvous
// through a gloo::rendezvous::FileStore directory. With --ifaces a,b one context per interface is built
// and successive calls go round-robin over them, as PyTorch's Gloo backend runs single collectives: one
// NIC per call. --concurrent runs every AllReduce, Broadcast and Reduce as one operation per context on
// its share of the buffer, at once, as DDP's concurrent bucket all-reduces spread over the devices.
//
// What runs: gloo::allreduce (ring, as PyTorch calls it) unless --algo picks ring_chunked,
// halving_doubling or bcube; ReduceScatterHalvingDoubling (Gloo's only reduce-scatter); gloo::allgather,
// broadcast, reduce and alltoall. Where Gloo has no out-of-place form (ring_chunked, halving_doubling,
// reduce-scatter) or no in-place one (alltoall), the call copies what a caller of Gloo has to, and the
// header line says so.
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
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/allreduce_bcube.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/alltoall.h>
#include <gloo/broadcast.h>
#include <gloo/reduce.h>
#include <gloo/reduce_scatter.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include "peer_bench.h"

namespace {

enum class Algo { Ring, RingChunked, HalvingDoubling, Bcube };
constexpr const char* kAlgoNames[] = {"ring", "ring_chunked", "halving_doubling", "bcube"};

struct Opts {
  peer::Opts common;
  Algo algo = Algo::Ring;
  bool concurrent = false;   // --concurrent: every call as one operation per context, at once
  int ranks = 0;             // --ranks N: start N local processes
  int rank = -1, size = -1;  // --rank/--size: this process is one rank of a job
  std::string store;         // FileStore directory
  std::vector<std::string> ifaces{"lo"};
};

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
  enum { kRanks = peer::kIterCsvOption + 1, kRank, kSize, kStore, kIfaces, kAlgo, kConcurrent };
  static const option kLong[] = {{"ranks", required_argument, nullptr, kRanks},
                                 {"rank", required_argument, nullptr, kRank},
                                 {"size", required_argument, nullptr, kSize},
                                 {"store", required_argument, nullptr, kStore},
                                 {"ifaces", required_argument, nullptr, kIfaces},
                                 {"algo", required_argument, nullptr, kAlgo},
                                 {"concurrent", no_argument, nullptr, kConcurrent},
                                 {"iter-csv", required_argument, nullptr, peer::kIterCsvOption},
                                 {nullptr, 0, nullptr, 0}};
  int c;
  while ((c = getopt_long(argc, argv, peer::kCommonShort, kLong, nullptr)) != -1) {
    const peer::OptResult r = peer::commonOption(c, optarg, &o->common);
    if (r == peer::OptResult::Bad) return false;
    if (r == peer::OptResult::Taken) continue;
    switch (c) {
      case kRanks: o->ranks = std::atoi(optarg); if (o->ranks < 1) return false; break;
      case kRank: o->rank = std::atoi(optarg); break;
      case kSize: o->size = std::atoi(optarg); break;
      case kStore: o->store = optarg; break;
      case kIfaces: o->ifaces = splitComma(optarg); if (o->ifaces.empty()) return false; break;
      case kConcurrent: o->concurrent = true; break;
      case kAlgo: {
        auto* it = std::find_if(std::begin(kAlgoNames), std::end(kAlgoNames),
                                [](const char* n) { return std::strcmp(n, optarg) == 0; });
        if (it == std::end(kAlgoNames)) return false;
        o->algo = Algo(it - std::begin(kAlgoNames));
        break;
      }
      default: return false;
    }
  }
  if (optind < argc || o->common.minBytes > o->common.maxBytes) return false;
  const bool job = o->rank >= 0 || o->size >= 0;
  if (job && (o->ranks || o->size < 1 || o->rank < 0 || o->rank >= o->size || o->store.empty())) return false;
  if (!job && !o->ranks) o->ranks = 4;
  return true;
}

void usage(const char* prog) {
  std::fprintf(stderr,
               "usage: %s [options] [--algo ring|ring_chunked|halving_doubling|bcube] [--ifaces lo[,if2...]]\n"
               "          [--concurrent]   AllReduce, Broadcast, Reduce: one operation per interface, at once\n"
               "          [--ranks N [--store DIR]] | [--rank R --size S --store DIR]\n%s",
               prog, peer::commonUsage());
}

void sumFloats(void* out, const void* a, const void* b, size_t n) {
  auto* o = static_cast<float*>(out);
  auto* x = static_cast<const float*>(a);
  auto* y = static_cast<const float*>(b);
  for (size_t i = 0; i < n; i++) o[i] = x[i] + y[i];
}

class GlooComm : public peer::PeerComm {
 public:
  GlooComm(std::vector<std::shared_ptr<gloo::Context>> ctxs, Algo algo, bool concurrent)
      : ctxs_(std::move(ctxs)), algo_(algo), concurrent_(concurrent) {}

  void run(peer::Coll c, const float* send, float* recv, size_t count, int root, bool inPlace) override {
    if (concurrent_ && splittable(c) && ctxs_.size() > 1) {
      // One operation per context on its share of the buffer, all at once, as DDP's concurrent bucket
      // all-reduces spread over PyTorch's Gloo devices: every NIC works on every call.
      std::vector<std::thread> threads;
      const size_t k = ctxs_.size();
      for (size_t i = 0; i < k; i++) {
        const size_t off = count / k * i + std::min(i, count % k), len = count / k + (i < count % k ? 1 : 0);
        const uint32_t tag = nextTag_++;
        auto part = [=, this] { runOn(ctxs_[i], tag, c, send + off, recv + off, len, root, inPlace); };
        if (i + 1 < k) threads.emplace_back(part);
        else part();
      }
      for (auto& t : threads) t.join();
      return;
    }
    // Otherwise calls go round-robin over the contexts, one context (one NIC) per call, as PyTorch's
    // Gloo backend runs a single collective.
    const size_t at = next_;
    next_ = (next_ + 1) % ctxs_.size();
    runOn(ctxs_[at], nextTag_++, c, send, recv, count, root, inPlace);
  }

  // The collectives whose elements are independent, so that a call splits into contiguous parts.
  static bool splittable(peer::Coll c) {
    return c == peer::Coll::AllReduce || c == peer::Coll::Broadcast || c == peer::Coll::Reduce;
  }

  int64_t allReduceI64(int64_t v, bool max) override {
    gloo::AllreduceRing<int64_t> ar(ctxs_[0], {&v}, 1,
                                   max ? gloo::ReductionFunction<int64_t>::max : gloo::ReductionFunction<int64_t>::sum);
    ar.run();
    return v;
  }

 private:
  // One operation on one context. A rank that finished a call may start the next ones while a peer
  // still works on it (a Reduce's leaves): every operation has its own tag, as PyTorch's Gloo backend
  // gives it, so that their messages never meet.
  void runOn(const std::shared_ptr<gloo::Context>& ctx, uint32_t tag, peer::Coll c, const float* send, float* recv,
             size_t count, int root, bool inPlace) {
    const int n = ctx->size, me = ctx->rank;
    float* in = const_cast<float*>(send);
    switch (c) {
      case peer::Coll::AllReduce:
        if (algo_ == Algo::Ring || algo_ == Algo::Bcube) {
          gloo::AllreduceOptions opts(ctx);
          opts.setTag(tag);
          opts.setAlgorithm(algo_ == Algo::Ring ? gloo::AllreduceOptions::Algorithm::RING
                                                : gloo::AllreduceOptions::Algorithm::BCUBE);
          if (!inPlace) opts.setInput(in, count);
          opts.setOutput(recv, count);
          opts.setReduceFunction(sumFloats);
          gloo::allreduce(opts);
        } else {  // the classic algorithms reduce in place on the output
          if (!inPlace) std::memcpy(recv, send, count * sizeof(float));
          bound(ctx, recv, count).run();
        }
        break;
      case peer::Coll::ReduceScatter: {
        // In place over the whole buffer, and this rank's block ends at the buffer's start (as MPI's
        // in-place does): out-of-place works on a copy, in-place moves the block to rank*count.
        float* whole = in;
        if (!inPlace) {
          scratch_.assign(send, send + count * size_t(n));
          whole = scratch_.data();
        }
        gloo::ReduceScatterHalvingDoubling<float> rs(ctx, {whole}, int(count) * n, std::vector<int>(n, int(count)));
        rs.run();
        if (recv != whole) std::memmove(recv, whole, count * sizeof(float));
        break;
      }
      case peer::Coll::AllGather: {
        gloo::AllgatherOptions opts(ctx);
        opts.setTag(tag);
        if (!inPlace) opts.setInput(in, count);  // in place: this rank's block is already in the output
        opts.setOutput(recv, count * size_t(n));
        gloo::allgather(opts);
        break;
      }
      case peer::Coll::Broadcast: {
        gloo::BroadcastOptions opts(ctx);
        opts.setTag(tag);
        if (!inPlace && me == root) opts.setInput(in, count);
        opts.setOutput(recv, count);
        opts.setRoot(root);
        gloo::broadcast(opts);
        break;
      }
      case peer::Coll::Reduce: {
        gloo::ReduceOptions opts(ctx);
        opts.setTag(tag);
        if (!inPlace) opts.setInput(in, count);
        opts.setOutput(recv, count);
        opts.setRoot(root);
        opts.setReduceFunction(sumFloats);
        gloo::reduce(opts);
        break;
      }
      case peer::Coll::AlltoAll: {
        const size_t all = count * size_t(n);
        if (inPlace) {  // Gloo's alltoall needs separate input and output
          scratch_.assign(recv, recv + all);
          in = scratch_.data();
        }
        gloo::AlltoallOptions opts(ctx);
        opts.setTag(tag);
        opts.setInput(in, all);
        opts.setOutput(recv, all);
        gloo::alltoall(opts);
        break;
      }
      default: break;
    }
  }

  // The classic algorithm objects are bound to a buffer at construction: one per (context, buffer, count).
  gloo::Algorithm& bound(const std::shared_ptr<gloo::Context>& ctx, float* buf, size_t count) {
    std::lock_guard<std::mutex> lock(classicMutex_);  // concurrent parts look up their own
    auto key = std::make_tuple(ctx.get(), buf, count);
    auto it = classic_.find(key);
    if (it != classic_.end()) return *it->second;
    std::unique_ptr<gloo::Algorithm> a;
    const std::vector<float*> ptrs{buf};
    if (algo_ == Algo::RingChunked) a = std::make_unique<gloo::AllreduceRingChunked<float>>(ctx, ptrs, int(count));
    else a = std::make_unique<gloo::AllreduceHalvingDoubling<float>>(ctx, ptrs, int(count));
    return *classic_.emplace(key, std::move(a)).first->second;
  }

  std::vector<std::shared_ptr<gloo::Context>> ctxs_;
  Algo algo_;
  bool concurrent_;
  size_t next_ = 0;  // round-robin position over the contexts
  uint32_t nextTag_ = 0;
  std::mutex classicMutex_;
  std::vector<float> scratch_;
  std::map<std::tuple<gloo::Context*, float*, size_t>, std::unique_ptr<gloo::Algorithm>> classic_;
};

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
  const bool copies = o.common.coll == peer::Coll::ReduceScatter || o.common.coll == peer::Coll::AlltoAll ||
                      (o.common.coll == peer::Coll::AllReduce && (o.algo == Algo::RingChunked || o.algo == Algo::HalvingDoubling));
  std::string title = std::string("perf-gloo (Gloo ") +
                      (o.common.coll == peer::Coll::AllReduce ? kAlgoNames[int(o.algo)] : "default") + ", tcp, " +
                      std::to_string(ctxs.size()) + " context(s): ";
  for (size_t k = 0; k < o.ifaces.size(); k++) title += (k ? "," : "") + o.ifaces[k];
  if (o.concurrent && GlooComm::splittable(o.common.coll)) title += "; one part per context at once";
  title += copies ? "; a copy where Gloo lacks the placement)" : ")";
  GlooComm comm(std::move(ctxs), o.algo, o.concurrent);
  return peer::runSizes(o.common, rank, nranks, comm, title);
}

int runRankSafe(const Opts& o, int rank, int nranks) {
  try {
    return runRank(o, rank, nranks);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "perf-gloo: rank %d: %s\n", rank, e.what());
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
      std::perror("perf-gloo: mkdtemp");
      return 1;
    }
    o.store = tmpl;
  } else if (::mkdir(o.store.c_str(), 0700) != 0 && errno != EEXIST) {
    std::perror("perf-gloo: mkdir store");
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
      std::perror("perf-gloo: fork");
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
          std::fprintf(stderr, "perf-gloo: rank %zu failed (status 0x%x)\n", i, st);
          if (!failed) deadline = std::min(deadline, std::chrono::steady_clock::now() + std::chrono::seconds(5));
          failed = 1;
        }
      }
    } else if (p < 0 && errno != EINTR) {
      break;
    } else if (std::chrono::steady_clock::now() > deadline) {
      if (!failed) std::fprintf(stderr, "perf-gloo: timeout after %d s\n", timeoutS);
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
