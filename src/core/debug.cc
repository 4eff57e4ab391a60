#include "core/debug.h"

#include <mutex>

#include "core/comm.h"

namespace preccl {

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
