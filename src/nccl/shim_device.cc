#include "nccl/shim_device.h"

#include <cuda_runtime.h>

#include <mutex>

#include "core/debug.h"
#include "gpu/gpu_exec.h"

namespace preccl::shim {

namespace {
bool gDevice = false;
std::once_flag gOnce;
}  // namespace

void useDevice() {
  std::call_once(gOnce, [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) == cudaSuccess && n > 0) {
      gpu::enableDeviceExecutor();
      gDevice = true;
    } else {
      cudaGetLastError();  // no device (or no driver): host buffers only, as without the GPU path
    }
  });
}

bool deviceInUse() { return gDevice; }

precclResult_t waitStream(void* stream) {
  if (!gDevice) return precclSuccess;
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(s, &capture) == cudaSuccess && capture != cudaStreamCaptureStatusNone)
    return PRECCL_ERR(nullptr, precclInvalidUsage,
                      "the call's stream is being captured into a CUDA graph, which PReCCL does not support yet");
  if (cudaError_t e = cudaStreamSynchronize(s); e != cudaSuccess)
    return PRECCL_ERR(nullptr, precclUnhandledCudaError, "waiting for the call's stream: {}", cudaGetErrorString(e));
  return precclSuccess;
}

precclResult_t memAlloc(void** ptr, size_t size) {
  useDevice();
  if (!gDevice) return precclMemAlloc(ptr, size);
  if (!ptr) return PRECCL_ERR(nullptr, precclInvalidArgument, "ncclMemAlloc: ptr is NULL");
  if (cudaError_t e = cudaMalloc(ptr, size); e != cudaSuccess)
    return PRECCL_ERR(nullptr, precclUnhandledCudaError, "ncclMemAlloc: cudaMalloc of {} B: {}", size, cudaGetErrorString(e));
  return precclSuccess;
}

precclResult_t memFree(void* ptr) {
  if (!gDevice) return precclMemFree(ptr);
  if (cudaError_t e = cudaFree(ptr); e != cudaSuccess)
    return PRECCL_ERR(nullptr, precclUnhandledCudaError, "ncclMemFree: cudaFree: {}", cudaGetErrorString(e));
  return precclSuccess;
}

}  // namespace preccl::shim
