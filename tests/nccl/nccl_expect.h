/* The NCCL test programs' checks: a failed one is counted in g_failures and printed with the rank
 * (g_rank, -1 for a program of one process), and OK() checks an NCCL call. */
#pragma once
#include <nccl.h>
#include <stdio.h>

static int g_rank = -1, g_failures = 0;

#define EXPECT(cond, ...)                                                      \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "rank %d: FAILED %s:%d: ", g_rank, __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, "\n");                                                   \
      g_failures++;                                                            \
    }                                                                          \
  } while (0)
#define OK(call)                                                                                       \
  do {                                                                                                 \
    ncclResult_t r_ = (call);                                                                          \
    EXPECT(r_ == ncclSuccess, "%s returned %d (%s): %s", #call, (int)r_, ncclGetErrorString(r_),       \
           ncclGetLastError(NULL));                                                                    \
  } while (0)
