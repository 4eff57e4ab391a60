#include "base/env.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <set>
#include <string>

namespace preccl {
namespace {

// The variable that supplies the knob: its full name and value, or {"", nullptr} when neither is set.
struct EnvHit {
  std::string var;
  const char* value = nullptr;
};

EnvHit lookup(const char* name) {
  for (const char* prefix : {"PRECCL_", "NCCL_"}) {
    std::string var = std::string(prefix) + name;
    const char* v = std::getenv(var.c_str());
    if (v != nullptr && v[0] != '\0') return {var, v};
  }
  return {};
}

// Warn once per variable and value: a knob read in a loop must not flood stderr.
void warnOnce(const std::string& var, const char* value, int64_t dflt) {
  static std::mutex mu;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mu);
  if (!warned.insert(var + '=' + value).second) return;
  std::fprintf(stderr, "PReCCL WARN: ignoring %s='%s' (not an integer with optional K/M/G); using %lld\n",
               var.c_str(), value, static_cast<long long>(dflt));
}

// Parses "[blanks][+-]digits[K|M|G][blanks]" with overflow checks; false when anything else is present.
bool parseScaledInt(const char* s, int64_t* out) {
  while (std::isspace(static_cast<unsigned char>(*s))) ++s;
  bool neg = false;
  if (*s == '+' || *s == '-') neg = (*s++ == '-');
  if (!std::isdigit(static_cast<unsigned char>(*s))) return false;
  // Accumulate as a negative number so INT64_MIN is representable.
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  int64_t v = 0;
  for (; std::isdigit(static_cast<unsigned char>(*s)); ++s) {
    int d = *s - '0';
    if (v < (kMin + d) / 10) return false;
    v = v * 10 - d;
  }
  int shift = 0;
  switch (*s) {
    case 'k': case 'K': shift = 10; ++s; break;
    case 'm': case 'M': shift = 20; ++s; break;
    case 'g': case 'G': shift = 30; ++s; break;
    default: break;
  }
  while (std::isspace(static_cast<unsigned char>(*s))) ++s;
  if (*s != '\0') return false;
  if (shift != 0) {
    if (v < (kMin >> shift)) return false;
    v = static_cast<int64_t>(static_cast<uint64_t>(v) << shift);  // v <= 0, in range: exact
  }
  if (!neg) {
    if (v == kMin) return false;
    v = -v;
  }
  *out = v;
  return true;
}

}  // namespace

std::string envString(const char* name, const std::string& dflt) {
  EnvHit hit = lookup(name);
  return hit.value != nullptr ? std::string(hit.value) : dflt;
}

int64_t envInt(const char* name, int64_t dflt) {
  EnvHit hit = lookup(name);
  if (hit.value == nullptr) return dflt;
  int64_t v = 0;
  if (parseScaledInt(hit.value, &v)) return v;
  warnOnce(hit.var, hit.value, dflt);
  return dflt;
}

bool envIsSet(const char* name) { return lookup(name).value != nullptr; }

}  // namespace preccl
