#include "topo/host_id.h"

#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <fstream>

#include "base/env.h"

namespace preccl {
namespace {

// Inode of a namespace link, or "?" when /proc is not readable (then every rank reports the same "?").
std::string nsInode(const char* path) {
  struct stat st {};
  if (stat(path, &st) != 0) return "?";
  return std::to_string(static_cast<unsigned long long>(st.st_ino));
}

std::string bootId() {
  std::ifstream f("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (!std::getline(f, id)) return "?";
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id;
}

}  // namespace

std::string hostIdentity() {
  std::string forced = envString("HOSTID", "");
  if (!forced.empty()) return forced;
  char host[HOST_NAME_MAX + 1] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  return std::string(host) + "|boot=" + bootId() + "|netns=" + nsInode("/proc/self/ns/net") +
         "|ipcns=" + nsInode("/proc/self/ns/ipc");
}

uint64_t hostHash(const std::string& id) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a 64-bit offset basis
  for (unsigned char c : id) {
    h ^= c;
    h *= 0x100000001b3ull;  // FNV-1a 64-bit prime
  }
  return h;
}

}  // namespace preccl
