// Interface selection (NCCL_SOCKET_IFNAME grammar), environment knobs and host identity.
// The namespace cases run real interfaces in a private network namespace of a forked child, which the
// kernel deletes with the child; they skip with a message when not root or when unshare is refused.
#include <arpa/inet.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "base/env.h"
#include "topo/host_id.h"
#include "topo/net_if.h"

using namespace preccl;

namespace {

// Sets or unsets environment variables for one scope and puts the old values back afterwards.
class EnvGuard {
 public:
  ~EnvGuard() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second) setenv(it->first.c_str(), it->second->c_str(), 1);
      else unsetenv(it->first.c_str());
    }
  }
  void set(const std::string& var, const std::string& value) {
    save(var);
    setenv(var.c_str(), value.c_str(), 1);
  }
  void unset(const std::string& var) {
    save(var);
    unsetenv(var.c_str());
  }

 private:
  void save(const std::string& var) {
    const char* v = getenv(var.c_str());
    saved_.emplace_back(var, v ? std::optional<std::string>(v) : std::nullopt);
  }
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// Clears every knob findInterfaces and hostIdentity read, so the caller's environment cannot leak in.
void clearNetKnobs(EnvGuard& g) {
  for (const char* p : {"PRECCL_", "NCCL_"})
    for (const char* k : {"SOCKET_IFNAME", "SOCKET_FAMILY", "HOSTID"}) g.unset(std::string(p) + k);
}

std::vector<std::string> names(const std::vector<NetIf>& ifs) {
  std::vector<std::string> out;
  for (const NetIf& i : ifs) out.push_back(i.name);
  return out;
}

// "name=addr@speed ..." for one selection: a whole selection compares as one readable string.
std::string describe(const std::vector<NetIf>& ifs) {
  std::string s;
  for (const NetIf& i : ifs) {
    if (!s.empty()) s += ' ';
    s += i.name + '=' + i.addrStr + '@' + std::to_string(i.speedMbps);
  }
  return s;
}

struct ChildResult {
  bool exited = false;
  int status = -1;
  std::string out;
};

// Runs fn in a forked child (bounded by alarm) and returns what it wrote; the child never touches Catch.
ChildResult runInChild(const std::function<std::string()>& fn, unsigned timeoutSec = 30) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    alarm(timeoutSec);
    std::string s = fn();
    size_t off = 0;
    while (off < s.size()) {
      ssize_t n = write(fds[1], s.data() + off, s.size() - off);
      if (n <= 0) _exit(3);
      off += static_cast<size_t>(n);
    }
    _exit(0);
  }
  close(fds[1]);
  ChildResult r;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
    if (n > 0) r.out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  r.exited = WIFEXITED(st);
  r.status = r.exited ? WEXITSTATUS(st) : -1;
  return r;
}

// Captures what fn prints on stderr (fd 2), to check that warnings are really emitted.
std::string captureStderr(const std::function<void()>& fn) {
  fflush(stderr);
  FILE* tmp = tmpfile();
  REQUIRE(tmp != nullptr);
  int saved = dup(2);
  dup2(fileno(tmp), 2);
  fn();
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::string out;
  rewind(tmp);
  char buf[512];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), tmp)) > 0) out.append(buf, n);
  fclose(tmp);
  return out;
}

bool haveIpTool() { return system("ip -V >/dev/null 2>&1") == 0; }

}  // namespace

TEST_CASE("parseIfFilter: prefix, exact, exclusion, exact exclusion", "[netif]") {
  SECTION("prefix list") {
    IfFilter f = parseIfFilter("eth,ib");
    CHECK_FALSE(f.exclude);
    CHECK_FALSE(f.exact);
    CHECK(f.names == std::vector<std::string>{"eth", "ib"});
    CHECK(f.matches("eth0"));
    CHECK(f.matches("eth10"));
    CHECK(f.matches("ib1"));
    CHECK(f.matches("eth"));
    CHECK_FALSE(f.matches("et"));
    CHECK_FALSE(f.matches("lo"));
    CHECK_FALSE(f.matches("veth0"));  // a prefix, not a substring
  }
  SECTION("prefix exclusion") {
    IfFilter f = parseIfFilter("^docker,lo");
    CHECK(f.exclude);
    CHECK_FALSE(f.exact);
    CHECK(f.names == std::vector<std::string>{"docker", "lo"});
    CHECK(f.matches("eth0"));
    CHECK_FALSE(f.matches("docker0"));
    CHECK_FALSE(f.matches("lo"));
    CHECK_FALSE(f.matches("lowpan0"));
  }
  SECTION("exact list") {
    IfFilter f = parseIfFilter("=eth0,eth1");
    CHECK_FALSE(f.exclude);
    CHECK(f.exact);
    CHECK(f.names == std::vector<std::string>{"eth0", "eth1"});
    CHECK(f.matches("eth0"));
    CHECK(f.matches("eth1"));
    CHECK_FALSE(f.matches("eth10"));
    CHECK_FALSE(f.matches("eth"));
    CHECK_FALSE(f.matches("eth2"));
  }
  SECTION("exact exclusion") {
    IfFilter f = parseIfFilter("^=eth0,lo");
    CHECK(f.exclude);
    CHECK(f.exact);
    CHECK(f.names == std::vector<std::string>{"eth0", "lo"});
    CHECK_FALSE(f.matches("eth0"));
    CHECK_FALSE(f.matches("lo"));
    CHECK(f.matches("eth01"));
    CHECK(f.matches("eth1"));
    CHECK(f.matches("lo0"));
  }
  SECTION("'=' before '^' is not an exclusion: '^' becomes part of an exact name") {
    IfFilter f = parseIfFilter("=^eth0");
    CHECK_FALSE(f.exclude);
    CHECK(f.exact);
    CHECK(f.names == std::vector<std::string>{"^eth0"});
    CHECK_FALSE(f.matches("eth0"));
  }
}

TEST_CASE("parseIfFilter: whitespace and empty entries", "[netif]") {
  IfFilter a = parseIfFilter("  eth0 ,\tib0  ");
  CHECK_FALSE(a.exclude);
  CHECK_FALSE(a.exact);
  CHECK(a.names == std::vector<std::string>{"eth0", "ib0"});

  IfFilter b = parseIfFilter(" ^ = eth0 , lo ");
  CHECK(b.exclude);
  CHECK(b.exact);
  CHECK(b.names == std::vector<std::string>{"eth0", "lo"});

  IfFilter c = parseIfFilter("eth,,ib,");
  CHECK(c.names == std::vector<std::string>{"eth", "ib"});

  IfFilter d = parseIfFilter(",, ,");
  CHECK(d.names.empty());
  CHECK(d.matches("eth0"));  // an empty list constrains nothing

  IfFilter e = parseIfFilter("");
  CHECK_FALSE(e.exclude);
  CHECK_FALSE(e.exact);
  CHECK(e.names.empty());
  CHECK(e.matches("anything"));

  IfFilter f = parseIfFilter("^");
  CHECK(f.exclude);
  CHECK(f.names.empty());
  CHECK(f.matches("eth0"));  // excluding nothing keeps everything

  IfFilter g = parseIfFilter("^=");
  CHECK(g.exclude);
  CHECK(g.exact);
  CHECK(g.names.empty());
}

TEST_CASE("findInterfaces selects loopback only when asked for it", "[netif]") {
  EnvGuard env;
  clearNetKnobs(env);

  for (const char* spec : {"lo", "=lo", " = lo ", "lo,preccl_no_such_if"}) {
    INFO("spec '" << spec << "'");
    std::vector<NetIf> ifs = findInterfaces(spec, 8);
    REQUIRE(ifs.size() == 1);
    const NetIf& lo = ifs[0];
    CHECK(lo.name == "lo");
    CHECK(lo.addrStr == "127.0.0.1");
    REQUIRE(lo.addr.ss_family == AF_INET);
    CHECK(lo.addrLen == sizeof(sockaddr_in));
    sockaddr_in sin;
    std::memcpy(&sin, &lo.addr, sizeof(sin));
    CHECK(sin.sin_addr.s_addr == htonl(INADDR_LOOPBACK));
    CHECK(sin.sin_port == 0);
    CHECK(lo.speedMbps == -1);  // the loopback driver reports no link speed
  }

  // The address is usable as is: a socket binds to it (port 0 = any port).
  std::vector<NetIf> ifs = findInterfaces("=lo", 1);
  REQUIRE(ifs.size() == 1);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  CHECK(bind(fd, reinterpret_cast<const sockaddr*>(&ifs[0].addr), ifs[0].addrLen) == 0);
  close(fd);

  // Excluding lo keeps it out even when nothing else is up (the loopback fallback honours the exclusion).
  for (const char* spec : {"^lo", "^=lo", "^docker,lo"}) {
    INFO("spec '" << spec << "'");
    for (const NetIf& i : findInterfaces(spec, 64)) CHECK(i.name != "lo");
  }
  CHECK(findInterfaces("=preccl_no_such_if0", 8).empty());
  CHECK(findInterfaces("preccl_no_such", 8).empty());
  CHECK(findInterfaces("=lo0", 8).empty());  // exact: "lo" is not "lo0"
  CHECK(findInterfaces("lo", 0).empty());
  CHECK(findInterfaces("lo", -1).empty());
}

TEST_CASE("findInterfaces default excludes lo, docker, virbr, ifb unless only loopback is left", "[netif]") {
  EnvGuard env;
  clearNetKnobs(env);
  std::vector<NetIf> sel = findInterfaces("", 64);
  REQUIRE_FALSE(sel.empty());  // at least the loopback fallback
  bool anyLoopback = false;
  for (const NetIf& i : sel) {
    INFO(i.name);
    CHECK(i.name.rfind("docker", 0) != 0);
    CHECK(i.name.rfind("virbr", 0) != 0);
    CHECK(i.name.rfind("ifb", 0) != 0);
    CHECK(i.addr.ss_family == AF_INET);
    CHECK_FALSE(i.addrStr.empty());
    if (i.name == "lo") anyLoopback = true;
  }
  if (anyLoopback) CHECK(names(sel) == std::vector<std::string>{"lo"});
}

TEST_CASE("findInterfacesFromEnv reads PRECCL_SOCKET_IFNAME before NCCL_SOCKET_IFNAME", "[netif]") {
  EnvGuard env;
  clearNetKnobs(env);
  env.set("NCCL_SOCKET_IFNAME", "=lo");
  CHECK(names(findInterfacesFromEnv(4)) == std::vector<std::string>{"lo"});
  env.set("PRECCL_SOCKET_IFNAME", "=preccl_no_such_if0");
  CHECK(findInterfacesFromEnv(4).empty());
  env.set("PRECCL_SOCKET_IFNAME", "");  // empty counts as unset: NCCL's value applies again
  CHECK(names(findInterfacesFromEnv(4)) == std::vector<std::string>{"lo"});
}

TEST_CASE("envInt: suffixes, signs, bad values, prefixes", "[netif]") {
  EnvGuard env;
  const std::string p = "PRECCL_TEST_NETIF_INT", n = "NCCL_TEST_NETIF_INT";
  env.unset(p);
  env.unset(n);
  const char* k = "TEST_NETIF_INT";
  CHECK(envInt(k, 7) == 7);
  CHECK_FALSE(envIsSet(k));

  const std::vector<std::pair<const char*, int64_t>> good = {
      {"4K", 4096},
      {"4k", 4096},
      {"2M", 2 * 1024 * 1024},
      {"1G", int64_t(1) << 30},
      {"3g", int64_t(3) << 30},
      {"0", 0},
      {"42", 42},
      {" 16 ", 16},
      {"-3", -3},
      {"+5", 5},
      {"-2K", -2048},
      {"9223372036854775807", INT64_MAX},
      {"-9223372036854775808", INT64_MIN},
      {"8589934591G", int64_t(8589934591) << 30},
  };
  for (auto [text, want] : good) {
    INFO("value '" << text << "'");
    env.set(p, text);
    CHECK(envInt(k, 7) == want);
    CHECK(envIsSet(k));
  }
  const std::vector<const char*> bad = {"abc", "12Q", "K", "4KB", "1.5G", "0x10", "--1", "4 K",
                                        "9223372036854775808", "8589934592G", "-"};
  for (const char* text : bad) {
    INFO("value '" << text << "'");
    env.set(p, text);
    std::string err = captureStderr([&] { CHECK(envInt(k, 7) == 7); });
    CHECK(err.find(p) != std::string::npos);  // the warning names the variable
  }
  // The warning is printed once per variable and value, not on every read.
  env.set(p, "abc");
  CHECK(captureStderr([&] { CHECK(envInt(k, 9) == 9); }).empty());

  // PRECCL_ wins over NCCL_; NCCL_ applies when PRECCL_ is unset or empty.
  env.set(n, "2K");
  env.set(p, "3");
  CHECK(envInt(k, 7) == 3);
  env.unset(p);
  CHECK(envInt(k, 7) == 2048);
  env.set(p, "");
  CHECK(envInt(k, 7) == 2048);
  env.unset(n);
  CHECK(envInt(k, 7) == 7);
  CHECK_FALSE(envIsSet(k));
}

TEST_CASE("envString and envIsSet", "[netif]") {
  EnvGuard env;
  const std::string p = "PRECCL_TEST_NETIF_STR", n = "NCCL_TEST_NETIF_STR";
  const char* k = "TEST_NETIF_STR";
  env.unset(p);
  env.unset(n);
  CHECK(envString(k, "dflt") == "dflt");
  CHECK_FALSE(envIsSet(k));
  env.set(n, "from-nccl");
  CHECK(envString(k, "dflt") == "from-nccl");
  CHECK(envIsSet(k));
  env.set(p, "from-preccl");
  CHECK(envString(k, "dflt") == "from-preccl");
  env.set(p, "");
  CHECK(envString(k, "dflt") == "from-nccl");
  env.unset(n);
  CHECK(envString(k, "dflt") == "dflt");
  CHECK_FALSE(envIsSet(k));
}

TEST_CASE("hostHash is 64-bit FNV-1a", "[netif]") {
  CHECK(hostHash("") == 0xcbf29ce484222325ull);
  CHECK(hostHash("a") == 0xaf63dc4c8601ec8cull);
  CHECK(hostHash("foobar") == 0x85944171f73967e8ull);
  CHECK(hostHash("node-a") != hostHash("node-b"));
}

TEST_CASE("hostIdentity honours PRECCL_HOSTID / NCCL_HOSTID and is stable", "[netif]") {
  EnvGuard env;
  clearNetKnobs(env);
  const std::string natural = hostIdentity();
  CHECK_FALSE(natural.empty());
  CHECK(hostIdentity() == natural);
  CHECK(hostHash(hostIdentity()) == hostHash(natural));

  // It names this machine's boot and namespaces.
  struct stat st {};
  REQUIRE(stat("/proc/self/ns/net", &st) == 0);
  CHECK(natural.find("netns=" + std::to_string(st.st_ino)) != std::string::npos);
  REQUIRE(stat("/proc/self/ns/ipc", &st) == 0);
  CHECK(natural.find("ipcns=" + std::to_string(st.st_ino)) != std::string::npos);
  char host[256] = {};
  REQUIRE(gethostname(host, sizeof(host) - 1) == 0);
  CHECK(natural.rfind(host, 0) == 0);

  env.set("NCCL_HOSTID", "rack3-node7");
  CHECK(hostIdentity() == "rack3-node7");
  env.set("PRECCL_HOSTID", "forced-host");
  CHECK(hostIdentity() == "forced-host");
  CHECK(hostIdentity() == "forced-host");
  env.unset("PRECCL_HOSTID");
  env.unset("NCCL_HOSTID");
  CHECK(hostIdentity() == natural);
}

TEST_CASE("hostIdentity differs across network and IPC namespaces", "[netif]") {
  if (geteuid() != 0) {
    WARN("skipped: not root, cannot create a network namespace");
    return;
  }
  EnvGuard env;
  clearNetKnobs(env);
  const std::string parent = hostIdentity();

  // Control: a forked child in the same namespaces is the same host.
  ChildResult same = runInChild([] { return hostIdentity(); });
  REQUIRE(same.exited);
  CHECK(same.status == 0);
  CHECK(same.out == parent);

  auto inNewNamespace = [](int flags) {
    return [flags]() -> std::string {
      if (unshare(flags) != 0) return std::string("UNSHARE-FAILED ") + std::strerror(errno);
      return hostIdentity();
    };
  };
  ChildResult net = runInChild(inNewNamespace(CLONE_NEWNET));
  REQUIRE(net.exited);
  if (net.out.rfind("UNSHARE-FAILED", 0) == 0) {
    WARN("skipped: " << net.out);
    return;
  }
  CHECK_FALSE(net.out.empty());
  CHECK(net.out != parent);

  ChildResult ipc = runInChild(inNewNamespace(CLONE_NEWIPC));
  REQUIRE(ipc.exited);
  if (ipc.out.rfind("UNSHARE-FAILED", 0) != 0) {
    CHECK_FALSE(ipc.out.empty());
    CHECK(ipc.out != parent);
    CHECK(ipc.out != net.out);
  }

  // An explicit host id overrides the namespaces (the child inherits the variable).
  env.set("PRECCL_HOSTID", "one-box");
  ChildResult forced = runInChild(inNewNamespace(CLONE_NEWNET));
  REQUIRE(forced.exited);
  CHECK(forced.out == "one-box");
}

// Real veth interfaces in a private network namespace: order, filters, defaults, fallback, speed, IPv6.
TEST_CASE("findInterfaces on real interfaces in a private network namespace", "[netif]") {
  if (geteuid() != 0) {
    WARN("skipped: not root, cannot create a network namespace");
    return;
  }
  if (!haveIpTool()) {
    WARN("skipped: the `ip` tool is not installed");
    return;
  }
  EnvGuard env;
  clearNetKnobs(env);

  ChildResult r = runInChild([]() -> std::string {
    if (unshare(CLONE_NEWNET) != 0) return std::string("UNSHARE-FAILED ") + std::strerror(errno);
    // Everything below lives in this child's namespace and disappears with it.
    const char* setup =
        "set -e; exec >/dev/null 2>&1;"
        "ip link set lo up;"
        "ip link add rail10 type veth peer name xpeer10;"
        "ip link add rail2 type veth peer name xpeer2;"
        "ip link add docker0 type veth peer name virbr0;"
        "ip link add ifb7 type veth peer name zdown0;"
        "ip addr add 198.18.2.1/24 dev rail2; ip addr add 198.18.2.9/24 dev rail2;"
        "ip addr add 198.18.3.2/24 dev xpeer2;"
        "ip addr add 198.18.10.1/24 dev rail10; ip addr add 198.18.11.2/24 dev xpeer10;"
        "ip addr add 198.18.20.1/24 dev docker0; ip addr add 198.18.21.2/24 dev virbr0;"
        "ip addr add 198.18.30.1/24 dev ifb7; ip addr add 198.18.31.2/24 dev zdown0;"
        "for i in rail2 xpeer2 rail10 xpeer10 docker0 virbr0 ifb7; do ip link set $i up; done";
    if (system(setup) != 0) return "SETUP-FAILED";
    std::ostringstream o;
    auto row = [&](const char* label, const std::vector<NetIf>& ifs) { o << label << ": " << describe(ifs) << '\n'; };
    row("default", findInterfaces("", 16));
    row("default2", findInterfaces("", 2));
    row("order", findInterfaces("xpeer,rail", 16));
    row("exactlo", findInterfaces("=rail10,lo", 16));
    row("exclude", findInterfaces("^rail,xpeer", 16));
    row("exactex", findInterfaces("^=rail2", 16));
    row("down", findInterfaces("zdown", 16));
    if (system("ip addr add 2001:2::2/64 dev rail2 nodad >/dev/null 2>&1") == 0) {
      setenv("PRECCL_SOCKET_FAMILY", "AF_INET6", 1);
      row("v6", findInterfaces("rail2,lo", 16));
      unsetenv("PRECCL_SOCKET_FAMILY");
    } else {
      o << "v6: SKIPPED\n";
    }
    if (system("for i in rail2 rail10 docker0 ifb7; do ip link del $i; done >/dev/null 2>&1") != 0)
      return "TEARDOWN-FAILED";
    row("fallback", findInterfaces("", 16));
    row("fallbackex", findInterfaces("^rail", 16));
    row("nolo", findInterfaces("^lo", 16));
    return o.str();
  });
  REQUIRE(r.exited);
  if (r.out.rfind("UNSHARE-FAILED", 0) == 0) {
    WARN("skipped: " << r.out);
    return;
  }
  REQUIRE(r.out != "SETUP-FAILED");
  REQUIRE(r.out != "TEARDOWN-FAILED");
  CHECK(r.status == 0);

  std::map<std::string, std::string> rows;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    size_t c = line.find(": ");
    if (c != std::string::npos) rows[line.substr(0, c)] = line.substr(c + 2);
  }
  INFO(r.out);
  // veth reports 10000 Mb/s through ethtool; the first address of rail2 wins over its second one.
  const std::string rail2 = "rail2=198.18.2.1@10000", rail10 = "rail10=198.18.10.1@10000",
                    xpeer2 = "xpeer2=198.18.3.2@10000", xpeer10 = "xpeer10=198.18.11.2@10000",
                    docker0 = "docker0=198.18.20.1@10000", virbr0 = "virbr0=198.18.21.2@10000",
                    ifb7 = "ifb7=198.18.30.1@10000", lo = "lo=127.0.0.1@-1";
  CHECK(rows["default"] == rail2 + ' ' + rail10 + ' ' + xpeer2 + ' ' + xpeer10);
  CHECK(rows["default2"] == rail2 + ' ' + rail10);
  CHECK(rows["order"] == xpeer2 + ' ' + xpeer10 + ' ' + rail2 + ' ' + rail10);
  CHECK(rows["exactlo"] == rail10 + ' ' + lo);
  CHECK(rows["exclude"] == docker0 + ' ' + ifb7 + ' ' + virbr0);
  CHECK(rows["exactex"] == docker0 + ' ' + ifb7 + ' ' + rail10 + ' ' + virbr0 + ' ' + xpeer2 + ' ' + xpeer10);
  CHECK(rows["down"] == "");
  if (rows["v6"] != "SKIPPED") CHECK(rows["v6"] == "rail2=2001:2::2@10000 lo=::1@-1");
  CHECK(rows["fallback"] == lo);
  CHECK(rows["fallbackex"] == lo);
  CHECK(rows["nolo"] == "");
}
