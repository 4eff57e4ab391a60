// Logging: one place that formats and writes messages (PRECCL_DEBUG, or NCCL_DEBUG, picks the level).
#pragma once
#include <fmt/format.h>

#include <string>

namespace preccl {

enum class LogLevel : int { None = 0, Warn = 1, Info = 2, Trace = 3 };
LogLevel logLevel();  // PRECCL_DEBUG=WARN|INFO|TRACE (default WARN)
void resetLogLevel(); // reads the variable again (precclResetDebugInit)
void logLine(LogLevel level, const std::string& msg);

}  // namespace preccl

#define PRECCL_WARN(...) \
  do { if (::preccl::logLevel() >= ::preccl::LogLevel::Warn) ::preccl::logLine(::preccl::LogLevel::Warn, fmt::format(__VA_ARGS__)); } while (0)
#define PRECCL_INFO(...) \
  do { if (::preccl::logLevel() >= ::preccl::LogLevel::Info) ::preccl::logLine(::preccl::LogLevel::Info, fmt::format(__VA_ARGS__)); } while (0)
#define PRECCL_TRACE(...) \
  do { if (::preccl::logLevel() >= ::preccl::LogLevel::Trace) ::preccl::logLine(::preccl::LogLevel::Trace, fmt::format(__VA_ARGS__)); } while (0)
// Returns a call's result from the calling function when it is not success.
#define PRECCL_CHECK(call)                              \
  do {                                                  \
    precclResult_t res_ = (call);                       \
    if (res_ != precclSuccess) return res_;             \
  } while (0)
