#include "base/log.h"

#include <strings.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace preccl {

namespace {

LogLevel levelFromEnv() {
  const char* s = getenv("PRECCL_DEBUG");
  if (!s) s = getenv("NCCL_DEBUG");
  if (!s) return LogLevel::Warn;
  if (!strcasecmp(s, "NONE")) return LogLevel::None;
  if (!strcasecmp(s, "INFO")) return LogLevel::Info;
  if (!strcasecmp(s, "TRACE")) return LogLevel::Trace;
  return LogLevel::Warn;
}

std::atomic<int>& levelCell() {
  static std::atomic<int> level{static_cast<int>(levelFromEnv())};
  return level;
}

}  // namespace

LogLevel logLevel() { return static_cast<LogLevel>(levelCell().load(std::memory_order_relaxed)); }

void resetLogLevel() { levelCell().store(static_cast<int>(levelFromEnv())); }

void logLine(LogLevel level, const std::string& msg) {
  static const char* names[] = {"", "WARN", "INFO", "TRACE"};
  char host[64] = "?";
  gethostname(host, sizeof(host) - 1);
  std::string line = fmt::format("{}:{} PReCCL {} {}\n", host, getpid(), names[static_cast<int>(level)], msg);
  fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace preccl
