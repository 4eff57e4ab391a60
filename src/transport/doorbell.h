// Wake-ups between the executor, its proxy thread and executors of other processes. A Bell is a futex word
// that may live in shared memory; a Waker knows how to wake whoever consumes or produces a FIFO.
#pragma once
#include <atomic>
#include <cstdint>

namespace preccl {

struct Bell {
  std::atomic<uint32_t> seq{0};
  std::atomic<uint32_t> waiters{0};
};

// Bumps the sequence and wakes sleepers (a syscall only when someone sleeps).
void bellRing(Bell* bell);
// Sleeps while bell->seq == seen, at most timeoutUs.
void bellWait(Bell* bell, uint32_t seen, uint64_t timeoutUs);

struct Waker {
  Bell* bell = nullptr;                 // an executor (local or in a peer process)
  int eventFd = -1;                     // a proxy thread
  std::atomic<int>* sleeping = nullptr; // the proxy's "about to sleep" flag
  void wake() const;
};

}  // namespace preccl
