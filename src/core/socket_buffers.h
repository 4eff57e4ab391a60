// How much the kernel may queue on a data socket, beyond the FIFOs the executor sees.
#pragma once
#include <cstddef>
#include <cstdint>

struct precclComm;

namespace preccl {

// Each flow of a slow path may have this much of its modelled rate in flight (and queued at each end).
constexpr uint64_t kFlowBufferNs = 25'000'000;
constexpr int kMinFlowBuffer = 16 << 10;
// ... and never less than this many of the connection's segments. A receive window below one segment
// stalls the sender on its persist timer (a window probe every few hundred ms): on a connection whose
// window was once large the sender keeps its full segment size, and loopback's segment is 64 KiB. Four
// leave room for fast retransmit's three duplicate acks.
constexpr int kMinFlowSegments = 4;
// The least buffer the rule sets on a connection whose segment is `segmentBytes` (0: unknown).
int flowBufferFloor(int segmentBytes);

// Per tree CCT (the default, PRECCL_SOCKET_BUFFER unset): every VT whose rate the model knows gets its sockets'
// buffers and window set to kFlowBufferNs of one flow's share of that rate (`flows`: how many flows the
// busiest rank sends a VT's bytes on in this collective), at least flowBufferFloor, raised when the rate
// rises, never lowered. Paths where that is a slot or more keep the kernel's autotuning.
void sizeSocketBuffers(precclComm* comm, int flows);
// The rule for one socket: `betaQ` the VT's modelled ns per byte << kBetaShift (0 = unknown), `minBytes`
// the socket's floor (flowBufferFloor), `current` the socket's set value (0 = autotuned). Returns
// `current` for no change.
int flowBuffer(uint64_t betaQ, int flows, size_t slotBytes, int minBytes, int current);

}  // namespace preccl
