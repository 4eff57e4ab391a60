// One place that reads the environment, so every knob has one name and one default.
#pragma once
#include <cstdint>
#include <string>

namespace preccl {

// Each knob is looked up as PRECCL_<name> first, then NCCL_<name> (for the NCCL-compatible knobs),
// else the default. A variable set to the empty string counts as unset, so `PRECCL_X=` falls back.
std::string envString(const char* name, const std::string& dflt);  // name without prefix: "SOCKET_IFNAME"
// Decimal integer with an optional K/M/G suffix (powers of 1024, either case), surrounding blanks allowed.
// A bad or overflowing value returns dflt and prints a warning on stderr (once per variable and value).
int64_t envInt(const char* name, int64_t dflt);
bool envIsSet(const char* name);

}  // namespace preccl
