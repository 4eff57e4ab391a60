// The GPU tests' check of a CUDA call: a failed call ends the test with its message.
#pragma once
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CUDA_OK(call)                                                             \
  do {                                                                            \
    cudaError_t e_ = (call);                                                      \
    if (e_ != cudaSuccess) {                                                      \
      std::fprintf(stderr, "FAILED %s: %s\n", #call, cudaGetErrorString(e_));     \
      std::exit(1);                                                               \
    }                                                                             \
  } while (0)
