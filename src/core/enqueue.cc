#include "core/enqueue.h"

#include "core/cct.h"
#include "core/group.h"
#include "core/stream.h"

namespace preccl {

precclResult_t submit(precclComm* comm, precclStream_t stream, CctArgs a) {
  if (groupDepth() > 0) return groupAdd(comm, stream, std::move(a));
  if (stream) return streamEnqueue(stream, [comm, a = std::move(a)] { return launchCct(comm, a); });
  return launchCct(comm, a);
}

}  // namespace preccl
