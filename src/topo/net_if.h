// Which network interfaces the socket transport and the bootstrap use (NCCL_SOCKET_IFNAME semantics).
#pragma once
#include <netinet/in.h>
#include <sys/socket.h>

#include <string>
#include <vector>

namespace preccl {

struct NetIf {
  std::string name;            // "eth0"
  sockaddr_storage addr{};     // its IPv4 (or IPv6) address, port 0
  socklen_t addrLen = 0;
  std::string addrStr;         // "198.18.0.1"
  int speedMbps = -1;          // link speed; -1 when the driver does not report one (lo, tunnels)
};

// NCCL_SOCKET_IFNAME grammar: comma-separated list of name prefixes ("eth,ib"); a leading '^' excludes the
// listed prefixes ("^docker,lo"); a leading '=' means exact names ("=eth0,eth1"); '^=' exact exclusion.
// Blanks around entries and empty entries are ignored. An empty list constrains nothing: it matches every
// name in both modes (NCCL would let a bare "^" exclude everything; that is never what anyone means).
struct IfFilter {
  bool exclude = false, exact = false;
  std::vector<std::string> names;
  bool matches(const std::string& ifname) const;
};
IfFilter parseIfFilter(const std::string& spec);

// The usable interfaces: up, not loopback unless the filter selects it, IPv4 preferred (IPv6 only when
// PRECCL_SOCKET_FAMILY=AF_INET6), sorted by the filter's order of names and then by name, at most maxIfs.
// spec empty: NCCL's default — all interfaces except lo, docker*, virbr*, ifb*; if none, fall back to lo.
// Details: an inclusion list selects a loopback interface when it names it ("lo", "=lo"); an exclusion list
// only falls back to loopback interfaces it does not exclude when nothing else is left. Names sort in
// natural order (eth2 before eth10) so that NIC r is rail r. The first address of an interface wins;
// IPv6 link-local addresses are skipped (they need a scope id). maxIfs < 1 gives an empty list.
std::vector<NetIf> findInterfaces(const std::string& spec, int maxIfs);

// Convenience: spec from PRECCL_SOCKET_IFNAME / NCCL_SOCKET_IFNAME (via envString("SOCKET_IFNAME", "")).
std::vector<NetIf> findInterfacesFromEnv(int maxIfs);

}  // namespace preccl
