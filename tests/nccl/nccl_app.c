/* A program written for NCCL, run over PReCCL's libnccl.so.2 (docs/nccl.md). It is built twice from this
 * source: against NVIDIA's own nccl.h (the ABI test) and against PReCCL's nccl.h (no CUDA needed); and once
 * more against NVIDIA's libnccl.so, to be run with PReCCL's swapped in through LD_LIBRARY_PATH.
 * Usage: nccl_app <nranks> [expected library directory]. The parent makes the unique id and forks one
 * process per rank; every rank runs every call of the API and checks every result. Exit 0: all passed. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nccl_expect.h"

/* Every rank's contribution: distinct per rank and element. */
static int32_t val(int rank, size_t i) { return (int32_t)(rank * 1000 + (int32_t)(i % 997)); }

static void collectives(ncclComm_t comm, int rank, int n) {
  const size_t count = 10007; /* odd: uneven ranges on every VT */
  cudaStream_t stream = (cudaStream_t)0;
  int32_t *a = NULL, *b = NULL;
  OK(ncclMemAlloc((void**)&a, count * n * sizeof(int32_t)));
  OK(ncclMemAlloc((void**)&b, count * n * sizeof(int32_t)));
  EXPECT(((uintptr_t)a % 4096) == 0, "ncclMemAlloc's buffer is not page aligned");
  void* handle = NULL;
  OK(ncclCommRegister(comm, a, count * n * sizeof(int32_t), &handle));

  for (size_t i = 0; i < count; i++) a[i] = val(rank, i);
  OK(ncclAllReduce(a, b, count, ncclInt32, ncclSum, comm, stream));
  for (size_t i = 0; i < count; i++) {
    int32_t want = 0;
    for (int r = 0; r < n; r++) want += val(r, i);
    if (b[i] != want) { EXPECT(0, "AllReduce sum [%zu] = %d, want %d", i, b[i], want); break; }
  }
  OK(ncclAllReduce(a, b, count, ncclInt32, ncclMax, comm, stream));
  for (size_t i = 0; i < count; i++)
    if (b[i] != val(n - 1, i)) { EXPECT(0, "AllReduce max [%zu] = %d", i, b[i]); break; }

  /* PreMulSum with a scalar that is not a power of two: rank r's doubles are scaled by 3 first. */
  double* d = (double*)malloc(count * sizeof(double));
  double* e = (double*)malloc(count * sizeof(double));
  for (size_t i = 0; i < count; i++) d[i] = (double)val(rank, i);
  double scalar = 3.0;
  ncclRedOp_t premul;
  OK(ncclRedOpCreatePreMulSum(&premul, &scalar, ncclFloat64, ncclScalarHostImmediate, comm));
  OK(ncclAllReduce(d, e, count, ncclFloat64, premul, comm, stream));
  for (size_t i = 0; i < count; i++) {
    double want = 0;
    for (int r = 0; r < n; r++) want += 3.0 * val(r, i);
    if (e[i] != want) { EXPECT(0, "PreMulSum [%zu] = %f, want %f", i, e[i], want); break; }
  }
  OK(ncclRedOpDestroy(premul, comm));
  free(d);
  free(e);

  /* Broadcast from the last rank, and Bcast (in place) from rank 0. */
  OK(ncclBroadcast(a, b, count, ncclInt32, n - 1, comm, stream));
  for (size_t i = 0; i < count; i++)
    if (b[i] != val(n - 1, i)) { EXPECT(0, "Broadcast [%zu] = %d", i, b[i]); break; }
  for (size_t i = 0; i < count; i++) b[i] = rank == 0 ? val(7, i) : -1;
  OK(ncclBcast(b, count, ncclInt32, 0, comm, stream));
  for (size_t i = 0; i < count; i++)
    if (b[i] != val(7, i)) { EXPECT(0, "Bcast [%zu] = %d", i, b[i]); break; }

  /* Reduce (min) to rank 1 % n. */
  const int root = 1 % n;
  memset(b, 0, count * sizeof(int32_t));
  OK(ncclReduce(a, b, count, ncclInt32, ncclMin, root, comm, stream));
  if (rank == root)
    for (size_t i = 0; i < count; i++)
      if (b[i] != val(0, i)) { EXPECT(0, "Reduce min [%zu] = %d", i, b[i]); break; }

  /* AllGather: block r from rank r. */
  OK(ncclAllGather(a, b, count, ncclInt32, comm, stream));
  for (int r = 0; r < n; r++)
    for (size_t i = 0; i < count; i++)
      if (b[r * count + i] != val(r, i)) { EXPECT(0, "AllGather block %d [%zu] = %d", r, i, b[r * count + i]); r = n; break; }

  /* ReduceScatter: block `rank` of everyone's n blocks, summed. */
  for (int r = 0; r < n; r++)
    for (size_t i = 0; i < count; i++) a[r * count + i] = val(rank, i) + r;
  OK(ncclReduceScatter(a, b, count, ncclInt32, ncclSum, comm, stream));
  for (size_t i = 0; i < count; i++) {
    int32_t want = 0;
    for (int r = 0; r < n; r++) want += val(r, i) + rank;
    if (b[i] != want) { EXPECT(0, "ReduceScatter [%zu] = %d, want %d", i, b[i], want); break; }
  }

  /* AlltoAll: rank r's block p goes to rank p, which keeps it as block r. */
  for (int p = 0; p < n; p++)
    for (size_t i = 0; i < count; i++) a[p * count + i] = val(rank, i) * 16 + p;
  OK(ncclAlltoAll(a, b, count, ncclInt32, comm, stream));
  for (int r = 0; r < n; r++)
    for (size_t i = 0; i < count; i++)
      if (b[r * count + i] != val(r, i) * 16 + rank) { EXPECT(0, "AlltoAll block %d [%zu]", r, i); r = n; break; }

  /* Gather to the last rank; Scatter from rank 0. */
  for (size_t i = 0; i < count; i++) a[i] = val(rank, i);
  OK(ncclGather(a, b, count, ncclInt32, n - 1, comm, stream));
  if (rank == n - 1)
    for (int r = 0; r < n; r++)
      for (size_t i = 0; i < count; i++)
        if (b[r * count + i] != val(r, i)) { EXPECT(0, "Gather block %d [%zu]", r, i); r = n; break; }
  for (int p = 0; p < n; p++)
    for (size_t i = 0; i < count; i++) a[p * count + i] = val(p, i) + 5;
  OK(ncclScatter(a, b, count, ncclInt32, 0, comm, stream));
  for (size_t i = 0; i < count; i++)
    if (b[i] != val(rank, i) + 5) { EXPECT(0, "Scatter [%zu] = %d", i, b[i]); break; }

  /* Send/Recv in a group: both ring neighbours at once, uneven counts (rank r sends r+1 elements fewer). */
  const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
  for (size_t i = 0; i < count; i++) a[i] = val(rank, i);
  memset(b, 0, count * sizeof(int32_t));
  OK(ncclGroupStart());
  OK(ncclSend(a, count - (size_t)rank, ncclInt32, next, comm, stream));
  OK(ncclRecv(b, count - (size_t)prev, ncclInt32, prev, comm, stream));
  OK(ncclGroupEnd());
  for (size_t i = 0; i < count - (size_t)prev; i++)
    if (b[i] != val(prev, i)) { EXPECT(0, "Recv from %d [%zu] = %d", prev, i, b[i]); break; }

  /* GroupSimulateEnd runs nothing: b keeps its marker. */
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  b[0] = -77;
  OK(ncclGroupStart());
  OK(ncclAllReduce(a, b, count, ncclInt32, ncclSum, comm, stream));
  OK(ncclGroupSimulateEnd(&sim));
  EXPECT(b[0] == -77, "GroupSimulateEnd ran the AllReduce");
  /* The models know this size by now; a single rank moves nothing. */
  EXPECT(n == 1 ? sim.estimatedTime == 0 : sim.estimatedTime > 0,
         "GroupSimulateEnd estimated %f us after AllReduces of the same size on %d ranks", sim.estimatedTime, n);

  ncclWindow_t win = NULL;
  OK(ncclCommWindowRegister(comm, b, count * sizeof(int32_t), &win, NCCL_WIN_COLL_SYMMETRIC));
  OK(ncclAllReduce(a, b, count, ncclInt32, ncclSum, comm, stream));
  OK(ncclCommWindowDeregister(comm, win));
  EXPECT(ncclCommWindowDeregister(comm, win) == ncclInvalidArgument, "a window deregistered twice was accepted");
  OK(ncclCommDeregister(comm, handle));
  OK(ncclMemFree(a));
  OK(ncclMemFree(b));
}

/* Bad input: a clear error code and a message, never a crash. */
static void badInput(ncclComm_t comm) {
  int32_t x = 0;
  EXPECT(ncclAllReduce(&x, &x, 1, (ncclDataType_t)99, ncclSum, comm, NULL) == ncclInvalidArgument,
         "a bad data type was accepted");
  EXPECT(strstr(ncclGetLastError(comm), "data type") != NULL, "no message for a bad data type: %s", ncclGetLastError(comm));
  int dev = -1;
  EXPECT(ncclCommCuDevice(comm, &dev) == ncclInvalidUsage, "ncclCommCuDevice did not answer ncclInvalidUsage");
  EXPECT(strstr(ncclGetLastError(NULL), "CUDA") != NULL, "no message for CommCuDevice: %s", ncclGetLastError(NULL));
  EXPECT(ncclCommRevoke(comm, 5) == ncclInvalidArgument, "revoke flags 5 were accepted");
}

static int runRank(ncclUniqueId id, int rank, int n) {
  g_rank = rank;
  ncclComm_t comm = NULL;
  /* Odd ranks: a nonblocking init through the config, which must be read by its size field. */
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = rank % 2 == 0;
  config.commName = "nccl_app";
  config.maxCTAs = 4; /* accepted and ignored */
  ncclResult_t r = ncclCommInitRankConfig(&comm, n, id, rank, &config);
  if (rank % 2) {
    EXPECT(r == ncclInProgress || r == ncclSuccess, "nonblocking init returned %d", (int)r);
    ncclResult_t st = ncclInProgress;
    for (int i = 0; i < 60000 && st == ncclInProgress; i++) {
      OK(ncclCommGetAsyncError(comm, &st));
      if (st == ncclInProgress) usleep(1000);
    }
    EXPECT(st == ncclSuccess, "nonblocking init ended with %d", (int)st);
  } else {
    EXPECT(r == ncclSuccess, "init returned %d: %s", (int)r, ncclGetLastError(NULL));
  }
  if (g_failures) return 1;
  int count = -1, me = -1;
  OK(ncclCommCount(comm, &count));
  OK(ncclCommUserRank(comm, &me));
  EXPECT(count == n && me == rank, "CommCount %d / CommUserRank %d", count, me);

  collectives(comm, rank, n);
  badInput(comm);

  /* Split into even and odd ranks; each half runs the collectives again. */
  ncclComm_t half = NULL;
  OK(ncclCommSplit(comm, rank % 2, rank, &half, NULL));
  if (half) {
    int hn = 0, hr = 0;
    OK(ncclCommCount(half, &hn));
    OK(ncclCommUserRank(half, &hr));
    EXPECT(hn == (n + 1 - rank % 2) / 2 && hr == rank / 2, "split: %d of %d", hr, hn);
    collectives(half, hr, hn);
    OK(ncclCommRevoke(half, NCCL_REVOKE_DEFAULT));
    int32_t x = 1;
    EXPECT(ncclAllReduce(&x, &x, 1, ncclInt32, ncclSum, half, NULL) == ncclInvalidUsage,
           "a revoked communicator took an AllReduce");
    OK(ncclCommDestroy(half));
  }

  /* Shrink away the last rank (which does not call it); the others go on. */
  if (n > 2) {
    if (rank != n - 1) {
      int excluded = n - 1;
      ncclComm_t small = NULL;
      OK(ncclCommShrink(comm, &excluded, 1, &small, NULL, NCCL_SHRINK_DEFAULT));
      if (small) {
        collectives(small, rank, n - 1);
        OK(ncclCommFinalize(small));
        OK(ncclCommDestroy(small));
      }
    }
  }
  OK(ncclCommFinalize(comm));
  OK(ncclCommDestroy(comm));
  return g_failures ? 1 : 0;
}

int main(int argc, char** argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 4;
  if (n < 1 || n > 64) {
    fprintf(stderr, "usage: %s <nranks 1..64> [library directory]\n", argv[0]);
    return 2;
  }
  /* Which libnccl.so.2 is this? The swap test names the directory it must come from. */
  Dl_info info;
  if (!dladdr((void*)&ncclAllReduce, &info) || !info.dli_fname) {
    fprintf(stderr, "cannot tell which library holds ncclAllReduce\n");
    return 1;
  }
  printf("ncclAllReduce from %s\n", info.dli_fname);
  if (argc > 2 && strncmp(info.dli_fname, argv[2], strlen(argv[2])) != 0) {
    fprintf(stderr, "FAILED: libnccl.so.2 was loaded from %s, not from %s\n", info.dli_fname, argv[2]);
    return 1;
  }
  int version = 0;
  if (ncclGetVersion(&version) != ncclSuccess || version != 22809) {
    fprintf(stderr, "FAILED: ncclGetVersion gave %d, want NCCL 2.28.9's 22809\n", version);
    return 1;
  }
  ncclConfig_t bad = NCCL_CONFIG_INITIALIZER;
  bad.magic = 0;
  ncclComm_t none = NULL;
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) {
    fprintf(stderr, "FAILED: ncclGetUniqueId: %s\n", ncclGetLastError(NULL));
    return 1;
  }
  if (ncclCommInitRankConfig(&none, 1, id, 0, &bad) != ncclInvalidArgument || none != NULL) {
    fprintf(stderr, "FAILED: a config without NCCL's magic was accepted\n");
    return 1;
  }
  fflush(stdout);
  pid_t pids[64];
  for (int r = 0; r < n; r++) {
    pids[r] = fork();
    if (pids[r] == 0) _exit(runRank(id, r, n));
  }
  int bad_ranks = 0;
  for (int r = 0; r < n; r++) {
    int status = 0;
    waitpid(pids[r], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "rank %d ended with status %#x\n", r, status);
      bad_ranks++;
    }
  }
  if (bad_ranks) return 1;
  printf("nccl_app: %d ranks passed every call\n", n);
  return 0;
}
