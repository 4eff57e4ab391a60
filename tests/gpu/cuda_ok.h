// The GPU tests' checks: of a CUDA call (a failed call ends the test with its message), and of a result
// (EXPECT: printed and counted in `failures`, the exit status); and their skip where there is no device.
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

inline int failures = 0;

#define EXPECT(cond, ...)                \
  do {                                   \
    if (!(cond)) {                       \
      std::printf("FAILED %s: ", #cond); \
      std::printf(__VA_ARGS__);          \
      std::printf("\n");                 \
      failures++;                        \
    }                                    \
  } while (0)

// False, after printing "skipped: ..." (ctest's skip pattern), when no CUDA device can be used.
inline bool haveDevice() {
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e == cudaSuccess && devices > 0) return true;
  std::printf("skipped: no CUDA device (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "none found");
  return false;
}
