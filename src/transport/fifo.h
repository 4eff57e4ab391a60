// The connection FIFO every VT edge uses: nslots slots of slotBytes, a producer-owned tail and a
// consumer-owned head (NCCL's step counters), and the protocol over them. It lives in shared memory for
// intra-host edges and in the process's heap for socket edges, where the proxy thread is the other end.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/hd.h"
#include "policy/telemetry.h"
#include "transport/doorbell.h"
#include "transport/fifo_atomic.h"

namespace preccl {

constexpr uint32_t kMaxSlots = 16;

// What a slot carries: the CCT's data, or one of the attempt's control notices (docs/failures.md, "Agree").
// A probe (docs/failures.md, "Probe and rejoin") is only there to be acknowledged: every reader drops it.
enum SlotKind : uint16_t { kSlotData = 0, kSlotCommit = 1, kSlotAbort = 2, kSlotProbe = 3 };

// Travels with every slot (in memory, and as the frame header on sockets).
struct SlotHdr {
  uint64_t epoch;   // the CCT the bytes belong to
  uint32_t bytes;   // payload length
  uint32_t digest;  // allocation digest (checked when PRECCL_CHECK_ALLOC=1)
  uint32_t attempt; // the CCT's run: 0, then one more per retry after an abort
  uint16_t kind;    // SlotKind
  uint16_t pad;
  // In-band telemetry: the sender's running per-field maximum, over the ranks it has heard from, of the
  // records of epoch `teleEpoch` for this slot's VT (see docs/telemetry.md); kNoTeleEpoch: no cargo.
  uint64_t teleEpoch;
  VtRecord tele;
};

struct alignas(64) FifoCtrl {
  std::atomic<uint64_t> tail{0};  // slots published by the producer
  char pad0[56];
  std::atomic<uint64_t> head{0};  // slots released by the consumer
  char pad1[56];
  SlotHdr hdr[kMaxSlots];
};

constexpr size_t kSlotAlign = 4096;
inline size_t fifoCtrlBytes() { return (sizeof(FifoCtrl) + kSlotAlign - 1) / kSlotAlign * kSlotAlign; }
inline size_t fifoBytes(uint32_t nslots, size_t slotBytes) { return fifoCtrlBytes() + nslots * slotBytes; }

struct Fifo {
  FifoCtrl* ctrl = nullptr;
  char* data = nullptr;
  uint32_t nslots = 0;
  size_t slotBytes = 0;
  void attach(void* mem, uint32_t n, size_t bytes) {
    ctrl = static_cast<FifoCtrl*>(mem);
    data = static_cast<char*>(mem) + fifoCtrlBytes();
    nslots = n;
    slotBytes = bytes;
  }
  PRECCL_HD char* slot(uint64_t i) const { return data + (i % nslots) * slotBytes; }
  PRECCL_HD SlotHdr& hdr(uint64_t i) const { return ctrl->hdr[i % nslots]; }
};

// The FIFO protocol, the only code that touches a FIFO's counters (through fifo_atomic.h). The CUDA kernels
// use these same classes (docs/gpu.md); there nobody sleeps, so nobody is woken. The producer fills the slot at its tail
// and publishes it (tail + 1, release); the consumer reads the slot at its head and releases it (head + 1,
// release); each wakes the other end after its store. Each end caches the other's counter from its last
// look, so a FIFO with room or with slots waiting costs no shared read. The executor is the producer of
// its send FIFOs and the consumer of its receive FIFOs; a socket proxy, or a peer's executor through
// shared memory, is the other end.
class FifoProducer {
 public:
  void attach(const Fifo& f, Waker consumer) {
    f_ = f;
    consumer_ = consumer;
    tail_ = headSeen_ = 0;
  }
  PRECCL_HD const Fifo& fifo() const { return f_; }
  PRECCL_HD bool hasRoom() {
    if (tail_ - headSeen_ < f_.nslots) return true;
    headSeen_ = counterLoad(f_.ctrl->head);
    return tail_ - headSeen_ < f_.nslots;
  }
  PRECCL_HD char* slot() const { return f_.slot(tail_); }
  PRECCL_HD SlotHdr& hdr() const { return f_.hdr(tail_); }
  PRECCL_HD void publish() {
    counterStore(f_.ctrl->tail, ++tail_);
#if !defined(__CUDA_ARCH__)
    consumer_.wake();
#endif
  }
  PRECCL_HD uint64_t published() const { return tail_; }
  // Wakes the consumer, for a producer that cannot (a kernel's: the host wakes for it).
  void wake() const { consumer_.wake(); }
  // The consumer's head, read now: every published slot was released when it equals published().
  PRECCL_HD uint64_t released() {
    headSeen_ = counterLoad(f_.ctrl->head);
    return headSeen_;
  }

 private:
  Fifo f_;
  Waker consumer_;
  uint64_t tail_ = 0, headSeen_ = 0;
};

class FifoConsumer {
 public:
  void attach(const Fifo& f, Waker producer) {
    f_ = f;
    producer_ = producer;
    head_ = tailSeen_ = 0;
  }
  PRECCL_HD const Fifo& fifo() const { return f_; }
  PRECCL_HD bool ready() {
    if (tailSeen_ > head_) return true;
    tailSeen_ = counterLoad(f_.ctrl->tail);
    return tailSeen_ > head_;
  }
  PRECCL_HD const SlotHdr& hdr() const { return f_.hdr(head_); }
  PRECCL_HD char* slot() const { return f_.slot(head_); }
  // Slots published and not yet released, read now; and the i-th of them (i < waiting()): a look past the
  // head for a control notice queued behind data.
  PRECCL_HD uint64_t waiting() {
    tailSeen_ = counterLoad(f_.ctrl->tail);
    return tailSeen_ - head_;
  }
  PRECCL_HD const SlotHdr& hdrAt(uint64_t i) const { return f_.hdr(head_ + i); }
  PRECCL_HD const char* slotAt(uint64_t i) const { return f_.slot(head_ + i); }
  PRECCL_HD void release() {
    counterStore(f_.ctrl->head, ++head_);
#if !defined(__CUDA_ARCH__)
    producer_.wake();
#endif
  }
  PRECCL_HD uint64_t consumed() const { return head_; }
  // Wakes the producer, for a consumer that cannot (a kernel's: the host wakes for it).
  void wake() const { producer_.wake(); }

 private:
  Fifo f_;
  Waker producer_;
  uint64_t head_ = 0, tailSeen_ = 0;
};

class Transport;

// One VT edge between this rank and a peer, both directions, as the executor sees it: two FIFOs and a
// state. How the bytes travel is the transport's (`owner`) business; nothing here is specific to one.
struct Conn {
  enum State : int { Live = 0, Closed = 1, Failed = 2 };
  int peer = -1;
  int vt = -1;
  int nic = -1;          // this rank's NIC the edge leaves by; -1: none (shared memory)
  // A relay edge (Topology::rail): the rank at the far end of the relayed path, whose bytes the edge
  // carries (the origin, seen from the relay's socket to the destination and from the destination) or
  // for which it carries them (the destination, seen from the origin and the relay's shared memory); -1
  // on a direct edge.
  int far = -1;
  std::string path;      // how the edge travels, for messages: "NIC eth0 198.18.0.1 -> eth0 198.18.0.2", "shared memory"
  Transport* owner = nullptr;
  // The send FIFO's consumer is a progress thread of this process: a published slot is the peer's only
  // once that thread released it (handed it to the kernel). A call waits for that before it returns, so a
  // rank that returned may destroy its communicator or exit at once without losing a byte a peer needs.
  bool stagedSends = false;
  FifoProducer send;
  FifoConsumer recv;

  State state() const { return static_cast<State>(state_.load(std::memory_order_acquire)); }
  // Closed: the peer ended the edge cleanly between slots (it destroyed its communicator or exited), an
  // error only if this rank still needs the edge. Failed: a transport error; why() says what. Only the
  // edge's transport sets them, from one thread.
  void close() {
    int live = Live;
    state_.compare_exchange_strong(live, Closed, std::memory_order_acq_rel);
  }
  // `path`: the error is the path's (unreachable, timed out), not the peer's: the peer may be alive and
  // reachable on its other VTs.
  void fail(const std::string& why, bool path = false) {
    if (state() == Failed) return;
    why_ = why;
    pathError_ = path;
    state_.store(Failed, std::memory_order_release);
  }
  // A fresh connection replaced a failed one (transport/redial.h): the edge is Live again.
  void revive() { state_.store(Live, std::memory_order_release); }
  const std::string& why() const { return why_; }  // once state() is Failed
  bool failedPath() const { return state() == Failed && pathError_; }

  // A Live edge whose path is silent: its transport found it sending into a path that has acknowledged
  // nothing for the detection time (transport.h checkPath). Not a state: it clears when the path answers
  // again. Read and written by the executor's thread only.
  bool pathDown = false;
  std::string pathWhy;
  // Probes sent on the edge since its VT was masked (core/probe.cc).
  uint32_t probesSent = 0;

 private:
  std::atomic<int> state_{Live};
  std::string why_;
  bool pathError_ = false;
};

}  // namespace preccl
