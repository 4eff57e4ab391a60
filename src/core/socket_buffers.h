// How much the kernel may queue on a data socket, beyond the FIFOs the executor sees.
#pragma once
#include <cstddef>
#include <cstdint>

struct precclComm;

namespace preccl {

// Each flow of a slow path may have this much of its modelled rate in flight (and queued at each end).
constexpr uint64_t kFlowBufferNs = 25'000'000;
constexpr int kMinFlowBuffer = 16 << 10;

// At init: PRECCL_SOCKET_BUFFER > 0 fixes every data socket's buffers and window at that value.
void fixSocketBuffers(precclComm* comm, int fd);
// Per tree CCT (the default, PRECCL_SOCKET_BUFFER unset): every VT whose rate the model knows gets its sockets'
// buffers and window set to kFlowBufferNs of one flow's share of that rate (`flows`: how many flows the
// busiest rank sends a VT's bytes on in this collective), raised when the rate rises, never lowered.
// Paths where that is a slot or more keep the kernel's autotuning.
void sizeSocketBuffers(precclComm* comm, int flows);
// The rule for one socket: `betaQ` the VT's modelled ns per byte << kBetaShift (0 = unknown), `current`
// the socket's set value (0 = autotuned). Returns `current` for no change.
int flowBuffer(uint64_t betaQ, int flows, size_t slotBytes, int current);

}  // namespace preccl
