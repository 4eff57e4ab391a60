// Code the host and the CUDA kernels share (docs/gpu.md): PRECCL_HD marks a function
// that both compile, so a reduction gives the same bits on either side.
#pragma once
#if defined(__CUDACC__)
#define PRECCL_HD __host__ __device__
#else
#define PRECCL_HD
#endif
