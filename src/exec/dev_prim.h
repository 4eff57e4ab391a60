// One primitive of the device executor (docs/gpu.md), over the FIFO protocol of transport/fifo.h: NCCL's
// send, recv, recvReduceSend, recvReduceCopy, recvCopySend ... as one shape, the host executor's Step,
// piece by piece:  out = [reduce] pre(src) (+) recv[0] (+) recv[1]  -> dst and every send FIFO.
// The wait loop is where the stall count lives, as in the host executor: a piece whose send FIFO is
// full counts one stall and the time until it has room. The loop polls the abort flag and a time budget,
// so a kernel never spins forever. A set of lanes runs it: a CUDA block (the leader waits, all lanes move
// the bytes), or one CPU thread in the tests, with the same code.
#pragma once
#include <cstddef>
#include <cstdint>

#include "base/hd.h"
#include "plan/stride_map.h"
#include "exec/dev_atomic.h"
#include "reduce/reduce_lanes.h"
#include "transport/fifo.h"

namespace preccl::gpu {

// The shape of the host executor's Step (device/primitives.h), with FIFO ends for its edges.
struct DevPrim : StrideMap {
  const char* src = nullptr;        // this rank's input, or null (placed through the StrideMap)
  char* dst = nullptr;              // this rank's output, or null (the same)
  FifoConsumer* recv[2] = {};       // the hops it receives from (a tree's node: two children)
  int nrecv = 0;
  FifoProducer* send[2] = {};       // the hops it sends to
  int nsend = 0;
  size_t from = 0;                  // the step's bytes [from, bytes) (a task splits a step at its telemetry cut)
  size_t bytes = 0;
  size_t piece = 0;                 // bytes per slot (a multiple of the element size, <= the FIFO's slot)
  bool reduce = false;              // combine src and the received inputs (else copy one of them)
  bool post = false;                // apply the op's post-division
  bool headerOnly = false;          // one slot of no bytes: the telemetry cargo alone (Step::headerOnly)
  bool relayed = false, relayIsSend = false;  // another rank's slots passed on (Step::relayed)
  uint64_t epoch = 0;               // stamped on every slot sent, checked on every slot received
  uint32_t attempt = 0;
};

enum class PrimEnd : int { Done = 0, Aborted = 1, TimedOut = 2, BadSlot = 3 };

// Counted by the leader, possibly into a VT's counters that other tasks' lanes add to as well.
struct PrimStats {
  uint64_t stalls = 0;   // pieces that found the send FIFO full
  uint64_t stallNs = 0;  // time spent waiting for it
  uint64_t bytes = 0;    // bytes sent as this rank's own
  uint64_t relayed = 0;  // bytes forwarded for another rank
};

// What a slot's header carries besides the data, checked and stamped by the leader: NoTele checks only
// what runPrim does itself; the task runner (gpu/dev_task.h) adds the allocation digest and the in-band
// telemetry. heard(h): a received slot's header passed runPrim's checks (false: refuse it).
struct NoTele {
  PRECCL_HD bool heard(const SlotHdr&) { return true; }
  PRECCL_HD void stamp(SlotHdr& h) { h.teleEpoch = ~0ull; }
};

// Lanes: leader(), id(), count(), sync(), relax() (between polls), nowNs(), and share(v) (the leader's v,
// for every lane).

// The leader's wait: polls ready() until it holds (0), the abort flag is raised (Aborted) or budgetNs
// pass without it (TimedOut: PRECCL_TIMEOUT's rule).
template <class Lanes, class Ready>
PRECCL_HD int pollUntil(Lanes& lanes, const volatile int* abort, uint64_t budgetNs, Ready ready) {
  const uint64_t t0 = lanes.nowNs();
  while (!ready()) {
    if (*abort) return int(PrimEnd::Aborted);
    if (lanes.nowNs() - t0 > budgetNs) return int(PrimEnd::TimedOut);
    lanes.relax();
  }
  return 0;
}

template <class Lanes, class Tele = NoTele>
PRECCL_HD PrimEnd runPrim(Lanes& lanes, const DevPrim& p, const RedOp& op, precclDataType_t t, size_t esz,
                          const volatile int* abort, uint64_t budgetNs, PrimStats* st, Tele&& tele = Tele{}) {
  // A copy moves one input's bytes as they are (its own when it has one), as the host executor's does.
  const RedOp use = p.reduce ? op : RedOp{};
  if (!p.headerOnly && p.from >= p.bytes) return PrimEnd::Done;
  size_t off = p.from;
  do {
    const size_t n = p.headerOnly ? 0 : (p.bytes - off < p.piece ? p.bytes - off : p.piece);
    int end = 0;
    uint64_t passEpoch = ~0ull;  // a relay's forward: the telemetry its slot came with
    VtRecord passTele{};
    if (lanes.leader()) {
      bool stalled = false;
      uint64_t stallFrom = 0;
      end = pollUntil(lanes, abort, budgetNs, [&] {
        bool in = true, room = true;
        for (int i = 0; i < p.nrecv; i++) in = in && p.recv[i]->ready();
        for (int i = 0; i < p.nsend; i++) room = room && p.send[i]->hasRoom();
        if (!room && !stalled) {
          stalled = true;
          stallFrom = lanes.nowNs();
        }
        return in && room;
      });
      if (stalled) {
        sharedAdd<uint64_t>(&st->stalls, 1);
        sharedAdd<uint64_t>(&st->stallNs, lanes.nowNs() - stallFrom);
      }
      for (int i = 0; i < p.nrecv && end == 0; i++) {
        const SlotHdr& h = p.recv[i]->hdr();
        if (h.epoch != p.epoch || h.attempt != p.attempt || h.kind != kSlotData || h.bytes != n || !tele.heard(h))
          end = int(PrimEnd::BadSlot);
        else if (p.relayed) {
          passEpoch = h.teleEpoch;
          passTele = h.tele;
        }
      }
    }
    end = lanes.share(end);
    if (end != 0) return PrimEnd(end);
    // The piece in runs that are contiguous in the caller's memory (one, unless the step is strided); in
    // each, the sources in reduceCopy's order (the local input, then the received ones) and the outputs.
    for (size_t done = 0; done < n;) {
      const size_t left = n - done, contiguous = p.runFrom(off + done);
      const size_t run = contiguous < left ? contiguous : left, mem = p.memOffset(off + done);
      const void* in[2];
      for (int i = 0; i < p.nrecv; i++) in[i] = p.recv[i]->slot() + done;
      void* outs[3];
      int nout = 0;
      if (p.dst) outs[nout++] = p.dst + mem;
      for (int i = 0; i < p.nsend; i++) outs[nout++] = p.send[i]->slot() + done;
      const char* local = p.src ? p.src + mem : nullptr;
      const int nin = p.reduce ? p.nrecv : (local ? 0 : (p.nrecv > 0 ? 1 : 0));
      red::Args a;
      if (red::resolve(use, run / esz, local, in, nin, outs, nout, p.reduce && p.post, &a))
        reduceLanes(t, elemArgs(a, esz), lanes.id(), lanes.count());
      done += run;
    }
    lanes.sync();
    if (lanes.leader()) {
      for (int i = 0; i < p.nsend; i++) {
        SlotHdr& h = p.send[i]->hdr();
        h.epoch = p.epoch;
        h.attempt = p.attempt;
        h.kind = kSlotData;
        h.bytes = static_cast<uint32_t>(n);
        tele.stamp(h);
        if (p.relayed) {
          h.teleEpoch = passEpoch;
          h.tele = passTele;
        }
        p.send[i]->publish();
      }
      for (int i = 0; i < p.nrecv; i++) p.recv[i]->release();
      if (!p.relayed || p.relayIsSend) sharedAdd<uint64_t>(&st->bytes, uint64_t(n) * p.nsend);
      if (p.relayed) sharedAdd<uint64_t>(&st->relayed, n);
    }
    lanes.sync();
    off += n;
  } while (off < p.bytes);
  return PrimEnd::Done;
}

}  // namespace preccl::gpu
