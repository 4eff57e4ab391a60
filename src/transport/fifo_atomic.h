// The FIFO counters' loads and stores (transport/fifo.h), for the host's runners, the proxy and the CUDA
// kernels alike: acquire loads and release stores of a counter both ends see. On the GPU they go through
// libcu++'s system-scope atomic_ref, since the other end may be the host or another device.
#pragma once
#include <atomic>
#include <cstdint>

#include "base/hd.h"
#if defined(__CUDACC__)
#include <cuda/atomic>
#endif

namespace preccl {

PRECCL_HD inline uint64_t counterLoad(const std::atomic<uint64_t>& c) {
#if defined(__CUDA_ARCH__)
  auto* p = const_cast<uint64_t*>(reinterpret_cast<const uint64_t*>(&c));
  return cuda::atomic_ref<uint64_t, cuda::thread_scope_system>(*p).load(cuda::memory_order_acquire);
#else
  return c.load(std::memory_order_acquire);
#endif
}

PRECCL_HD inline void counterStore(std::atomic<uint64_t>& c, uint64_t v) {
#if defined(__CUDA_ARCH__)
  cuda::atomic_ref<uint64_t, cuda::thread_scope_system>(*reinterpret_cast<uint64_t*>(&c))
      .store(v, cuda::memory_order_release);
#else
  c.store(v, std::memory_order_release);
#endif
}

// A std::atomic<uint64_t> is the counter's plain 8 bytes, so the kernels may view it as one.
static_assert(sizeof(std::atomic<uint64_t>) == sizeof(uint64_t) && alignof(std::atomic<uint64_t>) == alignof(uint64_t));

}  // namespace preccl
