// NIC/NUMA locality: virtual and missing interfaces are unknown, binding never happens on unknown
// locality and never widens a thread's mask, and a real (device-backed) NIC agrees with sysfs, read here
// independently of the library.
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "topo/locality.h"

using namespace preccl;

namespace {

std::string firstLine(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}

std::set<int> cpuListSet(const std::string& list) {
  std::set<int> out;
  std::string item;
  for (size_t pos = 0; pos <= list.size(); ++pos) {
    if (pos < list.size() && list[pos] != ',') { item += list[pos]; continue; }
    if (item.empty()) continue;
    size_t dash = item.find('-');
    int lo = std::stoi(item.substr(0, dash)), hi = dash == std::string::npos ? lo : std::stoi(item.substr(dash + 1));
    for (int c = lo; c <= hi; ++c) out.insert(c);
    item.clear();
  }
  return out;
}

std::set<int> threadCpus() {
  cpu_set_t s;
  CPU_ZERO(&s);
  REQUIRE(pthread_getaffinity_np(pthread_self(), sizeof(s), &s) == 0);
  std::set<int> out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &s)) out.insert(c);
  return out;
}

// Runs `fn` on a fresh thread, so a wrong pin cannot leak into later test cases.
template <typename F>
void onThread(F fn) {
  std::thread t(fn);
  t.join();
}

struct SysfsNic {
  std::string name, cpus, pciBusId;
  int numa = -1;
};

// Interfaces with a /sys/class/net/<if>/device link, with the locality of the nearest device (itself or
// a parent) that reports local_cpulist and the nearest PCI device.
std::vector<SysfsNic> deviceBackedNics() {
  std::vector<SysfsNic> out;
  DIR* d = opendir("/sys/class/net");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    char* real = realpath((std::string("/sys/class/net/") + e->d_name + "/device").c_str(), nullptr);
    if (!real) continue;
    SysfsNic nic;
    nic.name = e->d_name;
    for (std::string dir = real; dir.rfind("/sys/devices/", 0) == 0; dir.erase(dir.rfind('/'))) {
      std::string cpus = firstLine(dir + "/local_cpulist");
      if (nic.cpus.empty() && !cpus.empty()) {
        nic.cpus = cpus;
        std::string numa = firstLine(dir + "/numa_node");
        nic.numa = numa.empty() ? -1 : std::stoi(numa);
      }
      char* sub = realpath((dir + "/subsystem").c_str(), nullptr);
      if (nic.pciBusId.empty() && sub && std::string(sub) == "/sys/bus/pci")
        nic.pciBusId = dir.substr(dir.rfind('/') + 1);
      free(sub);
    }
    free(real);
    out.push_back(nic);
  }
  closedir(d);
  return out;
}

int numaNodeCount() {
  int n = 0;
  DIR* d = opendir("/sys/devices/system/node");
  if (!d) return 0;
  while (dirent* e = readdir(d)) {
    std::string s = e->d_name;
    if (s.rfind("node", 0) == 0 && s.size() > 4 && std::isdigit(static_cast<unsigned char>(s[4]))) ++n;
  }
  closedir(d);
  return n;
}

}  // namespace

TEST_CASE("virtual and missing interfaces have unknown locality", "[locality]") {
  for (const char* name : {"lo", "preccl-no-such-if0", "", "../../..", "."}) {
    INFO("interface '" << name << "'");
    NicLocality loc = nicLocality(name);
    CHECK(loc.numaNode == -1);
    CHECK(loc.cpus.empty());
    CHECK(loc.pciBusId.empty());
  }
  // Rail affinity's nearness claims nothing where a NIC's place is unknown.
  CHECK(nicsNearCaller({"lo"}) == 0);
  CHECK(nicsNearCaller({"lo", "preccl-no-such-if0"}) == 0);
  CHECK(nicsNearCaller({}) == 0);
}

TEST_CASE("machineSummary names the PUs when hwloc is built in", "[locality]") {
  std::string s = machineSummary();
  INFO("summary: " << s);
  REQUIRE(!s.empty());
  if (!localityUsesHwloc()) {
    CHECK(s == "unknown");
    return;
  }
  std::smatch m;
  REQUIRE(std::regex_search(s, m, std::regex("(\\d+) PUs?\\b")));
  int pus = std::stoi(m[1]);
  CHECK(pus >= 1);
  CHECK(pus <= sysconf(_SC_NPROCESSORS_CONF));
  CHECK(std::regex_search(s, std::regex("\\d+ NUMA nodes?\\b")));
}

TEST_CASE("bindThreadNearNics leaves the thread alone when locality is unknown", "[locality]") {
  onThread([] {
    std::set<int> before = threadCpus();
    CHECK_FALSE(bindThreadNearNics({"lo"}));
    CHECK_FALSE(bindThreadNearNics({"lo", "preccl-no-such-if0"}));
    CHECK_FALSE(bindThreadNearNics({}));
    CHECK(threadCpus() == before);
  });
}

TEST_CASE("device-backed NICs agree with sysfs", "[locality]") {
  std::vector<SysfsNic> nics = deviceBackedNics();
  if (nics.empty()) {
    std::printf("SKIP: no /sys/class/net/*/device on this machine, no NIC locality to compare\n");
    return;
  }
  std::set<int> mine = threadCpus();
  for (const SysfsNic& ref : nics) {
    INFO("interface " << ref.name << ": sysfs numa " << ref.numa << " cpus '" << ref.cpus << "' pci '"
                      << ref.pciBusId << "'");
    NicLocality loc = nicLocality(ref.name);
    INFO("library: numa " << loc.numaNode << " cpus '" << loc.cpus << "' pci '" << loc.pciBusId << "'");
    CHECK(loc.pciBusId == ref.pciBusId);
    if (ref.numa >= 0) CHECK(loc.numaNode == ref.numa);
    // sysfs -1 = no NUMA affinity reported; with a single node, hwloc rightly places the NIC on it.
    else CHECK((loc.numaNode == -1 || (numaNodeCount() == 1 && loc.numaNode == 0)));
    if (ref.cpus.empty()) { CHECK(loc.cpus.empty()); continue; }
    // hwloc drops CPUs the process may not use (cgroups), so: within sysfs's list, and covering every
    // CPU of it that this thread may run on.
    std::set<int> got = cpuListSet(loc.cpus), want = cpuListSet(ref.cpus);
    REQUIRE(!got.empty());
    for (int c : got) CHECK(want.count(c) == 1);
    for (int c : want)
      if (mine.count(c)) CHECK(got.count(c) == 1);

    // Binding: the thread ends up on exactly (NIC CPUs ∩ its old mask), when that is not empty.
    std::set<int> expect;
    for (int c : got)
      if (mine.count(c)) expect.insert(c);
    if (expect.empty()) continue;
    // The NIC is near this thread (their CPUs meet), and not near a thread pinned to a CPU outside them.
    CHECK(nicsNearCaller({ref.name}) == 1);
    for (int c : mine)
      if (!got.count(c)) {
        onThread([&] {
          cpu_set_t one;
          CPU_ZERO(&one);
          CPU_SET(c, &one);
          REQUIRE(pthread_setaffinity_np(pthread_self(), sizeof(one), &one) == 0);
          CHECK(nicsNearCaller({ref.name}) == 0);
        });
        break;
      }
    onThread([&] {
      setenv("PRECCL_PROXY_AFFINITY", "0", 1);
      CHECK_FALSE(bindThreadNearNics({ref.name}));
      unsetenv("PRECCL_PROXY_AFFINITY");
      CHECK(threadCpus() == mine);
      CHECK(bindThreadNearNics({"lo", ref.name}));
      CHECK(threadCpus() == expect);
    });
    // Never widens: a thread pinned to one of the NIC's CPUs stays on that CPU alone.
    onThread([&] {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(*expect.rbegin(), &one);
      REQUIRE(pthread_setaffinity_np(pthread_self(), sizeof(one), &one) == 0);
      CHECK(bindThreadNearNics({ref.name}));
      CHECK(threadCpus() == std::set<int>{*expect.rbegin()});
    });
  }
}
