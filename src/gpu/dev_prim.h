// One primitive of the device executor (docs/gpu.md), over the FIFO protocol of transport/fifo.h: NCCL's
// send, recv, recvReduceSend, recvReduceCopy, recvCopySend ... as one shape, piece by piece:
//   out = [reduce] pre(src) (+) recv  -> dst and the send FIFO.
// The wait loop is where the stall count lives, as in the host executor: a piece whose send FIFO is
// full counts one stall and the time until it has room. The loop polls the abort flag and a deadline, so
// a kernel never spins forever. A set of lanes runs it: a CUDA block (the leader waits, all lanes move
// the bytes), or one CPU thread in the tests, with the same code.
#pragma once
#include <cstddef>
#include <cstdint>

#include "device/hd.h"
#include "gpu/dev_reduce.h"
#include "transport/fifo.h"

namespace preccl::gpu {

struct DevPrim {
  const char* src = nullptr;     // this rank's input, or null
  char* dst = nullptr;           // this rank's output, or null
  FifoConsumer* recv = nullptr;  // the previous hop, or null
  FifoProducer* send = nullptr;  // the next hop, or null
  size_t bytes = 0;
  size_t piece = 0;              // bytes per slot (a multiple of the element size, <= the FIFO's slot)
  bool reduce = false;           // combine src with recv (else copy whichever is present)
  bool post = false;             // apply the op's post-division
  uint64_t epoch = 0;            // stamped on every slot, checked on every slot received
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
  for (size_t off = 0; off < p.bytes; off += p.piece) {
    const size_t n = p.bytes - off < p.piece ? p.bytes - off : p.piece;
    int end = 0;
    if (lanes.leader()) {
      bool stalled = false;
      uint64_t t0 = 0;
      for (;;) {
        const bool in = !p.recv || p.recv->ready();
        const bool room = !p.send || p.send->hasRoom();
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
      if (end == 0 && p.recv) {
        const SlotHdr& h = p.recv->hdr();
        if (h.epoch != p.epoch || h.attempt != p.attempt || h.kind != kSlotData || h.bytes != n)
          end = int(PrimEnd::BadSlot);
      }
    }
    end = lanes.share(end);
    if (end != 0) return PrimEnd(end);
    // The piece: sources in reduceCopy's order (the local input, then the received one), outputs dst and
    // the send slot.
    red::Args a;
    const void* in = p.recv ? p.recv->slot() : nullptr;
    void* outs[2];
    int nout = 0;
    if (p.dst) outs[nout++] = p.dst + off;
    if (p.send) outs[nout++] = p.send->slot();
    // A copy moves one input's bytes as they are (its own when it has one), as the host executor's does.
    const RedOp use = p.reduce ? op : RedOp{};
    const char* local = p.src ? p.src + off : nullptr;
    if (!p.reduce && local && in) in = nullptr;
    if (red::resolve(use, n / esz, local, &in, in ? 1 : 0, outs, nout, p.reduce && p.post, &a))
      reduceLanes(t, elemArgs(a, esz), lanes.id(), lanes.count());
    lanes.sync();
    if (lanes.leader()) {
      if (p.send) {
        SlotHdr& h = p.send->hdr();
        h.epoch = p.epoch;
        h.attempt = p.attempt;
        h.kind = kSlotData;
        h.bytes = static_cast<uint32_t>(n);
        h.teleEpoch = ~0ull;
        p.send->publish();
        st->bytes += n;
      }
      if (p.recv) p.recv->release();
    }
    lanes.sync();
  }
  return PrimEnd::Done;
}

}  // namespace preccl::gpu
