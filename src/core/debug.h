// Logging and error reporting: one place that formats messages, so every error has a code and a text.
#pragma once
#include <fmt/format.h>

#include <string>

#include "preccl/preccl.h"

struct precclComm;

namespace preccl {

enum class LogLevel : int { None = 0, Warn = 1, Info = 2, Trace = 3 };
LogLevel logLevel();  // PRECCL_DEBUG=WARN|INFO|TRACE (default WARN)
void resetLogLevel(); // reads the variable again (precclResetDebugInit)
void logLine(LogLevel level, const std::string& msg);

// Records `msg` as this thread's last error (and the communicator's, when given) and returns `code`.
precclResult_t setError(precclComm* comm, precclResult_t code, const std::string& msg);
// The failed communicator's error, else this thread's last one (kept until the next, as NCCL keeps it).
const char* lastErrorText(precclComm* comm);

}  // namespace preccl

#define PRECCL_WARN(...) \
  do { if (::preccl::logLevel() >= ::preccl::LogLevel::Warn) ::preccl::logLine(::preccl::LogLevel::Warn, fmt::format(__VA_ARGS__)); } while (0)
#define PRECCL_INFO(...) \
  do { if (::preccl::logLevel() >= ::preccl::LogLevel::Info) ::preccl::logLine(::preccl::LogLevel::Info, fmt::format(__VA_ARGS__)); } while (0)
#define PRECCL_TRACE(...) \
  do { if (::preccl::logLevel() >= ::preccl::LogLevel::Trace) ::preccl::logLine(::preccl::LogLevel::Trace, fmt::format(__VA_ARGS__)); } while (0)
// Return `code` with a formatted message from the current function.
#define PRECCL_ERR(comm, code, ...) ::preccl::setError((comm), (code), fmt::format(__VA_ARGS__))
#define PRECCL_CHECK(call)                              \
  do {                                                  \
    precclResult_t res_ = (call);                       \
    if (res_ != precclSuccess) return res_;             \
  } while (0)
