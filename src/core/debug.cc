#include "core/debug.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "core/comm.h"

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

static thread_local std::string tlsLastError;

precclResult_t setError(precclComm* comm, precclResult_t code, const std::string& msg) {
  tlsLastError = msg;
  if (comm) {
    std::lock_guard<std::mutex> lock(comm->errMutex);
    comm->lastError = msg;
  }
  if (logLevel() >= LogLevel::Info) logLine(LogLevel::Info, fmt::format("error {}: {}", static_cast<int>(code), msg));
  return code;
}

const char* lastErrorText(precclComm* comm) {
  // A failed communicator answers with its own error: it may have been raised on the proxy thread, and
  // this thread's last message may be older and unrelated (an argument refused earlier).
  const int e = comm ? comm->asyncError.load() : precclSuccess;
  if (comm && ((e != precclSuccess && e != precclInProgress) || tlsLastError.empty())) tlsLastError = comm->errorText();
  return tlsLastError.c_str();
}

}  // namespace preccl
