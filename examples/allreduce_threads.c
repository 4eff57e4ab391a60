/* Several ranks in one process, one thread each, with precclCommInitAll and a group call (as with
 * ncclCommInitAll): one thread issues the AllReduce of every rank inside GroupStart/GroupEnd. */
#include <preccl/preccl.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 4;
  if (n < 1 || n > 16) return 2;
  setenv("PRECCL_SOCKET_IFNAME", "lo", 0);
  precclComm_t comms[16];
  if (precclCommInitAll(comms, n, NULL) != precclSuccess) {
    fprintf(stderr, "CommInitAll: %s\n", precclGetLastError(NULL));
    return 1;
  }
  enum { COUNT = 100000 };
  float* bufs[16];
  for (int r = 0; r < n; r++) {
    bufs[r] = malloc(COUNT * sizeof(float));
    for (int i = 0; i < COUNT; i++) bufs[r][i] = (float)(r + 1);
  }
  precclGroupStart();
  for (int r = 0; r < n; r++) precclAllReduce(bufs[r], bufs[r], COUNT, precclFloat, precclSum, comms[r], NULL);
  precclResult_t res = precclGroupEnd();
  int wrong = 0;
  for (int r = 0; r < n; r++)
    for (int i = 0; i < COUNT; i++) wrong += bufs[r][i] != (float)(n * (n + 1) / 2);
  printf("grouped AllReduce over %d in-process ranks: %s, %d wrong\n", n, precclGetErrorString(res), wrong);
  for (int r = 0; r < n; r++) {
    precclCommDestroy(comms[r]);
    free(bufs[r]);
  }
  return res != precclSuccess || wrong;
}
