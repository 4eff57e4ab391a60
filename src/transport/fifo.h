// The connection FIFO every VT edge uses: nslots slots of slotBytes, a producer-owned tail and a
// consumer-owned head (NCCL's step counters). It lives in shared memory for intra-host edges and in the
// process's heap for socket edges, where the proxy thread is the other end.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "policy/telemetry.h"
#include "transport/doorbell.h"

namespace preccl {

constexpr uint32_t kMaxSlots = 16;

// Travels with every slot (in memory, and as the frame header on sockets).
struct SlotHdr {
  uint64_t epoch;   // the CCT the bytes belong to
  uint32_t bytes;   // payload length
  uint32_t digest;  // allocation digest (checked when PRECCL_CHECK_ALLOC=1)
  // In-band telemetry: the sender's running per-field maximum, over the ranks it has heard from, of the
  // records of epoch `teleEpoch` for this slot's VT (see docs/telemetry.md). ~0 = no cargo.
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
  char* slot(uint64_t i) const { return data + (i % nslots) * slotBytes; }
  SlotHdr& hdr(uint64_t i) const { return ctrl->hdr[i % nslots]; }
};

// One VT edge between this rank and a peer, both directions. The executor is the producer of `send` and
// the consumer of `recv`; it caches its own counters.
struct Conn {
  int peer = -1;
  int vt = -1;
  std::string path;      // how the edge travels, for messages: "NIC eth0 198.18.0.1 -> eth0 198.18.0.2", "shared memory"
  // The send FIFO's consumer is a proxy thread of this process: a published slot is the peer's only once
  // the proxy released it (handed it to the kernel). A call waits for that before it returns, so a rank
  // that returned may destroy its communicator or exit at once without losing a byte a peer needs.
  bool stagedSends = false;
  bool viaSocket = false;
  int fd = -1;           // the socket when viaSocket (the proxy owns it)
  int bufferBytes = 0;   // SO_SNDBUF and SO_RCVBUF this rank set; 0: the kernel's autotuning (core/socket_buffers.h)
  int bufferFloor = 0;   // the least of them the rule may set (flowBufferFloor); 0: not read yet
  Fifo send;
  Waker sendConsumer;  // woken after publishing a slot
  uint64_t sendTail = 0;
  uint64_t sendHeadSeen = 0;
  Fifo recv;
  Waker recvProducer;  // woken after releasing a slot
  uint64_t recvHead = 0;
  uint64_t recvTailSeen = 0;
  // Set by the proxy when the peer closed the socket cleanly between frames: an error only if this rank
  // still needs data from the edge (the peer may simply have destroyed its communicator first).
  std::atomic<bool> closed{false};
};

}  // namespace preccl
