// Binding: a plan's edge names (plan/plan.h EdgeName) turned into this communicator's edges and their FIFO
// ends, once per attempt. The ends the task code uses are the edges' own (the host runner) or a runner's
// copies (exec/lane_runner.h), which it settles back when its lanes stop.
#pragma once
#include <string>
#include <vector>

#include "plan/plan.h"
#include "transport/fifo.h"
#include "transport/transport.h"

namespace preccl {

struct Bound {
  std::vector<Conn*> conns;            // per plan edge
  std::vector<FifoProducer*> send;     // per plan edge: the ends the task code moves
  std::vector<FifoConsumer*> recv;
  std::vector<char> sends, recvs;      // per plan edge: whether a step sends, receives on it
  // The send edges whose FIFO's consumer is a proxy of this process (Conn::stagedSends): a call returns
  // only when it has handed every slot it published there to the kernel.
  std::vector<Conn*> staged;
};

// False, with *why, when the plan names an edge this communicator does not have.
bool bindPlan(const Plan& plan, const ConnTable& table, Bound* b, std::string* why);

}  // namespace preccl
