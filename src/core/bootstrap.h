// Bootstrap: the out-of-band star through the root that the unique id names. At init every rank sends its
// RankInfo blob and receives everyone's; afterwards the same connections carry the few allgathers that need
// no data path (CommSplit, teardown). The root is a thread of the process that created the unique id.
#pragma once
#include <cstdint>
#include <vector>

#include "preccl/preccl.h"
#include "transport/auth_accept.h"
#include "transport/socket.h"

struct precclComm;

namespace preccl {

// Starts a detached thread that serves one communicator on `listenFd` (which it then owns).
void startBootstrapRoot(int listenFd, const uint8_t* secret);

class Bootstrap {
 public:
  ~Bootstrap() { leave(); }
  // Connects to the root, proves the secret, sends `blob` and receives all ranks' blobs (rank order).
  precclResult_t init(precclComm* comm, const SockAddr& root, const uint8_t* secret, int rank, int nranks,
                      const void* blob, size_t bytes, std::vector<uint8_t>* all, uint64_t deadlineNs);
  // Every rank contributes `bytes` (same size on all ranks); `all` receives nranks * bytes.
  precclResult_t allgather(precclComm* comm, const void* mine, size_t bytes, std::vector<uint8_t>* all,
                           uint64_t deadlineNs);
  // Tells the root this rank is gone; idempotent.
  void leave();

 private:
  int fd_ = -1;
  int nranks_ = 0;
};

}  // namespace preccl
