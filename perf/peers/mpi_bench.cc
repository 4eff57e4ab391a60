// perf-mpi: OpenMPI's collectives (float, sum) measured and printed like preccl-perf / nccl-tests, as the
// OpenMPI reference point of the bed and of perf/compare_allreduce.sh. Which algorithm OpenMPI runs is its
// own decision unless the job forces one with coll_tuned's MCA settings (docs/testbed.md, "Peers").
// In-place follows MPI_IN_PLACE, which lays out everything as NCCL does except ReduceScatter: MPI leaves
// the block at the buffer's start, and the call then moves it to rank*count (what a caller has to do).
// Out-of-place Broadcast copies the root's input to its output first (MPI_Bcast has one buffer).
//   mpirun -np 4 perf-mpi -t allgather -b 64M -e 64M
#include <getopt.h>
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "peer_bench.h"

namespace {

class MpiComm : public peer::PeerComm {
 public:
  void run(peer::Coll c, const float* send, float* recv, size_t count, int root, bool inPlace) override {
    const int n = int(count);
    const void* in = inPlace ? MPI_IN_PLACE : send;
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    switch (c) {
      case peer::Coll::AllReduce: MPI_Allreduce(in, recv, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
      case peer::Coll::ReduceScatter:
        // MPI_Reduce_scatter with equal counts, not _block: only it has a ring in coll_tuned.
        counts_.assign(size_t(size()), n);
        if (!inPlace) {
          MPI_Reduce_scatter(send, recv, counts_.data(), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        } else {
          float* base = const_cast<float*>(send);  // NCCL's layout: recv = send + rank*count
          MPI_Reduce_scatter(MPI_IN_PLACE, base, counts_.data(), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
          if (recv != base) std::memmove(recv, base, count * sizeof(float));
        }
        break;
      case peer::Coll::AllGather:
        if (inPlace) MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, n, MPI_FLOAT, MPI_COMM_WORLD);
        else MPI_Allgather(send, n, MPI_FLOAT, recv, n, MPI_FLOAT, MPI_COMM_WORLD);
        break;
      case peer::Coll::Broadcast:
        if (!inPlace && rank == root) std::memcpy(recv, send, count * sizeof(float));
        MPI_Bcast(recv, n, MPI_FLOAT, root, MPI_COMM_WORLD);
        break;
      case peer::Coll::Reduce:
        MPI_Reduce(inPlace && rank == root ? MPI_IN_PLACE : send, recv, n, MPI_FLOAT, MPI_SUM, root, MPI_COMM_WORLD);
        break;
      case peer::Coll::AlltoAll:
        if (inPlace) MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, n, MPI_FLOAT, MPI_COMM_WORLD);
        else MPI_Alltoall(send, n, MPI_FLOAT, recv, n, MPI_FLOAT, MPI_COMM_WORLD);
        break;
      default: break;
    }
  }
  static int size() {
    int n = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    return n;
  }
  int64_t allReduceI64(int64_t v, bool max) override {
    int64_t out = 0;
    MPI_Allreduce(&v, &out, 1, MPI_INT64_T, max ? MPI_MAX : MPI_SUM, MPI_COMM_WORLD);
    return out;
  }

 private:
  std::vector<int> counts_;
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  peer::Opts o;
  static const option kLong[] = {{"iter-csv", required_argument, nullptr, peer::kIterCsvOption},
                                 {nullptr, 0, nullptr, 0}};
  bool ok = true;
  for (int c; ok && (c = getopt_long(argc, argv, peer::kCommonShort, kLong, nullptr)) != -1;)
    ok = peer::commonOption(c, optarg, &o) == peer::OptResult::Taken;
  if (!ok || optind < argc || o.minBytes > o.maxBytes) {
    if (rank == 0) std::fprintf(stderr, "usage: mpirun -np N %s [options]\n%s", argv[0], peer::commonUsage());
    MPI_Finalize();
    return 2;
  }
  MpiComm comm;
  const int rc = peer::runSizes(o, rank, nranks, comm, "perf-mpi (OpenMPI)");
  MPI_Finalize();
  return rc;
}
