// NIC/NUMA locality. The hwloc topology (with I/O devices) is loaded once, on first use, and kept for the
// life of the process: hwloc's read-only queries are thread-safe, and never destroying it means no thread
// (e.g. a proxy still starting at exit) can see it freed. sysfs answers when hwloc is absent or silent.
#include "topo/locality.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include <fstream>

#include "base/log.h"
#include "base/env.h"

#ifdef PRECCL_HAVE_HWLOC
#include <hwloc.h>
#endif

namespace preccl {
namespace {

std::string firstLine(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

// "0-3,8,10-11" into `set`; false when nothing valid was found.
bool parseCpuList(const std::string& list, cpu_set_t* set) {
  bool any = false;
  size_t pos = 0;
  while (pos < list.size()) {
    size_t end = list.find(',', pos);
    if (end == std::string::npos) end = list.size();
    std::string item = list.substr(pos, end - pos);
    pos = end + 1;
    char* rest = nullptr;
    long lo = strtol(item.c_str(), &rest, 10), hi = lo;
    if (rest == item.c_str() || lo < 0) continue;
    if (*rest == '-') hi = strtol(rest + 1, &rest, 10);
    if (*rest != '\0' || hi < lo) continue;
    for (long c = lo; c <= hi && c < CPU_SETSIZE; ++c) { CPU_SET(c, set); any = true; }
  }
  return any;
}

// sysfs: the interface's device node, then its parents (a virtio NIC's numa_node/local_cpulist live on the
// PCI device above it). Interfaces without a device link (lo, veth, bridges) stay unknown.
NicLocality sysfsLocality(const std::string& ifname) {
  NicLocality loc;
  if (ifname.empty() || ifname.find('/') != std::string::npos || ifname[0] == '.') return loc;
  char* real = realpath(("/sys/class/net/" + ifname + "/device").c_str(), nullptr);
  if (!real) return loc;
  std::string dir = real;
  free(real);
  bool cpusDone = false;
  const std::string root = "/sys/devices/";
  while (dir.size() > root.size() && dir.compare(0, root.size(), root) == 0) {
    if (!cpusDone && !firstLine(dir + "/local_cpulist").empty()) {
      loc.cpus = firstLine(dir + "/local_cpulist");
      std::string numa = firstLine(dir + "/numa_node");
      loc.numaNode = numa.empty() ? -1 : atoi(numa.c_str());
      if (loc.numaNode < -1) loc.numaNode = -1;
      cpusDone = true;
    }
    if (loc.pciBusId.empty()) {
      char* sub = realpath((dir + "/subsystem").c_str(), nullptr);
      if (sub && std::string(sub) == "/sys/bus/pci") loc.pciBusId = dir.substr(dir.rfind('/') + 1);
      free(sub);
    }
    if (cpusDone && !loc.pciBusId.empty()) break;
    dir.erase(dir.rfind('/'));
  }
  return loc;
}

#ifdef PRECCL_HAVE_HWLOC
hwloc_topology_t topology() {
  static hwloc_topology_t topo = [] {
    hwloc_topology_t t = nullptr;
    if (hwloc_topology_init(&t) != 0) return hwloc_topology_t{nullptr};
    hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (hwloc_topology_load(t) != 0) {
      hwloc_topology_destroy(t);
      return hwloc_topology_t{nullptr};
    }
    return t;
  }();
  return topo;
}

bool hwlocLocality(const std::string& ifname, NicLocality* loc) {
  hwloc_topology_t t = topology();
  if (!t) return false;
  for (hwloc_obj_t o = hwloc_get_next_osdev(t, nullptr); o; o = hwloc_get_next_osdev(t, o)) {
    if (!o->name || ifname != o->name) continue;
#if HWLOC_API_VERSION < 0x00030000
    if (o->attr->osdev.type != HWLOC_OBJ_OSDEV_NETWORK) continue;  // not e.g. a block device of that name
#endif
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(t, o);
    if (anc && anc->cpuset && !hwloc_bitmap_iszero(anc->cpuset)) {
      char* s = nullptr;
      if (hwloc_bitmap_list_asprintf(&s, anc->cpuset) >= 0 && s) loc->cpus = s;
      free(s);
    }
    // Only a single node is "the" NUMA node; an ancestor spanning several says nothing more precise.
    if (anc && anc->nodeset && hwloc_bitmap_weight(anc->nodeset) == 1) loc->numaNode = hwloc_bitmap_first(anc->nodeset);
    for (hwloc_obj_t p = o->parent; p; p = p->parent) {
      if (p->type != HWLOC_OBJ_PCI_DEVICE) continue;
      const auto& pci = p->attr->pcidev;
      loc->pciBusId = fmt::format("{:04x}:{:02x}:{:02x}.{:x}", pci.domain, pci.bus, pci.dev, pci.func);
      break;
    }
    return !loc->cpus.empty();
  }
  return false;
}
#endif

}  // namespace

NicLocality nicLocality(const std::string& ifname) {
#ifdef PRECCL_HAVE_HWLOC
  NicLocality loc;
  if (hwlocLocality(ifname, &loc)) return loc;
#endif
  return sysfsLocality(ifname);
}

bool bindThreadNearNics(const std::vector<std::string>& ifnames) {
  if (envInt("PROXY_AFFINITY", 1) == 0) return false;
  cpu_set_t want;
  CPU_ZERO(&want);
  std::string names;
  bool any = false;
  for (const auto& n : ifnames) {
    NicLocality loc = nicLocality(n);
    if (!loc.cpus.empty() && parseCpuList(loc.cpus, &want)) any = true;
    names += (names.empty() ? "" : ",") + n;
  }
  if (!any) return false;
  // Stay inside the mask the thread already has (taskset, cgroups): never widen it.
  cpu_set_t cur;
  if (pthread_getaffinity_np(pthread_self(), sizeof(cur), &cur) != 0) return false;
  CPU_AND(&want, &want, &cur);
  if (CPU_COUNT(&want) == 0) return false;
  if (!CPU_EQUAL(&want, &cur) && pthread_setaffinity_np(pthread_self(), sizeof(want), &want) != 0) return false;
  PRECCL_INFO("thread bound near NICs {} ({} CPUs)", names, CPU_COUNT(&want));
  return true;
}

uint32_t nicsNearCaller(const std::vector<std::string>& ifnames) {
  if (ifnames.empty() || ifnames.size() > 32) return 0;
  cpu_set_t mine;
  if (pthread_getaffinity_np(pthread_self(), sizeof(mine), &mine) != 0) return 0;
  uint32_t near = 0;
  for (size_t k = 0; k < ifnames.size(); k++) {
    cpu_set_t at;
    CPU_ZERO(&at);
    const NicLocality loc = nicLocality(ifnames[k]);
    if (loc.cpus.empty() || !parseCpuList(loc.cpus, &at)) return 0;
    CPU_AND(&at, &at, &mine);
    if (CPU_COUNT(&at) > 0) near |= 1u << k;
  }
  return near;
}

std::string machineSummary() {
#ifdef PRECCL_HAVE_HWLOC
  if (hwloc_topology_t t = topology()) {
    auto n = [t](hwloc_obj_type_t type, const char* what) {
      int k = hwloc_get_nbobjs_by_type(t, type);
      return fmt::format("{} {}{}", k, what, k == 1 ? "" : "s");
    };
    return fmt::format("{}, {}, {}, {}", n(HWLOC_OBJ_PACKAGE, "package"), n(HWLOC_OBJ_NUMANODE, "NUMA node"),
                       n(HWLOC_OBJ_CORE, "core"), n(HWLOC_OBJ_PU, "PU"));
  }
#endif
  return "unknown";
}

bool localityUsesHwloc() {
#ifdef PRECCL_HAVE_HWLOC
  return true;
#else
  return false;
#endif
}

}  // namespace preccl
