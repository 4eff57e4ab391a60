#include "exec/bind.h"

#include <fmt/format.h>

namespace preccl {

bool bindPlan(const Plan& plan, const ConnTable& table, Bound* b, std::string* why) {
  const size_t n = plan.edges.size();
  b->conns.assign(n, nullptr);
  b->send.assign(n, nullptr);
  b->recv.assign(n, nullptr);
  b->sends.assign(n, 0);
  b->recvs.assign(n, 0);
  b->staged.clear();
  for (size_t i = 0; i < n; i++) {
    const EdgeName& e = plan.edges[i];
    Conn* c = e.far >= 0 ? table.relay(e.peer, e.vt, e.far) : table.at(e.peer, e.vt);
    if (!c) {
      *why = e.far >= 0 ? fmt::format("no relay edge to rank {} on VT {} for rank {}", e.peer, e.vt, e.far)
                        : fmt::format("no edge to rank {} on VT {}", e.peer, e.vt);
      return false;
    }
    b->conns[i] = c;
    b->send[i] = &c->send;
    b->recv[i] = &c->recv;
  }
  for (const Step& s : plan.steps) {
    for (int i = 0; i < s.nsend; i++) b->sends[size_t(s.send[i])] = 1;
    for (int i = 0; i < s.nrecv; i++) b->recvs[size_t(s.recv[i])] = 1;
  }
  for (size_t i = 0; i < n; i++)
    if (b->sends[i] && b->conns[i]->stagedSends) b->staged.push_back(b->conns[i]);
  return true;
}

}  // namespace preccl
