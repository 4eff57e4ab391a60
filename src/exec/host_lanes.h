// One CPU thread as the lanes of the device executor's code (gpu/dev_prim.h, gpu/dev_task.h): the leader
// and the only lane. Between polls it yields, since the other end of a FIFO may be a thread of the same
// few cores.
#pragma once
#include <sched.h>

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace preccl::gpu {

struct HostLanes {
  bool leader() const { return true; }
  size_t id() const { return 0; }
  size_t count() const { return 1; }
  void sync() const {}
  void relax() const { sched_yield(); }
  int share(int v) const { return v; }
  uint64_t nowNs() const {
    return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now().time_since_epoch()).count());
  }
};

}  // namespace preccl::gpu
