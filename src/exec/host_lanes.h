// One CPU thread as the lanes of the task code (exec/task.h): the leader and the only lane. The bytes move
// through the host's reduction loops (reduce/reduce.h, vectorised) and memcpy. Between polls it yields,
// since the other end of a FIFO may be a thread of the same few cores.
#pragma once
#include <sched.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "base/clock.h"
#include "reduce/reduce.h"

namespace preccl {

struct HostLanes {
  bool leader() const { return true; }
  size_t id() const { return 0; }
  size_t count() const { return 1; }
  void sync() const {}
  void arm() {}
  void relax(int) const { sched_yield(); }
  template <class End> void ended(End) const {}
  int share(int v) const { return v; }
  uint64_t nowNs() const { return preccl::nowNs(); }
  void reduceCopy(const RedOp& op, precclDataType_t t, size_t, size_t n, const void* local, const void* const* in,
                  int nin, void* const* outs, int nout, bool post) const {
    preccl::reduceCopy(op, t, n, local, in, nin, outs, nout, post);
  }
  void copy(const void* from, void* const* outs, int nout, size_t bytes) const {
    for (int i = 0; i < nout; i++)
      if (outs[i] != from) memcpy(outs[i], from, bytes);
  }
};

}  // namespace preccl
