// The first bytes on every data socket, at init and on a fresh connection for a masked VT
// (transport/redial.h): they prove the communicator's secret and name the edge.
#pragma once
#include <cstdint>

#include "transport/auth_accept.h"

namespace preccl {

constexpr uint32_t kConnMagic = 0x4e4e4f43;  // "CONN"

struct ConnHello {
  uint8_t secret[kSecretBytes];
  uint32_t magic;
  int32_t src;
  int32_t dst;
  int32_t vt;
  int32_t far;  // Conn::far of a relay edge (the origin of the bytes it relays); -1 on a direct edge
  uint64_t commHash;
  // 0 at init; on a fresh connection, the epoch from which its VT is masked: both ends take the
  // connection for the same masking, whichever of them masked first.
  uint64_t maskEpoch;
};

}  // namespace preccl
