// Where network interfaces sit in the machine (NUMA node, nearby CPUs), so the proxy thread that drives a
// NIC can run next to it. Uses hwloc when the library is built with it, else sysfs; unknown is never fatal.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace preccl {

struct NicLocality {
  int numaNode = -1;     // -1: unknown, or the NIC is not local to one NUMA node
  std::string cpus;      // cpulist like "0-3"; empty = unknown
  std::string pciBusId;  // "0000:00:03.0" when the NIC is (behind) a PCI device; else empty
};

// Where a network interface sits: the NUMA node and CPUs closest to it (hwloc: the OS device's first
// non-I/O ancestor), its PCI bus id when it is a PCI device. Virtual NICs (veth, lo, bridges) give -1 / "".
NicLocality nicLocality(const std::string& ifname);

// Pins the calling thread to the CPUs near all of `ifnames` (union, within the thread's current mask);
// returns false and leaves the thread alone when nothing is known or PRECCL_PROXY_AFFINITY=0.
bool bindThreadNearNics(const std::vector<std::string>& ifnames);

// Which of `ifnames` (bit k: ifnames[k], at most 32) sit near the calling thread: their CPUs (as
// nicLocality) meet its affinity mask. 0 when one of them has no known locality (virtual NICs, no hwloc or
// sysfs answer): a rank then claims no nearness at all, rather than part of the picture.
uint32_t nicsNearCaller(const std::vector<std::string>& ifnames);

// The machine in one line for INFO logs: packages, NUMA nodes, cores, PUs (hwloc), or "unknown".
std::string machineSummary();

// Whether this build uses hwloc (PRECCL_HAVE_HWLOC); without it every answer comes from sysfs or is unknown.
bool localityUsesHwloc();

}  // namespace preccl
