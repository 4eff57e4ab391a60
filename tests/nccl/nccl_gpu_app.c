/* A program written for NCCL on device buffers, run over PReCCL's libnccl.so.2 (docs/nccl.md, "Device
 * buffers"): NCCL's single-process pattern. One thread makes 4 communicators on GPU 0 with
 * ncclCommInitAll, gives each a stream, and drives them with group calls: AllReduce, Broadcast, AllGather,
 * ReduceScatter and grouped Send/Recv on cudaMalloc and ncclMemAlloc buffers, each result checked; a call
 * under graph capture and one mixing host and device buffers are refused.
 * Built against NVIDIA's nccl.h. Without a CUDA device it prints "skipped: ..." and exits 0. */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_expect.h"

#define N 4
#define CUDA(call)                                                                         \
  do {                                                                                     \
    cudaError_t e_ = (call);                                                               \
    if (e_ != cudaSuccess) {                                                               \
      fprintf(stderr, "FAILED %s: %s\n", #call, cudaGetErrorString(e_));                   \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

static ncclComm_t comms[N];
static cudaStream_t streams[N];
static float* send[N];
static float* recv[N];
static float host[N * 65536];

/* Rank r's element i: integers, so every sum is exact. */
static float val(int r, size_t i) { return (float)((r + 1) * 1000 + (int)(i % 997)); }

static void fill(size_t count) {
  for (int r = 0; r < N; r++) {
    for (size_t i = 0; i < count; i++) host[i] = val(r, i);
    CUDA(cudaMemcpy(send[r], host, count * sizeof(float), cudaMemcpyHostToDevice));
    CUDA(cudaMemset(recv[r], 0, count * N * sizeof(float)));
  }
}

static void syncAll(void) {
  for (int r = 0; r < N; r++) CUDA(cudaStreamSynchronize(streams[r]));
}

static size_t wrongIn(int r, size_t count, float (*want)(int r, size_t i)) {
  size_t wrong = 0;
  CUDA(cudaMemcpy(host, recv[r], count * sizeof(float), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < count; i++) wrong += host[i] != want(r, i);
  return wrong;
}

static float wantSum(int r, size_t i) {
  float s = 0;
  for (int q = 0; q < N; q++) s += val(q, i);
  (void)r;
  return s;
}
static float wantRoot2(int r, size_t i) { (void)r; return val(2, i); }
static size_t g_count;
static float wantGather(int r, size_t i) { (void)r; return val((int)(i / g_count), i % g_count); }
static float wantScatter(int r, size_t i) {
  float s = 0;
  for (int q = 0; q < N; q++) s += val(q, (size_t)r * g_count + i);
  return s;
}
static float wantFromNext(int r, size_t i) { return val((r + 1) % N, i); }

int main(void) {
  int devices = 0;
  cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0) {
    printf("skipped: no CUDA device (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    return 0;
  }
  const size_t count = 65536 / N * N - 3; /* not a multiple of the ranks or of any VT count */
  int devs[N] = {0, 0, 0, 0};
  OK(ncclCommInitAll(comms, N, devs));
  for (int r = 0; r < N; r++) {
    CUDA(cudaStreamCreate(&streams[r]));
    if (r % 2 == 0) {
      CUDA(cudaMalloc((void**)&send[r], count * sizeof(float) * N));
      CUDA(cudaMalloc((void**)&recv[r], count * sizeof(float) * N));
    } else {
      OK(ncclMemAlloc((void**)&send[r], count * sizeof(float) * N));
      OK(ncclMemAlloc((void**)&recv[r], count * sizeof(float) * N));
    }
  }

  fill(count);
  OK(ncclGroupStart());
  for (int r = 0; r < N; r++) OK(ncclAllReduce(send[r], recv[r], count, ncclFloat, ncclSum, comms[r], streams[r]));
  OK(ncclGroupEnd());
  syncAll();
  for (int r = 0; r < N; r++) EXPECT(wrongIn(r, count, wantSum) == 0, "AllReduce rank %d", r);

  fill(count);
  OK(ncclGroupStart());
  for (int r = 0; r < N; r++) OK(ncclBroadcast(send[r], recv[r], count, ncclFloat, 2, comms[r], streams[r]));
  OK(ncclGroupEnd());
  syncAll();
  for (int r = 0; r < N; r++) EXPECT(wrongIn(r, count, wantRoot2) == 0, "Broadcast rank %d", r);

  g_count = count / N;
  fill(count);
  OK(ncclGroupStart());
  for (int r = 0; r < N; r++) OK(ncclAllGather(send[r], recv[r], g_count, ncclFloat, comms[r], streams[r]));
  OK(ncclGroupEnd());
  syncAll();
  for (int r = 0; r < N; r++) EXPECT(wrongIn(r, g_count * N, wantGather) == 0, "AllGather rank %d", r);

  fill(count);
  OK(ncclGroupStart());
  for (int r = 0; r < N; r++) OK(ncclReduceScatter(send[r], recv[r], g_count, ncclFloat, ncclSum, comms[r], streams[r]));
  OK(ncclGroupEnd());
  syncAll();
  for (int r = 0; r < N; r++) EXPECT(wrongIn(r, g_count, wantScatter) == 0, "ReduceScatter rank %d", r);

  /* A ring shift: each rank sends to the previous and receives from the next, all in one group. */
  fill(count);
  OK(ncclGroupStart());
  for (int r = 0; r < N; r++) {
    OK(ncclSend(send[r], count, ncclFloat, (r + N - 1) % N, comms[r], streams[r]));
    OK(ncclRecv(recv[r], count, ncclFloat, (r + 1) % N, comms[r], streams[r]));
  }
  OK(ncclGroupEnd());
  syncAll();
  for (int r = 0; r < N; r++) EXPECT(wrongIn(r, count, wantFromNext) == 0, "Send/Recv rank %d", r);

  /* A call on a stream being captured into a CUDA graph is refused: it would run now, not at replay. */
  {
    cudaGraph_t graph;
    CUDA(cudaStreamBeginCapture(streams[0], cudaStreamCaptureModeThreadLocal));
    ncclResult_t captured = ncclAllReduce(send[0], recv[0], count, ncclFloat, ncclSum, comms[0], streams[0]);
    CUDA(cudaStreamEndCapture(streams[0], &graph));
    CUDA(cudaGraphDestroy(graph));
    EXPECT(captured == ncclInvalidUsage, "a call under graph capture gave %d", (int)captured);
  }

  /* A host buffer beside a device one is refused with a message, not run. */
  ncclResult_t mixed = ncclAllReduce(send[0], host, count, ncclFloat, ncclSum, comms[0], streams[0]);
  EXPECT(mixed == ncclInvalidArgument, "a host recvbuff with a device sendbuff gave %d", (int)mixed);

  for (int r = 0; r < N; r++) {
    if (r % 2 == 0) {
      CUDA(cudaFree(send[r]));
      CUDA(cudaFree(recv[r]));
    } else {
      OK(ncclMemFree(send[r]));
      OK(ncclMemFree(recv[r]));
    }
    CUDA(cudaStreamDestroy(streams[r]));
    OK(ncclCommDestroy(comms[r]));
  }
  printf("%s (%d failures)\n", g_failures ? "FAILED" : "passed", g_failures);
  return g_failures ? 1 : 0;
}
