#include "netns_bed.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace ptest {

int sh(const std::string& cmd, std::string* out) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  char buf[512];
  std::string text;
  while (fgets(buf, sizeof buf, p)) text += buf;
  int st = pclose(p);
  if (out) *out += text;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

std::string netnsUnavailable() {
  if (geteuid() != 0) return "the netns tests need root (ip netns, veth, bridges, tc)";
  std::string probe;
  const std::string probeName = "pcclt" + std::to_string(getpid()) + "probe";
  if (sh("ip netns add " + probeName, &probe) != 0) return "`ip netns add` failed: " + probe;
  sh("ip netns del " + probeName);
  return "";
}

void enterNs(const std::string& name) {
  const std::string path = "/var/run/netns/" + name;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
    std::fprintf(stderr, "setns(%s) failed: %s\n", path.c_str(), strerror(errno));
    _exit(4);
  }
  close(fd);
}

NetnsBed::NetnsBed(int hosts, int rails) : hosts_(hosts), rails_(rails), tag_(std::to_string(getpid())) {
  removeStale();
  ok_ = build(&error_);
  if (!ok_) teardown();
}

std::string NetnsBed::ns(int h) const { return "pcclt" + tag_ + "h" + std::to_string(h); }
std::string NetnsBed::bridge(int r) const { return "pcclt" + tag_ + "b" + std::to_string(r); }
std::string NetnsBed::veth(int h, int r) const { return "pct" + tag_ + "h" + std::to_string(h) + "r" + std::to_string(r); }

bool NetnsBed::teardown() {
  for (auto it = created_.rbegin(); it != created_.rend(); ++it) sh(*it);
  created_.clear();
  std::string list;
  sh("ip netns list", &list);
  std::string links;
  sh("ip -o link show", &links);
  return list.find("pcclt" + tag_ + "h") == std::string::npos && links.find("pcclt" + tag_ + "b") == std::string::npos &&
         links.find("pct" + tag_ + "h") == std::string::npos;
}

bool NetnsBed::shape(int h, int r, const std::string& rate, std::string* log) {
  const std::string tbf = " root tbf rate " + rate + " burst 32kb latency 50ms";
  return sh("ip netns exec " + ns(h) + " tc qdisc replace dev rail" + std::to_string(r) + tbf, log) == 0 &&
         sh("tc qdisc replace dev " + veth(h, r) + tbf, log) == 0;
}

bool NetnsBed::setLink(int h, int r, bool up, std::string* log) {
  return sh("ip -n " + ns(h) + " link set rail" + std::to_string(r) + (up ? " up" : " down"), log) == 0;
}

uint64_t NetnsBed::railBytes(int r) const {
  uint64_t sum = 0;
  for (int h = 0; h < hosts_; ++h)
    for (const char* dir : {"tx_bytes", "rx_bytes"}) {
      std::ifstream f("/sys/class/net/" + veth(h, r) + "/statistics/" + dir);
      uint64_t v = 0;
      f >> v;
      sum += v;
    }
  return sum;
}

bool NetnsBed::build(std::string* log) {
  for (int r = 0; r < rails_; ++r) {
    if (sh("ip link add " + bridge(r) + " type bridge", log) != 0) return false;
    created_.push_back("ip link del " + bridge(r));
    if (sh("ip link set " + bridge(r) + " up", log) != 0) return false;
  }
  for (int h = 0; h < hosts_; ++h) {
    if (sh("ip netns add " + ns(h), log) != 0) return false;
    created_.push_back("ip netns del " + ns(h));
    if (sh("ip -n " + ns(h) + " link set lo up", log) != 0) return false;
    for (int r = 0; r < rails_; ++r) {
      const std::string v = veth(h, r), rail = "rail" + std::to_string(r);
      if (sh("ip link add " + v + " type veth peer name " + rail + " netns " + ns(h), log) != 0) return false;
      created_.push_back("ip link del " + v);
      const std::string addr = "198.18." + std::to_string(r) + "." + std::to_string(h + 1) + "/24";
      if (sh("ip link set " + v + " master " + bridge(r) + " up", log) != 0 ||
          sh("ip -n " + ns(h) + " addr add " + addr + " dev " + rail, log) != 0 ||
          sh("ip -n " + ns(h) + " link set " + rail + " up", log) != 0)
        return false;
    }
  }
  return true;
}

// Leftovers of an earlier run that was killed before its destructor ran.
void NetnsBed::removeStale() {
  std::string list;
  sh("ip netns list", &list);
  std::istringstream in(list);
  std::string name;
  while (in >> name) {
    if (name.rfind("pcclt", 0) != 0) continue;
    const size_t h = name.find('h', 5);
    if (h == std::string::npos) continue;
    const int pid = std::atoi(name.substr(5, h - 5).c_str());
    if (pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH)) {
      sh("ip netns del " + name);
      for (int r = 0; r < 8; ++r) sh("ip link del pcclt" + std::to_string(pid) + "b" + std::to_string(r) + " 2>/dev/null");
    }
  }
}

std::unique_ptr<NetnsBed> testBed(int hosts, int rails) {
  if (std::string why = netnsUnavailable(); !why.empty()) {
    WARN("skipped: " << why);
    SUCCEED();
    return nullptr;
  }
  auto bed = std::make_unique<NetnsBed>(hosts, rails);
  INFO("could not build the namespaces: " << bed->error());
  REQUIRE(bed->ok());
  return bed;
}

}  // namespace ptest
