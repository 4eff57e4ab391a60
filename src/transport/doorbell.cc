#include "transport/doorbell.h"

#include <linux/futex.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

namespace preccl {

// Shared (not FUTEX_PRIVATE) futexes: the word may be mapped by several processes.
static long futex(std::atomic<uint32_t>* addr, int op, uint32_t val, const timespec* ts) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(addr), op, val, ts, nullptr, 0);
}

void bellRing(Bell* bell) {
  bell->seq.fetch_add(1, std::memory_order_seq_cst);
  if (bell->waiters.load(std::memory_order_seq_cst) != 0) futex(&bell->seq, FUTEX_WAKE, INT32_MAX, nullptr);
}

void bellWait(Bell* bell, uint32_t seen, uint64_t timeoutUs) {
  bell->waiters.fetch_add(1, std::memory_order_seq_cst);
  if (bell->seq.load(std::memory_order_seq_cst) == seen) {
    timespec ts{static_cast<time_t>(timeoutUs / 1000000), static_cast<long>((timeoutUs % 1000000) * 1000)};
    futex(&bell->seq, FUTEX_WAIT, seen, &ts);
  }
  bell->waiters.fetch_sub(1, std::memory_order_seq_cst);
}

void Waker::wake() const {
  if (bell) bellRing(bell);
  // The caller's counter store is a release store: without a full fence the load of `sleeping` below
  // may pass it, and the proxy, which announces its sleep and then reads the counters, could miss both
  // (Dekker's pattern; bellRing's read-modify-write is a full fence only when a bell is rung too).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (eventFd >= 0 && sleeping && sleeping->load(std::memory_order_seq_cst)) {
    uint64_t one = 1;
    ssize_t r = write(eventFd, &one, sizeof(one));
    (void)r;
  }
}

}  // namespace preccl
