// A chain of three ranks as three tasks of one plan (exec/task.h's test of itself, on CPU threads and on the
// GPU), each on a VT of its own so that each has its own counters: task 0 reduceSend on edge 0, task 1
// recvReduceSend from edge 0 to edge 1, task 2 recvReduceCopy from edge 1 to the output. The test binds
// edge i to FIFO i of its own.
#pragma once
#include <vector>

#include "exec/run.h"
#include "plan/plan.h"
#include "plan/steps.h"

inline preccl::Plan chainPlan(const std::vector<const char*>& in, char* out, size_t bytes, size_t piece) {
  using namespace preccl;
  Plan p;
  const int32_t e0 = p.edge({1, 0, -1}), e1 = p.edge({2, 1, -1});
  p.begin(0, piece);
  p.add(steps::reduceSend(e0, in[0], bytes));
  p.begin(1, piece);
  p.add(steps::recvReduceSend({e0}, in[1], e1, bytes));
  p.begin(2, piece);
  p.add(steps::recvReduceCopy({e1}, in[2], out, bytes));
  return p;
}

// The run's plain data of a plan over the given ends, state arrays and op, in epoch `epoch`.
inline preccl::Run runOf(const preccl::Plan& p, preccl::FifoProducer* const* send, preccl::FifoConsumer* const* recv,
                         preccl::TaskRun* tasks, preccl::VtRun* vts, const preccl::RedOp& op, precclDataType_t t,
                         size_t esz, uint64_t epoch) {
  preccl::Run r;
  r.steps = p.steps.data();
  r.tasks = p.tasks.data();
  r.ntasks = int(p.tasks.size());
  r.send = send;
  r.recv = recv;
  r.task = tasks;
  r.vt = vts;
  r.epoch = epoch;
  r.dtype = t;
  r.esz = esz;
  r.op = op;
  return r;
}
