#include "core/comm.h"

#include <mutex>
#include <unordered_set>

#include "core/debug.h"
#include "core/trace.h"

std::string precclComm::errorText() {
  std::lock_guard<std::mutex> lock(errMutex);
  return lastError;
}

void precclComm::raiseAsync(precclResult_t code, const std::string& msg) {
  int expected = precclSuccess;
  if (asyncError.compare_exchange_strong(expected, code)) {
    {
      std::lock_guard<std::mutex> lock(errMutex);
      lastError = msg;
    }
    PRECCL_WARN("{}", msg);  // the first error; what follows from it is INFO
  } else {
    PRECCL_INFO("{}", msg);
  }
  preccl::bellRing(bell);
}

namespace preccl {

namespace {
std::mutex registryMutex;
std::unordered_set<const precclComm*>& registry() {
  static auto* live = new std::unordered_set<const precclComm*>();  // never destroyed: safe at exit
  return *live;
}
}  // namespace

void registerComm(precclComm* comm) {
  std::lock_guard<std::mutex> lock(registryMutex);
  registry().insert(comm);
}

bool isLiveComm(const precclComm* comm) {
  std::lock_guard<std::mutex> lock(registryMutex);
  return comm && registry().count(comm) != 0;
}

precclResult_t checkComm(precclComm* comm, const char* fn) {
  if (!comm) return PRECCL_ERR(nullptr, precclInvalidArgument, "{}: comm is NULL", fn);
  if (!isLiveComm(comm))
    return PRECCL_ERR(nullptr, precclInvalidArgument, "{}: comm is not a live communicator (destroyed or never created)", fn);
  int st = comm->initState.load();
  if (st == precclInProgress)
    return PRECCL_ERR(comm, precclInvalidUsage, "{}: communicator initialisation is still in progress", fn);
  if (st != precclSuccess)
    return PRECCL_ERR(comm, precclInvalidUsage, "{}: communicator initialisation failed: {}", fn, comm->errorText());
  return precclSuccess;
}

void commQuiesce(precclComm* comm, bool abort) {
  if (abort) comm->abortFlag.store(1);
  bellRing(comm->bell);
  // Waits for a CCT still running on another thread (an abort makes it return promptly).
  std::lock_guard<std::mutex> lock(comm->execMutex);
}

void commFree(precclComm* comm, bool abort) {
  if (comm->initThread.joinable()) comm->initThread.join();
  commQuiesce(comm, abort);
  // The socket transport first: its proxy thread uses the edges and rings the executor's bell, which lives
  // in the shared-memory segment when there are local peers.
  if (comm->net) {
    // After calls that succeeded, a peer may still wait for this rank's last bytes (its commit notices):
    // the live VTs' connections close once the peers have them. A masked VT's hold nothing needed.
    const bool clean = !abort && comm->asyncError.load() == precclSuccess;
    const uint64_t live = comm->liveMask;
    comm->net->close(clean ? comm->cfg.timeoutMs * 1000000ull : 0,
                     [live](const Conn& c) { return c.state() == Conn::Live && isLive(live, c.vt); });
  }
  // What the device executor registered of the edges' FIFO memory goes before the memory does.
  if (const DeviceExecutor& d = deviceExecutor(); d.forget)
    comm->conns.find([&](const Conn& c) {
      d.forget(c.send.fifo().ctrl);
      d.forget(c.recv.fifo().ctrl);
      return false;
    });
  comm->net.reset();
  comm->bell = &comm->heapBell;
  comm->shm.reset();
  comm->conns.clear();
  comm->bootstrap.leave();
  closeFd(comm->shrinkListenFd);
  traceClose(comm);
  {
    std::lock_guard<std::mutex> lock(registryMutex);
    registry().erase(comm);
  }
  delete comm;
}

}  // namespace preccl
