// A group's sends and receives. Every (peer, VT, direction) is its own task, so a group's operations
// progress together in any order without deadlock; operations to the same peer share the edge's FIFO in
// call order, which is how they are matched (as in NCCL). Both ends split an operation's bytes over the
// VTs alike (the decision's per-operation allocation).
#include <map>
#include <tuple>

#include "plan/layout.h"
#include "plan/planners.h"
#include "plan/steps.h"
#include "policy/policy.h"
#include "reduce/dtype.h"

namespace preccl {

void planSendRecv(const PlanView& v, const CctArgs& a, const Decision& d, Plan* plan) {
  const size_t esz = dtypeSize(a.dtype), piece = pieceBytes(v.slotBytes, esz, 0);
  // (peer, vt, isSend) -> its steps, in call order; tasks in the order their first operation came.
  std::map<std::tuple<int, int, bool>, size_t> taskOf;
  std::vector<std::pair<int, std::vector<Step>>> tasks;  // (vt, steps)
  std::vector<const P2POp*> selfSends, selfRecvs;
  for (size_t i = 0; i < a.p2p.size(); i++) {
    const P2POp& op = a.p2p[i];
    if (op.peer == v.rank) {
      (op.isSend ? selfSends : selfRecvs).push_back(&op);
      continue;
    }
    const Allocation& al = d.ops[i];
    for (int vt = 0; vt < static_cast<int>(al.vt.size()); vt++) {
      const size_t o = al.vt[vt].offset * esz, b = al.vt[vt].count * esz;
      if (b == 0) continue;
      auto [it, added] = taskOf.try_emplace(std::make_tuple(op.peer, vt, op.isSend), tasks.size());
      if (added) tasks.emplace_back(vt, std::vector<Step>{});
      const int32_t e = plan->edge({op.peer, vt, -1});
      tasks[it->second].second.push_back(op.isSend ? steps::send(e, static_cast<const char*>(op.buf) + o, b)
                                                   : steps::recv(e, static_cast<char*>(op.buf) + o, b));
    }
  }
  for (const auto& [vt, ss] : tasks) {
    plan->begin(vt, piece);
    for (const Step& s : ss) plan->add(s);
  }
  // A copy to itself crosses no VT; its task goes on a live one, since the tasks of masked VTs are dropped.
  int live = 0;
  while (live < v.nVTs - 1 && !isLive(v.liveMask, live)) live++;
  for (size_t i = 0; i < selfSends.size() && i < selfRecvs.size(); i++) {
    plan->begin(live, piece);
    plan->add(steps::copy(static_cast<const char*>(selfSends[i]->buf), static_cast<char*>(selfRecvs[i]->buf),
                          selfSends[i]->count * esz));
  }
}

}  // namespace preccl
