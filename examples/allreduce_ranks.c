/* The smallest multi-process PReCCL program: N processes (forked here; normally started by a launcher),
 * one communicator, one checked AllReduce. Build: part of the project; run: ./example_allreduce_ranks [N] */
#include <preccl/preccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static int runRank(int rank, int nranks, precclUniqueId id) {
  precclComm_t comm;
  precclResult_t r = precclCommInitRank(&comm, nranks, id, rank);
  if (r != precclSuccess) {
    fprintf(stderr, "rank %d: init: %s (%s)\n", rank, precclGetErrorString(r), precclGetLastError(NULL));
    return 1;
  }
  enum { COUNT = 1 << 20 };
  int* buf = malloc(COUNT * sizeof(int));
  for (int i = 0; i < COUNT; i++) buf[i] = rank + i;
  r = precclAllReduce(buf, buf, COUNT, precclInt32, precclSum, comm, NULL); /* in place, NULL stream: done on return */
  int wrong = 0;
  for (int i = 0; i < COUNT && r == precclSuccess; i++)
    wrong += buf[i] != nranks * i + nranks * (nranks - 1) / 2;
  if (rank == 0) printf("AllReduce of %d ints over %d ranks: %s, %d wrong\n", COUNT, nranks, precclGetErrorString(r), wrong);
  free(buf);
  precclCommDestroy(comm);
  return r != precclSuccess || wrong;
}

int main(int argc, char** argv) {
  int nranks = argc > 1 ? atoi(argv[1]) : 4;
  if (nranks < 1 || nranks > 64) return 2;
  setenv("PRECCL_SOCKET_IFNAME", "lo", 0); /* all ranks are local: keep the bootstrap on loopback */
  int pipes[64][2];
  for (int r = 0; r < nranks; r++)
    if (pipe(pipes[r]) != 0) return 2;
  for (int r = 0; r < nranks; r++) {
    if (fork() == 0) {
      precclUniqueId id;
      if (read(pipes[r][0], &id, sizeof(id)) != sizeof(id)) _exit(2);
      int rc = runRank(r, nranks, id);
      fflush(stdout);
      _exit(rc);
    }
  }
  precclUniqueId id; /* created after the fork: the bootstrap root is a thread of this process */
  if (precclGetUniqueId(&id) != precclSuccess) return 1;
  for (int r = 0; r < nranks; r++)
    if (write(pipes[r][1], &id, sizeof(id)) != sizeof(id)) return 2;
  int failed = 0;
  for (int r = 0; r < nranks; r++) {
    int st;
    wait(&st);
    failed += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
  }
  return failed != 0;
}
