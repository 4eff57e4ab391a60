// The shared-memory transport: ranks of one host. Each rank owns one segment holding its executor's Bell
// and the receive FIFO of every (local peer, VT); a sender writes slots straight into the receiver's
// segment, so the executor is both ends and no thread moves anything.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "transport/shm.h"
#include "transport/transport.h"

namespace preccl {

class ShmTransport : public Transport {
 public:
  const char* name() const override { return "shared memory"; }
  // Serves the peers on this host (unless shared memory is disabled). Every rank calls it, with or
  // without local peers: it takes two bootstrap barriers either way.
  precclResult_t connect(const TransportSetup& s, ConnTable& table, std::string* err) override;
  // A peer process that died leaves its FIFOs still: its pid is checked.
  void checkStalled(Conn& c) override;
  // The executor's Bell in this rank's segment, where local peers ring it; null without local peers.
  Bell* bell() const { return own_ ? &own_->header()->bell : nullptr; }

 private:
  std::unique_ptr<ShmSegment> own_;
  std::vector<std::unique_ptr<ShmSegment>> peer_;  // by rank; null if not a local peer
};

}  // namespace preccl
