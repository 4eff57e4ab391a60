// The kernel's socket buffers are queue the FIFOs do not see, and the window they allow is what a flow
// puts into the network's queues. Autotuned, on a slow path the receive buffer grows to megabytes
// (Linux sizes it from how fast the application reads, and the proxy, draining a backlog at once after
// its FIFO frees, reads fast), the send buffer grows with the window and never shrinks, and every flow
// keeps filling the shaped link's queue until it loses packets. A tree's flows then run apart: flows
// that lose back off for seconds, flows that need not wait for a reduction take more than their share,
// and links idle at the end of the call (docs/results-archive.md, "The kernel's socket buffers"). So each flow
// of a path the model measured gets buffers and a window of kFlowBufferNs at its share of the VT's rate:
// enough to keep its link busy, too little to fill the link's queue, and flows limited by equal windows
// through one queue share it evenly, but never less than a few of the connection's segments (below one, a
// clamped live connection crawls at its persist timer's pace). The first measured rate sets it and later
// ones only raise it. Fast
// paths, where that is a slot or more, keep the autotuning, and so do rings and chains (core/cct.cc): they
// gain little from the bound, and a bounded window loses its share of a link to another tenant's TCP.
#include "core/socket_buffers.h"

#include <algorithm>

#include "core/comm.h"
#include "core/debug.h"
#include "policy/model.h"
#include "policy/policy.h"
#include "transport/socket.h"

namespace preccl {

int flowBufferFloor(int segmentBytes) {
  const int segments = kMinFlowSegments * std::max(segmentBytes, 0);
  return std::max(kMinFlowBuffer, (segments + 1023) / 1024 * 1024);
}

int flowBuffer(uint64_t betaQ, int flows, size_t slotBytes, int minBytes, int current) {
  if (betaQ == 0 || flows < 1) return current;  // no measured rate: leave the socket as it is
  const unsigned __int128 bytes =
      (static_cast<unsigned __int128>(kFlowBufferNs) << kBetaShift) / (static_cast<unsigned __int128>(betaQ) * flows);
  const unsigned __int128 floor = std::min<size_t>(std::max(minBytes, kMinFlowBuffer), slotBytes);
  const int want = static_cast<int>(std::clamp<unsigned __int128>(bytes, floor, slotBytes)) / 1024 * 1024;
  // A path that was never slow keeps the autotuning; one that was follows its rate from then on (a set
  // buffer cannot be handed back to the autotuning), up to the slot.
  if (current == 0) return want >= static_cast<int>(slotBytes) ? 0 : want;
  // Never down: a flow that its window limits is measured slower, and a smaller window would slow it
  // further (on a host with more ranks than cores, where the CPU sets the rates, that spiral took the
  // tests' 8-rank socket case from 18 s to 62 s). Up only by a quarter or more: three system calls.
  return want < current + current / 4 ? current : want;
}

void sizeSocketBuffers(precclComm* comm, int flows) {
  const ModelState& m = comm->policy.model;
  if (comm->cfg.socketBuffer != -1 || !comm->net || comm->net->empty() ||
      (m.version == comm->buffersModelVersion && flows == comm->buffersFlows))
    return;
  comm->buffersModelVersion = m.version;
  comm->buffersFlows = flows;
  for (int v = 0; v < comm->nVTs; v++) {
    int64_t alpha;
    uint64_t betaQ = 0;
    if (!isLive(comm->liveMask, v) || !m.rateKnown(v) || !modelParams(m, v, &alpha, &betaQ)) continue;
    comm->net->forEachSocket(v, [&](SocketTransport::Socket& c) {
      if (c.bufferFloor == 0) c.bufferFloor = flowBufferFloor(segmentBytes(c.fd));
      const int want = flowBuffer(betaQ, flows, comm->slotBytes, c.bufferFloor, c.bufferBytes);
      if (want == c.bufferBytes) return;
      setSocketBuffers(c.fd, want);
      c.bufferBytes = want;
    });
  }
}

}  // namespace preccl
