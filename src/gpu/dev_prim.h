// One primitive of the device executor (docs/gpu.md), over the FIFO protocol of transport/fifo.h: NCCL's
// send, recv, recvReduceSend, recvReduceCopy, recvCopySend ... as one shape, the host executor's Step,
// piece by piece:  out = [reduce] pre(src) (+) recv[0] (+) recv[1]  -> dst and every send FIFO.
// The wait loop is where the stall count lives, as in the host executor: a piece whose send FIFO is
// full counts one stall and the time until it has room. The loop polls the abort flag and a deadline, so
// a kernel never spins forever. A set of lanes runs it: a CUDA block (the leader waits, all lanes move
// the bytes), or one CPU thread in the tests, with the same code.
#pragma once
#include <cstddef>
#include <cstdint>

#include "device/hd.h"
#include "device/stride_map.h"
#include "gpu/dev_reduce.h"
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
  size_t bytes = 0;
  size_t piece = 0;                 // bytes per slot (a multiple of the element size, <= the FIFO's slot)
  bool reduce = false;              // combine src and the received inputs (else copy one of them)
  bool post = false;                // apply the op's post-division
  uint64_t epoch = 0;               // stamped on every slot sent, checked on every slot received
  uint32_t attempt = 0;
};

enum class PrimEnd : int { Done = 0, Aborted = 1, TimedOut = 2, BadSlot = 3 };

struct PrimStats {
  uint64_t stalls = 0;   // pieces that found the send FIFO full
  uint64_t stallNs = 0;  // time spent waiting for it
  uint64_t bytes = 0;    // bytes sent
};

// Lanes: leader(), id(), count(), sync(), nowNs(), and share(v) (the leader's v, for every lane).
template <class Lanes>
PRECCL_HD PrimEnd runPrim(Lanes& lanes, const DevPrim& p, const RedOp& op, precclDataType_t t, size_t esz,
                          const volatile int* abort, uint64_t deadlineNs, PrimStats* st) {
  // A copy moves one input's bytes as they are (its own when it has one), as the host executor's does.
  const RedOp use = p.reduce ? op : RedOp{};
  for (size_t off = 0; off < p.bytes; off += p.piece) {
    const size_t n = p.bytes - off < p.piece ? p.bytes - off : p.piece;
    int end = 0;
    if (lanes.leader()) {
      bool stalled = false;
      uint64_t t0 = 0;
      for (;;) {
        bool in = true, room = true;
        for (int i = 0; i < p.nrecv; i++) in = in && p.recv[i]->ready();
        for (int i = 0; i < p.nsend; i++) room = room && p.send[i]->hasRoom();
        if (in && room) break;
        if (!room && !stalled) {
          stalled = true;
          t0 = lanes.nowNs();
        }
        if (*abort) {
          end = int(PrimEnd::Aborted);
          break;
        }
        if (lanes.nowNs() > deadlineNs) {
          end = int(PrimEnd::TimedOut);
          break;
        }
      }
      if (stalled) {
        st->stalls++;
        st->stallNs += lanes.nowNs() - t0;
      }
      for (int i = 0; i < p.nrecv && end == 0; i++) {
        const SlotHdr& h = p.recv[i]->hdr();
        if (h.epoch != p.epoch || h.attempt != p.attempt || h.kind != kSlotData || h.bytes != n)
          end = int(PrimEnd::BadSlot);
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
        h.teleEpoch = ~0ull;
        p.send[i]->publish();
        st->bytes += n;
      }
      for (int i = 0; i < p.nrecv; i++) p.recv[i]->release();
    }
    lanes.sync();
  }
  return PrimEnd::Done;
}

}  // namespace preccl::gpu
