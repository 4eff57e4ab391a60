// POSIX shared-memory segments for intra-host edges. Each rank owns one segment holding its executor's
// Bell and the receive FIFO of every (local peer, VT). Names are unlinked as soon as every local rank has
// mapped them, so the kernel frees the memory when the last process ends, even one that was killed.
#pragma once
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "preccl/preccl.h"
#include "transport/doorbell.h"
#include "transport/fifo.h"

namespace preccl {

struct alignas(64) ShmHeader {
  uint32_t magic;
  int32_t pid;
  Bell bell;
};

struct ShmLayout {
  uint32_t nLocal = 0;  // ranks on this host (FIFO index = sender's local index)
  uint32_t nVTs = 0;
  uint32_t nslots = 0;
  size_t slotBytes = 0;
  // Under rail affinity (topology.h), one more FIFO per (sender's local index, VT, far rank) for the
  // relay edges; 0 otherwise.
  uint32_t nRelayFar = 0;
  size_t headerBytes() const { return kSlotAlign; }
  size_t fifoOffset(uint32_t senderLocal, uint32_t vt) const {
    return headerBytes() + (static_cast<size_t>(senderLocal) * nVTs + vt) * fifoBytes(nslots, slotBytes);
  }
  size_t relayOffset(uint32_t senderLocal, uint32_t vt, uint32_t far) const {
    return fifoOffset(nLocal, 0) + ((static_cast<size_t>(senderLocal) * nVTs + vt) * nRelayFar + far) * fifoBytes(nslots, slotBytes);
  }
  size_t totalBytes() const { return relayOffset(nLocal, 0, 0); }
};

class ShmSegment {
 public:
  ShmSegment() = default;
  ~ShmSegment();
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;
  // Creates (exclusively) and maps; the caller initialises the content.
  bool create(const std::string& name, size_t bytes, std::string* err);
  bool open(const std::string& name, size_t bytes, std::string* err);
  void unlinkName();
  char* base() const { return static_cast<char*>(base_); }
  ShmHeader* header() const { return static_cast<ShmHeader*>(base_); }

 private:
  void* base_ = nullptr;
  size_t bytes_ = 0;
  std::string name_;
  bool linked_ = false;
};

constexpr uint32_t kShmMagic = 0x4d485350;  // "PSHM"

}  // namespace preccl
