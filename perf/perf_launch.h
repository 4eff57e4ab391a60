// How preccl-perf's ranks start: N local processes forked by this binary, or one process of a job
// (PRECCL_RANK/PRECCL_NRANKS or OpenMPI's OMPI_COMM_WORLD_*, with PRECCL_ROOT_ADDR).
#pragma once
#include <functional>

#include "preccl/preccl.h"

namespace perf {

// Runs in every rank process; returns that rank's exit status.
using RankBody = std::function<int(int rank, int nranks, const precclUniqueId& id)>;

// True when the environment describes a job (this process is one of its ranks).
bool jobEnvironmentPresent();

// Forks `nranks` children, then creates the unique id in this (parent) process, which hosts the bootstrap
// root, and hands the id to every child through a pipe. Waits for all of them; kills the rest when one
// fails or when PRECCL_PERF_TIMEOUT seconds (default 600) pass. Returns 0 when every rank exited 0.
int launchLocal(int nranks, const RankBody& body);

// This process is one rank of a job: the id comes from PRECCL_ROOT_ADDR through PRECCL_COMM_ID, which
// makes precclGetUniqueId return the same id on every rank (rank 0 hosts the root).
int launchFromEnvironment(const RankBody& body);

}  // namespace perf
