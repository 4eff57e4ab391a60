// Every setting of a communicator, resolved once at init from precclConfig_t, then the environment, then
// the defaults. Knob names are documented in docs/settings.md.
#pragma once
#include <cstdint>
#include <string>

#include "policy/allocation.h"
#include "policy/rail_split.h"
#include "preccl/preccl.h"

namespace preccl {

constexpr int kMaxVtsConfig = 32;

enum class Algo { Auto, Ring, Tree, Doubling };

struct Config {
  bool blocking = true;
  int nVTs = 0;                      // 0: 2 x NIC count
  bool shmDisable = false;           // PRECCL_SHM_DISABLE: sockets even inside a host
  uint64_t timeoutMs = 120000;       // PRECCL_TIMEOUT (s): no progress for this long is an error
  uint32_t nslots = 8;               // PRECCL_NSLOTS
  uint32_t slotBytes = 512 * 1024;   // PRECCL_SLOT_BYTES
  int64_t socketBuffer = -1;         // PRECCL_SOCKET_BUFFER: > 0 fixed, 0 kernel's, -1 follows the rate
  Algo algo = Algo::Auto;            // PRECCL_ALGO=ring|tree|doubling
  size_t treeMaxBytes = 64 * 1024;   // PRECCL_TREE_MAX_BYTES: Auto uses the tree below this
  // PRECCL_SMALL_MAX_BYTES: calls up to this size take the small-message path (docs/settings.md):
  // recursive doubling without the policy (within one slot, where the collective has it), and the
  // calling thread drives its sockets.
  size_t smallMaxBytes = 64 * 1024;
  PolicyKind policy = PolicyKind::Static;  // PRECCL_POLICY
  bool checkAlloc = false;           // PRECCL_CHECK_ALLOC=1: every slot carries the allocation digest
  bool retry = true;                 // PRECCL_RETRY=0: a failed path fails the call (no commit, abort, retry)
  bool deferCommit = true;           // PRECCL_DEFER_COMMIT=0: small calls commit before they return too
  uint32_t detectMs = 500;           // PRECCL_DETECT_MS: a path with nothing acknowledged this long is dead
  bool railAffinity = false;         // PRECCL_NIC_AFFINITY=rail: each rank sends through its own NIC(s) only
  RelayMode relay = RelayMode::Auto; // PRECCL_RELAY=auto|off|force (policy/rail_split.h)
  bool lanes = false;                // PRECCL_EXECUTOR=lanes: the device executor's code on CPU threads
  std::string commName;
};

// Returns precclInvalidArgument (with the message set) for a bad config or environment value.
precclResult_t resolveConfig(const precclConfig_t* user, Config* out);

}  // namespace preccl
