#include "core/unique_id.h"

#include <arpa/inet.h>
#include <sys/random.h>

#include <cstring>

namespace preccl {

void randomBytes(void* buf, size_t n) {
  uint8_t* p = static_cast<uint8_t*>(buf);
  while (n > 0) {
    ssize_t r = getrandom(p, n, 0);
    if (r > 0) {
      p += r;
      n -= r;
    }
  }
}

precclUniqueId encodeUniqueId(const SockAddr& root, const uint8_t* secret, uint32_t flags) {
  precclUniqueId id;
  memset(&id, 0, sizeof(id));
  UniqueIdData d{};
  d.magic = kUniqueIdMagic;
  d.family = root.ss.ss_family;
  if (d.family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(&root.ss);
    d.port = in->sin_port;
    memcpy(d.addr, &in->sin_addr, 4);
  } else {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(&root.ss);
    d.port = in6->sin6_port;
    memcpy(d.addr, &in6->sin6_addr, 16);
  }
  memcpy(d.secret, secret, kSecretBytes);
  d.flags = flags;
  memcpy(id.internal, &d, sizeof(d));
  return id;
}

bool decodeUniqueId(const precclUniqueId& id, SockAddr* root, uint8_t* secret, uint32_t* flags) {
  UniqueIdData d;
  memcpy(&d, id.internal, sizeof(d));
  if (d.magic != kUniqueIdMagic || (d.family != AF_INET && d.family != AF_INET6) || d.port == 0 ||
      (d.flags & ~kIdRootOnRank0) != 0)
    return false;
  for (size_t i = sizeof(d); i < PRECCL_UNIQUE_ID_BYTES; i++)
    if (id.internal[i] != 0) return false;
  *root = SockAddr{};
  if (d.family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&root->ss);
    in->sin_family = AF_INET;
    in->sin_port = d.port;
    memcpy(&in->sin_addr, d.addr, 4);
    root->len = sizeof(sockaddr_in);
  } else {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&root->ss);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = d.port;
    memcpy(&in6->sin6_addr, d.addr, 16);
    root->len = sizeof(sockaddr_in6);
  }
  memcpy(secret, d.secret, kSecretBytes);
  *flags = d.flags;
  return true;
}

}  // namespace preccl
