// Error reporting: every error has a code and a text, kept for GetLastError (the thread's and the
// communicator's). Logging itself is base/log.h.
#pragma once
#include <fmt/format.h>

#include <string>

#include "base/log.h"
#include "preccl/preccl.h"

struct precclComm;

namespace preccl {

// Records `msg` as this thread's last error (and the communicator's, when given) and returns `code`.
precclResult_t setError(precclComm* comm, precclResult_t code, const std::string& msg);
// The failed communicator's error, else this thread's last one (kept until the next, as NCCL keeps it).
const char* lastErrorText(precclComm* comm);

}  // namespace preccl

// Return `code` with a formatted message from the current function.
#define PRECCL_ERR(comm, code, ...) ::preccl::setError((comm), (code), fmt::format(__VA_ARGS__))
