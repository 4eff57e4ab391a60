#include "topo/net_if.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>

#include "base/env.h"

namespace preccl {
namespace {

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

bool entryMatches(const IfFilter& f, const std::string& entry, const std::string& ifname) {
  return f.exact ? ifname == entry : ifname.compare(0, entry.size(), entry) == 0;
}

// Position of the first inclusion entry that names ifname: interfaces sort in the order the user listed.
size_t filterRank(const IfFilter& f, const std::string& ifname) {
  if (f.exclude) return 0;
  for (size_t i = 0; i < f.names.size(); ++i)
    if (entryMatches(f, f.names[i], ifname)) return i;
  return f.names.size();
}

// Natural order: runs of digits compare as numbers, so eth2 < eth10 and rail order follows NIC numbers.
bool naturalLess(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    bool da = std::isdigit(static_cast<unsigned char>(a[i])), db = std::isdigit(static_cast<unsigned char>(b[j]));
    if (da && db) {
      size_t i0 = i, j0 = j;
      while (i0 < a.size() && a[i0] == '0') ++i0;  // leading zeros do not change the value
      while (j0 < b.size() && b[j0] == '0') ++j0;
      size_t i1 = i0, j1 = j0;
      while (i1 < a.size() && std::isdigit(static_cast<unsigned char>(a[i1]))) ++i1;
      while (j1 < b.size() && std::isdigit(static_cast<unsigned char>(b[j1]))) ++j1;
      if (i1 - i0 != j1 - j0) return i1 - i0 < j1 - j0;
      int c = a.compare(i0, i1 - i0, b, j0, j1 - j0);
      if (c != 0) return c < 0;
      i = i1;
      j = j1;
    } else {
      if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
      ++i;
      ++j;
    }
  }
  if ((a.size() - i) != (b.size() - j)) return a.size() - i < b.size() - j;
  return a < b;  // equal in natural order ("eth01" vs "eth1"): any fixed tie-break keeps the sort strict
}

int socketFamily() {
  std::string fam = trim(envString("SOCKET_FAMILY", ""));
  if (fam == "AF_INET6") return AF_INET6;
  if (!fam.empty() && fam != "AF_INET")
    std::fprintf(stderr, "PReCCL WARN: unknown SOCKET_FAMILY '%s' (AF_INET or AF_INET6); using AF_INET\n",
                 fam.c_str());
  return AF_INET;
}

// Link speed from the driver through the ethtool ioctl. The ioctl runs in the caller's network namespace,
// while /sys/class/net shows the namespace sysfs was mounted in (a process that only unshared its network
// namespace still sees the host's), so sysfs is the fallback and only when its ifindex agrees with ours.
int linkSpeedMbps(int fd, const std::string& ifname) {
  std::string base = ifname.substr(0, ifname.find(':'));  // alias "eth0:1" -> device "eth0"
  if (fd >= 0 && base.size() < IFNAMSIZ) {
    // The request header is followed by the three link-mode bitmaps the kernel appends (up to 127 words
    // each); headers are copied in and out of this word buffer so no flexible-array struct is needed.
    constexpr size_t kHdrWords = (sizeof(ethtool_link_settings) + 3) / 4;
    __u32 buf[kHdrWords + 3 * 127] = {};
    ethtool_link_settings req{};
    ifreq ifr{};
    std::memcpy(ifr.ifr_name, base.c_str(), base.size());
    ifr.ifr_data = reinterpret_cast<char*>(buf);
    auto call = [&](int8_t nwords) {
      std::memset(buf, 0, sizeof(buf));
      req = ethtool_link_settings{};
      req.cmd = ETHTOOL_GLINKSETTINGS;
      req.link_mode_masks_nwords = nwords;
      std::memcpy(buf, &req, sizeof(req));
      if (ioctl(fd, SIOCETHTOOL, &ifr) != 0) return false;
      std::memcpy(&req, buf, sizeof(req));
      return true;
    };
    // Handshake: with nwords = 0 the kernel answers -(words it needs); the second call fills in the speed.
    if (call(0) && req.link_mode_masks_nwords < 0 && call(static_cast<int8_t>(-req.link_mode_masks_nwords)) &&
        req.link_mode_masks_nwords > 0) {
      __u32 s = req.speed;
      return (s == 0 || s == static_cast<__u32>(SPEED_UNKNOWN) || s > 100000000u) ? -1 : static_cast<int>(s);
    }
  }
  unsigned idx = if_nametoindex(base.c_str());
  long sysIdx = -1, speed = -1;
  std::ifstream fi("/sys/class/net/" + base + "/ifindex"), fs("/sys/class/net/" + base + "/speed");
  if (idx == 0 || !(fi >> sysIdx) || sysIdx != static_cast<long>(idx)) return -1;
  if (!(fs >> speed) || speed <= 0 || speed > 100000000) return -1;  // EINVAL read (lo) or -1 (no link)
  return static_cast<int>(speed);
}

struct Candidate {
  NetIf nif;
  bool loopback = false;
};

// Every interface that is up and has an address of the wanted family; the first address of each wins.
std::vector<Candidate> listCandidates(int family) {
  std::vector<Candidate> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) {
    std::fprintf(stderr, "PReCCL WARN: getifaddrs failed: %s\n", std::strerror(errno));
    return out;
  }
  std::set<std::string> seen;
  for (ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
    if (ifa->ifa_addr == nullptr || ifa->ifa_name == nullptr) continue;
    if (ifa->ifa_addr->sa_family != family || !(ifa->ifa_flags & IFF_UP)) continue;
    Candidate c;
    c.nif.name = ifa->ifa_name;
    c.loopback = (ifa->ifa_flags & IFF_LOOPBACK) != 0;
    char text[INET6_ADDRSTRLEN] = {};
    if (family == AF_INET) {
      sockaddr_in sin;
      std::memcpy(&sin, ifa->ifa_addr, sizeof(sin));
      sin.sin_port = 0;
      std::memcpy(&c.nif.addr, &sin, sizeof(sin));
      c.nif.addrLen = sizeof(sin);
      inet_ntop(AF_INET, &sin.sin_addr, text, sizeof(text));
    } else {
      sockaddr_in6 sin6;
      std::memcpy(&sin6, ifa->ifa_addr, sizeof(sin6));
      if (IN6_IS_ADDR_LINKLOCAL(&sin6.sin6_addr)) continue;
      sin6.sin6_port = 0;
      std::memcpy(&c.nif.addr, &sin6, sizeof(sin6));
      c.nif.addrLen = sizeof(sin6);
      inet_ntop(AF_INET6, &sin6.sin6_addr, text, sizeof(text));
    }
    c.nif.addrStr = text;
    if (!seen.insert(c.nif.name).second) continue;
    out.push_back(std::move(c));
  }
  freeifaddrs(list);
  return out;
}

}  // namespace

bool IfFilter::matches(const std::string& ifname) const {
  if (names.empty()) return true;
  bool listed = std::any_of(names.begin(), names.end(),
                            [&](const std::string& n) { return entryMatches(*this, n, ifname); });
  return listed != exclude;
}

IfFilter parseIfFilter(const std::string& spec) {
  IfFilter f;
  std::string s = trim(spec);
  if (!s.empty() && s[0] == '^') {
    f.exclude = true;
    s = trim(s.substr(1));
  }
  if (!s.empty() && s[0] == '=') {
    f.exact = true;
    s = trim(s.substr(1));
  }
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    std::string entry = trim(s.substr(pos, comma - pos));
    if (!entry.empty()) f.names.push_back(entry);
    pos = comma + 1;
  }
  return f;
}

std::vector<NetIf> findInterfaces(const std::string& spec, int maxIfs) {
  std::vector<NetIf> out;
  if (maxIfs < 1) return out;
  const bool useDefault = trim(spec).empty();
  const IfFilter filter = parseIfFilter(useDefault ? std::string("^docker,lo,virbr,ifb") : spec);
  std::vector<Candidate> all = listCandidates(socketFamily());

  std::vector<Candidate> chosen;
  for (Candidate& c : all)
    if ((!c.loopback || !filter.exclude) && filter.matches(c.nif.name)) chosen.push_back(c);
  if (chosen.empty() && filter.exclude) {
    // Nothing but loopback is left: a single-host run still works over lo.
    for (Candidate& c : all)
      if (c.loopback && (useDefault || filter.matches(c.nif.name))) chosen.push_back(c);
  }
  std::stable_sort(chosen.begin(), chosen.end(), [&](const Candidate& a, const Candidate& b) {
    size_t ra = filterRank(filter, a.nif.name), rb = filterRank(filter, b.nif.name);
    if (ra != rb) return ra < rb;
    return naturalLess(a.nif.name, b.nif.name);
  });
  if (chosen.size() > static_cast<size_t>(maxIfs)) chosen.resize(static_cast<size_t>(maxIfs));

  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  for (Candidate& c : chosen) {
    c.nif.speedMbps = linkSpeedMbps(fd, c.nif.name);
    out.push_back(std::move(c.nif));
  }
  if (fd >= 0) close(fd);
  return out;
}

std::vector<NetIf> findInterfacesFromEnv(int maxIfs) {
  return findInterfaces(envString("SOCKET_IFNAME", ""), maxIfs);
}

}  // namespace preccl
