// What the peer benchmarks (perf-mpi for OpenMPI, perf-gloo for Gloo) share: their common options, the
// inputs and the check of every collective, the timing loop, and preccl-perf's (nccl-tests') output
// columns. A peer supplies a PeerComm: one call of a collective and an int64 reduction over the ranks.
// float and sum only: the peers are the reference points of the bed, not libraries under test.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "collectives.h"

namespace peer {

using perf::Coll;

struct Opts {
  Coll coll = Coll::AllReduce;
  size_t minBytes = 8, maxBytes = size_t(64) << 20, factor = 2;
  int iters = 20, warmup = 5, root = 0;
  bool check = true;
  std::string iterCsv;  // --iter-csv FILE: rank 0 writes one row per timed iteration (its own time)
};

// getopt's short options and the long option id of --iter-csv, for a peer's own option loop.
constexpr const char* kCommonShort = "t:b:e:f:n:w:c:r:h";
constexpr int kIterCsvOption = 1000;
enum class OptResult { Taken, Bad, NotMine };
// Handles one common option (-t -b -e -f -n -w -c -r, --iter-csv).
OptResult commonOption(int c, const char* arg, Opts* o);
// The common options' usage lines.
const char* commonUsage();

// The collectives a peer runs: AllReduce, ReduceScatter, AllGather, Broadcast, Reduce, AlltoAll.
bool peerSupports(Coll c);

class PeerComm {
 public:
  virtual ~PeerComm() = default;
  // One call with NCCL's meaning of the arguments: `count` is the call's count (perf::geometryFor);
  // out-of-place `send` and `recv` are separate buffers, in-place they point into one allocation in
  // NCCL's layout (perf::inPlaceSendOffset / inPlaceRecvOffset). A peer whose library lays in-place out
  // differently does what its caller has to (a copy), and says so in its header line.
  virtual void run(Coll c, const float* send, float* recv, size_t count, int root, bool inPlace) = 0;
  // Sum (or max) of v over all ranks; every rank gets it. Doubles as a barrier.
  virtual int64_t allReduceI64(int64_t v, bool max) = 0;
};

// Runs every size of o (out-of-place, then in-place), prints preccl-perf's columns on rank 0 under
// `title` (the peer, its algorithm and transport), checks every result element of one extra call per size
// and mode. Returns 0 when every result was right.
int runSizes(const Opts& o, int rank, int nranks, PeerComm& comm, const std::string& title);

}  // namespace peer
