// The unique id: the bootstrap root's address and a 128-bit secret, in NCCL's 128-byte envelope.
#pragma once
#include <cstdint>

#include "preccl/preccl.h"
#include "transport/auth_accept.h"
#include "transport/socket.h"

namespace preccl {

constexpr uint32_t kUniqueIdMagic = 0x44495250;  // "PRID"
enum : uint32_t { kIdRootOnRank0 = 1u };        // rank 0 hosts the root (PRECCL_COMM_ID mode)

struct UniqueIdData {
  uint32_t magic;
  uint16_t family;
  uint16_t port;  // network byte order
  uint8_t addr[16];
  uint8_t secret[kSecretBytes];
  uint32_t flags;
};
static_assert(sizeof(UniqueIdData) <= PRECCL_UNIQUE_ID_BYTES);

precclUniqueId encodeUniqueId(const SockAddr& root, const uint8_t* secret, uint32_t flags);
// False when the id is not one of ours (garbage, zeroed, another library's).
bool decodeUniqueId(const precclUniqueId& id, SockAddr* root, uint8_t* secret, uint32_t* flags);
void randomBytes(void* buf, size_t n);

}  // namespace preccl
