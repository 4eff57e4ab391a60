// The CPU build's stream: a host execution queue with one worker thread. Work runs in enqueue order; the
// first error is kept and returned by Synchronize/Query.
#pragma once
#include <functional>

#include "preccl/preccl.h"

namespace preccl {
precclResult_t streamEnqueue(precclStream_t stream, std::function<precclResult_t()> work);
}
