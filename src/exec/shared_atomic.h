// What several tasks of one run share (exec/task.h: a VT's counters and records, its shared cut, the tasks'
// progress): atomic adds and maxima, and flags with acquire/release order. All the tasks of a CCT run on one
// device (the blocks of one kernel) or on the host (one thread or several), so device scope suffices for
// what only they read; the progress the host also reads while a kernel runs is system scope.
#pragma once
#include <atomic>
#include <cstdint>
#include <type_traits>

#include "base/hd.h"
#include "policy/telemetry.h"
#if defined(__CUDACC__)
#include <cuda/atomic>
#endif

namespace preccl {

#if defined(__CUDA_ARCH__)
template <class T> using SharedRef = cuda::atomic_ref<T, cuda::thread_scope_device>;
namespace mo = cuda::std;
#else
template <class T> using SharedRef = std::atomic_ref<T>;
namespace mo = std;
#endif

template <class T> PRECCL_HD inline void sharedAdd(T* p, T v) { SharedRef<T>(*p).fetch_add(v, mo::memory_order_relaxed); }

template <class T> PRECCL_HD inline void sharedMax(T* p, T v) {
#if defined(__CUDA_ARCH__)
  SharedRef<T>(*p).fetch_max(v, mo::memory_order_relaxed);
#else
  SharedRef<T> r(*p);
  T cur = r.load(mo::memory_order_relaxed);
  while (cur < v && !r.compare_exchange_weak(cur, v, mo::memory_order_relaxed)) {
  }
#endif
}

template <class T> PRECCL_HD inline T sharedLoad(T* p) { return SharedRef<T>(*p).load(mo::memory_order_relaxed); }

// A flag: what the setter wrote before raising it is visible to whoever sees it raised.
PRECCL_HD inline void flagRaise(int* p, int v = 1) { SharedRef<int>(*p).store(v, mo::memory_order_release); }
PRECCL_HD inline int flagLoad(int* p) { return SharedRef<int>(*p).load(mo::memory_order_acquire); }
// A value the host reads too while the lanes run (a task's progress, which the other tasks also wait on,
// and how its lanes stopped): system scope, since on the GPU it is mapped host memory; release and acquire,
// so that a task seen finished has left its FIFO ends (shared with a later task of its VT) as it left them.
template <class T> PRECCL_HD inline void hostVisibleStore(T* p, std::type_identity_t<T> v) {
#if defined(__CUDA_ARCH__)
  cuda::atomic_ref<T, cuda::thread_scope_system>(*p).store(v, cuda::std::memory_order_release);
#else
  std::atomic_ref<T>(*p).store(v, std::memory_order_release);
#endif
}
template <class T> PRECCL_HD inline T hostVisibleLoad(const T* p) {
#if defined(__CUDA_ARCH__)
  return cuda::atomic_ref<T, cuda::thread_scope_system>(*const_cast<T*>(p)).load(cuda::std::memory_order_acquire);
#else
  return std::atomic_ref<T>(*const_cast<T*>(p)).load(std::memory_order_acquire);
#endif
}

// Per-field running maxima of a record (idempotent: a record heard twice changes nothing), and a read of one.
PRECCL_HD inline void recordMax(VtRecord* into, const VtRecord& from) {
  sharedMax<uint64_t>(&into->bytes, from.bytes);
  sharedMax<uint64_t>(&into->elapsedNs, from.elapsedNs);
  sharedMax<uint64_t>(&into->stalledNs, from.stalledNs);
  sharedMax<uint32_t>(&into->stalls, from.stalls);
}
PRECCL_HD inline VtRecord recordLoad(VtRecord* r) {
  VtRecord v;
  v.bytes = sharedLoad<uint64_t>(&r->bytes);
  v.elapsedNs = sharedLoad<uint64_t>(&r->elapsedNs);
  v.stalledNs = sharedLoad<uint64_t>(&r->stalledNs);
  v.stalls = sharedLoad<uint32_t>(&r->stalls);
  return v;
}

// Returns the value before the decrement (the last of n arrivals sees 1).
PRECCL_HD inline uint32_t arrive(uint32_t* p) { return SharedRef<uint32_t>(*p).fetch_sub(1u, mo::memory_order_acq_rel); }

}  // namespace preccl
